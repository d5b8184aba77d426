#!/usr/bin/env bash
# Soak test of the durable store: the kill -9 write-storm test for many cycles (CI runs 20).
#   scripts/store-soak.sh [CYCLES] [SEED]      e.g. scripts/store-soak.sh 500
# Uses the debug binary unless DIFFSTREAM_BIN is set. The seed is printed; pass it back to replay a run.
set -euo pipefail
cd "$(dirname "$0")/.."
export DIFFSTREAM_BIN="${DIFFSTREAM_BIN:-$PWD/.build/debug/diffstream}"
export STORE_CRASH_CYCLES="${1:-300}"
[[ -n "${2:-}" ]] && export STORE_CRASH_SEED="$2"
export E2E_TEST_TIME_LIMIT="${E2E_TEST_TIME_LIMIT:-3600}"
exec python3 -m pytest checks/e2e/test_store.py -q -s -p no:cacheprovider -k kill_9
