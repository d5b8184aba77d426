#!/usr/bin/env bash
# Durable writes through Redis (issue 26): diffstream --redis (one instance, --data none) answering PUTs
# of a small snapshot, against redis-benchmark SET of the same size on the same redis-server
# (appendonly yes, appendfsync always), at 1 and 16 writers, keep-alive connections. Each round and
# writer count gets a fresh redis-server; diffstream and redis-benchmark take turns on it (which goes
# first alternates by round), with a FLUSHALL between them. Automatic AOF rewrites are off
# (auto-aof-rewrite-percentage 0): redis-benchmark passes the 64 MB that starts one within a run at 16
# writers, diffstream does not, and a rewrite forks in the middle of the peer's run. Prints every round, the medians and the
# per-round ratios.
#   Benchmarks/run-redis-writes.sh                (ROUNDS=5 DURATION=5)
# Env: DIFFSTREAM (binary; default .build/release/diffstream), ROUNDS, DURATION (seconds of each wrk
#   run), SET_REQUESTS_1 / SET_REQUESTS_16 (redis-benchmark -n; by default a probe sizes it to DURATION),
#   DATA_BASE (where redis keeps its AOF; default /tmp), KEEP_LOGS=1.
# Needs: wrk, redis-server, redis-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
duration=${DURATION:-5}
diffstream=${DIFFSTREAM:-.build/release/diffstream}
[[ -x $diffstream ]] || { echo "no $diffstream: swift build -c release --product diffstream" >&2; exit 1; }
"$diffstream" --help 2>&1 | grep -q -- --redis || { echo "$diffstream has no --redis" >&2; exit 1; }
work=$(mktemp -d "${DATA_BASE:-/tmp}/redis-writes.XXXXXX")
cleanup() {
    local p
    for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n ${KEEP_LOGS:-} ]] && echo "logs kept in $work" || rm -rf "$work"
}
trap cleanup EXIT
# redis-benchmark -d: the size of the body Benchmarks/store/put.lua sends (1282 to 1287 bytes).
payload=1284
echo "# $(date -u +%FT%TZ), $(nproc) cores, AOF in $work ($(df -T "$work" | awk 'NR==2 {print $2}')), $(redis-server --version | cut -d' ' -f1-3), diffstream $(git log -1 --format=%h)"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; exit 1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
idle_jiffies() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
info_field() { redis-cli -p "$redis_port" info "$1" | tr -d '\r' | awk -F: -v k="$2" '$1 == k {print $2}'; }
hz=$(getconf CLK_TCK)

# Appends machine idle %, load average and per-operation CPU and AOF bytes to a RESULT line.
redis_port=""; redis_pid=""
before() {
    read -r idle0 total0 < <(idle_jiffies)
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    redis_ticks0=$(cpu_ticks "$redis_pid")
    aof0=$(info_field persistence aof_current_size)
    cmds0=$(info_field stats total_commands_processed)
}
after() {  # line, server pid or "", operations -> the line with extra fields
    local line=$1 pid=$2 ops=$3 idle1 total1
    read -r idle1 total1 < <(idle_jiffies)
    local idle=$(( 100 * (idle1 - idle0) / (total1 - total0 > 0 ? total1 - total0 : 1) ))
    local redis_us=$(( (($(cpu_ticks "$redis_pid") - redis_ticks0) * 1000000 / hz) / (ops > 0 ? ops : 1) ))
    local aof_bytes=$(( ($(info_field persistence aof_current_size) - aof0) / (ops > 0 ? ops : 1) ))
    local cmds=$(( ($(info_field stats total_commands_processed) - cmds0) * 100 / (ops > 0 ? ops : 1) ))
    local server_us=0
    [[ -n $pid ]] && server_us=$(( ((server_ticks1 - server_ticks0) * 1000000 / hz) / (ops > 0 ? ops : 1) ))
    echo "$line idle_pct=$idle load_before=$load_before redis_cpu_us_per_op=$redis_us aof_bytes_per_op=$aof_bytes redis_cmds_per_op=$(awk -v c="$cmds" 'BEGIN {printf "%.2f", c / 100}') server_cpu_us_per_op=$server_us"
}

run_diffstream() {  # writers -> RESULT line
    local writers=$1 log="$work/ds.log" port=""
    "$diffstream" --port 0 --redis "redis://127.0.0.1:$redis_port" --data none --log-level warning --public Public 2>"$log" &
    local pid=$!
    for _ in $(seq 1 200); do
        port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)
        [[ -n $port ]] && break
        sleep 0.05
    done
    [[ -n $port ]] || { echo "diffstream did not start:" >&2; cat "$log" >&2; exit 1; }
    before
    server_ticks0=$(cpu_ticks "$pid")
    local out; out=$(wrk -t"$writers" -c"$writers" -d"${duration}s" -s Benchmarks/store/put.lua "http://127.0.0.1:$port")
    server_ticks1=$(cpu_ticks "$pid")
    local line; line=$(grep RESULT <<<"$out")
    local requests; requests=$(awk '/requests in/ {print $1}' <<<"$out")
    after "$line requests=$requests" "$pid" "$requests"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    grep -i 'warn\|error' "$log" | grep -v 'appendfsync\|listening' | head -3 >&2 || true
}

run_redis_benchmark() {  # writers -> RESULT line
    local writers=$1
    # redis-benchmark has no duration: a short probe sets -n so that the run takes about DURATION seconds
    # (SET_REQUESTS_1 / SET_REQUESTS_16 fix it instead).
    local fixed; fixed=$(( writers == 1 ? ${SET_REQUESTS_1:-0} : ${SET_REQUESTS_16:-0} ))
    local requests=$fixed
    if (( requests == 0 )); then
        local probe_rps; probe_rps=$(redis-benchmark -p "$redis_port" -t set -d $payload -c "$writers" -n $(( writers * 200 )) -r 100000 --csv 2>/dev/null |
            awk -F'"' '/SET/ {printf "%d", $4}')
        requests=$(( probe_rps * duration > 1000 ? probe_rps * duration : 1000 ))
        redis-cli -p "$redis_port" flushall >/dev/null
    fi
    before
    local line
    line=$(redis-benchmark -p "$redis_port" -t set -d $payload -c "$writers" -n "$requests" -r 100000 --csv 2>/dev/null |
        awk -F'"' '/SET/ {printf "RESULT rps=%s p50_ms=%s p99_ms=%s errors=0", $4, $10, $14}')
    after "$line requests=$requests" "" "$requests"
}

results="$work/results.txt"
for round in $(seq 1 "$rounds"); do
    for writers in 1 16; do
        redis_port=$(free_port)
        rm -rf "$work/redis"; mkdir -p "$work/redis"
        redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis" --appendonly yes --appendfsync always --save "" \
            --auto-aof-rewrite-percentage 0 --daemonize no --loglevel warning >"$work/redis.log" 2>&1 &
        redis_pid=$!
        wait_port "$redis_port"
        order=(diffstream redis); (( round % 2 == 0 )) && order=(redis diffstream)
        for system in "${order[@]}"; do
            if [[ $system == redis ]]; then line=$(run_redis_benchmark "$writers"); else line=$(run_diffstream "$writers"); fi
            redis-cli -p "$redis_port" flushall >/dev/null
            echo "round $round, $writers writers, $system: $line"
            echo "$system $writers $round $line" >>"$results"
        done
        kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true
    done
done

echo
python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    system, writers, rnd, rest = line.split(maxsplit=3)
    fields = dict(item.split("=", 1) for item in rest.split()[1:])
    rows.setdefault((int(writers), system), {})[int(rnd)] = fields
med = lambda runs, key: statistics.median(float(r[key]) for r in runs.values())
print("| writers | system | PUT or SET/s (median) | p50 ms | p99 ms | server CPU µs per PUT | Redis CPU µs per op | AOF bytes per op | Redis commands per op | machine idle % |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (writers, system), runs in sorted(rows.items()):
    name = "diffstream --redis (PUT)" if system == "diffstream" else "redis-benchmark SET"
    server = f"{med(runs, 'server_cpu_us_per_op'):.0f}" if system == "diffstream" else "–"
    print(f"| {writers} | {name} | {med(runs, 'rps'):,.0f} | {med(runs, 'p50_ms'):.2f} | {med(runs, 'p99_ms'):.2f} | {server} | "
          f"{med(runs, 'redis_cpu_us_per_op'):.0f} | {med(runs, 'aof_bytes_per_op'):,.0f} | {med(runs, 'redis_cmds_per_op'):.2f} | {med(runs, 'idle_pct'):.0f} |")
print("\n| writers | per-round ratios diffstream PUT/s ÷ Redis SET/s (round order) | median | goal |")
print("|---:|---|---:|---|")
for writers in sorted({w for w, _ in rows}):
    d, r = rows.get((writers, "diffstream"), {}), rows.get((writers, "redis"), {})
    per = [float(d[k]["rps"]) / float(r[k]["rps"]) for k in sorted(d) if k in r]
    if per:
        goal = ("≥ 0.5: met" if statistics.median(per) >= 0.5 else "≥ 0.5: not met") if writers == 16 else "(none)"
        print(f"| {writers} | {', '.join(f'{x:.2f}' for x in per)} | {statistics.median(per):.2f} | {goal} |")
EOF
