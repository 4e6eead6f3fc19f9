#!/usr/bin/env bash
# Fuzzes the whole API from its own OpenAPI document with schemathesis: no server errors (5xx), every status
# documented, 405 for a method a path does not take, and every
# response conforming to the documented schema. Starts a throwaway server, seeds two users, a group room
# and a message, then runs schemathesis as u1, with the seeded ids as the values of path parameters.
#
#   Benchmarks/Server/schemathesis.sh [extra schemathesis run flags, e.g. --phases fuzzing --seed 1]
#
# Env: PARLEY_BIN (default .build/release/parley), MAX_EXAMPLES (30), TIME_LIMIT (seconds, 300: a hard
# bound on the run), WORKERS (1). Exits non-zero when schemathesis finds a failure or hits the time limit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
schemathesis="$here/.venv/bin/schemathesis"
[ -x "$schemathesis" ] || { echo "run $here/setup.sh first" >&2; exit 2; }
source "$here/server.sh"

# POST $2 as token $1 with JSON $3; prints the answer, fails unless it is 2xx.
post() {
    local answer status
    answer="$(curl -sS --noproxy '*' -w '\n%{http_code}' -X POST "$PARLEY_URL$2" \
        -H "Authorization: Bearer $1" -H 'Content-Type: application/json' -d "$3")"
    status="${answer##*$'\n'}"
    answer="${answer%$'\n'*}"
    echo "seed: POST $2 -> $status $answer" >&2
    case "$status" in 2??) echo "$answer" ;; *) return 1 ;; esac
}

start_server "${PARLEY_BIN:-}"
T1="$(token u1)"
T2="$(token u2)"
post "$T1" /v1/users '{"method":"email","email":"u1@example.com","name":"User 1"}' >/dev/null
post "$T2" /v1/users '{"method":"email","email":"u2@example.com","name":"User 2"}' >/dev/null
# The server makes the room's id from its creator and the client's own id for it.
room="$(post "$T1" /v1/rooms '{"room":"r1","name":"Room 1","members":["u2"]}' \
    | sed -n 's/.*"room":"\([^"]*\)".*/\1/p')"
message="$(post "$T1" "/v1/rooms/$room/messages" '{"body":"hello from the schemathesis seed"}' \
    | sed -n 's/.*"message":"\([^"]*\)".*/\1/p')"
post "$T2" "/v1/rooms/$room/messages" '{"body":"and a reply"}' >/dev/null

# Path parameters take the seeded ids, so the operations reach past "404 no such room/user".
cat >"$PARLEY_TMP/schemathesis.toml" <<TOML
[parameters]
room = "$room"
user = "u2"
from = "u2"
to = "u2"
friend = "u2"
message = "$message"
TOML

cd "$PARLEY_TMP" # schemathesis writes nothing into the repo
# deleteAccount is left out: it erases u1 for good, and every later request of the run would be 401 erased
# (Tests/ServerTests/AccountDeletionTests covers it).
set +e
timeout --signal=INT --kill-after=30 "${TIME_LIMIT:-300}" \
    "$schemathesis" --config-file "$PARLEY_TMP/schemathesis.toml" run "$PARLEY_URL/v1/openapi.json" \
    --checks not_a_server_error,response_schema_conformance,status_code_conformance,unsupported_method \
    --header "Authorization: Bearer $T1" \
    --max-examples "${MAX_EXAMPLES:-30}" \
    --workers "${WORKERS:-1}" \
    --request-timeout 10 \
    --generation-database none \
    --no-color \
    --exclude-operation-id deleteAccount \
    "$@"
status=$?
set -e
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "schemathesis: stopped at the time limit (${TIME_LIMIT:-300} s): the run is incomplete" >&2
fi
if ! server_alive; then
    echo "schemathesis: the server died during the run; its log:" >&2
    cat "$PARLEY_LOG" >&2
    status=1
fi
echo "schemathesis: exit $status ($([ "$status" -eq 0 ] && echo passed || echo FAILED))"
exit "$status"
