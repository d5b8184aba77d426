#!/usr/bin/env bash
# Redis memory bounded by the data, not by the writes (issue 51, item 4): over an empty Redis, WRITERS
# writers PUT to as many feeds (one each, keep-alive, wrk with Benchmarks/redis-write-ids.lua), WRITES
# writes in each of two phases. Redis's used_memory is read after the feeds' creation (m0) and after
# each phase (m1, m2); the goal is that the second phase grows it by at most 10% of what the first did:
# (m2 - m1) <= 0.10 * (m1 - m0). After each phase the feeds' versions are read back (GET /feeds/F) and
# must add up to the writes wrk counted. Prints the keys Redis holds and the bytes per write of each phase.
#   Benchmarks/redis-write-ids.sh                     (16 writers, 100,000 writes a phase; a few minutes)
#   KEYED=1 Benchmarks/redis-write-ids.sh             (every PUT with an Idempotency-Key of its own)
#   WRITES=20000 Benchmarks/redis-write-ids.sh        (a smoke run)
# Env: DIFFSTREAM (binary; default .build/release/diffstream, else .build/debug/diffstream), WRITERS (16),
#   WRITES (100000 a phase, split evenly over the writers), REPLAY (16: --replay, the stream each feed
#   keeps), KEYED (0), FSYNC (everysec: Redis's appendfsync; the memory does not depend on it, and the
#   machine's 2 cores are shared), DATA_BASE (/tmp).
# Needs: wrk, redis-server, redis-tools, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
writers=${WRITERS:-16}
writes=${WRITES:-100000}
replay=${REPLAY:-16}
keyed=${KEYED:-0}
fsync=${FSYNC:-everysec}
diffstream=${DIFFSTREAM:-}
if [[ -z $diffstream ]]; then
    diffstream=.build/release/diffstream
    [[ -x $diffstream ]] || diffstream=.build/debug/diffstream
fi
[[ -x $diffstream ]] || { echo "no $diffstream: swift build --product diffstream" >&2; exit 1; }
work=$(mktemp -d "${DATA_BASE:-/tmp}/redis-write-ids.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work" --save "" --appendonly yes --appendfsync "$fsync" \
    --maxmemory-policy noeviction --daemonize no --logfile "$work/redis.log" &
pids+=($!)
until redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG; do sleep 0.05; done
rcli() { redis-cli -p "$redis_port" "$@"; }
used() { rcli info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'; }

"$diffstream" --port 0 --host 127.0.0.1 --redis "redis://127.0.0.1:$redis_port" --replay "$replay" --examples none \
    --max-connections-per-ip 0 --log-level info > "$work/diffstream.log" 2>&1 &
pids+=($!)
port=""
for _ in $(seq 200); do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/diffstream.log" | head -1 | sed 's/.*://') || true
    [[ -n $port ]] && break
    sleep 0.05
done
[[ -n $port ]] || { echo "diffstream did not start:" >&2; cat "$work/diffstream.log" >&2; exit 1; }
url="http://127.0.0.1:$port"
for k in $(seq "$writers"); do
    curl -sf -X PUT -H 'Content-Type: application/json' --data '{"sections":[]}' "$url/feeds/ids$k" > /dev/null
done
per_writer=$(( writes / writers ))
mode=$([[ $keyed == 1 ]] && echo keyed || echo drawn)
m0=$(used)
total=0
declare -a memory=("$m0")
for phase in 1 2; do
    # Each wrk thread stops after its writes, but wrk's main thread sleeps out -d: it is sent SIGINT once
    # every feed holds its writes (read back with GET), or once it ends by itself (errors).
    wrk -t"$writers" -c"$writers" -d600s --timeout 10s -s Benchmarks/redis-write-ids.lua "$url" -- "$per_writer" /feeds/ids "$mode" "p$phase" > "$work/wrk$phase.txt" &
    wrk_pid=$!
    target=$(( phase * per_writer * writers ))
    while :; do
        versions=$(python3 - "$url" "$writers" <<'PY'
import json, sys, urllib.request
url, writers = sys.argv[1], int(sys.argv[2])
print(sum(json.load(urllib.request.urlopen(f"{url}/feeds/ids{k}"))["version"] - 1 for k in range(1, writers + 1)))
PY
)
        (( versions >= target )) && break
        kill -0 "$wrk_pid" 2>/dev/null || break
        sleep 1
    done
    kill -INT "$wrk_pid" 2>/dev/null || true
    wait "$wrk_pid" || true
    out=$(cat "$work/wrk$phase.txt")
    requests=$(echo "$out" | awk '/requests in/ { print $1 }')
    errors=$(echo "$out" | grep -E 'Non-2xx|Socket errors' || true)
    total=$(( total + requests ))
    memory+=("$(used)")
    echo "phase $phase: $requests writes${errors:+, $errors}; the feeds' versions add up to $versions of $total written; used_memory ${memory[$phase]}"
    [[ $versions == "$total" ]] || { echo "the feeds' versions ($versions) are not the writes acknowledged ($total)" >&2; exit 1; }
done
keys=$(rcli dbsize)
first=$(( memory[1] - memory[0] )); second=$(( memory[2] - memory[1] ))
python3 - "$first" "$second" "$total" "$keys" "$mode" "$writers" <<'PY'
import sys
first, second, total, keys, mode, writers = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
ratio = second / first if first else float("inf")
print(f"RESULT ids={mode} writers={writers} writes={total} keys={keys} first_phase_bytes={first} ({first / (total / 2):.1f} B/write) "
      f"second_phase_bytes={second} ({second / (total / 2):.1f} B/write) second/first={ratio:.3f} goal<=0.10 {'met' if ratio <= 0.10 else 'NOT MET'}")
PY
