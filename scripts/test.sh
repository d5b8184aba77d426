#!/usr/bin/env bash
# Runs every test of DiffStream; fails on the first failure.
#  1. installs what is missing (scripts/setup.sh --test)
#  2. builds debug and release with warnings as errors
#  3. swift test (unit, shared vectors, property-based), then the page's Node tests (tests/browser/*.test.mjs:
#     the protocol module on the shared vectors, the stream hub's unit and property-based tests)
#  4. end-to-end tests against the built binary over real sockets (tests/e2e), twice: with the default
#     number of event loops and feeds in memory, then with --loops 1 and a durable --data directory; the
#     first pass also builds and drives the example package Examples/Scoreboard (tests/e2e/test_embedding.py)
#     (tests/e2e/test_redis.py starts three instances on a redis-server of its own); then the API, stream,
#     limit and view-model tests again with every server on --redis (DIFFSTREAM_E2E_REDIS=1)
#  5. browser tests in headless Chromium (tests/browser)
#  6. the Dockerfile: hadolint, and the release binary in a minimal Debian root (scripts/check-docker-runtime.sh)
#  7. every libFuzzer target of Fuzz/ for 10 seconds, all at once (scripts/fuzz.sh 10; debug build, its
#     own scratch path)
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s (at %d s)\n' "$*" "$SECONDS"; }

step "setup"
scripts/setup.sh --test

step "build (debug, warnings as errors)"
swift build -Xswiftc -warnings-as-errors

step "build (release, static Swift runtime, warnings as errors)"
swift build -c release --static-swift-stdlib -Xswiftc -warnings-as-errors --product diffstream

step "swift test"
swift test -Xswiftc -warnings-as-errors

step "node tests (the page's protocol module on the shared vectors, the stream hub)"
node --test tests/browser/*.test.mjs

export DIFFSTREAM_BIN="$PWD/.build/debug/diffstream"
step "end-to-end tests (default: one event loop per core, feeds in memory unless a test asks for --data)"
python3 -m pytest tests/e2e -q -p no:cacheprovider

step "end-to-end tests again with --loops 1 and every server on a fresh --data directory"
E2E_LOOPS=1 DIFFSTREAM_E2E_DATA=tmp python3 -m pytest tests/e2e -q -p no:cacheprovider --ignore tests/e2e/test_redis.py  # its servers use Redis, not --data

step "end-to-end tests of the API, streams, limits and view models again, each server on --redis (one redis-server for the run)"
DIFFSTREAM_E2E_REDIS=1 python3 -m pytest tests/e2e/test_api.py tests/e2e/test_sse.py tests/e2e/test_multifeed.py tests/e2e/test_limits.py \
    tests/e2e/test_viewmodels.py tests/e2e/test_todo.py -q -p no:cacheprovider

step "browser tests"
python3 -m pytest tests/browser -q -p no:cacheprovider --deselect tests/browser/test_stream_hub.py  # the node tests ran above

step "Dockerfile checks"
hadolint Dockerfile
scripts/check-docker-runtime.sh .build/release/diffstream

step "fuzzing (scripts/fuzz.sh 10, the targets at once; long runs are recorded in docs/fuzzing.md)"
FUZZ_CONFIGURATION=debug FUZZ_PARALLEL=1 scripts/fuzz.sh 10

step "all tests passed"
