#!/usr/bin/env bash
# Runs every test of DiffStream; fails on the first failure.
#  1. installs what is missing (scripts/setup.sh --test)
#  2. builds debug with warnings as errors; then starts, in the background at the lowest priority, the
#     builds the later steps need (the release binaries diffstream and diffstream-watch in .build-release, then the example packages
#     Examples/Scoreboard and Examples/Shelves and the docs' Swift snippets, Examples/DocSnippets, in release in the same directory), so they use the CPU the tests leave idle (the end-to-end tests mostly wait on
#     sockets). Each later step runs its build again in the foreground:
#     a no-op when the background one finished, a wait on SwiftPM's lock when it is under way, and the
#     build's own errors when it failed (the background log is test-artifacts/background-builds.log)
#  3. the package's structure (checks/structure), swift test (unit, shared vectors, property-based), then the page's Node tests (checks/browser/*.test.mjs:
#     the protocol module on the shared vectors, the stream hub's unit and property-based tests)
#  4. end-to-end tests against the built binary over real sockets (checks/e2e), twice: with the default
#     number of event loops and feeds in memory, then with --loops 1 and a durable --data directory (the
#     files about the loops, streams and the store; not flags, static files, TLS or the clients)
#     (checks/e2e/test_redis.py and test_redis_families.py start instances on a redis-server of their own); then the API, stream,
#     limit and view-model tests again with every server on --redis (DIFFSTREAM_E2E_REDIS=1)
#  5. browser tests in headless Chromium (checks/browser)
#  6. the example packages Examples/Scoreboard and Examples/Shelves (a family), built and driven over HTTP, and the Swift
#     snippets of the README, docs/view-models.md and docs/client-swift.md, built (Examples/DocSnippets; checks/e2e/test_embedding.py)
#  7. the Dockerfile: hadolint, and the release binary (static Swift runtime, warnings as errors) in a
#     minimal Debian root (scripts/check-docker-runtime.sh; the root is made in the background from the start);
#     then the release binary's memory per idle subscriber against its budget (Benchmarks/idle-memory.py)
#  8. with DIFFSTREAM_FUZZ=1 only: every libFuzzer target of Fuzz/ for 10 seconds, all at once
#     (scripts/fuzz.sh 10; debug build, its own scratch path). Not in CI: building the targets with
#     the sanitizers is a third build of the library, which would take CI past its 25 minutes; the
#     fuzzers run on their own (docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
current_step=""
step() { current_step="$*"; printf '\n==> %s (at %d s)\n' "$*" "$SECONDS"; }
# On any failure: which step failed (its own output above says why).
trap 'status=$?; printf "\n==> FAILED (exit %d) in step: %s\n" "$status" "$current_step" >&2' ERR

# Why `swift test` failed, from its log: the build's errors, the failing tests with each recorded issue,
# and the tests that started and never ended (a hang, or the 15 minutes ran out).
swift_test_failure() {
    local log=$1
    echo
    echo "swift test failed (full log: $log)."
    if grep -qE '(^|: )error: ' "$log"; then
        echo "Build errors:"
        grep -E '(^|: )error: ' "$log" | sort -u | head -n 40
    fi
    if grep -qE '^✘ ' "$log"; then
        echo "Failing tests and their issues:"
        grep -E '^✘ (Test|Suite) .*(recorded an issue|failed)' "$log" | head -n 80
    fi
    local hung
    hung=$(comm -23 <(sed -n 's/^◇ Test \([^ ]*\) started\.$/\1/p' "$log" | sort -u) \
                    <(sed -n 's/^\(✔\|✘\) Test \([^ ]*\) .*/\2/p' "$log" | sort -u))
    if [[ -n $hung ]]; then
        echo "Tests that started and did not end:"
        echo "$hung"
    fi
    if ! grep -qE '(^|: )error: |^✘ ' "$log" && [[ -z $hung ]]; then
        echo "No failing test is named in the log; its last lines:"
        tail -n 20 "$log"
    fi
}

step "setup"
scripts/setup.sh --test

# In a process group of its own at the lowest priority (see the builds below): the minimal Debian root of
# step 7, which debootstrap takes minutes to download and unpack on a fresh machine. Step 7 waits for it
# (a lock) and makes it itself if this failed.
mkdir -p test-artifacts
background_groups=()
trap 'for group in "${background_groups[@]}"; do kill -- -"$group" 2>/dev/null || true; done' EXIT
step "making the minimal Debian root of step 7 in the background (log: test-artifacts/minimal-root.log)"
setsid bash -c "echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 scripts/check-docker-runtime.sh --prepare-root" \
    >test-artifacts/minimal-root.log 2>&1 </dev/null &
background_groups+=("$!")

step "build (debug, warnings as errors)"
swift build -Xswiftc -warnings-as-errors

# The later steps' builds, each exactly as the step runs it (so the step's own run is a no-op).
# The example is built in release in the release binary's scratch directory, after it: every module and
# dependency it shares with diffstream is compiled with the same command there, so it only compiles and
# links its own (seconds, against minutes for a build of its own).
release_build=(swift build -c release --static-swift-stdlib -Xswiftc -warnings-as-errors --product diffstream --scratch-path .build-release)
watch_build=(swift build -c release --static-swift-stdlib -Xswiftc -warnings-as-errors --product diffstream-watch --scratch-path .build-release)
scoreboard_build=(swift build --package-path Examples/Scoreboard -c release --static-swift-stdlib -Xswiftc -warnings-as-errors --product Scoreboard --scratch-path .build-release)
shelves_build=(swift build --package-path Examples/Shelves -c release --static-swift-stdlib -Xswiftc -warnings-as-errors --product Shelves --scratch-path .build-release)
# Every target of the package (checks/structure/test_doc_snippets.py: each swift block of the docs is in it, verbatim).
doc_snippets_build=(swift build --package-path Examples/DocSnippets -c release --static-swift-stdlib -Xswiftc -warnings-as-errors --scratch-path .build-release)
step "starting the release build and the examples' in the background (nice 19; log: test-artifacts/background-builds.log)"
# setsid: its own process group, so that a failing step stops the whole chain (the EXIT trap). A new
# session is also a new scheduler autogroup where the kernel has them (sched_autogroup_enabled), and
# `nice` only ranks processes inside their autogroup: the group itself gets nice 19 too, else the
# builds would take half the CPU from the tests.
setsid bash -c "echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 bash -c '${release_build[*]} && ${watch_build[*]} && rm -f .build-release/release/description.json && ${scoreboard_build[*]} && rm -f .build-release/release/description.json && ${shelves_build[*]} && rm -f .build-release/release/description.json && ${doc_snippets_build[*]}'" \
    >test-artifacts/background-builds.log 2>&1 </dev/null &
background_groups+=("$!")

step "the package's structure (checks/structure: the platforms each product declares, checked in the sources)"
python3 -m pytest checks/structure -q -p no:cacheprovider

step "swift test"
# 15 minutes at most (the test targets' build included; the run takes 2 to 3): a test that hangs fails
# the step, which then names the tests that started and never ended.
if ! timeout --kill-after=10 900 swift test -Xswiftc -warnings-as-errors 2>&1 | tee test-artifacts/swift-test.log; then
    swift_test_failure test-artifacts/swift-test.log
    exit 1
fi

step "node tests (the page's protocol module on the shared vectors, the stream hub)"
node --test checks/browser/*.test.mjs

export DIFFSTREAM_BIN="$PWD/.build/debug/diffstream"
step "end-to-end tests (default: one event loop per core, feeds in memory unless a test asks for --data)"
python3 -m pytest checks/e2e -q -p no:cacheprovider --ignore checks/e2e/test_embedding.py  # step 6, once its build had time

step "end-to-end tests again with --loops 1 and every server on a fresh --data directory"
# Not again: test_redis.py and test_redis_families.py (their servers use Redis, not --data), and the files whose
# subject is neither the loops nor the store (flags, static files, TLS, the Swift and Node clients), and the reads
# through nginx's cache (test_log_cache*.py and test_log_clients.py: once, here in the first pass; the Redis one starts its own redis-server).
E2E_LOOPS=1 DIFFSTREAM_E2E_DATA=tmp python3 -m pytest checks/e2e -q -p no:cacheprovider --ignore checks/e2e/test_redis.py --ignore checks/e2e/test_redis_memory.py --ignore checks/e2e/test_redis_restore.py --ignore checks/e2e/test_redis_families.py \
    --ignore checks/e2e/test_log_cache.py --ignore checks/e2e/test_log_cache_redis.py --ignore checks/e2e/test_log_clients.py \
    --ignore checks/e2e/test_families.py --ignore checks/e2e/test_family_writes.py --ignore checks/e2e/test_upgrade_fixture.py --ignore checks/e2e/test_family_clients.py \
    --ignore checks/e2e/test_cli.py --ignore checks/e2e/test_watch.py --ignore checks/e2e/test_static.py --ignore checks/e2e/test_tls.py --ignore checks/e2e/test_watch_tls.py \
    --ignore checks/e2e/test_swift_client.py --ignore checks/e2e/test_eventsource_node.py

step "end-to-end tests again with every server on --redis (one redis-server for the run; issue 26: the existing suite on --redis)"
# Not again: test_redis.py and test_redis_families.py (on Redis already, above), test_store.py (its servers choose
# --data: the log store), test_families.py (its servers choose memory or a --data of their own; families under
# --redis are test_redis_families.py's), test_family_clients.py (the clients follow a member as any feed) and
# test_log_cache*.py (once, in the first pass).
DIFFSTREAM_E2E_REDIS=1 python3 -m pytest checks/e2e -q -p no:cacheprovider --ignore checks/e2e/test_redis.py --ignore checks/e2e/test_redis_memory.py --ignore checks/e2e/test_redis_restore.py --ignore checks/e2e/test_store.py \
    --ignore checks/e2e/test_log_cache.py --ignore checks/e2e/test_log_cache_redis.py --ignore checks/e2e/test_log_clients.py \
    --ignore checks/e2e/test_embedding.py --ignore checks/e2e/test_families.py --ignore checks/e2e/test_redis_families.py --ignore checks/e2e/test_family_writes.py --ignore checks/e2e/test_upgrade_fixture.py \
    --ignore checks/e2e/test_family_clients.py

step "browser tests"
python3 -m pytest checks/browser -q -p no:cacheprovider --deselect checks/browser/test_stream_hub.py  # the node tests ran above

step "the example packages Examples/Scoreboard and Examples/Shelves, and the docs' Swift snippets (checks/e2e/test_embedding.py)"
# One scratch directory, several root packages: SwiftPM may keep the last one's build plan
# (release/description.json) and answer "No target named 'Scoreboard…' in build description" for
# another's product. A build that fails is run once more with the plan dropped (planning takes seconds);
# dropping it after, not before, also covers a build that waited on the background chain's lock.
release_package() { "$@" || { rm -f .build-release/release/description.json; "$@"; }; }
release_package "${scoreboard_build[@]}"
release_package "${shelves_build[@]}"
release_package "${doc_snippets_build[@]}"
DIFFSTREAM_EXAMPLE_BINARY="$PWD/.build-release/release/Scoreboard" DIFFSTREAM_SHELVES_BINARY="$PWD/.build-release/release/Shelves" \
    DIFFSTREAM_DOC_SNIPPETS_BUILD="${doc_snippets_build[*]}" python3 -m pytest checks/e2e/test_embedding.py -q -p no:cacheprovider

step "build (release, static Swift runtime, warnings as errors) and the Dockerfile checks"
release_package "${release_build[@]}"
release_package "${watch_build[@]}"
hadolint Dockerfile
scripts/check-docker-runtime.sh .build-release/release/diffstream

step "memory per idle subscriber, release binary (Benchmarks/idle-memory.py; budget 1.2 KiB, issue 35)"
# The growth from 5,000 to 10,000 idle subscribers, median of 7 runs: the marginal cost of a subscriber,
# without what the first connections make once. Measured 1.0-1.1 KiB; the build before issue 35 held 1.5-1.7.
python3 Benchmarks/idle-memory.py --subscribers 5000 --runs 7 --budget 1.2 .build-release/release/diffstream

if [[ -n ${DIFFSTREAM_FUZZ:-} ]]; then
    step "fuzzing (scripts/fuzz.sh 10, the targets at once; long runs are recorded in docs/fuzzing.md)"
    FUZZ_CONFIGURATION=debug FUZZ_PARALLEL=1 scripts/fuzz.sh 10
fi

step "all tests passed"
