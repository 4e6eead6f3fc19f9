# Sourced by the replication benchmarks: installs nats-server when it is missing (apt-get, sudo when not root),
# builds `parley` in release mode (into $parley), makes a scratch directory ($scratch, removed on exit) and starts a
# three-server JetStream cluster on 127.0.0.1 with free ports ($store: its URLs). Every process whose pid is added to
# $pids is stopped on exit, failure or interrupt (SIGTERM, then SIGKILL after 5 s).
# The caller sets $here (the Benchmarks directory) and $name (the scratch directory's prefix).
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

scratch="$(mktemp -d "${TMPDIR:-/tmp}/parley-$name.XXXXXX")"
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
