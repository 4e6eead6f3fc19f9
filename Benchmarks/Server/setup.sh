#!/usr/bin/env bash
# Installs what the server harness needs, and nothing that is already there:
#   - wrk (Debian package) for wrk-send.sh
#   - a venv at Benchmarks/Server/.venv with websockets and schemathesis
# Safe to run again: each step checks first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if ! command -v wrk >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "setup: installing wrk"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wrk
fi

venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating $venv"
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import websockets' 2>/dev/null \
    || ! "$venv/bin/python" -c 'import schemathesis' 2>/dev/null \
    || [ ! -x "$venv/bin/schemathesis" ]; then
    echo "setup: installing websockets and schemathesis into $venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q websockets schemathesis
fi

echo "setup: wrk: $(command -v wrk)"
echo "setup: websockets $("$venv/bin/python" -c 'import websockets; print(websockets.__version__)')"
echo "setup: $("$venv/bin/schemathesis" --version 2>/dev/null | head -1)"
