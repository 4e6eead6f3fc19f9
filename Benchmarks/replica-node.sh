#!/usr/bin/env bash
# A replicated node's memory, start-up and takeover, beside the local log's own process, on the simulated week:
#
#   Benchmarks/replica-node.sh [--users N] [--days N]
#
# Builds `parley` in release mode, starts a three-server JetStream cluster on 127.0.0.1 (free ports, a temporary
# directory), simulates the week into a local log and imports it into the stream (R3), then times `parley serve`
# until it answers and reads its resident memory (VmRSS, and the peak VmHWM) once it is idle:
#   local     the local log's own process (--data on the simulated log), from its snapshot and, with its
#             snapshots moved aside, folding the whole history as a new follower does;
#   catch-up  a new follower with an empty copy (--store … --data DIR): reads the whole stream and folds it;
#   restart   that follower stopped (SIGTERM) and started again on its copy: reads only what is newer;
#   takeover  a writer killed (SIGKILL): seconds until the follower answers /readyz 200 as the writer;
#   crashed   the killed node started again on the copy it left (no checkpoint: its segments are scanned).
# Every process is stopped by pid on exit, failure or interrupt.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
users=20000
days=7
while [ $# -gt 0 ]; do
    case "$1" in
        --users) users="$2"; shift ;;
        --days) days="$2"; shift ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "replica-node.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

name=replica-node
# shellcheck source=nats-cluster.sh
source "$here/nats-cluster.sh"

head -c 48 /dev/urandom | base64 > "$scratch/secret"
# On a failure, the servers' own words.
trap 'for log in "$scratch"/serve-*.log; do [ -f "$log" ] && { echo "== $log" >&2; tail -20 "$log" >&2; }; done' ERR
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
# Seconds from $1 (a `now`) until $2 answers 200, polled every 20 ms; fails after $3 seconds.
wait_ok() {
    python3 - "$1" "$2" "$3" <<'PY'
import sys, time, urllib.request
start, url, limit = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
while time.time() - start < limit:
    try:
        if urllib.request.urlopen(url, timeout=1).status == 200:
            print(f"{time.time() - start:.2f}")
            sys.exit(0)
    except Exception:
        pass
    time.sleep(0.02)
sys.exit(f"{url} did not answer 200 within {limit:.0f} s")
PY
}
# Resident and peak memory of pid $1 in MiB, after it has been idle for 3 s.
memory() {
    sleep 3
    awk '/VmRSS/ { rss = $2 } /VmHWM/ { hwm = $2 } END { printf "%.0f %.0f\n", rss / 1024, hwm / 1024 }' "/proc/$1/status"
}
# Starts `parley serve` on port $1 with the rest as its arguments; prints its pid.
serve() {
    local port="$1"
    shift
    "$parley" serve --port "$port" --secret-file "$scratch/secret" "$@" > "$scratch/serve-$port.log" 2>&1 &
    echo $!
}
stop() {
    kill -TERM "$1"
    for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    echo "parley serve (pid $1) did not stop within 30 s" >&2
    return 1
}

echo "Simulating $users users for $days days into a local log…" >&2
"$parley" simulate --data "$scratch/local" --users "$users" --days "$days" >&2
"$parley" export --data "$scratch/local" --output "$scratch/week.jsonl" >&2
echo "Importing it into the stream…" >&2
# An import that stops part way (its writer lease lapsed on a machine too busy to renew it) is run again: the events
# already in the stream are recognised by their ids and skipped.
for attempt in 1 2 3; do
    "$parley" import "$scratch/week.jsonl" --store "$store" --replicas 3 >&2 && break
    [ "$attempt" = 3 ] && exit 1
    echo "Importing again (attempt $((attempt + 1)))…" >&2
done
rm -f "$scratch/week.jsonl"
events=$("$parley" stats --data "$scratch/local" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])')

# Starts `parley serve` on $port with the given arguments and prints a table row: seconds until /healthz answers,
# RSS and peak once idle, and RSS over the local log's ($local_rss; this row's own when unset). Leaves its pid in $pid.
row() {
    local label="$1"
    shift
    local start seconds rss hwm
    start=$(now)
    pid=$(serve "$port" "$@")
    pids+=("$pid")
    seconds=$(wait_ok "$start" "http://127.0.0.1:$port/healthz" 600)
    read -r rss hwm < <(memory "$pid")
    local_rss=${local_rss:-$rss}
    rows+=("$(printf '%-34s %9ss %10s %10s %8.2f' "$label" "$seconds" "$rss" "$hwm" \
        "$(python3 -c "print($rss / $local_rss)")")")
}
rows=()
port=$(free_port)
row "local log (parley serve --data)" --data "$scratch/local"
stop "$pid"
mkdir "$scratch/snapshots"
mv "$scratch/local"/snapshot-* "$scratch/snapshots/" 2>/dev/null || true  # none on a small log
row "local log, no snapshot (a fold)" --data "$scratch/local"
stop "$pid"
copy=(--store "$store" --data "$scratch/copy-a" --node a)
row "new follower (empty copy)" "${copy[@]}" --role follower
stop "$pid"
row "same node started again" "${copy[@]}" --role follower
stop "$pid"

# Node a takes the free lease: node b follows, and takes over when a is killed.
start=$(now)
pid=$(serve "$port" "${copy[@]}" --role auto)
pids+=("$pid")
writer_start=$(wait_ok "$start" "http://127.0.0.1:$port/readyz" 300)
port_b=$(free_port)
pid_b=$(serve "$port_b" --store "$store" --data "$scratch/copy-b" --node b --role auto)
pids+=("$pid_b")
wait_ok "$(now)" "http://127.0.0.1:$port_b/healthz" 600 > /dev/null
sleep 2
kill -KILL "$pid"
killed=$(now)
takeover=$(wait_ok "$killed" "http://127.0.0.1:$port_b/readyz" 60)
row "same node started after SIGKILL" "${copy[@]}" --role follower
stop "$pid"
stop "$pid_b"

copy_bytes=$(du -sb "$scratch/copy-a" | cut -f1)
local_bytes=$(du -sb "$scratch/local" | cut -f1)
printf '\n%s events (%s users, %s days); lease 2 s; copy on disk %.0f MiB, local log %.0f MiB\n\n' \
    "$events" "$users" "$days" "$((copy_bytes / 1048576))" "$((local_bytes / 1048576))"
printf '%-34s %10s %10s %10s %8s\n' "process" "answers" "RSS MiB" "peak MiB" "RSS ×"
printf '%s\n' "${rows[@]}"
printf '%-34s %9ss\n' "same node started again as writer" "$writer_start"
printf '%-34s %9ss\n' "takeover after SIGKILL of writer" "$takeover"
