#!/usr/bin/env bash
# HTTP message sends against the in-process command path and this machine's HTTP ceiling, in one run:
#   1. in process: `parley bench --quick --commands 60000`, its commands-concurrent figure (256 senders);
#   2. the ceiling of any request here: wrk on GET /healthz (no token) and GET /v1/me/rooms (a token);
#   3. wrk-send: 256 connections POSTing messages (see wrk-send.sh).
# Prints each rate and its ratio to (1). wrk runs on the same 2 cores as the server.
#
#   Benchmarks/Server/http-ratio.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v wrk >/dev/null || { echo "run $here/setup.sh first (wrk is missing)" >&2; exit 2; }
source "$here/server.sh"
duration="${DURATION:-15s}"

start_server "${PARLEY_BIN:-}"
"$PARLEY_BIN" bench --quick --commands 60000 --json-file "$PARLEY_TMP/bench.json" >/dev/null 2>&1
inprocess="$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(round(next(w for w in r["workloads"] if w["name"] == "commands-concurrent")["parley"]["eventsPerSecond"]))' \
    "$PARLEY_TMP/bench.json")"

rate() { sed -n 's/^Requests\/sec: *\([0-9.]*\)$/\1/p'; }
healthz="$(wrk -t2 -c256 -d"$duration" "$PARLEY_URL/healthz" | rate)"
reader="$(token ratio-reader)"
authed="$(wrk -t2 -c256 -d"$duration" -H "Authorization: Bearer $reader" "$PARLEY_URL/v1/me/rooms" | rate)"
trap - EXIT
stop_server
DURATION="$duration" bash "$here/wrk-send.sh" | tee "${TMPDIR:-/tmp}/parley-wrk-send.out"
sends="$(rate <"${TMPDIR:-/tmp}/parley-wrk-send.out")"
rm -f "${TMPDIR:-/tmp}/parley-wrk-send.out"

python3 - "$inprocess" "$healthz" "$authed" "$sends" <<'PY'
import sys
inprocess, healthz, authed, sends = (float(x) for x in sys.argv[1:])
print()
print(f"in-process commands-concurrent   {inprocess:>9,.0f} commands/s (256 senders)")
for name, value in [("GET /healthz (no token)", healthz), ("GET /v1/me/rooms (token)", authed),
                    ("POST message, 256 connections", sends)]:
    print(f"{name:<32} {value:>9,.0f} requests/s  {value / inprocess:6.1%} of in-process")
PY
