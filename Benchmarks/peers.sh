#!/usr/bin/env bash
# Parley beside PostgreSQL 15, Redis 7 Streams and SQLite on the same catalogue events, in one run:
#
#   Benchmarks/peers.sh [--quick] [--out FILE.json] [--seconds N] [--no-ceilings] [--skip-build]
#
# Installs what is missing with apt-get (postgresql-15, redis-server, libsqlite3-dev; sudo when not root), builds
# `parley-peers` in release mode, starts throwaway servers on 127.0.0.1 only, on free ports, in a temporary
# directory (PostgreSQL: fsync=on, synchronous_commit=on; Redis: appendonly yes, appendfsync always, no RDB
# snapshots), runs every workload (first `parley bench`'s own workloads, in a child process, for Parley's figures
# and this machine's limits), prints the table, writes the JSON report, and stops the servers by pid, also on
# failure or interrupt. --quick runs Parley and SQLite at small sizes (well under a minute once built): what a test or CI
# runs to check the output's shape, never its speed. --seconds caps each timed peer run (default 10);
# --skip-build reuses the release binaries. Draw the chart: python3 Benchmarks/plot_peers.py FILE.json FILE.png.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
quick=0
build=1
out=""
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --out) out="$2"; shift ;;
        --seconds) extra+=(--seconds "$2"); shift ;;
        --no-ceilings) extra+=(--no-ceilings) ;;
        --skip-build) build=0 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "peers.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

pg_bin=/usr/lib/postgresql/15/bin

# --- install what is missing -------------------------------------------------------------------------------------
missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists sqlite3; then missing+=(libsqlite3-dev); fi
if [ "$quick" -eq 0 ]; then
    [ -x "$pg_bin/postgres" ] || missing+=(postgresql-15)
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "Installing ${missing[*]} (apt-get)…" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi

# --- build (parley-peers runs Parley's workloads itself: no `parley` build, with its server, is needed) ------------
if [ "$build" -eq 1 ]; then
    echo "Building parley-peers (release)…" >&2
    swift build -c release --package-path "$here" --product parley-peers >&2
fi
bin="$(swift build -c release --package-path "$here" --show-bin-path)"
peers="$bin/parley-peers"

# --- throwaway servers -------------------------------------------------------------------------------------------
scratch="$(mktemp -d "${TMPDIR:-/tmp}/parley-peers.XXXXXX")"
pids=()
peers_pid=""
cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ -n "$peers_pid" ] && kill -0 "$peers_pid" 2>/dev/null; then
        # parley-peers and the `parley bench` it may be running.
        for pid in $(pgrep -P "$peers_pid") "$peers_pid"; do kill -TERM "$pid" 2>/dev/null || true; done
        wait "$peers_pid" 2>/dev/null || true
    fi
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -INT "$pid" 2>/dev/null || true
            for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$scratch"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A port nothing listens on (the server refuses to start if another process takes it first).
free_port() {
    local port
    while true; do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
    done
}

args=(--work "$scratch/work")
mkdir -p "$scratch/work" "$scratch/sqlite"
args+=(--sqlite-directory "$scratch/sqlite")

if [ "$quick" -eq 0 ]; then
    # PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
    as_postgres=()
    if [ "$(id -u)" -eq 0 ]; then as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --); fi
    mkdir -p "$scratch/postgres"
    if [ "$(id -u)" -eq 0 ]; then
        chmod 0711 "$scratch"  # the postgres user passes through to its own directory, and sees nothing else
        chown postgres: "$scratch/postgres"
    fi
    "${as_postgres[@]}" "$pg_bin/initdb" -D "$scratch/postgres/data" -U postgres --auth=trust -E UTF8 \
        >"$scratch/postgres/initdb.log" 2>&1 || { cat "$scratch/postgres/initdb.log" >&2; exit 1; }
    pg_port="$(free_port)"
    "${as_postgres[@]}" "$pg_bin/postgres" -D "$scratch/postgres/data" -c listen_addresses=127.0.0.1 \
        -c port="$pg_port" -c unix_socket_directories="$scratch/postgres" -c fsync=on -c synchronous_commit=on \
        -c full_page_writes=on -c max_connections=300 -c shared_buffers=1GB -c max_wal_size=8GB \
        -c logging_collector=off >"$scratch/postgres/server.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 300); do
        "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break
        kill -0 "${pids[-1]}" 2>/dev/null || { cat "$scratch/postgres/server.log" >&2; exit 1; }
        sleep 0.1
    done
    "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" || { echo "PostgreSQL did not start" >&2; exit 1; }
    args+=(--postgres-port "$pg_port")

    mkdir -p "$scratch/redis"
    redis_port="$(free_port)"
    redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$scratch/redis" --appendonly yes \
        --appendfsync always --save "" --auto-aof-rewrite-percentage 0 --daemonize no \
        --logfile "$scratch/redis/server.log" &
    pids+=($!)
    for _ in $(seq 1 300); do
        [ "$(redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null)" = "PONG" ] && break
        kill -0 "${pids[-1]}" 2>/dev/null || { cat "$scratch/redis/server.log" >&2; exit 1; }
        sleep 0.1
    done
    args+=(--redis-port "$redis_port")
else
    args+=(--quick)
fi

if [ -z "$out" ]; then out="${TMPDIR:-/tmp}/parley-peers-$(date +%Y%m%d-%H%M%S).json"; fi
"$peers" "${args[@]}" "${extra[@]}" --out "$out" &
peers_pid=$!
wait "$peers_pid"
peers_pid=""
echo "JSON report: $out" >&2
