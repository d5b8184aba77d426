#!/usr/bin/env bash
# Builds and runs the server with the live demo: open http://127.0.0.1:8080
# Extra arguments go to diffstream (e.g. --port 9000, --token secret-token).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product diffstream
swift build -c release --product diffstream-watch  # `diffstream watch` runs it (a program of its own)
exec .build/release/diffstream --public Public --demo "$@"
