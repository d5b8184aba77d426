#!/usr/bin/env bash
# Builds the release binaries and copies them onto PATH, so `diffstream …` runs by name:
#   scripts/install.sh                 # into /usr/local/bin (sudo asked for when it is not writable)
#   PREFIX=$HOME/.local scripts/install.sh
# diffstream-watch goes beside diffstream: `diffstream watch` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${PREFIX:-/usr/local}
scripts/setup.sh
for product in diffstream diffstream-watch; do
    echo "install: building $product (release; the first build takes about 8 minutes on 2 cores)"
    swift build -c release --product "$product" >/dev/null
done
sudo=""
if ! mkdir -p "$prefix/bin" 2>/dev/null || [[ ! -w "$prefix/bin" ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "install: $prefix/bin is not writable; set PREFIX" >&2; exit 1; }
    sudo=sudo
fi
$sudo install -m 0755 .build/release/diffstream .build/release/diffstream-watch "$prefix/bin/"
echo "install: $prefix/bin/diffstream and $prefix/bin/diffstream-watch"
command -v diffstream >/dev/null 2>&1 || echo "install: $prefix/bin is not on PATH; add it to run diffstream by name"
