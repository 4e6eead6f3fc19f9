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

name=replication
# shellcheck source=nats-cluster.sh
source "$here/nats-cluster.sh"
"$parley" bench --store "$store" --replicas 3 ${extra[@]+"${extra[@]}"}
