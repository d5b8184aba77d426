#!/usr/bin/env bash
# Issue 54's benchmark: N readers of one public feed through nginx's cache, against the same N on
# direct event streams, and against nginx+nchan's event streams, one publish a second; RUNS runs of each,
# alternating the order, then the medians.
#   Benchmarks/log-cache.sh                         (N=10000 RUNS=3 PUBLISHES=20 INTERVAL=1)
#   N=2000 RUNS=1 PUBLISHES=10 Benchmarks/log-cache.sh
#   LOG=1 ...   nginx logs the cache's answers ($upstream_cache_status): after each cache run, how many
#               requests of each URL went to the origin (MISS), the most first
#   ONLY=cache ...            only the cache runs (no direct, no nchan)
#   CONF=/tmp/other.conf ...  the cache runs with another nginx configuration than deploy/nginx-cache.conf
#               (an A/B: `git show REV:deploy/nginx-cache.conf > /tmp/other.conf`)
# - cache: diffstream behind nginx with deploy/nginx-cache.conf (its listen port, upstream, cache
#   folder and pid file changed, no access log); the readers follow GET /feeds/F/log (fanout-bench
#   --poll: the snapshot, then live reads with the cursor, one request at a time on a kept-alive
#   connection each). Reported: the origin's CPU and log requests per publish (its /metrics), nginx's
#   CPU per publish (all workers), and delivery p50/p99 from the PUT to each reader having it.
# - direct: the same N on the origin's own event streams (GET /feeds/F/events): its CPU per publish.
# - nchan: nginx+nchan with the same N on event streams (Benchmarks/nchan/nginx.conf.template): nginx's
#   CPU per publish.
# Needs: nginx and libnginx-mod-nchan. Builds the release diffstream and fanout-bench if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-10000}
runs=${RUNS:-3}
publishes=${PUBLISHES:-20}
interval=${INTERVAL:-1}
conf=${CONF:-deploy/nginx-cache.conf}
only=${ONLY:-}
if [[ $only != cache && ! -f /usr/lib/nginx/modules/ngx_nchan_module.so ]]; then
    echo "no nchan module (Benchmarks/nchan/nginx.conf.template loads it): apt-get install libnginx-mod-nchan, or ONLY=cache" >&2
    exit 1
fi
binary=${BINARY:-.build/release/diffstream}
[[ -x $binary ]] || swift build -c release --static-swift-stdlib --product diffstream >/dev/null
bench=Benchmarks/.build/release/fanout-bench
[[ -x $bench ]] || swift build -c release --package-path Benchmarks --product fanout-bench >/dev/null
work=$(mktemp -d)
chmod 755 "$work"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
ulimit -n 20000

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; exit 1; }

start_origin() {  # sets origin_pid, origin_port
    : > "$work/ds.log"
    "$binary" --port 0 --data none --examples none --max-connections $((n + 100)) --max-connections-per-ip 0 --log-level warning \
        --public Public 2>"$work/ds.log" &
    origin_pid=$!
    origin_port=""
    for _ in $(seq 1 100); do
        origin_port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/ds.log" | head -1)
        [[ -n $origin_port ]] && break
        sleep 0.1
    done
}

stop_origin() { kill "$origin_pid"; wait "$origin_pid" 2>/dev/null || true; }

start_nginx() {  # config: sets nginx_pids (--pid args)
    nginx -c "$1" -p "$work" -g 'daemon off;' 2>>"$work/nginx.err" &
    nginx_job=$!
    wait_port "$2"
    nginx_pids=()
    for worker in $(pgrep -P "$(cat "$work/nginx.pid")"); do nginx_pids+=(--pid "$worker"); done
    nginx_workers=$(pgrep -P "$(cat "$work/nginx.pid")" -f "worker process" | wc -l)
}

stop_nginx() { kill "$nginx_job"; wait "$nginx_job" 2>/dev/null || true; rm -f "$work/nginx.pid"; }

run_cache() {
    start_origin
    local port; port=$(free_port)
    rm -rf "$work/cache"; mkdir -p "$work/cache" "$work/body"
    # nginx's workers run as nobody when it starts as root: the cache folder must be theirs.
    [[ $(id -u) == 0 ]] && chown nobody "$work/cache" "$work/body"
    local access="access_log off;"
    [[ ${LOG:-0} == 1 ]] && access="log_format cached '\$upstream_cache_status \$status \$request_uri'; access_log $work/access.log cached;"
    sed -e "s|listen 80;|listen 127.0.0.1:$port;|" -e "s|server 127.0.0.1:8080;|server 127.0.0.1:$origin_port;|" \
        -e "s|/var/cache/nginx/diffstream|$work/cache|" -e "s|pid /run/nginx-diffstream-cache.pid;|pid $work/nginx.pid;|" \
        -e "s|access_log /dev/stdout;|$access client_body_temp_path $work/body;|" -e "s|worker_connections 16384;|worker_connections 30000;|" \
        "$conf" > "$work/nginx-cache.conf"
    start_nginx "$work/nginx-cache.conf" "$port"
    echo "## cache: diffstream behind nginx ($conf: $nginx_workers workers, $(( ${#nginx_pids[@]} / 2 )) processes measured), $n readers"
    "$bench" --poll --port "$port" "${nginx_pids[@]}" --origin-port "$origin_port" --origin-pid "$origin_pid" \
        --subscribers "$n" --publishes "$publishes" --interval "$interval" --sources 8 | tee -a "$work/out.txt"
    stop_nginx
    stop_origin
    if [[ ${LOG:-0} == 1 ]]; then
        echo "origin requests (MISS) per URL, the most first:"
        awk '$1 == "MISS" {print $3}' "$work/access.log" | sort | uniq -c | sort -rn | head -5
        rm -f "$work/access.log"
    fi
}

run_direct() {
    start_origin
    echo "## direct: diffstream's event streams, $n subscribers"
    "$bench" --port "$origin_port" --pid "$origin_pid" --subscribers "$n" --publishes "$publishes" --interval "$interval" --sources 8 | tee -a "$work/out.txt"
    stop_origin
}

run_nchan() {
    local port; port=$(free_port)
    mkdir -p "$work/body"
    sed "s|@DIR@|$work|g; s|@PORT@|$port|g; s|daemon off;||" Benchmarks/nchan/nginx.conf.template > "$work/nginx-nchan.conf"
    start_nginx "$work/nginx-nchan.conf" "$port"
    echo "## nchan: nginx+nchan's event streams ($nginx_workers workers), $n subscribers"
    "$bench" --port "$port" "${nginx_pids[@]}" --nchan --subscribers "$n" --publishes "$publishes" --interval "$interval" --sources 8 | tee -a "$work/out.txt"
    stop_nginx
}

for run in $(seq 1 "$runs"); do
    if [[ $only == cache ]]; then run_cache; continue; fi
    case $(( run % 3 )) in
        1) run_cache; run_direct; run_nchan ;;
        2) run_direct; run_nchan; run_cache ;;
        0) run_nchan; run_cache; run_direct ;;
    esac
done

grep '^RESULT ' "$work/out.txt" > "$work/results.txt"
python3 - "$work/results.txt" "$n" <<'PY'
import statistics, sys
n = int(sys.argv[2])
rows = {}
for line in open(sys.argv[1]):
    fields = dict(item.split("=", 1) for item in line.split()[1:])
    rows.setdefault(fields["server"], []).append(fields)
med = lambda server, key: statistics.median(float(r[key]) for r in rows[server])
print(f"\n| {n:,} readers | runs | p50 ms | p99 ms | missing (max) | origin CPU ms per publish | origin requests per publish | nginx CPU ms per publish | nginx CPU µs per delivery |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for server, label in (("diffstream-log-cache", "cache (nginx in front)"), ("diffstream", "direct event streams"), ("nchan", "nginx+nchan event streams")):
    if server not in rows:
        continue
    runs = rows[server]
    missing = max(int(r["missing"]) for r in runs)
    if server == "diffstream-log-cache":
        origin, requests, cache = med(server, "origin_cpu_ms_per_batch"), f"{med(server, 'origin_requests_per_batch'):.2f}", med(server, "cpu_ms_per_batch")
        nginx = f"{cache:.1f}"; per = f"{cache * 1000 / n:.2f}"
    elif server == "diffstream":
        origin, requests, nginx, per = med(server, "cpu_ms_per_batch"), "", "", ""
    else:
        origin, requests, nginx, per = float("nan"), "", f"{med(server, 'cpu_ms_per_batch'):.1f}", f"{med(server, 'cpu_ms_per_batch') * 1000 / n:.2f}"
    print(f"| {label} | {len(runs)} | {med(server, 'p50'):.1f} | {med(server, 'p99'):.1f} | {missing} | {origin:.2f} | {requests} | {nginx} | {per} |")
if "diffstream-log-cache" in rows and "diffstream" in rows:
    print(f"\norigin CPU per publish, cache / direct: {med('diffstream-log-cache', 'origin_cpu_ms_per_batch') / med('diffstream', 'cpu_ms_per_batch'):.3f}")
if "diffstream-log-cache" in rows and "nchan" in rows:
    print(f"nginx CPU per delivery, cache / nchan: {med('diffstream-log-cache', 'cpu_ms_per_batch') / med('nchan', 'cpu_ms_per_batch'):.2f}")
PY
