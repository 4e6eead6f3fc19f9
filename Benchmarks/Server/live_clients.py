#!/usr/bin/env python3
"""Many real WebSocket clients on /v1/live: delivery latency, throughput, memory per connection; and a
check that a client resuming with `since` misses and repeats nothing.

Load mode (default): C clients (users c0001…) in rooms of C/R members each connect to /v1/live with
their own token in the Authorization header, subscribe to `room:<their room>` and `rooms`, and wait for
`caughtUp` on both. Then S senders POST messages for D seconds, each body `t=<time.monotonic_ns()>` taken
just before the request is written; every client takes, for each `added` frame on its room topic, now
minus that time (one machine, one process: the clock is the same). Prints a summary and one JSON line:
messages sent/s, frames delivered/s, delivery latency p50/p90/p99/max, missing or repeated deliveries,
and the server's RSS before connecting, with the idle clients connected and at the end, so memory per
idle connection = (connected - before) / C.

--check-resume: one client subscribes to a room while a sender posts M messages; it drops its connection
abruptly (no close frame) mid-stream, waits, reconnects and subscribes with `since` = the last position
it got, a few times over; at the end the message ids it got, in order, must be exactly those of
GET /v1/rooms/{room}/messages?limit=500. Prints OK or the difference.

Start it through live-clients.sh, which starts a server and passes --url, --pid, --parley and
--secret-file. Against a server already running: --url URL --secret-file F [--pid PID] [--tokens local].
"""

import argparse
import asyncio
import inspect
import json
import resource
import sys
import time
from collections import Counter
from urllib.parse import urlsplit

import harness

try:  # websockets >= 13: the asyncio implementation, headers as additional_headers
    from websockets.asyncio.client import connect as _connect

    _HEADERS = "additional_headers"
    _EXTRA = {"proxy": None} if "proxy" in inspect.signature(_connect.__init__).parameters else {}
except ImportError:  # older websockets: the legacy client, headers as extra_headers
    from websockets import connect as _connect

    _HEADERS = "extra_headers"
    _EXTRA = {}
from websockets.exceptions import ConnectionClosed


def ws_connect(url, token):
    """Opens a live connection authenticated by the Authorization header (await it)."""
    return _connect(
        url, **{_HEADERS: {"Authorization": f"Bearer {token}"}}, **_EXTRA, compression=None,
        ping_interval=None, open_timeout=60, close_timeout=5, max_size=1 << 22)


def percentiles(values, points=(50, 90, 99)):
    """Nearest-rank percentiles and the max, in milliseconds, of nanosecond values."""
    if not values:
        return {}
    ordered = sorted(values)
    result = {f"p{p}": ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] / 1e6 for p in points}
    result["max"] = ordered[-1] / 1e6
    return {key: round(value, 3) for key, value in result.items()}


class HTTP:
    """A keep-alive HTTP/1.1 client on asyncio streams: enough for the senders' JSON POSTs."""

    def __init__(self, url):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.reader = self.writer = None

    async def request(self, method, path, token, body=None):
        """Returns (status, body bytes). A broken connection raises, and the next request opens another."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        try:
            head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAuthorization: Bearer {token}\r\n"
            if body is not None:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            self.writer.write(head.encode() + b"\r\n" + (body or b""))
            status_line = await self.reader.readline()
            if not status_line:
                raise ConnectionError("the server closed the connection")
            status = int(status_line.split()[1])
            length, chunked, close = 0, False, False
            while (line := await self.reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                name, value = name.strip().lower(), value.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "transfer-encoding" and "chunked" in value:
                    chunked = True
                elif name == "connection" and value == "close":
                    close = True
            if chunked:
                data = b""
                while (size := int((await self.reader.readline()).split(b";")[0], 16)) > 0:
                    data += await self.reader.readexactly(size + 2)
                    data = data[:-2]
                await self.reader.readline()
            else:
                data = await self.reader.readexactly(length)
            if close:
                self.close()
            return status, data
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


# Load mode ---------------------------------------------------------------------------------------------

class Stats:
    def __init__(self):
        self.latencies = []  # ns, one per `added` frame carrying a send time
        self.frames = 0  # every frame received after the clients were ready
        self.counting = False
        self.last_delivery = 0.0
        self.error_frames = []
        self.out_of_order = 0
        self.closes = Counter()  # close codes of connections that ended before we closed them


class Client:
    def __init__(self, user, token, room, stats):
        self.user, self.token, self.room, self.stats = user, token, room, stats
        self.room_topic = f"room:{room}"
        self.topics = {self.room_topic, "rooms"}
        self.caught_up = set()
        self.last = {}  # topic -> last position
        self.received = 0  # `added` frames with a send time
        self.ready = asyncio.get_running_loop().create_future()
        self.ws = None
        self.closing = False

    async def run(self, url, gate):
        try:
            async with gate:  # bounds the handshakes and catch-ups in flight
                self.ws = await ws_connect(url, self.token)
                for topic in sorted(self.topics):
                    await self.ws.send(json.dumps({"type": "subscribe", "topic": topic}))
                async for raw in self.ws:
                    self.on_frame(raw)
                    if self.ready.done():
                        break
            async for raw in self.ws:
                self.on_frame(raw)
        except ConnectionClosed as closed:
            if not self.closing:
                code = closed.rcvd.code if closed.rcvd else "no close frame"
                self.stats.closes[code] += 1
                self.fail(f"{self.user}: closed ({code})")
        except Exception as error:  # noqa: BLE001 - every failure is reported, not raised
            self.fail(f"{self.user}: {error!r}")

    def fail(self, reason):
        if not self.ready.done():
            self.ready.set_exception(RuntimeError(reason))

    def on_frame(self, raw):
        now = time.monotonic_ns()
        frame = json.loads(raw)
        kind, topic, position = frame.get("type"), frame.get("topic"), frame.get("position")
        if self.stats.counting:
            self.stats.frames += 1
        if kind == "error":
            self.stats.error_frames.append(frame)
            return
        if kind == "caughtUp":
            self.caught_up.add(topic)
            if self.caught_up >= self.topics and not self.ready.done():
                self.ready.set_result(None)
            return
        # Live changes of one topic come in log order; a catch-up's frames share one position.
        last = self.last.get(topic, 0)
        if position is not None and (position < last or (position == last and topic in self.caught_up)):
            self.stats.out_of_order += 1
        self.last[topic] = max(last, position or 0)
        if kind == "added" and topic == self.room_topic:
            body = (frame.get("message") or {}).get("body") or ""
            if body.startswith("t="):
                self.stats.latencies.append(now - int(body[2:]))
                self.stats.last_delivery = time.monotonic()
                self.received += 1

    async def close(self):
        self.closing = True
        if self.ws is not None:
            await self.ws.close()


async def sender(http, rooms, tokens, poster, deadline, interval, sent, result):
    """POSTs `t=<ns>` messages round the given rooms until the deadline (paced when interval > 0)."""
    turn, next_at = 0, time.monotonic()
    while time.monotonic() < deadline:
        room = rooms[turn % len(rooms)]
        turn += 1
        if interval:
            next_at += interval
            if (delay := next_at - time.monotonic()) > 0:
                await asyncio.sleep(delay)
        started = time.monotonic_ns()
        body = json.dumps({"body": f"t={started}"}).encode()
        try:
            status, data = await http.request("POST", f"/v1/rooms/{room}/messages", tokens[poster[room]], body)
        except Exception as error:  # noqa: BLE001
            result["send_errors"] += 1
            result.setdefault("send_error_sample", repr(error))
            await asyncio.sleep(0.01)
            continue
        if status == 201:
            sent[room] += 1
            result["send_latencies"].append(time.monotonic_ns() - started)
        else:
            result["send_errors"] += 1
            result.setdefault("send_error_sample", f"HTTP {status} {data[:200]!r}")
    http.close()


async def load(args):
    url = args.url.rstrip("/")
    live_url = "ws" + url[len("http"):] + "/v1/live"
    room_size = max(1, args.clients // args.rooms)
    started = time.monotonic()
    tokens, rooms, room_of = harness.seed(
        url, args.secret_file, args.parley, args.clients, room_size, prefix="c", how=args.tokens)
    print(f"seeded {len(tokens)} users in {len(rooms)} rooms of {room_size} in {time.monotonic() - started:.1f} s",
          file=sys.stderr)
    await asyncio.sleep(1)
    rss_before = harness.rss_kib(args.pid)

    stats = Stats()
    clients = [Client(user, tokens[user], room_of[user], stats) for user in tokens]
    gate = asyncio.Semaphore(args.connect_concurrency)
    started = time.monotonic()
    tasks = [asyncio.create_task(client.run(live_url, gate)) for client in clients]
    outcomes = await asyncio.gather(*(asyncio.wait_for(asyncio.shield(c.ready), args.connect_timeout)
                                      for c in clients), return_exceptions=True)
    connect_seconds = time.monotonic() - started
    failures = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    ready = [c for c, o in zip(clients, outcomes) if not isinstance(o, BaseException)]
    print(f"{len(ready)}/{len(clients)} clients connected and caught up in {connect_seconds:.1f} s",
          file=sys.stderr)
    for failure in failures[:5]:
        print("  " + failure, file=sys.stderr)
    if not ready:
        for client in clients:
            client.closing = True
        await asyncio.gather(*(c.close() for c in clients), *tasks, return_exceptions=True)
        return {"mode": "load", "clients": len(clients), "connected": 0, "connect_failure_sample": failures[:3],
                "problems": ["no client connected"]}, False
    await asyncio.sleep(2)  # let the server settle before reading its memory
    rss_connected = harness.rss_kib(args.pid)

    # Senders: each takes every S-th room and posts as the room's creator.
    room_ids = list(rooms)
    poster = {room: members[0] for room, members in rooms.items()}
    senders = min(args.senders, len(room_ids))
    sent = Counter()
    result = {"send_errors": 0, "send_latencies": []}
    interval = senders / args.rate if args.rate else 0
    print(f"{senders} senders posting for {args.duration} s"
          + (f" at {args.rate}/s" if args.rate else " as fast as the server answers"), file=sys.stderr)
    cpu_server, cpu_client = harness.cpu_seconds(args.pid), time.process_time()
    stats.counting = True
    send_started = time.monotonic()
    deadline = send_started + args.duration
    await asyncio.gather(*(sender(HTTP(url), room_ids[j::senders], tokens, poster, deadline, interval, sent, result)
                           for j in range(senders)))
    send_seconds = time.monotonic() - send_started

    # Drain: wait (bounded) until every ready client got every message sent to its room.
    expected = sum(sent[c.room] for c in ready)
    drain_deadline = time.monotonic() + args.drain
    while sum(c.received for c in ready) < expected and time.monotonic() < drain_deadline:
        await asyncio.sleep(0.1)
    rss_end = harness.rss_kib(args.pid)
    if cpu_server is not None:
        cpu_server = harness.cpu_seconds(args.pid) - cpu_server
    cpu_client = time.process_time() - cpu_client
    delivered = sum(c.received for c in ready)
    missing = sum(max(0, sent[c.room] - c.received) for c in ready)
    repeated = sum(max(0, c.received - sent[c.room]) for c in ready)
    window = max(stats.last_delivery, send_started + send_seconds) - send_started

    for client in clients:
        client.closing = True
    await asyncio.wait_for(asyncio.gather(*(c.close() for c in clients), return_exceptions=True), 30)
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)

    total_sent = sum(sent.values())
    report = {
        "mode": "load",
        "clients": len(clients), "connected": len(ready), "rooms": len(rooms), "room_size": room_size,
        "senders": senders, "duration_s": args.duration, "rate_limit_per_s": args.rate or None,
        "connect_s": round(connect_seconds, 2),
        "sent": total_sent, "sent_per_s": round(total_sent / send_seconds, 1),
        "send_errors": result["send_errors"], "send_error_sample": result.get("send_error_sample"),
        "send_latency_ms": percentiles(result["send_latencies"]),
        "expected_deliveries": expected, "delivered": delivered, "missing": missing, "repeated": repeated,
        "delivered_per_s": round(delivered / window, 1) if window else None,
        "frames": stats.frames, "frames_per_s": round(stats.frames / window, 1) if window else None,
        "delivery_latency_ms": percentiles(stats.latencies),
        "out_of_order": stats.out_of_order, "error_frames": len(stats.error_frames),
        "error_frame_sample": stats.error_frames[0] if stats.error_frames else None,
        "unexpected_closes": {str(code): n for code, n in stats.closes.items()},
        "connect_failure_sample": failures[:3],
        "server_rss_kib": {"before": rss_before, "connected": rss_connected, "end": rss_end},
        "server_rss_per_idle_connection_kib":
            round((rss_connected - rss_before) / len(ready), 1) if rss_before and rss_connected and ready else None,
        "server_cpu_s": round(cpu_server, 2) if cpu_server is not None else None,
        "client_cpu_s": round(cpu_client, 2), "send_phase_s": round(send_seconds, 2),
    }
    problems = []
    if len(ready) < len(clients):
        problems.append(f"{len(clients) - len(ready)} clients failed to connect")
    if missing or repeated:
        problems.append(f"{missing} deliveries missing, {repeated} repeated")
    if stats.out_of_order:
        problems.append(f"{stats.out_of_order} frames out of order")
    if stats.closes:
        problems.append(f"connections closed by the server: {dict(stats.closes)}")
    if result["send_errors"]:
        problems.append(f"{result['send_errors']} sends failed")
    if stats.error_frames:
        problems.append(f"{len(stats.error_frames)} error frames")
    report["problems"] = problems
    busy = cpu_client / send_seconds
    report["client_cpu_bound"] = busy > 0.9

    latency, rss = report["delivery_latency_ms"], report["server_rss_kib"]
    print(f"""
clients            {len(ready)}/{len(clients)} connected in {connect_seconds:.1f} s, {len(rooms)} rooms of {room_size}
sent               {total_sent} messages, {report['sent_per_s']}/s by {senders} senders ({result['send_errors']} errors)
send latency       {report['send_latency_ms']}
delivered          {delivered}/{expected} added frames, {report['delivered_per_s']}/s; all frames {report['frames_per_s']}/s
delivery latency   p50 {latency.get('p50')} ms, p90 {latency.get('p90')} ms, p99 {latency.get('p99')} ms, max {latency.get('max')} ms
server RSS         before {rss['before']} KiB, connected {rss['connected']} KiB, end {rss['end']} KiB
per idle conn      {report['server_rss_per_idle_connection_kib']} KiB
CPU in send phase  server {report['server_cpu_s']} s, this client {report['client_cpu_s']} s over {report['send_phase_s']} s
result             {'OK' if not problems else 'PROBLEMS: ' + '; '.join(problems)}""")
    if report["client_cpu_bound"]:
        print(f"note: this client used {busy:.0%} of a core while sending: the rates and latencies above are "
              "partly its own; compare a run with --rate below the rate above")
    return report, not problems


# Resume check ------------------------------------------------------------------------------------------

async def check_resume(args):
    url = args.url.rstrip("/")
    live_url = "ws" + url[len("http"):] + "/v1/live"
    reader, writer = "resumer", "resumew"
    tokens = harness.mint_tokens([reader, writer], args.secret_file, args.parley, args.tokens)
    harness.sign_up(url, tokens)
    room = harness.create_rooms(url, tokens, {"resume1": [writer, reader]})["resume1"]
    total = min(args.resume_messages, 500)
    topic = f"room:{room}"

    received = []  # (position, message id) of every `added` frame, in arrival order
    resets = []
    sent_ids, send_errors = [], []
    sender_done = asyncio.Event()

    async def send_all():
        http = HTTP(url)
        for i in range(total):
            body = json.dumps({"body": f"resume {i}"}).encode()
            try:
                status, data = await http.request("POST", f"/v1/rooms/{room}/messages", tokens[writer], body)
                if status == 201:
                    sent_ids.append(json.loads(data)["message"])
                else:
                    send_errors.append(f"HTTP {status} {data[:200]!r}")
            except Exception as error:  # noqa: BLE001
                send_errors.append(repr(error))
            await asyncio.sleep(1 / args.resume_rate)
        http.close()
        sender_done.set()

    def take(raw):
        frame = json.loads(raw)
        if frame.get("type") == "error":
            raise RuntimeError(f"error frame: {frame}")
        if frame.get("topic") != topic:
            return frame
        if frame.get("type") == "added":
            received.append((frame["position"], frame["message"]["id"]))
        elif frame.get("type") == "caughtUp" and frame.get("reset"):
            resets.append(frame)
        return frame

    async def subscribe(since):
        ws = await ws_connect(live_url, tokens[reader])
        request = {"type": "subscribe", "topic": topic}
        if since is not None:
            request["since"] = since
        await ws.send(json.dumps(request))
        while take(await asyncio.wait_for(ws.recv(), 10)).get("type") != "caughtUp":
            pass
        return ws

    ws = await subscribe(None)
    sending = asyncio.create_task(send_all())
    per_cycle = max(1, total // (args.resume_cycles + 1))
    drops = []
    problem = None
    try:
        for _ in range(args.resume_cycles):
            goal = len(received) + per_cycle
            while len(received) < goal:
                take(await asyncio.wait_for(ws.recv(), 10))
            last = received[-1][0]
            ws.transport.abort()  # abrupt: no close frame, frames in flight are lost
            drops.append({"after": len(received), "since": last})
            await asyncio.sleep(args.resume_gap)  # messages keep coming while it is away
            ws = await subscribe(last)
        deadline = time.monotonic() + 30
        while not (sender_done.is_set() and {m for _, m in received} >= set(sent_ids)):
            if time.monotonic() > deadline:
                raise TimeoutError("messages still missing 30 s after the last reconnect")
            try:
                take(await asyncio.wait_for(ws.recv(), 1))
            except asyncio.TimeoutError:
                pass
        await ws.close()
    except Exception as error:  # noqa: BLE001 - reported below with what was received
        problem = repr(error)
    await sending

    status, page = harness.call(url, "GET", f"/v1/rooms/{room}/messages?limit=500", tokens[reader])
    server_ids = [m["id"] for m in page["messages"]] if status == 200 else []
    got_ids = [m for _, m in received]
    counts = Counter(got_ids)
    positions = [p for p, _ in received]
    report = {
        "mode": "check-resume", "messages": total, "drops": drops, "sent": len(sent_ids),
        "received": len(received), "server_messages": len(server_ids),
        "missing": [m for m in server_ids if m not in counts],
        "repeated": sorted(m for m, n in counts.items() if n > 1),
        "unexpected": [m for m in counts if m not in set(server_ids)],
        "positions_increasing": all(a < b for a, b in zip(positions, positions[1:])),
        "same_order": got_ids == server_ids,
        "acknowledged_match_server": sent_ids == server_ids,
        "resets": resets, "send_errors": send_errors[:5], "problem": problem,
        "page_status": status,
    }
    ok = (status == 200 and problem is None and not send_errors and report["same_order"]
          and report["positions_increasing"] and report["acknowledged_match_server"] and not resets)
    if ok:
        print(f"check-resume: OK: {len(received)} messages over {len(drops)} abrupt reconnects, "
              f"none missed or repeated, same order as GET /v1/rooms/{room}/messages")
    else:
        print("check-resume: FAILED")
        for key in ("problem", "page_status", "missing", "repeated", "unexpected", "positions_increasing",
                    "same_order", "acknowledged_match_server", "resets", "send_errors", "drops"):
            print(f"  {key}: {report[key]}")
    return report, ok


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the server, http://127.0.0.1:PORT")
    parser.add_argument("--secret-file", required=True, help="the HS256 secret the server checks tokens with")
    parser.add_argument("--parley", default="parley", help="the parley binary, for `parley token`")
    parser.add_argument("--pid", type=int, help="the server's pid, to read its RSS and CPU from /proc")
    parser.add_argument("--tokens", choices=["parley", "local"], default="parley",
                        help="mint tokens with `parley token` (default) or here in Python (faster)")
    parser.add_argument("--clients", "-c", type=int, default=1000)
    parser.add_argument("--rooms", "-r", type=int, default=200)
    parser.add_argument("--senders", "-s", type=int, default=32)
    parser.add_argument("--duration", "-d", type=float, default=20, help="seconds of sending")
    parser.add_argument("--rate", type=float, default=0, help="messages/s in all (0: each sender back to back)")
    parser.add_argument("--connect-concurrency", type=int, default=100)
    parser.add_argument("--connect-timeout", type=float, default=120)
    parser.add_argument("--drain", type=float, default=10, help="seconds to wait for deliveries after sending")
    parser.add_argument("--check-resume", action="store_true", help="run the resume check instead")
    parser.add_argument("--resume-messages", type=int, default=300, help="at most 500")
    parser.add_argument("--resume-rate", type=float, default=100, help="messages/s while checking resume")
    parser.add_argument("--resume-cycles", type=int, default=3, help="abrupt disconnects")
    parser.add_argument("--resume-gap", type=float, default=0.3, help="seconds away before reconnecting")
    parser.add_argument("--json", help="also write the JSON report to this file")
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = args.clients + args.senders + 256
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(wanted, 65536)), hard))

    report, ok = asyncio.run(check_resume(args) if args.check_resume else load(args))
    harness.emit_report(report, ok, args.json)


if __name__ == "__main__":
    main()
