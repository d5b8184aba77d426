#!/usr/bin/env bash
# Proves that the release binary runs in a minimal Debian 12 root holding only the packages the
# Dockerfile's runtime stage installs: no missing shared library, /healthz answers, the page is served.
#   scripts/check-docker-runtime.sh .build/release/diffstream
# Needs root (debootstrap, chroot, mount), debootstrap and curl. The root is cached in
# ${DIFFSTREAM_ROOTFS_CACHE:-/var/tmp/diffstream-rootfs}/<hash of the package list>.
set -euo pipefail

fail() { echo "check-docker-runtime: FAIL: $*" >&2; exit 1; }

binary=${1:-}
[[ -n "$binary" ]] || { echo "usage: scripts/check-docker-runtime.sh path/to/release/diffstream" >&2; exit 2; }
[[ -f "$binary" && -x "$binary" ]] || fail "$binary is not an executable file"
binary=$(realpath "$binary")
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
cleanup() {
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    if mountpoint -q "$root/proc"; then umount "$root/proc" || umount -l "$root/proc" || true; fi
    rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -f "$root/.diffstream-rootfs-complete" ]]; then
    echo "minimal root: reusing $root"
else
    # A run that died mid-way may have left /proc mounted; never rm -rf through a mount.
    if mountpoint -q "$root/proc"; then umount "$root/proc"; fi
    rm -rf "$root"
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

install -D -m 0755 "$binary" "$root/usr/local/bin/diffstream"
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

show_log() { echo "--- server log ---" >&2; cat "$log" >&2; echo "------------------" >&2; }

chroot "$root" /usr/local/bin/diffstream --host 127.0.0.1 --port 0 \
    --public /usr/share/diffstream/Public --data /data 2>"$log" >/dev/null &
pid=$!
port=""
deadline=$((SECONDS + 20))
while ((SECONDS < deadline)); do
    port=$(grep -oE 'listening on http://127\.0\.0\.1:[0-9]+' "$log" | grep -oE '[0-9]+$' | head -n 1 || true)
    [[ -n "$port" ]] && break
    kill -0 "$pid" 2>/dev/null || { show_log; fail "the server exited before listening"; }
    sleep 0.2
done
[[ -n "$port" ]] || { show_log; fail "the server did not log 'listening on http://127.0.0.1:PORT' within 20 s"; }

health=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/healthz" 2>&1) \
    || { show_log; fail "GET /healthz failed: $health"; }
page=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/" 2>&1) || { show_log; fail "GET / failed: $page"; }
grep -qi "<html" <<<"$page" || { show_log; fail "GET / did not return an HTML page"; }

kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""
echo "check-docker-runtime: PASS: the release binary runs in a minimal bookworm root with only: $packages (/healthz: $health, / serves HTML)"
