#!/usr/bin/env bash
# The push subscription against a local gateway, with messages sent through the engine at full speed:
#
#   Benchmarks/push.sh [--rooms N] [--messages N] [--pace N] [--concurrency N] [--json FILE] [--skip-build]
#
# Builds `parley` in release mode and runs `parley bench --push`: a log in a temporary directory with N rooms of 8
# members (256 by default; one device each; one sender per room), a gateway in the same process on 127.0.0.1
# (plain HTTP/1.1, threads of its own, answers 200 and notes each notification's arrival and position). It prints
# command throughput without and with the push subscription running (and their ratio), the backlog's delivery
# rate, notifications per second at the receiver while messages are sent, commit-to-receiver latency p50/p99, and
# the CPU share of the process, the receiver and the HTTP client; then latency with messages at a steady --pace
# (1,430 messages/s by default: 10,010 notifications/s). --concurrency is PushConfiguration.maximumConcurrentSends
# (64 by default; 1 sends one notification at a time).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
extra=()
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --rooms) extra+=(--push-rooms "$2"); shift ;;
        --messages) extra+=(--commands "$2"); shift ;;
        --concurrency) extra+=(--push-concurrency "$2"); shift ;;
        --pace) extra+=(--push-pace "$2"); shift ;;
        --json) extra+=(--json-file "$2"); shift ;;
        --skip-build) build=0 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "push.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$build" = 1 ]; then
    echo "Building parley (release)…" >&2
    swift build -c release --package-path "$here/.." --product parley >&2
fi
parley="$(swift build -c release --package-path "$here/.." --show-bin-path)/parley"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)" >&2
"$parley" bench --push ${extra[@]+"${extra[@]}"}
