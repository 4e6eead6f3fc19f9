#!/usr/bin/env bash
# GET /healthz latency on a busy machine: a throwaway `parley serve` beside BUSY busy-looping processes
# (default one per core, `sh -c 'while :; do :; done'`), while SENDERS users post messages to one room at
# RATE commands/s in all. busy_healthz.py polls /healthz every INTERVAL_MS ms for DURATION s on its own
# connection and times each poll; it prints latency p50/p90/p99/p99.9/max (and whether p99 <= 100 ms, not
# asserted), commands acknowledged (count, rate, non-2xx), the load average, CPU use, and one JSON line.
#
#   Benchmarks/Server/busy-healthz.sh
#   DURATION=20 RATE=200 HEALTHZ_CONNECTION=fresh Benchmarks/Server/busy-healthz.sh --json results/busy.json
#
# Env: PARLEY_BIN (default .build/release/parley), DURATION (60), BUSY ($(nproc)), INTERVAL_MS (20),
# RATE (100), SENDERS (4), HEALTHZ_CONNECTION (keepalive|fresh), TOKENS (parley|local). Other flags go to
# busy_healthz.py (--help). Exit 1 when no command was acknowledged, any healthz poll failed, or the
# server died. Standard library python3, curl and sh only; nothing to set up.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/server.sh"

duration="${DURATION:-60}"
busy="${BUSY:-$(nproc)}"
senders="${SENDERS:-4}"
interval_ms="${INTERVAL_MS:-20}"

start_server "${PARLEY_BIN:-}"
# The senders: SENDERS users in one room, each with a `parley token` (or a locally signed one), seeded
# before the machine gets busy.
timeout 120 python3 "$here/harness.py" seed --url "$PARLEY_URL" --parley "$PARLEY_BIN" \
    --secret-file "$PARLEY_SECRET" --users "$senders" --room-size "$senders" --prefix busy \
    --tokens "${TOKENS:-parley}" --out "$PARLEY_TMP/users.tsv"

busy_pids=()
stop_busy() {
    local pid
    for pid in "${busy_pids[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [ "${#busy_pids[@]}" -eq 0 ] || echo "busy-healthz: stopped ${#busy_pids[@]} busy loops (${busy_pids[*]})" >&2
    busy_pids=()
}
# Stop the busy loops first (so the server stops on a quiet machine), then the server (stop_server takes
# the exit status from $?).
finish() {
    local status=$?
    set +e
    stop_busy
    (exit "$status")
    stop_server
}
trap finish EXIT

echo "busy-healthz: load average before the busy loops: $(cat /proc/loadavg)" >&2
for _ in $(seq 1 "$busy"); do
    sh -c 'while :; do :; done' &
    busy_pids+=("$!")
done
echo "busy-healthz: $busy busy loops on $(nproc) cores: pids ${busy_pids[*]}" >&2

set +e
# At most DURATION + 3 min: the window, timeouts of the last requests, the report.
timeout --kill-after=10 "$(awk -v d="$duration" 'BEGIN { printf "%d", d + 180 }')" \
    python3 -B "$here/busy_healthz.py" --url "$PARLEY_URL" --users "$PARLEY_TMP/users.tsv" --pid "$PARLEY_PID" \
    --busy-pids "$(IFS=,; echo "${busy_pids[*]}")" --duration "$duration" \
    --interval "$(awk -v ms="$interval_ms" 'BEGIN { print ms / 1000 }')" \
    --rate "${RATE:-100}" --healthz-connection "${HEALTHZ_CONNECTION:-keepalive}" "$@"
status=$?
set -e
server_alive || { echo "busy-healthz: the server died during the run" >&2; status=1; }
exit "$status"
