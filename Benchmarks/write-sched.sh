#!/usr/bin/env bash
# Where a write waits (issue 39, the durable p99): W keep-alive writers (wrk + write-peers.lua, each on its
# own feed) for DURATION seconds against one fresh server, then per server thread its CPU time, its time
# waiting on a run queue for a CPU (/proc/PID/task/TID/schedstat) and its context switches, and the
# store's commit figures from /metrics (how long commits took, how many writes each).
#   Benchmarks/write-sched.sh BINARY [server flags...]     e.g. .build/release/diffstream --loops 1
#   W=16 DURATION=5 DATA=1 (defaults; DATA=0 keeps the feeds in memory)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "$1"); shift
w=${W:-16} duration=${DURATION:-5}
work=$(mktemp -d /tmp/write-sched.XXXXXX)
data=(--data none); [[ ${DATA:-1} == 1 ]] && data=(--data "$work/store")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" --port "$port" "${data[@]}" --examples none --max-connections-per-ip 0 --log-level warning --public Public "$@" 2>"$work/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
for k in $(seq 1 "$w"); do curl -s -o /dev/null -X PUT --data-binary '{"sections":[]}' "http://127.0.0.1:$port/feeds/bench$k"; done
snap() {  # tid name run_ns wait_ns voluntary involuntary, one line per thread
    local t run wait slices
    for t in /proc/$pid/task/*; do
        read -r run wait slices <"$t/schedstat"
        echo "$(basename "$t") $(tr -d ' ' <"$t/comm") $run $wait $(awk '/^voluntary_ctxt/ {v=$2} /^nonvoluntary/ {n=$2} END {print v, n}' "$t/status")"
    done | sort
}
snap >"$work/s0"
wrk -t"$w" -c"$w" -d"${duration}s" -s Benchmarks/write-peers.lua "http://127.0.0.1:$port" -- snapshot PUT /feeds/bench | grep '^RESULT'
snap >"$work/s1"
join "$work/s0" "$work/s1" | awk '{ cpu = ($8 - $3) / 1e6; if (cpu > 1) printf "thread %-8s %-18s cpu %8.1f ms  waiting for a cpu %8.1f ms  voluntary %7d  involuntary %7d\n", $1, $2, cpu, ($9 - $4) / 1e6, $10 - $5, $11 - $6 }'
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^diffstream_store_(commits_total|writes_per_commit |commit_seconds_(sum|count|bucket\{le="0.001"\}))' || true
