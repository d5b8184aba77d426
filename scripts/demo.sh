#!/usr/bin/env bash
# Builds and runs the server with the live demo: open http://127.0.0.1:8080
# Extra arguments go to diffstream (e.g. --port 9000, --token secret-token).
# One status line per phase; the compiler's output goes to .build/demo-build.log (shown when a build fails).
# The first build takes about 8 minutes on 2 cores (later ones seconds). The binaries end up in
# .build/release: diffstream, and diffstream-watch, which `diffstream watch` runs (scripts/install.sh
# copies both onto PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
log=.build/demo-build.log
mkdir -p .build

echo "demo: checking the system packages (scripts/setup.sh)"
scripts/setup.sh

# Runs a build with its output in the log; on a terminal, SwiftPM's [step/total] counter on one line.
build() {
    local product=$1 started=$SECONDS
    echo "demo: building $product (release; the first build takes about 8 minutes on 2 cores; log: $log)"
    swift build -c release --product "$product" >>"$log" 2>&1 &
    local pid=$!
    if [[ -t 1 ]]; then
        while kill -0 "$pid" 2>/dev/null; do
            printf '\r  %s' "$(grep -o '^\[[0-9]*/[0-9]*\]' "$log" | tail -1)"
            sleep 1
        done
        printf '\r\033[K'
    fi
    if ! wait "$pid"; then
        echo "demo: building $product failed; the errors (all of it in $log):" >&2
        grep -E 'error:|warning: unable|fatal' "$log" | tail -20 >&2 || tail -20 "$log" >&2
        exit 1
    fi
    echo "demo: built .build/release/$product in $((SECONDS - started)) s"
}

: >"$log"
build diffstream
build diffstream-watch  # `diffstream watch` runs it (a program of its own)
echo "demo: starting .build/release/diffstream --public Public --demo $*"
echo "demo: open the URL it prints below ('diffstream listening on …'); Ctrl-C stops it"
exec .build/release/diffstream --public Public --demo "$@"
