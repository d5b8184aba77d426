#!/usr/bin/env bash
# Fan-out benchmark: diffstream and nginx+nchan side by side in the same run, alternating, RUNS runs of
# each per subscriber count, then the medians.
#   Benchmarks/run-fanout.sh                  (subscriber counts 1000 10000 19000; 3 runs each)
#   RUNS=5 PUBLISHES=20 MODES="plain gzip" Benchmarks/run-fanout.sh 1000 10000
# Needs: nginx and libnginx-mod-nchan (apt-get install nginx libnginx-mod-nchan).
# Both servers get every core: diffstream its default --loops (one per core), nginx one worker per
# core (worker_processes auto). Ports are free ones picked at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("$@")
[[ $# -eq 0 ]] && counts=(1000 10000 19000)
runs=${RUNS:-3}
publishes=${PUBLISHES:-20}
modes=(${MODES:-plain})
swift build -c release --static-swift-stdlib --product diffstream >/dev/null
swift build -c release --package-path Benchmarks --product fanout-bench >/dev/null
bench=Benchmarks/.build/release/fanout-bench
work=$(mktemp -d)
results="${RESULTS:-$work/results.txt}"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
ulimit -n 20000

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; exit 1; }

run_diffstream() {  # n mode
    local n=$1 mode=$2 extra=() port pid
    [[ $mode == gzip ]] && extra=(--gzip)
    : > "$work/ds.log"
    # In memory (--data none), as nchan keeps its messages: this measures the fan-out, not the store.
    .build/release/diffstream --port 0 --data none --max-connections $((n + 100)) --max-connections-per-ip 0 --log-level info \
        --public Public 2>"$work/ds.log" &
    pid=$!
    for _ in $(seq 1 100); do
        port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/ds.log" | head -1)
        [[ -n $port ]] && break
        sleep 0.1
    done
    echo "## diffstream ($(nproc) loops), $n subscribers ($mode)"
    "$bench" --port "$port" --pid "$pid" --subscribers "$n" --publishes "$publishes" --sources 8 "${extra[@]}" | tee -a "$work/out.txt"
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

run_nchan() {  # n
    local n=$1 port pids=()
    port=$(free_port)
    sed "s|@DIR@|$work|g; s|@PORT@|$port|g" Benchmarks/nchan/nginx.conf.template > "$work/nginx.conf"
    mkdir -p "$work/body"
    nginx -c "$work/nginx.conf" -p "$work" &
    wait_port "$port"
    for worker in $(pgrep -P "$(cat "$work/nginx.pid")"); do pids+=(--pid "$worker"); done
    echo "## nginx + nchan ($(( ${#pids[@]} / 2 )) workers), $n subscribers"
    "$bench" --port "$port" "${pids[@]}" --subscribers "$n" --publishes "$publishes" --sources 8 --nchan | tee -a "$work/out.txt"
    kill "$(cat "$work/nginx.pid")"; wait 2>/dev/null || true
}

for n in "${counts[@]}"; do
    for run in $(seq 1 "$runs"); do
        # Alternate which server goes first, so that neither always runs on a warmer or quieter machine.
        if (( run % 2 == 1 )); then
            for mode in "${modes[@]}"; do run_diffstream "$n" "$mode"; done
            run_nchan "$n"
        else
            run_nchan "$n"
            for mode in "${modes[@]}"; do run_diffstream "$n" "$mode"; done
        fi
    done
done

grep '^RESULT ' "$work/out.txt" > "$results"
python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    fields = dict(item.split("=", 1) for item in line.split()[1:])
    rows.setdefault((int(fields["subscribers"]), fields["server"]), []).append(fields)
print("\n| subscribers | server | runs | p50 ms | p99 ms | min ms | missing (max) | server CPU ms per batch | KiB per idle subscriber | load tool CPU ms per batch |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (n, server), runs in sorted(rows.items()):
    med = lambda key: statistics.median(float(r[key]) for r in runs)
    print(f"| {n:,} | {server} | {len(runs)} | {med('p50'):.1f} | {med('p99'):.1f} | {med('min'):.1f} | {max(int(r['missing']) for r in runs)} | "
          f"{med('cpu_ms_per_batch'):.1f} | {med('kib_per_subscriber'):.2f} | {med('tool_cpu_ms_per_batch'):.1f} |")
by_n = {}
for (n, server), runs in rows.items():
    by_n.setdefault(n, {})[server] = runs
print("\n| subscribers | p50 ratio diffstream/nchan | p99 ratio |")
print("|---:|---:|---:|")
for n, servers in sorted(by_n.items()):
    if "diffstream" in servers and "nchan" in servers:
        m = lambda s, k: statistics.median(float(r[k]) for r in servers[s])
        print(f"| {n:,} | {m('diffstream', 'p50') / m('nchan', 'p50'):.2f} | {m('diffstream', 'p99') / m('nchan', 'p99'):.2f} |")
EOF
