#!/usr/bin/env bash
# Idle cost: the server CPU used while N subscribers sit connected, with 2 publishes SECONDS apart
# (fanout-bench's cpu_ms_per_batch is the CPU over the whole window divided by 2). Give two binaries
# to compare them, alternating, RUNS times each.
#   Benchmarks/run-idle.sh                                   (this checkout's release build, 10,000, 8 s)
#   N=10000 SECONDS_IDLE=8 RUNS=3 Benchmarks/run-idle.sh /tmp/diffstream-before .build/release/diffstream
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-10000}
idle=${SECONDS_IDLE:-8}
runs=${RUNS:-2}
binaries=("$@")
if [[ $# -eq 0 ]]; then
    swift build -c release --static-swift-stdlib --product diffstream >/dev/null
    binaries=(.build/release/diffstream)
fi
swift build -c release --package-path Benchmarks --product fanout-bench >/dev/null
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
ulimit -n 20000

for run in $(seq 1 "$runs"); do
    for bin in "${binaries[@]}"; do
        "$bin" --port 0 --data none --max-connections $((n + 100)) --max-connections-per-ip 0 --log-level info \
            --public Public 2>"$work/ds.log" &
        pid=$!
        port=
        for _ in $(seq 1 100); do
            port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/ds.log" | head -1)
            [[ -n $port ]] && break
            sleep 0.1
        done
        printf '%s run %s: ' "$bin" "$run"
        Benchmarks/.build/release/fanout-bench --port "$port" --pid "$pid" --subscribers "$n" --publishes 2 \
            --interval "$idle" --sources 8 | sed -n 's/^RESULT .*cpu_ms_per_batch=\([0-9.]*\).*tool_wall_s=\([0-9.]*\).*/server CPU \1 ms per publish over a \2 s window/p'
        kill "$pid"; wait "$pid" 2>/dev/null || true
    done
done
