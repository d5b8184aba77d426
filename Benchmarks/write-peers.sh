#!/usr/bin/env bash
# Writes against the peers (issue 39, items 3, 4 and 5's measurement): DiffStream's write path beside a
# real peer in the same run, at 1 and 16 writers (keep-alive connections, one wrk thread each, each
# writer on its own feed or channel), ROUNDS rounds; in each round the two sides of a path take turns and
# which goes first alternates (DiffStream first in odd rounds). Prints every run (RESULT lines), then the
# medians, the per-round ratios and the runs with errors. Every server is fresh for each run.
#   memory   diffstream --data none, PUT /feeds/benchK   vs nginx+nchan in memory, POST /pub/benchK
#   redis    diffstream --redis --data none, PUT         vs nginx+nchan with nchan_redis_url, POST, on the
#            same redis-server (appendonly yes, appendfsync always; fresh for each writer count, FLUSHALL
#            between the sides)
#   durable  diffstream --data DIR (fresh), PUT          vs redis-server appendonly yes, appendfsync always:
#            redis-benchmark SET benchK <the same snapshot bytes> (as Benchmarks/run-redis-writes.sh)
#   hosted   DiffStream only, 16 writers: `action`, actions on ONE feed (diffstream --examples todo,home:
#            POST /feeds/todo/actions/rename, on 10 items added first: one item changes); `action16`, the
#            same action on 16 feeds, the members todo.w1..16 of the todo family of
#            Benchmarks/Sources/action-host (a program on the library: the todo example hosted as a
#            family, each member made with 10 items; built here, its own server; each writer on its own
#            member); `patch`, PATCH /feeds/home on ONE feed (the banner's title: one item changes); and
#            `patch16`, the same PATCH on 16 feeds, the members home.w1..16 of the home family. Order in
#            odd rounds: action16, then diffstream's action, patch, patch16; reversed in even rounds.
#            Compare with the memory path's PUT.
# The body of DiffStream's PUT and nchan's POST is the same bytes (Benchmarks/write-peers.lua: a 10-item
# snapshot of 1.5 kB in DiffStream's wire format; two items change per request, so every PUT makes a
# version). Before the timed run each diffstream feed gets one untimed PUT of the bodies' first state.
#   Benchmarks/write-peers.sh                          (ROUNDS=5 DURATION=5: about 15 minutes)
#   ROUNDS=1 DURATION=2 Benchmarks/write-peers.sh      (a smoke run: about 2 minutes)
#   PATHS="memory durable" WRITERS=16 Benchmarks/write-peers.sh
#   SUBSCRIBERS=10000 PATHS="memory redis durable" WRITERS=16 Benchmarks/write-peers.sh   (item 5)
#   SUBSCRIBERS=10000 RATE=6 PATHS="memory redis" WRITERS=16 Benchmarks/write-peers.sh   (item 5, a deliverable rate)
# Env: DIFFSTREAM (binary; default .build/release/diffstream, built with `swift build -c release
#   --static-swift-stdlib --product diffstream`), ACTION_HOST (the hosted path's action-host; by default
#   built here, `swift build -c release --static-swift-stdlib --package-path Benchmarks --product action-host`, as diffstream), ROUNDS (5),
#   DURATION (seconds per run; 5), WRITERS ("1 16"), PATHS ("memory redis durable hosted"), SIDES
#   ("diffstream peer"; one of them to run only it), NGINX_WORKERS (auto: one per core, as diffstream's
#   --loops), REPLAY (1024: diffstream --replay and nchan_message_buffer_length), DATA_BASE (where the
#   store and Redis's AOF live; /tmp), RESULTS (file for the RESULT lines), KEEP_LOGS=1, SUBSCRIBERS (0)
#   and SOURCES (8 loopback source addresses): N subscribers follow the written feeds or channels during
#   each memory, redis and durable run (spread evenly; not the SET, which has none), with
#   Benchmarks/write-subscribers.c (built here with cc), and the writes carry a timestamp in the
#   section's model (a third change per PUT) for the fan-out latency. RATE (0: as fast as answers come):
#   each writer of the memory, redis and durable paths pauses 1000/RATE ms after each answer (wrk's
#   delay()), so both servers take about the same write rate, one they can deliver to every subscriber:
#   SUBSCRIBERS=10000 RATE=6 PATHS="memory redis durable" WRITERS=16 SIDES=... compares fan-out latency
#   where neither server is queueing (the redis-benchmark SET ignores RATE).
# Both servers get every core; diffstream runs with --max-connections-per-ip 0 --log-level warning.
# Figures (medians over rounds):
#   writes/s        completed requests per second, from wrk (redis-benchmark for SET)
#   p50, p99 ms     the load tool's latency percentiles (wrk: per writer connection, closed loop)
#   server µs/write utime+stime (/proc/PID/stat) of the server over the run ÷ writes: diffstream (action-host
#                   for action16); nginx's master and workers; redis-server for SET
#   redis µs/write  the same for the redis-server behind the server (the redis path only), and in
#                   brackets the writes per Redis fsync (its fdatasync calls over the run, counted with
#                   perf's syscall tracepoints when perf can; each fsync ends one of Redis's event-loop
#                   turns, so with N writers each waiting for its answer at most N writes share one)
#   tool % core     the load tool's own CPU, user+sys ÷ wall time (100 = one core of the 2): well under
#                   the machine, it is not what sets the pace
#   check           proof the writes happened: diffstream "versions=V/W", the feeds' versions from GET
#                   /feeds/F summed (less the untimed first PUTs) against the writes wrk counted (V may
#                   pass W by the requests in flight when wrk stops: at most one per writer); nchan
#                   "queued=Q", the messages nchan holds (at most REPLAY per channel); SET "keys=K"
#   with SUBSCRIBERS: fan-out p50/p99 ms (a write's timestamp to a subscriber's socket delivering it),
#                   events received (with the share of writes × subscribers per feed: a server may
#                   coalesce for a subscriber behind, or still be sending when the run ends), the tool's CPU
# Needs: wrk, nginx, libnginx-mod-nchan, redis-server, redis-tools, curl, python3, cc (SUBSCRIBERS).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
duration=${DURATION:-5}
writers_list=(${WRITERS:-1 16})
paths=(${PATHS:-memory redis durable hosted})
workers=${NGINX_WORKERS:-auto}
replay=${REPLAY:-1024}
subscribers=${SUBSCRIBERS:-0}
rate=${RATE:-0}
sources=${SOURCES:-8}
diffstream=${DIFFSTREAM:-.build/release/diffstream}
lua=Benchmarks/write-peers.lua
sides=(${SIDES:-diffstream peer})
[[ " ${sides[*]} " != *" diffstream "* && " ${paths[*]} " != *" hosted "* ]] || [[ -x $diffstream ]] || { echo "no $diffstream: swift build -c release --static-swift-stdlib --product diffstream" >&2; exit 1; }
work=$(mktemp -d "${DATA_BASE:-/tmp}/write-peers.XXXXXX")
results=${RESULTS:-$work/results.txt}
cleanup() {
    local p
    for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n ${KEEP_LOGS:-} ]] && echo "logs kept in $work" || rm -rf "$work"
}
trap cleanup EXIT
action_host=${ACTION_HOST:-}
if [[ " ${paths[*]} " == *" hosted "* && -z $action_host ]]; then  # the todo family, for action16
    swift build -c release --static-swift-stdlib --package-path Benchmarks --product action-host >"$work/action-host-build.log" 2>&1 ||
        { cat "$work/action-host-build.log" >&2; exit 1; }
    action_host=$(swift build -c release --static-swift-stdlib --package-path Benchmarks --show-bin-path)/action-host
fi
if (( subscribers > 0 )); then
    ulimit -n $(( subscribers + 4096 ))
    cc -O2 -o "$work/write-subscribers" Benchmarks/write-subscribers.c
fi
echo "# $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), data in $work ($(df -T "$work" | awk 'NR==2 {print $2}'))"
echo "# diffstream $diffstream (repo $(git log -1 --format=%h))${action_host:+, action-host $action_host}, $(nginx -v 2>&1 | cut -d' ' -f3), nchan $(dpkg-query -W -f '${Version}' libnginx-mod-nchan 2>/dev/null || echo '?'), $(redis-server --version | cut -d' ' -f3), ROUNDS=$rounds DURATION=$duration SUBSCRIBERS=$subscribers RATE=$rate"

hz=$(getconf CLK_TCK)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; exit 1; }
ticks() { local p t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $t; }
us_per() { awk -v t="$1" -v n="$2" -v hz="$hz" 'BEGIN {printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0)}'; }

# --- the servers -------------------------------------------------------------------------------------
ds_pid=""; ds_port=""
start_diffstream() {  # extra flags...
    ds_port=$(free_port)
    "$diffstream" --port "$ds_port" --max-connections 20000 --max-connections-per-ip 0 --log-level warning \
        --replay "$replay" --public Public "$@" 2>>"$work/diffstream.log" &
    ds_pid=$!
    wait_port "$ds_port"
}
stop_diffstream() { kill "$ds_pid"; wait "$ds_pid" 2>/dev/null || true; }
# Benchmarks/Sources/action-host (the todo family) in diffstream's place: ds_pid and ds_port are its.
start_action_host() {
    : >"$work/action-host.out"
    "$action_host" --port 0 --data none >"$work/action-host.out" 2>>"$work/action-host.log" &
    ds_pid=$!
    for _ in $(seq 1 600); do
        ds_port=$(sed -n '1s/^port=//p' "$work/action-host.out")
        [[ -n $ds_port ]] && return 0
        kill -0 "$ds_pid" 2>/dev/null || break
        sleep 0.05
    done
    echo "action-host did not start:" >&2; cat "$work/action-host.log" >&2; exit 1
}

ng_pid=""; ng_port=""
start_nchan() {  # redis port or ""
    ng_port=$(free_port)
    local dir="$work/nginx" redis=""
    rm -rf "$dir"; mkdir -p "$dir/body"
    [[ -n $1 ]] && redis="nchan_redis_url \"redis://127.0.0.1:$1\"; nchan_use_redis on;"
    sed -e "s|@DIR@|$dir|g" -e "s|@PORT@|$ng_port|" -e "s|@WORKERS@|$workers|" -e "s|@BUFFER@|$replay|" -e "s|@REDIS@|$redis|" \
        Benchmarks/nchan/nginx-writes.conf.template >"$dir/nginx.conf"
    nginx -c "$dir/nginx.conf" -p "$dir" 2>>"$work/nginx.log" &
    ng_pid=$!
    wait_port "$ng_port"
    # nchan with Redis answers 503 until it has connected: wait for a first publish.
    for _ in $(seq 1 100); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' -X POST --data x "http://127.0.0.1:$ng_port/pub/warmup") == 20* ]] && return 0
        sleep 0.1
    done
    echo "nchan does not take publishes:" >&2; cat "$dir/error.log" >&2; exit 1
}
nginx_pids() { echo "$ng_pid" $(pgrep -P "$ng_pid" || true); }
stop_nchan() { kill -QUIT "$ng_pid" 2>/dev/null || true; wait "$ng_pid" 2>/dev/null || true; }

rd_pid=""; rd_port=""
start_redis() {
    rd_port=$(free_port)
    rm -rf "$work/redis"; mkdir -p "$work/redis"
    # No automatic AOF rewrite: it would fork in the middle of one side's run (run-redis-writes.sh).
    redis-server --port "$rd_port" --bind 127.0.0.1 --dir "$work/redis" --appendonly yes --appendfsync always --save "" \
        --auto-aof-rewrite-percentage 0 --daemonize no --loglevel warning >>"$work/redis.log" 2>&1 &
    rd_pid=$!
    wait_port "$rd_port"
}
stop_redis() { kill "$rd_pid"; wait "$rd_pid" 2>/dev/null || true; }

# --- the load --------------------------------------------------------------------------------------
# wrk_run URL writers server-pids -- lua args... -> "rps=… p50_ms=… p99_ms=… errors=… requests=… server_cpu_us=… redis_cpu_us=… tool_cpu_pct=…"
wrk_run() {
    local url=$1 writers=$2 pids=$3; shift 4
    local t0 r0=0 t1 r1=0 times line perf_pid="" fsyncs=""
    t0=$(ticks $pids); [[ -n $rd_pid ]] && r0=$(ticks "$rd_pid")
    if [[ -n $rd_pid ]] && command -v perf >/dev/null; then  # Redis's fsyncs over the run (tracepoints)
        perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync -p "$rd_pid" -o "$work/perf.out" 2>/dev/null &
        perf_pid=$!
    fi
    times=$( { TIMEFORMAT='%U %S %R'; time wrk -t"$writers" -c"$writers" -d"${duration}s" -s "$lua" "$url" -- "$@" >"$work/wrk.out"; } 2>&1 )
    t1=$(ticks $pids); [[ -n $rd_pid ]] && r1=$(ticks "$rd_pid")
    if [[ -n $perf_pid ]]; then
        kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true
        fsyncs=$(awk -F, '/^[0-9]/ {n += $1; seen = 1} END {if (seen) print n}' "$work/perf.out" 2>/dev/null)
    fi
    line=$(grep '^RESULT ' "$work/wrk.out") || { cat "$work/wrk.out" >&2; exit 1; }
    local requests=${line##*requests=}
    echo "${line#RESULT } server_cpu_us=$(us_per $((t1 - t0)) "$requests") redis_cpu_us=$(us_per $((r1 - r0)) "$requests")" \
        "tool_cpu_pct=$(awk '{printf "%.0f", ($1 + $2) / $3 * 100}' <<<"$times")${fsyncs:+ redis_fsyncs=$fsyncs}"
}

versions() {  # port feed... -> sum of the feeds' versions
    local port=$1 v sum=0; shift
    for f in "$@"; do
        v=$(curl -s "http://127.0.0.1:$port/feeds/$f" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("version", 0))' 2>/dev/null || echo 0)
        sum=$((sum + v))
    done
    echo $sum
}
feeds() { local k; for k in $(seq 1 "$1"); do echo "bench$k"; done; }

field() { grep -o "\b$1=[0-9.]*" <<<"$2" | head -1 | cut -d= -f2; }

# With SUBSCRIBERS=N: N subscribers follow the written feeds (channels) during the run, spread evenly
# (Benchmarks/write-subscribers.c), and the writes carry write-peers.lua's marker.
sub_pid=""
start_subscribers() {  # port path-format feeds
    (( subscribers > 0 )) || return 0
    "$work/write-subscribers" --port "$1" --path "$2" --feeds "$3" --subscribers "$subscribers" --sources "$sources" >"$work/subs.out" 2>&1 &
    sub_pid=$!
    for _ in $(seq 1 1200); do grep -q '^READY' "$work/subs.out" && return 0; sleep 0.1; done
    echo "the subscribers did not connect:" >&2; cat "$work/subs.out" >&2; exit 1
}
# Sets sub_fields to the tool's fields (or nothing). Not to be called in $(...): a subshell cannot wait
# for the tool (not its child), and would read subs.out before the tool wrote its result.
sub_fields=""
stop_subscribers() {
    sub_fields=""
    [[ -n $sub_pid ]] || return 0
    kill -TERM "$sub_pid"; wait "$sub_pid" 2>/dev/null || true; sub_pid=""
    sub_fields=$(grep '^RESULT ' "$work/subs.out" | sed 's/^RESULT //')
}
marker=(); (( subscribers > 0 )) && marker=(marker)
(( rate > 0 )) && marker=("${marker[0]:--}" "$rate")  # write-peers.lua's 5th argument: writes/s per writer

diffstream_put() {  # writers -> fields
    local w=$1 fields k subs
    for k in $(seq 1 "$w"); do  # the feeds, at the bodies' first state (so the first timed PUT changes two items)
        curl -s -o /dev/null -X PUT -H 'Content-Type: application/json' --data "$(body "")" "http://127.0.0.1:$ds_port/feeds/bench$k"
    done
    start_subscribers "$ds_port" "/feeds/bench%d/events" "$w"
    fields=$(wrk_run "http://127.0.0.1:$ds_port" "$w" "$ds_pid" -- snapshot PUT /feeds/bench "${marker[@]}")
    stop_subscribers; subs=$sub_fields
    echo "$fields check=versions=$(( $(versions "$ds_port" $(feeds "$w")) - w ))/$(field requests "$fields") $subs"
}

nchan_post() {  # writers -> fields
    local w=$1 fields queued=0 k subs
    start_subscribers "$ng_port" "/sub/bench%d" "$w"
    fields=$(wrk_run "http://127.0.0.1:$ng_port" "$w" "$(nginx_pids)" -- snapshot POST /pub/bench "${marker[@]}")
    stop_subscribers; subs=$sub_fields
    for k in $(seq 1 "$w"); do
        queued=$((queued + $(curl -s -H 'Accept: application/json' "http://127.0.0.1:$ng_port/pub/bench$k" |
            python3 -c 'import json, sys; print(json.load(sys.stdin).get("messages", 0))' 2>/dev/null || echo 0)))
    done
    echo "$fields check=queued=$queued $subs"
}

# A body of write-peers.lua, byte for byte: flipped items as a list ("" for the first state, "1 6" for the
# first body wrk sends).
body() {
    python3 - "$1" <<'PY'
import sys
flipped = {int(i) for i in sys.argv[1].split()}
item = lambda i, f: ('{"id":"i%d","kind":"card","model":{"title":"Item number %d of the feed","value":%d,"done":%s,'
                     '"note":"some text to make it realistic, a subtitle"}}' % (i, i, 1000 + i if f else i, "true" if f else "false"))
print('{"sections":[{"id":"s","model":{"title":"Bench"},"items":[' + ",".join(item(i, i in flipped) for i in range(1, 11)) + ']}]}', end="")
PY
}
set_body=$(body "1 6")

redis_set() {  # writers -> fields (redis-benchmark has no duration: a probe sizes -n to about DURATION)
    local w=$1 probe n times line t0 t1
    probe=$(redis-benchmark -p "$rd_port" -c "$w" -n $((w * 200)) -r "$w" --csv SET 'bench__rand_int__' "$set_body" 2>/dev/null |
        awk -F, 'NR == 2 {gsub(/"/, ""); printf "%d", $(NF - 6)}')
    n=$(( probe * duration > 1000 ? probe * duration : 1000 ))
    redis-cli -p "$rd_port" flushall >/dev/null
    t0=$(ticks "$rd_pid")
    times=$( { TIMEFORMAT='%U %S %R'; time redis-benchmark -p "$rd_port" -c "$w" -n "$n" -r "$w" --csv SET 'bench__rand_int__' "$set_body" >"$work/rb.out" 2>/dev/null; } 2>&1 )
    t1=$(ticks "$rd_pid")
    line=$(awk -F, 'NR == 2 {gsub(/"/, ""); printf "rps=%s p50_ms=%s p99_ms=%s", $(NF - 6), $(NF - 3), $(NF - 1)}' "$work/rb.out")
    echo "$line errors=0 requests=$n server_cpu_us=$(us_per $((t1 - t0)) "$n") redis_cpu_us=0.0" \
        "tool_cpu_pct=$(awk '{printf "%.0f", ($1 + $2) / $3 * 100}' <<<"$times") check=keys=$(redis-cli -p "$rd_port" dbsize)"
}

hosted() {  # kind (action|action16|patch|patch16) -> fields, at 16 writers on one feed (…16: on 16 feeds)
    local kind=$1 fields v0 v1 k
    local -a feed=(todo) args=(action)
    [[ $kind == patch ]] && { feed=(home); args=(patch); }
    if [[ $kind == action16 ]]; then  # 16 members of action-host's todo family (the GET below makes them)
        feed=(); for k in $(seq 1 16); do feed+=("todo.w$k"); done
        args=(action /feeds/todo.w)
    fi
    if [[ $kind == patch16 ]]; then  # 16 members of the home.<user> family, made before the run
        feed=(); for k in $(seq 1 16); do feed+=("home.w$k"); done
        args=(patch /feeds/home.w)
        for k in "${feed[@]}"; do curl -s -o /dev/null -X PATCH -H 'Content-Type: application/json' --data '{"banner":{"id":"bench","title":"first"}}' "http://127.0.0.1:$ds_port/feeds/$k"; done
    fi
    v0=$(versions "$ds_port" "${feed[@]}")
    fields=$(wrk_run "http://127.0.0.1:$ds_port" 16 "$ds_pid" -- "${args[@]}")
    v1=$(versions "$ds_port" "${feed[@]}")
    echo "$fields check=versions=$((v1 - v0))/$(field requests "$fields")"
}

# --- the rounds --------------------------------------------------------------------------------------
record() {  # path side writers fields
    echo "RESULT path=$1 side=$2 writers=$3 round=$round $4" | tee -a "$results"
}
one() {  # path side writers: starts the side's server, runs, stops it, records
    local path=$1 side=$2 w=$3 fields
    case $path/$side in
        memory/diffstream) start_diffstream --data none --examples none; fields=$(diffstream_put "$w"); stop_diffstream ;;
        memory/peer) start_nchan ""; fields=$(nchan_post "$w"); stop_nchan ;;
        redis/diffstream) start_diffstream --data none --examples none --redis "redis://127.0.0.1:$rd_port"
                          fields=$(diffstream_put "$w"); stop_diffstream ;;
        redis/peer) start_nchan "$rd_port"; fields=$(nchan_post "$w"); stop_nchan ;;
        durable/diffstream) rm -rf "$work/store"; start_diffstream --data "$work/store" --examples none
                            fields=$(diffstream_put "$w"); stop_diffstream ;;
        durable/peer) fields=$(redis_set "$w") ;;
    esac
    [[ -n $rd_pid ]] && redis-cli -p "$rd_port" flushall >/dev/null
    record "$path" "$side" "$w" "$fields"
}

for round in $(seq 1 "$rounds"); do
    order=("${sides[@]}"); (( round % 2 == 0 && ${#sides[@]} == 2 )) && order=("${sides[1]}" "${sides[0]}")
    for path in "${paths[@]}"; do
        if [[ $path == hosted ]]; then
            # action16 on its own server, first in odd rounds and last in even ones.
            if (( round % 2 == 1 )); then start_action_host; record hosted action16 16 "$(hosted action16)"; stop_diffstream; fi
            start_diffstream --data none --examples todo,home
            for k in $(seq 1 10); do  # the ten items (t1..t10) the renames go to
                curl -s -o /dev/null -X POST -H 'Content-Type: application/json' --data "{\"title\":\"item $k\"}" \
                    "http://127.0.0.1:$ds_port/feeds/todo/actions/add"
            done
            kinds=(action patch patch16); (( round % 2 == 0 )) && kinds=(patch16 patch action)
            for kind in "${kinds[@]}"; do record hosted "$kind" 16 "$(hosted "$kind")"; done
            stop_diffstream
            if (( round % 2 == 0 )); then start_action_host; record hosted action16 16 "$(hosted action16)"; stop_diffstream; fi
            continue
        fi
        for w in "${writers_list[@]}"; do
            [[ $path == memory ]] || start_redis
            for side in "${order[@]}"; do one "$path" "$side" "$w"; done
            [[ $path == memory ]] || { stop_redis; rd_pid=""; }
        done
    done
done

echo
python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith("RESULT "): continue
    f = dict(item.split("=", 1) for item in line.split()[1:])
    rows.setdefault((f["path"], int(f["writers"]), f["side"]), {})[int(f["round"])] = f
names = {("memory", "diffstream"): "diffstream --data none, PUT", ("memory", "peer"): "nginx+nchan in memory, POST",
         ("redis", "diffstream"): "diffstream --redis, PUT", ("redis", "peer"): "nginx+nchan nchan_redis_url, POST",
         ("durable", "diffstream"): "diffstream --data DIR, PUT", ("durable", "peer"): "redis-server appendfsync always, SET",
         ("hosted", "action"): "diffstream todo action (rename), 1 feed",
         ("hosted", "action16"): "action-host todo.<key> action (rename), 16 feeds", ("hosted", "patch"): "diffstream home PATCH, 1 feed",
         ("hosted", "patch16"): "diffstream home.<user> PATCH, 16 feeds"}
order = {"memory": 0, "redis": 1, "durable": 2, "hosted": 3}
kinds = {"action": 0, "action16": 1, "patch": 2, "patch16": 3}  # the hosted rows
med = lambda runs, key: statistics.median(float(r[key]) for r in runs.values())
print("| path | writers | system | rounds | writes/s | p50 ms | p99 ms | server µs/write | redis µs/write | load tool % core | check (last round) |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
for (path, w, side), runs in sorted(rows.items(), key=lambda kv: (order[kv[0][0]], kv[0][1], kv[0][2] != "diffstream", kinds.get(kv[0][2], 0))):
    redis = f"{med(runs, 'redis_cpu_us'):.0f}" if path == "redis" else "–"
    if path == "redis" and all(float(r.get("redis_fsyncs", 0)) > 0 for r in runs.values()):
        redis += f" ({statistics.median(float(r['requests']) / float(r['redis_fsyncs']) for r in runs.values()):.1f} per fsync)"
    print(f"| {path} | {w} | {names[(path, side)]} | {len(runs)} | {med(runs, 'rps'):,.0f} | {med(runs, 'p50_ms'):.2f} | "
          f"{med(runs, 'p99_ms'):.2f} | {med(runs, 'server_cpu_us'):.0f} | {redis} | {med(runs, 'tool_cpu_pct'):.0f} | "
          f"{runs[max(runs)]['check']} |")
print("\n| path | writers | per-round diffstream ÷ peer, writes/s | median | server CPU per write, diffstream ÷ peer (median) | goal at 16 writers |")
print("|---|---:|---|---:|---:|---|")
goals = {"memory": "≥ 1.0×, CPU per write ≤ nchan's", "redis": "≥ 1.0×", "durable": "≥ 1.0×, p99 ≤ 2× Redis's"}
for path in ("memory", "redis", "durable"):
    for w in sorted({k[1] for k in rows if k[0] == path}):
        d, p = rows.get((path, w, "diffstream"), {}), rows.get((path, w, "peer"), {})
        both = [r for r in sorted(d) if r in p]
        per = [float(d[r]["rps"]) / float(p[r]["rps"]) for r in both if float(p[r]["rps"]) > 0]
        cpu = [float(d[r]["server_cpu_us"]) / float(p[r]["server_cpu_us"]) for r in both if float(p[r]["server_cpu_us"]) > 0]
        if per:
            print(f"| {path} | {w} | {', '.join(f'{x:.2f}' for x in per)} | {statistics.median(per):.2f} | "
                  f"{statistics.median(cpu) if cpu else float('nan'):.2f} | {goals[path] if w == 16 else '–'} |")
fan = {k: runs for k, runs in rows.items() if all("fanout_p99_ms" in r for r in runs.values())}
if fan:
    print("\n| path | writers | system | subscribers (connected) | writes/s | fan-out p50 ms | fan-out p99 ms | events received (of writes × subscribers per feed) | subscriber tool % core |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for (path, w, side), runs in sorted(fan.items(), key=lambda kv: (order[kv[0][0]], kv[0][1], kv[0][2] != "diffstream", kinds.get(kv[0][2], 0))):
        last = runs[max(runs)]
        print(f"| {path} | {w} | {names[(path, side)]} | {last['subscribers']} | {med(runs, 'rps'):,.0f} | {med(runs, 'fanout_p50_ms'):.2f} | "
              f"{med(runs, 'fanout_p99_ms'):.2f} | {med(runs, 'events'):,.0f} ({med(runs, 'events') / statistics.median(float(r['requests']) * float(r['subscribers']) / w for r in runs.values()):.0%}) | "
              f"{med(runs, 'sub_tool_cpu_pct'):.0f} |")
bad = [l.strip() for l in open(sys.argv[1]) if l.startswith("RESULT ") and " errors=0 " not in l]
print(f"\nruns with errors: {len(bad)}")
for l in bad: print("  " + l)
EOF
