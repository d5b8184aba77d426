#!/usr/bin/env bash
# The server's CPU per write: one wrk run (16 writers, Benchmarks/store/put.lua) against diffstream with
# --data (durable) or --data none; prints wrk's RESULT line, the machine's idle share and the server's
# CPU ticks (utime + stime from /proc/<pid>/stat, 100 a second) over the run, and the store's counters.
#   Benchmarks/store-cpu.sh durable|none [SECONDS]      (release build in .build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1; seconds=${2:-4}; port=18391
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
data=(--data none); [[ $mode == durable ]] && data=(--data "$work/data")
.build/release/diffstream --port $port --log-level error --public Public "${data[@]}" 2>"$work/log" &
pid=$!
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
read -r _ u n s i w x y z _ < /proc/stat; t0=$((u+n+s+i+w+x+y+z)); i0=$((i+w))
p0=$(awk '{print $14+$15}' /proc/$pid/stat)
wrk -t16 -c16 -d"${seconds}s" -s Benchmarks/store/put.lua "http://127.0.0.1:$port" | grep RESULT
read -r _ u n s i w x y z _ < /proc/stat; t1=$((u+n+s+i+w+x+y+z)); i1=$((i+w))
p1=$(awk '{print $14+$15}' /proc/$pid/stat)
echo "idle% $(( 100*(i1-i0)/(t1-t0) )) server-cpu-ticks $((p1-p0))"
curl -s "localhost:$port/metrics" | grep -E "^diffstream_store_(commits|writes)_total|^diffstream_store_commit_seconds_sum" || true
