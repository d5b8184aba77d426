#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ (--sanitize=fuzzer --sanitize=address, in their own scratch
# path) and runs each one for the given number of seconds (default 60), one after the other; with
# FUZZ_PARALLEL=1 all at once. Exits 1 if any target finds a crash, and prints where the input is.
#   scripts/fuzz.sh [seconds]
#   scripts/fuzz.sh --build-only                        # builds and checks the targets, runs none
#   FUZZ_PARALLEL=1 nice -n 10 scripts/fuzz.sh 1500      # the long run (docs/fuzzing.md)
# Environment: FUZZ_SCRATCH (default .build-fuzz), FUZZ_CONFIGURATION (release or debug; default
# release), FUZZ_TARGETS (names to run, default every Fuzz/Sources/fuzz-*).
# Leak detection is off (-detect_leaks=0): with Swift concurrency, allocations of one run are freed on
# other threads later, so libFuzzer would stop the world for a full leak scan after most inputs (it made
# the targets that go through FeedAPI run at a few inputs per second); -rss_limit_mb still bounds memory.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
[[ "${1:-}" == --build-only ]] && { build_only=1; shift; }
seconds=${1:-60}
scratch=${FUZZ_SCRATCH:-.build-fuzz}
configuration=${FUZZ_CONFIGURATION:-release}
export SWIFT_BACKTRACE=enable=no

targets=${FUZZ_TARGETS:-$(cd Fuzz/Sources && ls -d fuzz-* | sort)}
mkdir -p "$scratch"
echo "fuzz: building $(echo $targets | wc -w) targets ($configuration, fuzzer + address sanitizer) in $scratch"
# swiftc keeps only the last -sanitize= option it is given, and SwiftPM passes its sanitizers in no fixed
# order: the combined option, passed last, makes every build both coverage-guided and address-checked.
sanitize=(--sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing)
swift build --package-path Fuzz -c "$configuration" "${sanitize[@]}" --scratch-path "$scratch" --manifest-cache none >"$scratch/fuzz-build.log" 2>&1 \
    || { cat "$scratch/fuzz-build.log" >&2; echo "fuzz: build failed" >&2; exit 2; }
bin=$(swift build --package-path Fuzz -c "$configuration" "${sanitize[@]}" --scratch-path "$scratch" --manifest-cache none --show-bin-path)
for name in $targets; do
    # A target without coverage counters would be fuzzed blind: refuse to run it.
    # (grep -c reads everything: grep -q would end the pipe early, and pipefail would count that as a failure)
    readelf -S "$bin/$name" | grep -c __sancov >/dev/null || { echo "fuzz: $bin/$name has no coverage instrumentation" >&2; exit 2; }
    nm "$bin/$name" | grep -c __asan_report >/dev/null || { echo "fuzz: $bin/$name has no address sanitizer instrumentation" >&2; exit 2; }
done
((build_only)) && { echo "fuzz: built and instrumented: $targets"; exit 0; }

run() {
    local name=$1
    local corpus="$scratch/corpus/$name" artifacts="$scratch/artifacts/$name" log="$scratch/logs/$name.log"
    mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
    # The committed seeds stay as they are; what the fuzzer finds goes to the scratch corpus.
    [[ -d "Fuzz/Corpus/$name" ]] && cp -n "Fuzz/Corpus/$name"/* "$corpus"/ 2>/dev/null || true
    local started=$SECONDS status=0
    "$bin/$name" "$corpus" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=16384 \
        -detect_leaks=0 -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
    local executions
    executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    if ((status != 0)); then
        echo "fuzz: $name FAILED after $((SECONDS - started)) s (exit $status); log: $log"
        grep -E 'ERROR|fuzz invariant|Fatal error|Test unit written|artifact_prefix' "$log" | head -20 || true
        ls "$artifacts"/ 2>/dev/null | sed "s|^|fuzz: crash input: $artifacts/|"
        return 1
    fi
    echo "fuzz: $name ok: $executions executions in $((SECONDS - started)) s, corpus $(ls "$corpus" | wc -l) inputs"
}

failed=0
if [[ "${FUZZ_PARALLEL:-0}" == 1 ]]; then
    pids=()
    for name in $targets; do run "$name" & pids+=($!); done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
else
    for name in $targets; do run "$name" || failed=1; done
fi
exit $failed
