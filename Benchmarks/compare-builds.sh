#!/usr/bin/env bash
# Two builds of diffstream against each other in the same run, interleaved: the fan-out (fanout-bench,
# plain, --data none) and durable PUTs (wrk + Benchmarks/store/put.lua, --data on a fresh directory).
# Each round runs NEW and OLD back to back for every figure, NEW first in odd rounds and OLD first in
# even ones; then prints the medians, NEW/OLD of the medians, and the spread (min..max) of the per-round
# NEW/OLD ratios, which is what tells a change from the machine's noise.
#   Benchmarks/compare-builds.sh NEW OLD      e.g. .build/release/diffstream ../wt-prev/.build/release/diffstream
#   RUNS=7 PUBLISHES=40 COUNTS="1000 5000" WRITERS="1 16" DURATION=5 LOG_LEVEL=info Benchmarks/compare-builds.sh NEW OLD
#   (COUNTS="" skips the fan-out, WRITERS="" the PUTs; DATA_BASE sets where the data directory lives)
# Besides latency and throughput it reports the server's CPU time per unit of work (utime + stime from
# /proc/<pid>/stat: per batch for the fan-out, per PUT for the store), which noisy neighbours move less
# than wall-clock figures. Build both the same way (swift build -c release --static-swift-stdlib): a
# binary linked to the toolchain's libswiftCore.so/libdispatch.so runs differently (and valgrind 3.19
# crashes in its libdispatch).
#   CALLGRIND=1 ...   then counts instructions (valgrind --tool=callgrind, the server ~50x slower; perf
#                     has no instruction counter in our VMs) for a fixed workload: SUBS (200) subscribers x
#                     CG_PUBLISHES (20) publishes, each waited for at every subscriber so that nothing
#                     coalesces ("fanout"), CG_PUTS (200) durable PUTs on one keep-alive connection ("put"),
#                     and the same CG_PUTS PUTs against a server started with --data none ("memput", the
#                     in-memory PUT: no store, no disk), and "redisput": the same PUTs through Redis
#                     (--redis --data none against a fresh redis-server of its own; not in the default
#                     CG_KINDS; counts the server's instructions, every thread, not Redis's). callgrind_control
#                     dumps around the workload, so start-up and connecting are not counted. Runs on copies
#                     without debug info (valgrind 3.19 cannot read Swift 6's DWARF 5); CG_KEEP=DIR keeps
#                     the profiles (callgrind_annotate DIR/callgrind.put.new.out).
#                     CG_KINDS (default "fanout put memput") picks them, e.g. CG_KINDS="put" counts only the
#                     durable PUTs; CG_NEW_ONLY=1 only NEW (profiling one build); CG_GZIP=1 has the fan-out's
#                     subscribers take gzip (each event is then deflated once, for all of them).
#   WALL=0 ...        skips the wall-clock part.
# Needs: wrk (apt-get install wrk), valgrind for CALLGRIND=1, and fanout-bench, built here if missing
# (swift build -c release --package-path Benchmarks --product fanout-bench). Both servers run with the
# same flags: --log-level $LOG_LEVEL (default info, the server's default), every core (default --loops),
# --max-connections-per-ip 0. The load tools' own CPU is printed so that one can check they do not set
# the pace (fanout-bench: ms per batch; wrk: % of one core).
set -euo pipefail
(( $# == 2 )) || { sed -n '2,31p' "$0"; exit 2; }
new=$(realpath "$1"); old=$(realpath "$2")
cd "$(dirname "$0")/.."
runs=${RUNS:-7}; publishes=${PUBLISHES:-40}; counts=(${COUNTS-1000 5000}); writers_list=(${WRITERS-1 16})
duration=${DURATION:-5}; log_level=${LOG_LEVEL:-info}
bench=Benchmarks/.build/release/fanout-bench
[[ ${WALL:-1} == 0 || -x $bench ]] || swift build -c release --package-path Benchmarks --product fanout-bench >/dev/null
work=$(mktemp -d "${DATA_BASE:-/tmp}/compare-builds.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
ulimit -n 20000
echo "# NEW $new"; echo "# OLD $old"
echo "# $(nproc) cores, data in $work ($(df -T "$work" | awk 'NR==2 {print $2}')), $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 did not open" >&2; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, 100 a second

start() {  # binary data [extra...] -> sets port, pid
    local binary=$1 data=$2; shift 2
    port=$(free_port)
    "$binary" --port "$port" --data "$data" --max-connections 20000 --max-connections-per-ip 0 --log-level "$log_level" \
        --public Public "$@" 2>>"$work/server.log" &
    pid=$!
    wait_port "$port"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }

fanout() {  # build binary n
    start "$2" none
    local line
    line=$("$bench" --port "$port" --pid "$pid" --subscribers "$3" --publishes "$publishes" --sources 8 | grep '^RESULT ')
    stop
    echo "RESULT kind=fanout build=$1 round=$round n=$3 ${line#RESULT }"
}

put() {  # build binary writers
    rm -rf "$work/data"
    start "$2" "$work/data"
    local t0 t1 line wrk_cpu
    t0=$(ticks "$pid")
    line=$( { TIMEFORMAT='%U %S'; time wrk -t"$3" -c"$3" -d"${duration}s" -s Benchmarks/store/put.lua "http://127.0.0.1:$port" >"$work/wrk.out"; } 2>&1 )
    t1=$(ticks "$pid")
    stop
    wrk_cpu=$(awk -v d="$duration" '{printf "%.0f", ($1 + $2) / d * 100}' <<<"$line")
    line=$(grep '^RESULT ' "$work/wrk.out")
    local rps=$(grep -o 'rps=[0-9.]*' <<<"$line" | cut -d= -f2)
    local cpu_us=$(awk -v t=$((t1 - t0)) -v r="$rps" -v d="$duration" 'BEGIN {printf "%.1f", t * 10000 / (r * d)}')
    echo "RESULT kind=put build=$1 round=$round n=$3 ${line#RESULT } server_cpu_us_per_put=$cpu_us wrk_cpu_pct=$wrk_cpu"
}

    wall_clock() {
for round in $(seq 1 "$runs"); do
        order=(new old); (( round % 2 == 0 )) && order=(old new)
        for n in "${counts[@]}"; do
            for build in "${order[@]}"; do
                [[ $build == new ]] && fanout new "$new" "$n" || fanout old "$old" "$n"
            done
        done
        for w in "${writers_list[@]}"; do
            for build in "${order[@]}"; do
                [[ $build == new ]] && put new "$new" "$w" || put old "$old" "$w"
            done
        done
    done | tee "$work/results.txt"
    python3 - "$work/results.txt" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("RESULT "): continue
    f = dict(item.split("=", 1) for item in line.split()[1:])
    rows.setdefault((f["kind"], int(f["n"])), {}).setdefault(f["build"], {})[int(f["round"])] = f
figures = {"fanout": [("p50", "p50 ms", False), ("p99", "p99 ms", False), ("cpu_ms_per_batch", "server CPU ms per batch", False)],
           "put": [("rps", "PUT/s", True), ("p99_ms", "p99 ms", False), ("server_cpu_us_per_put", "server CPU us per PUT", False)]}
print("\n| benchmark | figure | runs | NEW median | OLD median | NEW/OLD | per-round NEW/OLD min..max | load tool CPU (NEW, OLD) |")
print("|---|---|---:|---:|---:|---:|---|---|")
for (kind, n), builds in sorted(rows.items()):
    label = f"fan-out {n:,} subscribers" if kind == "fanout" else f"durable PUT, {n} writer{'s' if n > 1 else ''}"
    tool = "tool_cpu_ms_per_batch" if kind == "fanout" else "wrk_cpu_pct"
    unit = " ms/batch" if kind == "fanout" else "% of a core"
    for key, name, higher_better in figures[kind]:
        new, old = builds.get("new", {}), builds.get("old", {})
        med = lambda b: statistics.median(float(r[key]) for r in b.values())
        pairs = [float(new[r][key]) / float(old[r][key]) for r in new if r in old and float(old[r][key]) > 0]
        toolmed = lambda b: statistics.median(float(r[tool]) for r in b.values())
        print(f"| {label} | {name}{' (higher is better)' if higher_better else ''} | {len(new)} | {med(new):.2f} | {med(old):.2f} | "
              f"{med(new) / med(old):.3f} | {min(pairs):.2f}..{max(pairs):.2f} | {toolmed(new):.1f}, {toolmed(old):.1f}{unit} |")
missing = [line for line in open(sys.argv[1]) if "missing=" in line and "missing=0 " not in line]
errors = [line for line in open(sys.argv[1]) if "errors=" in line and "errors=0" not in line]
print(f"\nfan-out runs with missing events: {len(missing)}; PUT runs with errors: {len(errors)}")
EOF
}
[[ ${WALL:-1} == 0 ]] || wall_clock


[[ ${CALLGRIND:-0} == 1 ]] || exit 0
subs=${SUBS:-200}; cg_publishes=${CG_PUBLISHES:-20}; cg_puts=${CG_PUTS:-200}
objcopy --strip-debug "$new" "$work/new-nodebug"; objcopy --strip-debug "$old" "$work/old-nodebug"
# The client: "fanout" creates the feed, connects the subscribers and waits for their snapshots, then
# publishes 3 warm-up changes, signals (prints a line, waits for one on stdin) and publishes one change
# at a time, each waited for at every subscriber; "put" does 20 warm-up PUTs, signals, then the counted PUTs ("memput" runs it too,
# against --data none). Both signal at the end.
cat >"$work/client.py" <<'EOF'
import json, os, select, socket, sys, zlib
mode, port, count, subs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
GZIP = b"Accept-Encoding: gzip\r\n" if os.environ.get("CG_GZIP") == "1" else b""
inflaters = {}
def request(conn, method, path, body):
    conn.sendall(f"{method} {path} HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    data = b""
    while b"\r\n\r\n" not in data: data += conn.recv(65536)
    head, rest = data.split(b"\r\n\r\n", 1)
    length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    while len(rest) < length: rest += conn.recv(65536)
    assert int(head.split()[1]) in (200, 201), head
def fanout_body(seq):  # as fanout-bench: 20 items and a marker that moves
    items = [{"id": f"item-{i}", "kind": "card", "model": {"n": i}} for i in range(20)]
    items.insert(seq % 21, {"id": "marker", "kind": "card", "model": {"seq": f"seq-{seq}"}})
    return json.dumps({"sections": [{"id": "s", "model": None, "items": items}]}).encode()
def put_body(n):  # as Benchmarks/store/put.lua
    items = [{"id": f"i{i}", "kind": "card", "model": {"title": f"Item number {i} of the feed", "value": n if i == n % 10 + 1 else i,
              "note": "some text to make it realistic"}} for i in range(1, 11)]
    return json.dumps({"sections": [{"id": "s", "model": {"title": "Bench"}, "items": items}]}).encode()
def signal():
    print("READY", flush=True); sys.stdin.readline()
pub = socket.create_connection(("127.0.0.1", port))
if mode == "put":
    for n in range(20): request(pub, "PUT", "/feeds/bench1", put_body(n))
    signal()
    for n in range(20, 20 + count): request(pub, "PUT", "/feeds/bench1", put_body(n))
    signal(); sys.exit(0)
request(pub, "PUT", "/feeds/fanout", fanout_body(0))
socks = []
for i in range(subs):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /feeds/fanout/events HTTP/1.1\r\nHost: b\r\nAccept: text/event-stream\r\n" + GZIP + b"\r\n")
    socks.append(s)
buffers = {s: b"" for s in socks}
def wait_all(marker):
    pending = set(socks)
    while pending:
        ready, _, _ = select.select(list(pending), [], [], 300)
        assert ready, "timeout"
        for s in ready:
            data = s.recv(262144)
            if GZIP:  # the body after the head, inflated as it comes (a gzip stream of sync-flushed blocks)
                if s not in inflaters:
                    buffers.setdefault((s, "raw"), b"")
                    buffers[(s, "raw")] += data
                    if b"\r\n\r\n" not in buffers[(s, "raw")]: continue
                    data = buffers.pop((s, "raw")).split(b"\r\n\r\n", 1)[1]
                    inflaters[s] = zlib.decompressobj(16 + zlib.MAX_WBITS)
                data = inflaters[s].decompress(data)
            buffers[s] += data
            if marker in buffers[s]: pending.discard(s); buffers[s] = b""
wait_all(b'"seq-0"')
for seq in range(1, 4):  # warm-up publishes, as "put" has: types made on first use are not counted
    request(pub, "PUT", "/feeds/fanout", fanout_body(seq))
    wait_all(f'"seq-{seq}"'.encode())
signal()
for seq in range(4, count + 4):
    request(pub, "PUT", "/feeds/fanout", fanout_body(seq))
    wait_all(f'"seq-{seq}"'.encode())
signal()
EOF

instructions() {  # build kind -> RESULT line with the workload's instruction count
    local build=$1 kind=$2 data=none count=$cg_publishes mode=$2 units ir redis_pid="" extra=()
    [[ $kind == put ]] && { rm -rf "$work/data"; data=$work/data; count=$cg_puts; }
    [[ $kind == memput ]] && { count=$cg_puts; mode=put; }
    if [[ $kind == redisput ]]; then
        count=$cg_puts; mode=put
        local redis_port; redis_port=$(free_port)
        rm -rf "$work/redis"; mkdir -p "$work/redis"
        redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis" --save "" --appendonly yes --appendfsync everysec \
            --daemonize no --loglevel warning >>"$work/redis.log" 2>&1 &
        redis_pid=$!
        wait_port "$redis_port"
        extra=(--redis "redis://127.0.0.1:$redis_port")
    fi
    rm -f "$work"/cg.out*
    port=$(free_port)
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$work/$build-nodebug" --port "$port" --data "$data" "${extra[@]}" \
        --max-connections 20000 --max-connections-per-ip 0 --log-level "$log_level" --heartbeat 3600 --public Public 2>>"$work/valgrind.log" &
    pid=$!
    wait_port "$port"
    coproc client { python3 "$work/client.py" "$mode" "$port" "$count" "$subs"; }
    local cpid=$client_PID
    read -r _ <&"${client[0]}"; callgrind_control -d "$pid" >/dev/null 2>&1; echo >&"${client[1]}"
    read -r _ <&"${client[0]}"; callgrind_control -d "$pid" >/dev/null 2>&1; echo >&"${client[1]}"
    wait "$cpid" || true
    stop
    [[ -n $redis_pid ]] && { kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true; }
    # Dumps: cg.out.1 (start-up and setup), cg.out.2 (the workload), cg.out (shutting down).
    ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$work/cg.out.2")
    [[ $mode == put ]] && units=$count || units=$((count * subs))
    [[ -n ${CG_KEEP:-} ]] && cp "$work/cg.out.2" "$CG_KEEP/callgrind.$kind.$build.out"
    echo "RESULT build=$build kind=$kind instructions=$ir units=$units per_unit=$((ir / units))"
}
echo
echo "# callgrind: $subs subscribers x $cg_publishes publishes (unit: one publish delivered to one subscriber); $cg_puts PUTs, durable and in memory (unit: one PUT)"
for kind in ${CG_KINDS:-fanout put memput}; do
    instructions new "$kind"; [[ -n ${CG_NEW_ONLY:-} ]] || instructions old "$kind"
done | tee "$work/cg.txt"
python3 - "$work/cg.txt" <<'EOF'
import sys
r = {}
for line in open(sys.argv[1]):
    if line.startswith("RESULT "):
        f = dict(item.split("=", 1) for item in line.split()[1:]); r[(f["kind"], f["build"])] = int(f["per_unit"])
print("\n| workload | NEW instructions per unit | OLD | NEW/OLD |\n|---|---:|---:|---:|")
for kind, label in (("fanout", "fan-out, per publish per subscriber"), ("put", "durable PUT, per PUT"),
                    ("memput", "in-memory PUT (--data none), per PUT"), ("redisput", "PUT through Redis (--redis), per PUT")):
    if (kind, "new") in r and (kind, "old") in r:
        print(f"| {label} | {r[(kind, 'new')]:,} | {r[(kind, 'old')]:,} | {r[(kind, 'new')] / r[(kind, 'old')]:.3f} |")
EOF
