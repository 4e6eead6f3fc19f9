#!/usr/bin/env bash
# Real WebSocket clients on /v1/live against a throwaway server (see live_clients.py for what it measures).
#
#   Benchmarks/Server/live-clients.sh                  # 1000 clients, 200 rooms, 32 senders, 20 s
#   Benchmarks/Server/live-clients.sh --check-resume   # abrupt disconnects + resume `since`: OK or the diff
#   Benchmarks/Server/live-clients.sh -c 200 -r 40 -d 10 --tokens local --json results/live.json
#
# Env: PARLEY_BIN (default .build/release/parley). Other flags go to live_clients.py (--help).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="$here/.venv/bin/python"
[ -x "$python" ] || { echo "run $here/setup.sh first" >&2; exit 2; }
source "$here/server.sh"

# 1000+ sockets here and in the server, which inherits the limit (up to the hard limit where that is lower).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
start_server "${PARLEY_BIN:-}"
set +e
"$python" "$here/live_clients.py" --url "$PARLEY_URL" --pid "$PARLEY_PID" --parley "$PARLEY_BIN" \
    --secret-file "$PARLEY_SECRET" "$@"
status=$?
set -e
server_alive || { echo "live-clients: the server died during the run" >&2; status=1; }
exit "$status"
