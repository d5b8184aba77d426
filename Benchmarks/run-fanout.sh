#!/usr/bin/env bash
# Fan-out benchmark: diffstream and nginx+nchan in the same run, N subscribers, P publishes each.
#   Benchmarks/run-fanout.sh 1000 10000        (subscriber counts; default 1000 10000)
# Needs: nginx and libnginx-mod-nchan (apt-get install nginx libnginx-mod-nchan).
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("${@:-1000 10000}")
[[ $# -eq 0 ]] && counts=(1000 10000)
publishes=${PUBLISHES:-20}
swift build -c release --static-swift-stdlib --product diffstream >/dev/null
swift build -c release --package-path Benchmarks --product fanout-bench >/dev/null
bench=Benchmarks/.build/release/fanout-bench
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
ulimit -n 20000

wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; exit 1; }

for n in "${counts[@]}"; do
    for mode in plain gzip; do
        echo "## diffstream, $n subscribers ($mode)"
        .build/release/diffstream --port 18181 --max-connections $((n + 100)) --log-level error --public Public 2>"$work/ds.log" &
        pid=$!
        wait_port 18181
        extra=(); [[ $mode == gzip ]] && extra=(--gzip)
        "$bench" --port 18181 --pid "$pid" --subscribers "$n" --publishes "$publishes" --sources 8 "${extra[@]}"
        kill "$pid"; wait "$pid" 2>/dev/null || true
    done
    echo "## nginx + nchan, $n subscribers"
    sed "s|@DIR@|$work|g; s|@PORT@|18182|g" Benchmarks/nchan/nginx.conf.template > "$work/nginx.conf"
    mkdir -p "$work/body"
    nginx -c "$work/nginx.conf" -p "$work" &
    wait_port 18182
    worker=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1)
    "$bench" --port 18182 --pid "$worker" --subscribers "$n" --publishes "$publishes" --sources 8 --nchan
    kill "$(cat "$work/nginx.pid")"; wait 2>/dev/null || true
done
