#!/usr/bin/env bash
# Proves that the release binary runs in a minimal Debian 12 root holding only the packages the
# Dockerfile's runtime stage installs: no missing shared library; the image's own command (its ENV, its
# ENTRYPOINT and its CMD, read from the Dockerfile) starts a production server: /healthz answers, the
# page is served, no example is hosted (GET /feeds/home is 404), and `diffstream watch` (diffstream-watch,
# beside the binary) follows a feed; and `docker run IMAGE --demo` (the ENTRYPOINT with `--demo` in
# place of the CMD) hosts the examples with the demo running (the home feed changes).
# A binary with `--redis` (issue 26) must link libhiredis, find it in the root (libhiredis0.14), and run
# there against a real redis-server on loopback: /readyz says Redis is ok and a PUT reaches Redis.
#   scripts/check-docker-runtime.sh .build/release/diffstream   (scripts/test.sh: .build-release/release/diffstream)
#   scripts/check-docker-runtime.sh --prepare-root   only makes the root (scripts/test.sh: in the background,
#                                                    while it builds; debootstrap takes minutes)
# Needs root (debootstrap, chroot, mount), debootstrap, curl and python3 (it reads the Dockerfile's ENV,
# ENTRYPOINT and CMD); for a binary with --redis also redis-server, redis-cli and readelf
# (scripts/setup.sh --test installs them). The root is
# cached in ${DIFFSTREAM_ROOTFS_CACHE:-/var/tmp/diffstream-rootfs}/<hash of the package list>.
set -euo pipefail

fail() { echo "check-docker-runtime: FAIL: $*" >&2; exit 1; }

binary=${1:-}
[[ -n "$binary" ]] || { echo "usage: scripts/check-docker-runtime.sh path/to/release/diffstream | --prepare-root" >&2; exit 2; }
prepare_only=""
if [[ "$binary" == --prepare-root ]]; then
    prepare_only=1
else
    [[ -f "$binary" && -x "$binary" ]] || fail "$binary is not an executable file"
    binary=$(realpath "$binary")
fi
cd "$(dirname "$0")/.."
[[ -f Dockerfile ]] || fail "no Dockerfile in $(pwd)"
[[ -d Public ]] || fail "no Public/ in $(pwd)"
[[ $EUID -eq 0 ]] || fail "must run as root (debootstrap, chroot and mount need it)"
command -v debootstrap >/dev/null || fail "debootstrap is not installed (apt-get install debootstrap)"
command -v curl >/dev/null || fail "curl is not installed"

# The package list: the line after '# runtime-packages' in the Dockerfile, which must be the
# runtime stage's `apt-get install` line.
install_line=$(awk '/^# runtime-packages/ { getline; print; exit }' Dockerfile)
[[ "$install_line" == *"apt-get install"* ]] \
    || fail "the line after '# runtime-packages' in the Dockerfile is not an apt-get install: '$install_line'"
packages=$(sed -E 's/.*apt-get install//; s/&&.*//; s/\\//g' <<<"$install_line" \
    | tr ' ' '\n' | grep -v '^-' | grep -v '^$' | xargs)
[[ -n "$packages" ]] || fail "no packages on the Dockerfile's runtime-packages line"
echo "runtime packages: $packages"

# The image's command: the runtime stage's ENV, ENTRYPOINT and CMD (exec form, the last of each, as
# Docker takes them), as bash arrays image_env, image_entrypoint and image_cmd.
command -v python3 >/dev/null || fail "python3 is not installed (it reads the Dockerfile's ENV, ENTRYPOINT and CMD)"
image_command=$(python3 - Dockerfile <<'PYTHON'
import json, shlex, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
stage, found = [], {}
for line in text.splitlines():
    words = line.split(None, 1)
    if not words or words[0].startswith("#"):
        continue
    instruction, rest = words[0].upper(), (words[1] if len(words) > 1 else "")
    if instruction == "FROM":
        stage, found = [], {}
    elif instruction == "ENV":
        stage += shlex.split(rest)
    elif instruction in ("ENTRYPOINT", "CMD"):
        try:
            found[instruction] = json.loads(rest)
        except ValueError:
            sys.exit(f"the Dockerfile's {instruction} is not in exec form (a JSON array): {rest}")
if "ENTRYPOINT" not in found:
    sys.exit("the Dockerfile's runtime stage has no ENTRYPOINT")
for name, value in [("image_env", stage), ("image_entrypoint", found["ENTRYPOINT"]), ("image_cmd", found.get("CMD", []))]:
    print(f"{name}=(" + " ".join(shlex.quote(word) for word in value) + ")")
PYTHON
) || fail "cannot read the image's command from the Dockerfile"
eval "$image_command"
for assignment in "${image_env[@]}"; do
    [[ "$assignment" == *=* ]] || fail "the Dockerfile's ENV has '$assignment', not NAME=VALUE (the check reads that form only)"
done
echo "image: ENV ${image_env[*]}; ENTRYPOINT ${image_entrypoint[*]}; CMD ${image_cmd[*]}"

# The Debian mirror this machine uses, else deb.debian.org.
mirror=""
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    mirror=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
fi
if [[ -z "$mirror" && -f /etc/apt/sources.list ]]; then
    mirror=$(awk '$1 == "deb" && $0 !~ /security/ && $0 ~ /debian/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' /etc/apt/sources.list)
fi
mirror=${mirror:-http://deb.debian.org/debian}

cache=${DIFFSTREAM_ROOTFS_CACHE:-/var/tmp/diffstream-rootfs}
root="$cache/$(printf '%s' "$packages" | sha256sum | cut -c1-16)"
log=$(mktemp)
pid=""
redis_pid=""
redis_dir=""
cleanup() {
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    if [[ -n "$redis_pid" ]] && kill -0 "$redis_pid" 2>/dev/null; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
    [[ -n "$redis_dir" ]] && rm -rf "$redis_dir"
    if mountpoint -q "$root/proc"; then umount "$root/proc" || umount -l "$root/proc" || true; fi
    rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One maker at a time: scripts/test.sh makes the root in the background while it builds, and its last
# step waits here until that run is done.
mkdir -p "$cache"
exec 9>"$root.lock"
flock 9
if [[ -f "$root/.diffstream-rootfs-complete" ]]; then
    echo "minimal root: reusing $root"
else
    # A run that died mid-way may have left /proc (ours) or /sys (debootstrap's, killed hard) mounted:
    # unmount whatever is under the root, deepest first, and never rm -rf through a mount.
    if [[ -d "$root" ]]; then
        findmnt -rno TARGET | awk -v root="$root/" 'index($0, root) == 1' | sort -r | xargs -r -n1 umount -l
    fi
    rm -rf --one-file-system "$root"
    mkdir -p "$root"
    echo "minimal root: debootstrap --variant=minbase bookworm from $mirror into $root"
    started=$SECONDS
    if ! debootstrap --variant=minbase --include="${packages// /,}" bookworm "$root" "$mirror" \
        >"$root.debootstrap.log" 2>&1; then
        tail -30 "$root.debootstrap.log" >&2
        fail "debootstrap failed (full log: $root.debootstrap.log)"
    fi
    touch "$root/.diffstream-rootfs-complete"
    echo "minimal root: debootstrap took $((SECONDS - started)) s"
fi
# The maker exits holding the lock (released when it has exited, after its EXIT trap): a check waiting
# for it must not mount /proc while that trap may still unmount it.
[[ -z "$prepare_only" ]] || exit 0
flock -u 9

install -D -m 0755 "$binary" "$root/usr/local/bin/diffstream"
# The image's /data starts empty (the root is cached: a previous run's feeds are dropped).
rm -rf --one-file-system "$root/data"
mkdir -p "$root/data"
# `diffstream watch` runs diffstream-watch, found beside the binary (the Dockerfile installs both).
watcher="$(dirname "$binary")/diffstream-watch"
[[ -x "$watcher" ]] || fail "no diffstream-watch beside $binary (build it with --product diffstream-watch)"
install -D -m 0755 "$watcher" "$root/usr/local/bin/diffstream-watch"
rm -rf "$root/usr/share/diffstream/Public"
mkdir -p "$root/usr/share/diffstream"
cp -r Public "$root/usr/share/diffstream/Public"

# The Swift runtime reads the command line from /proc/self/cmdline: without /proc the binary sees
# no arguments at all. Docker always provides /proc; /dev in the debootstrapped root already has
# null, random and urandom (and the binary uses getrandom(2) anyway).
mount -t proc proc "$root/proc"

ldd_output=$(chroot "$root" ldd /usr/local/bin/diffstream 2>&1) || fail "ldd failed in the minimal root: $ldd_output"
echo "ldd in the minimal root:"
while IFS= read -r line; do echo "  $line"; done <<<"$ldd_output"
if grep -q "not found" <<<"$ldd_output"; then
    fail "shared libraries missing from the runtime packages:
$(grep "not found" <<<"$ldd_output")"
fi
! grep -q "libcurl" <<<"$ldd_output" || fail "the server links libcurl (FoundationNetworking belongs to diffstream-watch only)"
watch_ldd=$(chroot "$root" ldd /usr/local/bin/diffstream-watch 2>&1) || fail "ldd of diffstream-watch failed in the minimal root: $watch_ldd"
! grep -q "not found" <<<"$watch_ldd" || fail "libraries of diffstream-watch missing from the runtime packages:
$(grep "not found" <<<"$watch_ldd")"

show_log() { echo "--- server log ---" >&2; cat "$log" >&2; echo "------------------" >&2; }

# Starts the image's ENTRYPOINT in the root with the given arguments (the CMD, or what replaces it, as
# `docker run IMAGE ARG…`), in the image's environment only, and sets pid and port. One change: it
# listens on 127.0.0.1, port 0 (DIFFSTREAM_HOST and DIFFSTREAM_PORT after the image's), not 0.0.0.0:8080.
start_server() {
    : >"$log"
    chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${image_env[@]}" \
        DIFFSTREAM_HOST=127.0.0.1 DIFFSTREAM_PORT=0 "${image_entrypoint[@]}" "$@" 2>"$log" >/dev/null &
    pid=$!
    port=""
    local deadline=$((SECONDS + 20))
    while ((SECONDS < deadline)); do
        port=$(grep -oE 'listening on http://127\.0\.0\.1:[0-9]+' "$log" | grep -oE '[0-9]+$' | head -n 1 || true)
        [[ -n "$port" ]] && return 0
        kill -0 "$pid" 2>/dev/null || { show_log; fail "the server ($*) exited before listening"; }
        sleep 0.2
    done
    show_log
    fail "the server ($*) did not log 'listening on http://127.0.0.1:PORT' within 20 s"
}

stop_server() {
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=""
}

# The status of GET path on the running server (curl's %{http_code}; 000 when it could not ask).
status_of() { curl -s -o /dev/null --max-time 5 -w '%{http_code}' "http://127.0.0.1:$port$1" || true; }

# The image's default: a production server, no example view models and no demo.
start_server "${image_cmd[@]}"
health=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/healthz" 2>&1) \
    || { show_log; fail "GET /healthz failed: $health"; }
page=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/" 2>&1) || { show_log; fail "GET / failed: $page"; }
grep -qi "<html" <<<"$page" || { show_log; fail "GET / did not return an HTML page"; }
for example in home week; do
    got=$(status_of "/feeds/$example")
    [[ "$got" == 404 ]] || { show_log; fail "the image's default command (${image_cmd[*]}) hosts the example $example (GET /feeds/$example: $got, expected 404)"; }
done
# `diffstream watch` in the root: it runs diffstream-watch, whose libraries (libcurl4) must be there.
curl -fsS --max-time 5 -X PUT "http://127.0.0.1:$port/feeds/runtime-watch" -d '{"sections":[]}' >/dev/null \
    || { show_log; fail "PUT /feeds/runtime-watch failed"; }
watched=$(chroot "$root" /usr/local/bin/diffstream watch --json --once "http://127.0.0.1:$port" runtime-watch 2>&1) \
    || { show_log; fail "diffstream watch failed in the minimal root: $watched"; }
grep -q '"feed":"runtime-watch"' <<<"$watched" || fail "diffstream watch printed no snapshot of runtime-watch: $watched"
stop_server

# `docker run IMAGE --demo`: the image's environment must not keep the examples off (DIFFSTREAM_EXAMPLES)
# when --demo replaces the CMD. The home feed is hosted and changes (every 2 s): watch awaits two
# snapshots of it, each a version apart, and ends when head closes the pipe (its next write fails).
start_server --demo
got=$(status_of /feeds/home)
[[ "$got" == 200 ]] || { show_log; fail "--demo: GET /feeds/home answered $got, expected 200 (the examples with the demo)"; }
demo_lines=$( { timeout 30 chroot "$root" /usr/local/bin/diffstream watch --json "http://127.0.0.1:$port" home 2>/dev/null || true; } | head -n 2)
demo_versions=$(grep -oE '"version":[0-9]+' <<<"$demo_lines" | cut -d: -f2 | xargs)
read -r first_version second_version <<<"$demo_versions" || true
[[ -n "${second_version:-}" ]] && ((second_version > first_version)) \
    || { show_log; fail "--demo: the home feed did not change within 30 s (versions seen: '$demo_versions')"; }
stop_server
demo_result="--demo: home v$first_version -> v$second_version"

# Redis mode: only for a binary that has --redis. ldd above already failed on a missing libhiredis;
# here the binary must actually need it (else the runtime package proves nothing) and talk to Redis.
redis_result="skipped (this binary has no --redis)"
# (Captured first: `grep -q` in a pipe under pipefail can fail on the writer's SIGPIPE.)
help_text=$(chroot "$root" /usr/local/bin/diffstream --help 2>&1 || true)
if grep -q -- '--redis' <<<"$help_text"; then
    command -v readelf >/dev/null || fail "readelf is not installed (apt-get install binutils)"
    dynamic_section=$(readelf -d "$binary" 2>&1) || fail "readelf -d $binary failed: $dynamic_section"
    grep -q 'NEEDED.*libhiredis' <<<"$dynamic_section" \
        || fail "the binary has --redis but does not link libhiredis dynamically (readelf -d lists no NEEDED libhiredis)"
    hiredis_line=$(grep -m 1 'libhiredis' <<<"$ldd_output" || true)
    [[ "$hiredis_line" == *" => /"* ]] || fail "libhiredis does not resolve in the minimal root: '$hiredis_line'"
    command -v redis-server >/dev/null || fail "redis-server is not installed (scripts/setup.sh --test installs it)"
    command -v redis-cli >/dev/null || fail "redis-cli is not installed (it comes with redis-server)"
    command -v python3 >/dev/null || fail "python3 is not installed (it picks a free port for redis-server)"

    # A redis-server of our own on a free loopback port, configured as docs/deploy-redis.md asks
    # (the chroot shares this machine's network, so 127.0.0.1 is the same loopback).
    redis_dir=$(mktemp -d)
    redis_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$redis_dir" --save "" \
        --appendonly yes --appendfsync always --maxmemory-policy noeviction \
        >"$redis_dir/redis.log" 2>&1 &
    redis_pid=$!
    deadline=$((SECONDS + 10))
    until redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG; do
        kill -0 "$redis_pid" 2>/dev/null || { cat "$redis_dir/redis.log" >&2; fail "redis-server exited at start"; }
        ((SECONDS < deadline)) || fail "redis-server did not answer PING within 10 s"
        sleep 0.1
    done

    start_server --redis "redis://127.0.0.1:$redis_port" --redis-prefix runtime-check
    ready=$(curl -sS --max-time 5 -w ' %{http_code}' "http://127.0.0.1:$port/readyz" 2>&1) \
        || { show_log; fail "GET /readyz failed: $ready"; }
    [[ "$ready" == *'"redis":"ok"'*' 200' ]] || { show_log; fail "GET /readyz in Redis mode: expected 200 with \"redis\":\"ok\", got: $ready"; }
    put=$(curl -sS --max-time 5 -w ' %{http_code}' -X PUT "http://127.0.0.1:$port/feeds/runtime-check" \
        -d '{"sections":[{"id":"s","model":{},"items":[{"id":"a","kind":"k","model":{}}]}]}' 2>&1) \
        || { show_log; fail "PUT /feeds/runtime-check failed: $put"; }
    [[ "$put" == *' 201' ]] || { show_log; fail "PUT /feeds/runtime-check in Redis mode: expected 201, got: $put"; }
    keys=$(redis-cli -p "$redis_port" --scan --pattern 'runtime-check:*' | wc -l)
    ((keys > 0)) || { show_log; fail "the PUT answered 201 but Redis holds no runtime-check:* key"; }
    stop_server
    kill "$redis_pid"
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=""
    redis_result="/readyz: $ready; a PUT stored $keys keys in Redis"
fi

echo "check-docker-runtime: PASS: the release binary runs in a minimal bookworm root with only: $packages (the image's command, ${image_entrypoint[*]} ${image_cmd[*]}: /healthz: $health, / serves HTML, no examples; $demo_result; Redis mode: $redis_result)"
