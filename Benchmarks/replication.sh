#!/usr/bin/env bash
# Validated commands on the local log and on a replicated stream, side by side, with a follower's lag:
#
#   Benchmarks/replication.sh [--commands N] [--json FILE]
#
# Installs nats-server with apt-get when it is missing (sudo when not root), builds `parley` in release mode,
# starts a three-server JetStream cluster on 127.0.0.1 (free ports, a temporary directory), runs
# `parley bench --store nats://… --replicas 3`, and stops the servers by pid, also on failure or interrupt.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --commands) extra+=(--commands "$2"); shift ;;
        --json) extra+=(--json-file "$2"); shift ;;
        -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "replication.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

nats=$(command -v nats-server || true)
[ -z "$nats" ] && [ -x /usr/sbin/nats-server ] && nats=/usr/sbin/nats-server
if [ -z "$nats" ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "Installing nats-server (apt-get)…" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >&2
    nats=$(command -v nats-server || echo /usr/sbin/nats-server)
fi

echo "Building parley (release)…" >&2
swift build -c release --package-path "$here/.." --product parley >&2
parley="$(swift build -c release --package-path "$here/.." --show-bin-path)/parley"

scratch="$(mktemp -d "${TMPDIR:-/tmp}/parley-replication.XXXXXX")"
pids=()
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$scratch"
    exit $status
}
trap cleanup EXIT INT TERM

# Six free ports on 127.0.0.1: a client and a route port per server.
mapfile -t ports < <(python3 - <<'PY'
import socket
sockets = []
for _ in range(6):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    sockets.append(s)
for s in sockets:
    print(s.getsockname()[1])
PY
)
routes="nats-route://127.0.0.1:${ports[3]},nats-route://127.0.0.1:${ports[4]},nats-route://127.0.0.1:${ports[5]}"
store=""
for i in 0 1 2; do
    mkdir -p "$scratch/n$i"
    cat > "$scratch/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:${ports[$i]}
jetstream { store_dir: "$scratch/n$i" }
cluster { name: bench, listen: 127.0.0.1:${ports[$((i + 3))]}, routes: [$routes] }
CONF
    "$nats" -c "$scratch/n$i.conf" > "$scratch/n$i.log" 2>&1 &
    pids+=($!)
    store+="${store:+,}nats://127.0.0.1:${ports[$i]}"
done
echo "JetStream cluster: $store (logs in $scratch)" >&2
sleep 3
"$parley" bench --store "$store" --replicas 3 ${extra[@]+"${extra[@]}"}
