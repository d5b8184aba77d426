#!/usr/bin/env bash
# Two builds of diffstream against each other on the write path (issue 39: a change's own effect, not a
# peer comparison; for the peers see write-peers.sh). ROUNDS rounds, the builds alternating which goes
# first; each run a fresh server, W keep-alive writers (wrk + write-peers.lua, each on its own feed) for
# DURATION seconds. Prints per build the rounds' writes/s, server µs per write (utime+stime), context
# switches per write (/proc/PID/task/*/status), p99 ms.
#   Benchmarks/write-ab.sh NEW OLD [server flags...]     e.g. ... NEW OLD --data /tmp/ab-data (fresh per run)
#   ROUNDS=6 DURATION=4 W=16 (defaults); KIND=action|patch runs the hosted path (--examples todo,home) instead
set -euo pipefail
cd "$(dirname "$0")/.."
new=$1 old=$2; shift 2
rounds=${ROUNDS:-6} duration=${DURATION:-4} w=${W:-16} kind=${KIND:-put}
one() {  # binary flags... -> "rps us cs p99"
    local bin=$1; shift
    local port=$((20000 + RANDOM % 20000)) pid t0 t1 c0 c1 out n data=""
    for a in "$@"; do [[ $data == next ]] && data=$a; [[ $a == --data ]] && data=next; done
    [[ -n $data && $data != next ]] && rm -rf "$data"
    local examples=none; [[ $kind != put ]] && examples=todo,home
    "$bin" --port "$port" --data none --examples "$examples" --max-connections-per-ip 0 --log-level warning --replay 1024 --public Public "$@" 2>/dev/null &
    pid=$!
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
    if [[ $kind == put ]]; then
        for k in $(seq 1 "$w"); do curl -s -o /dev/null -X PUT --data-binary '{"sections":[]}' "http://127.0.0.1:$port/feeds/bench$k"; done
    else
        for k in $(seq 1 10); do curl -s -o /dev/null -X POST -H 'Content-Type: application/json' --data "{\"title\":\"item $k\"}" "http://127.0.0.1:$port/feeds/todo/actions/add"; done
    fi
    t0=$(awk '{print $14+$15}' /proc/$pid/stat); c0=$(cat /proc/$pid/task/*/status | awk '/ctxt_switches/ {s+=$2} END {print s}')
    if [[ $kind == put ]]; then
        out=$(wrk -t"$w" -c"$w" -d"${duration}s" -s Benchmarks/write-peers.lua "http://127.0.0.1:$port" -- snapshot PUT /feeds/bench | grep RESULT)
    else
        out=$(wrk -t"$w" -c"$w" -d"${duration}s" -s Benchmarks/write-peers.lua "http://127.0.0.1:$port" -- "$kind" | grep RESULT)
    fi
    t1=$(awk '{print $14+$15}' /proc/$pid/stat); c1=$(cat /proc/$pid/task/*/status | awk '/ctxt_switches/ {s+=$2} END {print s}')
    kill "$pid"; wait "$pid" 2>/dev/null || true
    n=${out##*requests=}; n=${n%% *}
    awk -v o="$out" -v t=$((t1 - t0)) -v c=$((c1 - c0)) -v n="$n" 'BEGIN {
        split(o, f, " "); for (i in f) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
        printf "%s %.0f %.2f %s\n", v["rps"], t * 1e6 / 100 / n, c / n, v["p99_ms"] }'
}
declare -A rows
for r in $(seq 1 "$rounds"); do
    order=("$new" "$old"); (( r % 2 == 0 )) && order=("$old" "$new")
    for bin in "${order[@]}"; do rows[$bin]+="$(one "$bin" "$@");"; done
done
for bin in "$new" "$old"; do
    echo "$bin"
    echo "${rows[$bin]}" | tr ';' '\n' | awk 'NF { r = r " " $1; u = u " " $2; c = c " " $3; p = p " " $4 }
        END { print "  writes/s:" r; print "  server us/write:" u; print "  context switches/write:" c; print "  p99 ms:" p }'
done
