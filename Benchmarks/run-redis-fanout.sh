#!/usr/bin/env bash
# Cross-instance fan-out through Redis (issue 26): three diffstream instances (--redis, --data none) and,
# in the same run, three nginx + nchan servers (nchan_redis_url), each trio on a fresh redis-server
# (appendonly yes, appendfsync always). SUBSCRIBERS subscribers spread evenly over the three; every
# publish goes to the first instance (A). Alternates which server goes first, RUNS runs of each, then
# prints the medians and the ratios.
#   Benchmarks/run-redis-fanout.sh                       (3000 subscribers, RUNS=5, PUBLISHES=40)
#   RUNS=3 PUBLISHES=20 SERVERS="nchan" Benchmarks/run-redis-fanout.sh 3000
# Env: DIFFSTREAM (binary; default .build/release/diffstream, build it with
#   `swift build -c release --product diffstream`), INTERVAL_MS (200), SOURCES (8 loopback source
#   addresses), NGINX_WORKERS (worker_processes of each nginx; default auto, one per core, as
#   diffstream's --loops defaults to one per core), RESULTS (file for the RESULT lines), KEEP_LOGS=1.
# Needs: redis-server, nginx, libnginx-mod-nchan, cc.
set -euo pipefail
cd "$(dirname "$0")/.."
subscribers=${1:-3000}
runs=${RUNS:-5}
publishes=${PUBLISHES:-40}
interval=${INTERVAL_MS:-200}
sources=${SOURCES:-8}
workers=${NGINX_WORKERS:-auto}
servers=(${SERVERS:-diffstream nchan})
diffstream=${DIFFSTREAM:-.build/release/diffstream}
work=$(mktemp -d /tmp/redis-fanout.XXXXXX)
results="${RESULTS:-$work/results.txt}"
cleanup() {
    local p
    for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n ${KEEP_LOGS:-} ]] && echo "logs kept in $work" || rm -rf "$work"
}
trap cleanup EXIT
ulimit -n 20000
cc -O2 -Wall -o "$work/load" Benchmarks/redis-fanout-load.c
if [[ " ${servers[*]} " == *" diffstream "* ]]; then
    [[ -x $diffstream ]] || { echo "no $diffstream: swift build -c release --product diffstream" >&2; exit 1; }
    "$diffstream" --help 2>&1 | grep -q -- --redis || { echo "$diffstream has no --redis" >&2; exit 1; }
fi
echo "# $(date -u +%FT%TZ), $(nproc) cores, $subscribers subscribers over 3 instances, $publishes publishes ${interval} ms apart, $runs runs per server"
echo "# $(redis-server --version | cut -d' ' -f1-3), $(nginx -v 2>&1), nchan $(dpkg-query -W -f='${Version}' libnginx-mod-nchan 2>/dev/null || echo '?'), diffstream $(git log -1 --format=%h)"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; exit 1; }
idle_jiffies() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }

redis_pid=""
redis_port=""
start_redis() {  # name
    redis_port=$(free_port)
    mkdir -p "$work/$1"
    redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/$1" --appendonly yes --appendfsync always --save "" \
        --daemonize no --loglevel warning >"$work/$1/redis.log" 2>&1 &
    redis_pid=$!
    wait_port "$redis_port"
}
stop_redis() { kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true; }

# Runs the load tool; prints its output, appends the RESULT line (with the machine's idle share and load).
measure() {  # label, then the load tool's arguments
    local label=$1; shift
    read -r idle0 total0 < <(idle_jiffies)
    local load_before; load_before=$(cut -d' ' -f1 /proc/loadavg)
    local status=0
    "$work/load" --subscribers "$subscribers" --publishes "$publishes" --interval-ms "$interval" --sources "$sources" \
        --redis-pid "$redis_pid" "$@" >"$work/out.txt" || status=$?
    read -r idle1 total1 < <(idle_jiffies)
    local idle; idle=$(( 100 * (idle1 - idle0) / (total1 - total0 > 0 ? total1 - total0 : 1) ))
    echo "## $label (exit $status; load average before $load_before, machine idle ${idle}% during the run)"
    cat "$work/out.txt"
    grep '^RESULT ' "$work/out.txt" | sed "s/\$/ idle_pct=$idle load_before=$load_before/" >>"$results"
}

run_diffstream() {
    start_redis "redis-ds-$1"
    local ports=() pids=() i log port
    for i in 0 1 2; do
        log="$work/ds-$1-$i.log"
        "$diffstream" --port 0 --redis "redis://127.0.0.1:$redis_port" --data none --max-connections $((subscribers + 1000)) \
            --max-connections-per-ip 0 --log-level warning --public Public 2>"$log" &
        pids+=($!)
        port=""
        for _ in $(seq 1 200); do
            port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
            [[ -n $port ]] && break
            sleep 0.05
        done
        [[ -n $port ]] || { echo "diffstream $i did not start:" >&2; cat "$log" >&2; exit 1; }
        ports+=("$port")
    done
    local pid_args=(); for i in "${pids[@]}"; do pid_args+=(--pid "$i"); done
    measure "diffstream x3 ($(nproc) loops each), run $1" --mode diffstream --sub-ports "$(IFS=,; echo "${ports[*]}")" --pub-port "${ports[0]}" "${pid_args[@]}"
    for i in "${pids[@]}"; do kill "$i"; done
    for i in "${pids[@]}"; do wait "$i" 2>/dev/null || true; done
    stop_redis
}

run_nchan() {
    start_redis "redis-nchan-$1"
    local ports=() masters=() pid_args=() i dir port worker
    for i in 0 1 2; do
        dir="$work/nginx-$1-$i"; mkdir -p "$dir/body"
        port=$(free_port)
        sed "s|@DIR@|$dir|g; s|@PORT@|$port|g; s|@REDIS_PORT@|$redis_port|g; s|@WORKERS@|$workers|g" \
            Benchmarks/nchan/nginx-redis.conf.template >"$dir/nginx.conf"
        nginx -c "$dir/nginx.conf" -p "$dir" -e "$dir/error.log" 2>"$dir/stderr.log" &
        masters+=($!)
        wait_port "$port"
        ports+=("$port")
        for _ in $(seq 1 100); do [[ -s $dir/nginx.pid ]] && break; sleep 0.05; done
        for worker in $(pgrep -P "$(cat "$dir/nginx.pid")"); do pid_args+=(--pid "$worker"); done
    done
    measure "nginx + nchan x3 (worker_processes $workers), run $1" --mode nchan --sub-ports "$(IFS=,; echo "${ports[*]}")" --pub-port "${ports[0]}" "${pid_args[@]}"
    for i in "${masters[@]}"; do kill "$i"; done
    for i in "${masters[@]}"; do wait "$i" 2>/dev/null || true; done
    stop_redis
    # Anything nginx logged beyond start and stop (nchan_redis_url's "discouraged" notice left out).
    grep -h -v 'signal\|exit\|gracefully\|discouraged\|start worker\|using the' "$work"/nginx-"$1"-*/error.log 2>/dev/null | head -5 || true
}

for run in $(seq 1 "$runs"); do
    order=("${servers[@]}")
    (( run % 2 == 0 )) && order=($(printf '%s\n' "${servers[@]}" | tac))
    for server in "${order[@]}"; do "run_$server" "$run"; done
done

echo
python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    fields = dict(item.split("=", 1) for item in line.split()[1:])
    rows.setdefault(fields["server"], []).append(fields)
med = lambda runs, key: statistics.median(float(r[key]) for r in runs)
print("| server | runs | p50 ms | p99 ms | publishing instance p50 / p99 ms | other instances p50 / p99 ms | missing (max) | servers CPU ms per batch | Redis CPU ms per batch | KiB per subscriber | load tool CPU ms per batch | machine idle % |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for server, runs in sorted(rows.items()):
    print(f"| {server} | {len(runs)} | {med(runs, 'p50'):.2f} | {med(runs, 'p99'):.2f} | {med(runs, 'local_p50'):.2f} / {med(runs, 'local_p99'):.2f} | "
          f"{med(runs, 'remote_p50'):.2f} / {med(runs, 'remote_p99'):.2f} | {max(int(r['missing']) for r in runs)} | {med(runs, 'cpu_ms_per_batch'):.1f} | "
          f"{med(runs, 'redis_cpu_ms_per_batch'):.2f} | {med(runs, 'kib_per_subscriber'):.2f} | {med(runs, 'tool_cpu_ms_per_batch'):.2f} | {med(runs, 'idle_pct'):.0f} |")
if "diffstream" in rows and "nchan" in rows:
    d, n = rows["diffstream"], rows["nchan"]
    print("\n| figure | per-run ratios diffstream ÷ nchan (run order) | median of the per-run ratios | ratio of the medians | goal ≤ 0.8 |")
    print("|---|---|---:|---:|---|")
    for key in ("p50", "p99"):
        per = [float(a[key]) / float(b[key]) for a, b in zip(d, n)]
        ratio = med(d, key) / med(n, key)
        print(f"| {key} | {', '.join(f'{x:.2f}' for x in per)} | {statistics.median(per):.2f} | {ratio:.2f} | {'met' if statistics.median(per) <= 0.8 and ratio <= 0.8 else 'not met'} |")
EOF
