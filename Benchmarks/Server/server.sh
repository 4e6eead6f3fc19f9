# Start and stop a throwaway `parley serve` for the harness scripts. Source it, then:
#
#   start_server [PATH-TO-PARLEY]   # default: $PARLEY_BIN, else <repo>/.build/release/parley
#   token USER [--admin]            # prints a JWT for USER (parley token, valid 1 h)
#   server_alive                    # whether the server still runs
#
# start_server builds nothing. It makes a temp dir (data dir, 48-byte random secret, server log), raises
# the file limit (the server inherits it), starts the server on a free loopback port with no rate limit,
# waits (at most 30 s) for GET /readyz to answer 200, and sets:
#   PARLEY_BIN PARLEY_PORT PARLEY_URL PARLEY_PID PARLEY_SECRET PARLEY_TMP PARLEY_LOG
# An EXIT trap stops the server by its pid (SIGTERM, then SIGKILL after 30 s) and removes the temp dir.
# Set KEEP_SERVER_LOG=1 to have the server's log printed when it stops.

_server_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_server_root="$(cd "$_server_here/../.." && pwd)"

# Whether the server process still runs (a dead child stays a zombie until waited for, and kill -0 says
# yes to a zombie).
server_alive() {
    [ -n "${PARLEY_PID:-}" ] && [ -r "/proc/$PARLEY_PID/status" ] \
        && ! grep -q '^State:[[:space:]]*Z' "/proc/$PARLEY_PID/status"
}

stop_server() {
    local status=$? code=0
    if [ -n "${PARLEY_PID:-}" ]; then
        if server_alive; then
            kill -TERM "$PARLEY_PID" 2>/dev/null || true
            local waited=0
            while server_alive && [ "$waited" -lt 300 ]; do
                sleep 0.1
                waited=$((waited + 1))
            done
            if server_alive; then
                echo "server: pid $PARLEY_PID did not stop in 30 s; killing it" >&2
                kill -KILL "$PARLEY_PID" 2>/dev/null || true
            fi
        fi
        wait "$PARLEY_PID" 2>/dev/null || code=$?
        echo "server: pid $PARLEY_PID stopped (exit $code)" >&2
        if [ "$code" -ne 0 ] && [ "${KEEP_SERVER_LOG:-0}" != 1 ]; then
            echo "---- server log (last 20 lines) ----" >&2
            tail -n 20 "$PARLEY_LOG" >&2 || true
        fi
    fi
    if [ -n "${PARLEY_TMP:-}" ] && [ -d "$PARLEY_TMP" ]; then
        if [ "${KEEP_SERVER_LOG:-0}" = 1 ] && [ -f "$PARLEY_LOG" ]; then
            echo "---- server log ----" >&2
            cat "$PARLEY_LOG" >&2
        fi
        rm -rf "$PARLEY_TMP"
    fi
    PARLEY_PID=""
    return "$status"
}

start_server() {
    PARLEY_BIN="${1:-${PARLEY_BIN:-$_server_root/.build/release/parley}}"
    if [ ! -x "$PARLEY_BIN" ]; then
        echo "server: no parley binary at $PARLEY_BIN (build it: swift build -c release)" >&2
        return 1
    fi
    # 1000+ sockets on each side; the server started below inherits this limit.
    ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

    PARLEY_TMP="$(mktemp -d "${TMPDIR:-/tmp}/parley-bench.XXXXXX")"
    trap stop_server EXIT
    trap 'exit 130' INT TERM
    PARLEY_SECRET="$PARLEY_TMP/secret"
    PARLEY_LOG="$PARLEY_TMP/server.log"
    # 48 random bytes, base64 so the secret file is text (the server reads it as UTF-8).
    head -c 48 /dev/urandom | base64 -w0 >"$PARLEY_SECRET"
    chmod 600 "$PARLEY_SECRET"
    PARLEY_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    PARLEY_URL="http://127.0.0.1:$PARLEY_PORT"

    "$PARLEY_BIN" serve --data "$PARLEY_TMP/data" --port "$PARLEY_PORT" --host 127.0.0.1 \
        --secret-file "$PARLEY_SECRET" --rate-limit 0 >"$PARLEY_LOG" 2>&1 &
    PARLEY_PID=$!

    local deadline=$((SECONDS + 30))
    until [ "$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --max-time 2 "$PARLEY_URL/readyz")" = 200 ]; do
        if ! server_alive; then
            echo "server: parley serve exited before it was ready; its log:" >&2
            cat "$PARLEY_LOG" >&2
            return 1
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "server: /readyz did not answer 200 within 30 s; its log:" >&2
            cat "$PARLEY_LOG" >&2
            return 1
        fi
        sleep 0.1
    done
    export PARLEY_BIN PARLEY_PORT PARLEY_URL PARLEY_PID PARLEY_SECRET PARLEY_TMP PARLEY_LOG
    echo "server: pid $PARLEY_PID serving $PARLEY_URL (data $PARLEY_TMP/data, file limit $(ulimit -n))" >&2
}

token() {
    local user="$1"
    shift
    "$PARLEY_BIN" token --user "$user" "$@" --ttl 3600 --secret-file "$PARLEY_SECRET"
}
