#!/usr/bin/env bash
# Message-send throughput and latency under wrk: USERS users, each with its own token, in rooms of
# ROOM_SIZE, POST {"body":…} to /v1/rooms/{room}/messages over CONNECTIONS keep-alive connections.
# Prints wrk's report with --latency (requests/s, latency distribution), send.lua's summary (p50/p90/p99/
# p99.9/max, count of non-2xx) and the server's log position and RSS before and after.
#
#   Benchmarks/Server/wrk-send.sh
#
# Env: PARLEY_BIN (default .build/release/parley), USERS (256), ROOM_SIZE (4), THREADS (2),
# CONNECTIONS (256), DURATION (15s), TOKENS (parley: `parley token` per user; local: made in Python).
# Exits non-zero when any request was not 2xx.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v wrk >/dev/null || { echo "run $here/setup.sh first (wrk is missing)" >&2; exit 2; }
source "$here/server.sh"

users="${USERS:-256}"
threads="${THREADS:-2}"
connections="${CONNECTIONS:-256}"
duration="${DURATION:-15s}"

start_server "${PARLEY_BIN:-}"
python3 "$here/harness.py" seed --url "$PARLEY_URL" --parley "$PARLEY_BIN" --secret-file "$PARLEY_SECRET" \
    --users "$users" --room-size "${ROOM_SIZE:-4}" --prefix w --tokens "${TOKENS:-parley}" \
    --out "$PARLEY_TMP/users.tsv"

position() { curl -s --noproxy '*' "$PARLEY_URL/readyz" | sed -n 's/.*"position": *\([0-9]*\).*/\1/p'; }
rss() { awk '/^VmRSS:/ { print $2 " KiB" }' "/proc/$PARLEY_PID/status"; }
before="$(position)"
echo "server: position $before, RSS $(rss) before wrk"

wrk -t"$threads" -c"$connections" -d"$duration" --timeout 10s --latency \
    -s "$here/send.lua" "$PARLEY_URL" -- "$PARLEY_TMP/users.tsv" "$threads" | tee "$PARLEY_TMP/wrk.out"

after="$(position)"
echo "server: position $after (+$((after - before)) events), RSS $(rss) after wrk"
server_alive || { echo "wrk-send: the server died during the run" >&2; exit 1; }
failed="$(sed -n 's/^non-2xx: *\([0-9]*\)$/\1/p' "$PARLEY_TMP/wrk.out")"
[ "${failed:-1}" -eq 0 ] || { echo "wrk-send: $failed requests were not 2xx" >&2; exit 1; }
