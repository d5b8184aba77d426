#!/usr/bin/env bash
# Durable PUT throughput: diffstream --data DIR, diffstream --data none and redis-server (appendonly yes,
# appendfsync always) in the same run, at 1 and 16 writers, alternating, ROUNDS rounds; prints medians.
#   Benchmarks/run-store.sh            (ROUNDS=3 DURATION=5 by default; DATA_BASE sets where the data lives)
# Needs: wrk, redis-server, redis-tools (apt-get install wrk redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
duration=${DURATION:-5}
[[ -x .build/release/diffstream ]] || swift build -c release --static-swift-stdlib --product diffstream >/dev/null
work=$(mktemp -d "${DATA_BASE:-/tmp}/store-bench.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
echo "# data in $work ($(df -T "$work" | awk 'NR==2 {print $2}')), $(nproc) cores, $(date -u +%FT%TZ)"

wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; exit 1; }
port=18291

# redis-benchmark -d: the size of the body put.lua sends (1282 to 1287 bytes).
payload=1284

run_diffstream() {  # mode writers -> RESULT line
    local mode=$1 writers=$2 data=(--data none)
    [[ $mode == durable ]] && { rm -rf "$work/ds"; data=(--data "$work/ds"); }
    .build/release/diffstream --port $port --log-level error --public Public "${data[@]}" 2>"$work/ds.log" &
    local pid=$!
    wait_port $port
    wrk -t"$writers" -c"$writers" -d"${duration}s" -s Benchmarks/store/put.lua "http://127.0.0.1:$port" | grep RESULT
    kill $pid; wait $pid 2>/dev/null || true
}

run_redis() {  # writers -> RESULT line
    local writers=$1
    rm -rf "$work/redis"; mkdir -p "$work/redis"
    redis-server --port $((port + 1)) --dir "$work/redis" --appendonly yes --appendfsync always --save "" --daemonize no --loglevel warning >"$work/redis.log" 2>&1 &
    local pid=$!
    wait_port $((port + 1))
    local requests=$(( writers == 1 ? 4000 : 20000 ))
    redis-benchmark -p $((port + 1)) -t set -d $payload -c "$writers" -n $requests -r 100000 --csv 2>/dev/null | awk -F'"' '/SET/ {printf "RESULT rps=%s p50_ms=%s p99_ms=%s errors=0\n", $4, $10, $14}'
    kill $pid; wait $pid 2>/dev/null || true
}

declare -A results
for round in $(seq 1 "$rounds"); do
    for writers in 1 16; do
        for system in durable none redis; do
            if [[ $system == redis ]]; then line=$(run_redis "$writers"); else line=$(run_diffstream "$system" "$writers"); fi
            echo "round $round, $writers writers, $system: $line"
            results["$system-$writers"]+="$line"$'\n'
        done
    done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
field() { grep -o "$1=[0-9.]*" | cut -d= -f2; }
echo
echo "| writers | system | PUT or SET/s (median) | p99 ms (median) |"
echo "|---|---|---|---|"
for writers in 1 16; do
    for system in durable none redis; do
        lines=${results["$system-$writers"]}
        echo "| $writers | $system | $(field rps <<<"$lines" | median) | $(field p99_ms <<<"$lines" | median) |"
    done
done
