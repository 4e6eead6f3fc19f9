#!/usr/bin/env bash
# Builds the fuzz targets (libFuzzer + AddressSanitizer, release) and runs each for SECONDS (default 600) from
# its seed corpus in Tests/Fuzz/Corpus/<Target>/. New inputs go to a scratch corpus, never into the repository.
# A crashing input is copied to $FUZZ_CRASHES (default /tmp/parley-fuzz-crashes); the script then exits 1.
# Usage: Tests/Fuzz/run.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")"
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(FuzzBatch FuzzSegment FuzzJSONLines FuzzFirebase)
scratch="${FUZZ_SCRATCH:-/tmp/fuzz-build}"
crashes="${FUZZ_CRASHES:-/tmp/parley-fuzz-crashes}"
work="${FUZZ_WORK:-/tmp/parley-fuzz-work}"

# -use-ld=lld: gold fails with an internal error linking the sanitizer runtimes.
swift build -c release --scratch-path "$scratch" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld || exit 2
bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)"

# Swift's runtime keeps caches LeakSanitizer calls leaks: report memory errors, not leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
# Swift's own backtracer trips AddressSanitizer after a trap and hides the stack: let libFuzzer print it.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
mkdir -p "$crashes"
failed=0
for target in "${targets[@]}"; do
    corpus="$work/$target"
    mkdir -p "$corpus" "$work/artifacts/$target"
    echo "== $target: ${seconds}s"
    "$bin/$target" -max_total_time="$seconds" -detect_leaks=0 -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/$target/" "$corpus" "Corpus/$target" 2>&1 | tee "$work/$target.log" \
        | grep -E '^(#[0-9]+ +DONE|==[0-9]+==ERROR|SUMMARY|stat::number_of_executed_units|stat::average_exec_per_sec)'
    status=${PIPESTATUS[0]}
    if [ "$status" -ne 0 ]; then
        failed=1
        cp "$work/artifacts/$target/"* "$crashes/" 2>/dev/null
        echo "!! $target exited $status; inputs in $crashes, log in $work/$target.log"
    fi
done
exit "$failed"
