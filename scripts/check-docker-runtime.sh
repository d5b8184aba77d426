#!/usr/bin/env bash
# Proves that the release binary runs in a minimal Debian 12 root holding only the packages the
# Dockerfile's runtime stage installs: no missing shared library, /healthz answers, the page is served.
#   scripts/check-docker-runtime.sh .build/release/diffstream
set -euo pipefail
cd "$(dirname "$0")/.."

binary=${1:?usage: scripts/check-docker-runtime.sh path/to/release/diffstream}
[[ -x "$binary" ]] || { echo "check-docker-runtime: $binary is not an executable" >&2; exit 1; }

# The package list, read from the line after '# runtime-packages' in the Dockerfile.
packages=$(awk '/# runtime-packages/ {getline; getline; print; exit}' Dockerfile \
    | sed -E 's/.*--no-install-recommends//; s/\\//; s/&&.*//' | xargs)
[[ -n "$packages" ]] || { echo "check-docker-runtime: no runtime package list found in the Dockerfile" >&2; exit 1; }
echo "runtime packages: $packages"

mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
cache=${DIFFSTREAM_ROOTFS_CACHE:-/var/tmp/diffstream-rootfs}
root="$cache/$(printf '%s' "$packages" | sha256sum | cut -c1-16)"
if [[ ! -f "$root/.complete" ]]; then
    rm -rf "$root"
    mkdir -p "$root"
    echo "debootstrap: bookworm minbase with ${packages// /,} from $mirror"
    debootstrap --variant=minbase --include="${packages// /,}" bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 \
        || { tail -20 "$cache/debootstrap.log" >&2; echo "check-docker-runtime: debootstrap failed" >&2; exit 1; }
    touch "$root/.complete"
fi

install -D -m 0755 "$binary" "$root/usr/local/bin/diffstream"
rm -rf "$root/usr/share/diffstream/Public"
mkdir -p "$root/usr/share/diffstream"
cp -r Public "$root/usr/share/diffstream/Public"

log=$(mktemp)
pid=""
cleanup() {
    [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
    mountpoint -q "$root/proc" && umount "$root/proc" || true
    rm -f "$log"
}
trap cleanup EXIT
mount -t proc proc "$root/proc"

missing=$(chroot "$root" ldd /usr/local/bin/diffstream | grep "not found" || true)
if [[ -n "$missing" ]]; then
    echo "check-docker-runtime: libraries missing from the runtime image:" >&2
    echo "$missing" >&2
    exit 1
fi

chroot "$root" /usr/local/bin/diffstream --host 127.0.0.1 --port 0 --public /usr/share/diffstream/Public 2>"$log" &
pid=$!
port=""
for _ in $(seq 1 200); do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    [[ -n "$port" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
if [[ -z "$port" ]]; then
    echo "check-docker-runtime: the server did not start in the minimal root:" >&2
    cat "$log" >&2
    exit 1
fi
health=$(curl -fsS "http://127.0.0.1:$port/healthz")
[[ "$health" == '{"status":"ok"}' ]] || { echo "check-docker-runtime: /healthz answered '$health'" >&2; exit 1; }
curl -fsS "http://127.0.0.1:$port/" | grep -qi "<html" || { echo "check-docker-runtime: / did not serve the page" >&2; exit 1; }
echo "check-docker-runtime: PASS (the release binary runs with only: $packages)"
