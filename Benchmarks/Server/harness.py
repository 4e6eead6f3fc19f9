"""Shared pieces of the server harness: tokens, JSON calls, seeding users and rooms, the server's RSS.

Standard library only, so the bash scripts can run it with any python3. As a command it seeds a running
server and writes one line per user, `user<TAB>room<TAB>token`, for wrk's Lua script:

    python3 harness.py seed --url http://127.0.0.1:PORT --parley .build/release/parley \
        --secret-file SECRET --users 256 --room-size 4 --prefix w --out users.tsv
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

# No proxy for loopback, whatever the environment says.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class APIError(RuntimeError):
    pass


def call(base, method, path, token=None, body=None, timeout=30):
    """One request; returns (status, decoded JSON or text)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _opener.open(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def expect(base, method, path, token=None, body=None, status=(200, 201)):
    """A request that must answer one of `status`; raises APIError naming it otherwise."""
    got, answer = call(base, method, path, token, body)
    if got not in status:
        raise APIError(f"{method} {path}: HTTP {got} {answer}")
    return answer


# Tokens ------------------------------------------------------------------------------------------------

def parley_token(parley, secret_file, user, admin=False, ttl=3600):
    """A JWT from `parley token` (the server's own issuer)."""
    command = [parley, "token", "--user", user, "--ttl", str(ttl), "--secret-file", secret_file]
    if admin:
        command.append("--admin")
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def local_token(secret_file, user, admin=False, ttl=3600):
    """The same HS256 JWT made here (fast for thousands of users): sub, exp, parley_role."""
    with open(secret_file, encoding="utf-8") as f:
        secret = f.read().strip().encode()

    def b64(raw):
        return base64.urlsafe_b64encode(raw).rstrip(b"=")

    claims = {"sub": user, "exp": int(time.time()) + ttl}
    if admin:
        claims["parley_role"] = "admin"
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = b64(json.dumps(claims, separators=(",", ":")).encode())
    signature = b64(hmac.new(secret, header + b"." + payload, hashlib.sha256).digest())
    return (header + b"." + payload + b"." + signature).decode()


def mint_tokens(users, secret_file, parley=None, how="parley", workers=4):
    """{user: token} for every user, from `parley token` (in parallel) or made here (`how="local"`)."""
    if how == "local":
        return {user: local_token(secret_file, user) for user in users}
    with ThreadPoolExecutor(workers) as pool:
        tokens = pool.map(lambda user: parley_token(parley, secret_file, user), users)
        return dict(zip(users, tokens))


# Seeding -----------------------------------------------------------------------------------------------

def sign_up(base, tokens, workers=8):
    """Registers every user (POST /v1/users as the user)."""

    def one(user):
        body = {"method": "email", "email": f"{user}@example.com", "name": f"User {user}"}
        expect(base, "POST", "/v1/users", tokens[user], body, status=(201,))

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, tokens))


def create_rooms(base, tokens, rooms, workers=8):
    """Creates each group room {name: [members…]}; the first member creates it with the others. The server makes
    each room's id from its creator and the client's name for it: returns {name: room id}."""

    def one(item):
        name, members = item
        body = {"room": name, "name": f"Room {name}", "members": members[1:]}
        answer = expect(base, "POST", "/v1/rooms", tokens[members[0]], body, status=(201,))
        return name, answer["room"]

    with ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(one, rooms.items()))


def seed(base, secret_file, parley, users, room_size, prefix="u", how="parley"):
    """`users` users `<prefix>0001…` in rooms named `<prefix>r001…` of `room_size` members (in order).
    Returns (tokens {user: token}, rooms {room id: [members]}, room_of {user: room id})."""
    names = [f"{prefix}{i:04d}" for i in range(1, users + 1)]
    tokens = mint_tokens(names, secret_file, parley, how)
    sign_up(base, tokens)
    named = {}
    for start in range(0, users, room_size):
        named[f"{prefix}r{start // room_size + 1:03d}"] = names[start:start + room_size]
    ids = create_rooms(base, tokens, named)
    rooms = {ids[name]: members for name, members in named.items()}
    room_of = {user: room for room, members in rooms.items() for user in members}
    return tokens, rooms, room_of


# The server process ------------------------------------------------------------------------------------

def emit_report(report, ok, json_path=None):
    """Prints the report as one JSON line (and writes it to json_path), then exits 0 when ok, else 1."""
    line = json.dumps(report)
    print(line)
    if json_path:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        with open(json_path, "w") as f:
            f.write(line + "\n")
    sys.exit(0 if ok else 1)


def rss_kib(pid):
    """The resident set of process `pid` in KiB (VmRSS), or None."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far, in seconds, or None."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("seed", help="sign up users, put them in rooms, write user<TAB>room<TAB>token lines")
    s.add_argument("--url", required=True)
    s.add_argument("--parley", required=True)
    s.add_argument("--secret-file", required=True)
    s.add_argument("--users", type=int, default=256)
    s.add_argument("--room-size", type=int, default=4)
    s.add_argument("--prefix", default="u")
    s.add_argument("--tokens", choices=["parley", "local"], default="parley")
    s.add_argument("--out", required=True)
    args = parser.parse_args()

    started = time.monotonic()
    tokens, rooms, room_of = seed(
        args.url, args.secret_file, args.parley, args.users, args.room_size, args.prefix, args.tokens)
    with open(args.out, "w") as f:
        for user, token in tokens.items():
            f.write(f"{user}\t{room_of[user]}\t{token}\n")
    print(f"seed: {len(tokens)} users in {len(rooms)} rooms in {time.monotonic() - started:.1f} s -> {args.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
