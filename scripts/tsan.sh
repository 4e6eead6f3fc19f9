#!/usr/bin/env bash
# Runs the log's and the engine's concurrency tests under the thread sanitizer, in its own scratch directory so
# that it never touches .build/. Exits non-zero when a test fails or the sanitizer reports a race.
# Usage: scripts/tsan.sh [FILTER]   (a `swift test --filter` regular expression; the default is below)
set -euo pipefail
cd "$(dirname "$0")/.."
filter="${1:-PipelineTests|StoreConformanceTests|SubscriptionTests|ReadOnlyTests|WriteFailureTests|AppendRulesTests}"
scratch="${TSAN_SCRATCH:-/tmp/tsan-build}"
# halt_on_error: a race fails the run at once, with its two stacks, instead of scrolling past.
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
swift build --build-tests --sanitize=thread --scratch-path "$scratch"
swift test --skip-build --sanitize=thread --scratch-path "$scratch" --filter "$filter"
