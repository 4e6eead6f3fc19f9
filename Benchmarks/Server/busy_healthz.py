#!/usr/bin/env python3
"""GET /healthz latency on a busy machine while a small command load keeps running.

Start it through busy-healthz.sh, which starts a server, seeds the senders (`harness.py seed`), starts one
busy-looping process per core and passes their pids here. For DURATION seconds this process:

  - polls GET /healthz at a steady rate (every --interval s, on a fixed schedule: a late poll goes out at
    once and the schedule moves on, it never bursts to catch up) on its own connection (keep-alive, or a
    fresh TCP connection per poll with --healthz-connection fresh, as a kubelet probe does), timing each
    request from writing it to reading the whole answer; any answer but 200, a timeout or a broken
    connection is a failure;
  - has the seeded users POST messages to their room at --rate commands/s in all, each sender on its own
    keep-alive connection on its own fixed schedule, and counts the answers: 2xx = acknowledged;
  - samples /proc/loadavg every second and takes the CPU time of the server, the busy loops and itself.

Prints a summary and one JSON line (--json FILE to keep it). Exit 1 when no command was acknowledged or
any healthz poll failed. The p99 ≤ 100 ms target is reported, not asserted.

The poller runs on the same busy cores: "poller lateness" is how late it sent (its own scheduling delay,
not the server's); a latency includes any time this process waited for a core while the answer was due.
"""

import argparse
import http.client
import json
import math
import os
import resource
import sys
import threading
import time
from collections import Counter
from urllib.parse import urlsplit

import harness


def percentiles(values, points=(50, 90, 99)):
    """Nearest-rank percentiles and the max, in milliseconds, of nanosecond values."""
    if not values:
        return {}
    ordered = sorted(values)
    result = {f"p{p}": ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] / 1e6 for p in points}
    result["max"] = ordered[-1] / 1e6
    return {key: round(value, 3) for key, value in result.items()}


def loadavg():
    with open("/proc/loadavg") as f:
        one, five, fifteen, running, _ = f.read().split()
    return float(one), float(five), float(fifteen), running


def cpu_busy_fraction(before, after):
    """Share of all cores' time not idle between two /proc/stat 'cpu' samples."""
    total = sum(after) - sum(before)
    idle = (after[3] + after[4]) - (before[3] + before[4])
    return (total - idle) / total if total else None


def alive(pid):
    """Whether process `pid` runs (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def proc_stat_cpu():
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


class Connection:
    """One HTTP/1.1 connection to the server (http.client); `fresh` opens a new one per request."""

    def __init__(self, host, port, timeout, fresh=False):
        self.host, self.port, self.timeout, self.fresh = host, port, timeout, fresh
        self.conn = None

    def request(self, method, path, token=None, body=None):
        """Returns the status; raises on a timeout or a broken connection (and drops the connection)."""
        if self.conn is None or self.fresh:
            self.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        headers = {}
        if token:
            headers["Authorization"] = "Bearer " + token
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
            response.read()
            if response.will_close:
                self.close()
            return response.status
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None


def paced(start, interval, end, stop):
    """Yields (index, scheduled time) on a fixed schedule from `start` until `end` (perf_counter seconds).
    Sleeps until each tick; when late, yields at once and skips the ticks already past (no bursts)."""
    tick = 0
    while not stop.is_set():
        due = start + tick * interval
        if due >= end:
            return
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        yield tick, due
        tick = max(tick + 1, math.ceil((time.perf_counter() - start) / interval))


class Poller(threading.Thread):
    def __init__(self, host, port, interval, timeout, fresh, stop):
        super().__init__(daemon=True)
        self.connection = Connection(host, port, timeout, fresh)
        self.interval, self.stop = interval, stop
        self.start_at = self.end_at = None  # perf_counter seconds, set before start()
        self.finished = None
        self.latencies = []  # (offset s, latency ns)
        self.lateness = []  # ns
        self.failures = []  # (offset s, what)
        self.skipped = 0

    def warm_up(self):
        self.connection.request("GET", "/healthz")

    def run(self):
        last = -1
        for tick, due in paced(self.start_at, self.interval, self.end_at, self.stop):
            self.skipped += tick - last - 1
            last = tick
            sent = time.perf_counter_ns()
            self.lateness.append(max(0, sent - int(due * 1e9)))
            try:
                status = self.connection.request("GET", "/healthz")
                what = None if status == 200 else f"HTTP {status}"
            except Exception as error:  # timeout, reset, refused
                what = f"{type(error).__name__}: {error}"
            took = time.perf_counter_ns() - sent
            offset = sent / 1e9 - self.start_at
            if what is None:
                self.latencies.append((offset, took))
            else:
                self.failures.append((round(offset, 3), what, round(took / 1e6, 3)))
        self.connection.close()
        self.finished = time.perf_counter()


class Sender(threading.Thread):
    def __init__(self, host, port, user, room, token, interval, timeout, stop):
        super().__init__(daemon=True)
        self.connection = Connection(host, port, timeout)
        self.user, self.room, self.token, self.interval, self.stop = user, room, token, interval, stop
        self.start_at = self.end_at = None  # perf_counter seconds, set before start()
        self.finished = None
        self.statuses = Counter()
        self.errors = Counter()
        self.latencies = []  # ns, acknowledged only
        self.sample = None
        self.skipped = 0

    def warm_up(self):
        self.connection.request("GET", "/healthz")

    def run(self):
        path = f"/v1/rooms/{self.room}/messages"
        last = -1
        for tick, _ in paced(self.start_at, self.interval, self.end_at, self.stop):
            self.skipped += tick - last - 1
            last = tick
            body = json.dumps({"body": f"busy-healthz {self.user} {tick}"}).encode()
            sent = time.perf_counter_ns()
            try:
                status = self.connection.request("POST", path, self.token, body)
            except Exception as error:
                self.errors[type(error).__name__] += 1
                self.sample = self.sample or f"{type(error).__name__}: {error}"
                continue
            self.statuses[status] += 1
            if 200 <= status < 300:
                self.latencies.append(time.perf_counter_ns() - sent)
            else:
                self.sample = self.sample or f"HTTP {status}"
        self.connection.close()
        self.finished = time.perf_counter()


def read_users(path):
    users = []
    with open(path) as f:
        for line in f:
            user, room, token = line.rstrip("\n").split("\t")
            users.append((user, room, token))
    return users


def position(url):
    status, answer = harness.call(url, "GET", "/readyz", timeout=10)
    return answer.get("position") if status == 200 and isinstance(answer, dict) else None


def run(args):
    url = args.url.rstrip("/")
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port or 80
    users = read_users(args.users)
    if not users:
        raise SystemExit("busy_healthz: no users in " + args.users)
    busy_pids = [int(p) for p in args.busy_pids.split(",") if p] if args.busy_pids else []

    stop = threading.Event()
    poller = Poller(host, port, args.interval, args.healthz_timeout, args.healthz_connection == "fresh", stop)
    per_sender = len(users) / args.rate
    senders = [Sender(host, port, user, room, token, per_sender, args.command_timeout, stop)
               for user, room, token in users]
    for thread in [poller, *senders]:
        try:
            thread.warm_up()  # opens its connection; a failure here is not counted, the window's are
        except Exception as error:
            print(f"busy_healthz: warm-up request failed: {type(error).__name__}: {error}", file=sys.stderr)
    start_at = time.perf_counter() + 0.2
    end_at = start_at + args.duration
    poller.start_at, poller.end_at = start_at, end_at
    for i, sender in enumerate(senders):  # staggered: one command every 1/rate s in all, not bunches
        sender.start_at, sender.end_at = start_at + i / args.rate, end_at

    position_before = position(url)
    load_before = loadavg()
    server_cpu_before = harness.cpu_seconds(args.pid)
    busy_cpu_before = [harness.cpu_seconds(p) for p in busy_pids]
    own_before = resource.getrusage(resource.RUSAGE_SELF)
    stat_before = proc_stat_cpu()
    for thread in [poller, *senders]:
        thread.start()

    loads = []
    busy_alive_end = None
    try:
        while time.perf_counter() < end_at + args.command_timeout + 1 and any(
                t.is_alive() for t in [poller, *senders]):
            loads.append(loadavg()[0])
            if time.perf_counter() >= end_at and busy_alive_end is None:
                busy_alive_end = sum(1 for p in busy_pids if alive(p))
            time.sleep(1)
    except KeyboardInterrupt:
        stop.set()
        raise
    stop.set()
    for thread in [poller, *senders]:
        thread.join(max(args.healthz_timeout, args.command_timeout) + 1)
    # From the first tick to the last answer (the requests in flight at the end run past DURATION).
    window = max(t.finished or time.perf_counter() for t in [poller, *senders]) - start_at
    if busy_alive_end is None:
        busy_alive_end = sum(1 for p in busy_pids if alive(p))

    stat_after = proc_stat_cpu()
    own_after = resource.getrusage(resource.RUSAGE_SELF)
    load_after = loadavg()
    server_cpu_after = harness.cpu_seconds(args.pid)
    busy_cpu_after = [harness.cpu_seconds(p) for p in busy_pids]
    position_after = position(url)

    polls = len(poller.latencies) + len(poller.failures)
    healthz = percentiles([took for _, took in poller.latencies], (50, 90, 99, 99.9))
    slowest = sorted(poller.latencies, key=lambda item: -item[1])[:5]
    statuses = Counter()
    errors = Counter()
    command_latencies = []
    for sender in senders:
        statuses.update(sender.statuses)
        errors.update(sender.errors)
        command_latencies.extend(sender.latencies)
    acknowledged = sum(n for status, n in statuses.items() if 200 <= status < 300)
    non2xx = sum(n for status, n in statuses.items() if not 200 <= status < 300)
    attempted = sum(statuses.values()) + sum(errors.values())
    busy_cpu = [round(a - b, 2) for a, b in zip(busy_cpu_after, busy_cpu_before) if a is not None and b is not None]
    own_cpu = (own_after.ru_utime - own_before.ru_utime) + (own_after.ru_stime - own_before.ru_stime)
    p99 = healthz.get("p99")
    met = p99 is not None and p99 <= args.target_ms

    report = {
        "benchmark": "busy-healthz",
        "duration_s": args.duration, "window_s": round(window, 2), "cores": os.cpu_count(),
        "busy_loops": len(busy_pids), "busy_loops_alive_at_end": busy_alive_end,
        "busy_loop_cpu_s": busy_cpu,
        "healthz_interval_ms": round(args.interval * 1000, 3), "healthz_connection": args.healthz_connection,
        "healthz_polls": polls, "healthz_expected": int(args.duration / args.interval),
        "healthz_skipped_ticks": poller.skipped,
        "healthz_failures": len(poller.failures), "healthz_failure_sample": poller.failures[:5],
        "healthz_latency_ms": healthz,
        "healthz_slowest": [{"at_s": round(at, 2), "ms": round(took / 1e6, 3)} for at, took in slowest],
        "poller_lateness_ms": percentiles(poller.lateness),
        "target_ms": args.target_ms, "p99_within_target": met,
        "senders": len(senders), "command_rate_target_per_s": args.rate,
        "commands_attempted": attempted, "commands_skipped_ticks": sum(s.skipped for s in senders),
        "commands_acknowledged": acknowledged,
        "commands_per_s": round(acknowledged / args.duration, 1),
        "commands_non2xx": non2xx, "command_statuses": {str(k): v for k, v in sorted(statuses.items())},
        "command_errors": dict(errors),
        "command_error_sample": next((s.sample for s in senders if s.sample), None),
        "command_latency_ms": percentiles(command_latencies),
        "log_position": {"before": position_before, "after": position_after},
        "loadavg_1m": {"before": load_before[0], "max": max(loads + [load_after[0]]), "after": load_after[0]},
        "loadavg_after": " ".join(str(x) for x in load_after),
        "cpu_busy_fraction": round(cpu_busy_fraction(stat_before, stat_after) or 0, 3),
        "server_cpu_s": (round(server_cpu_after - server_cpu_before, 2)
                         if server_cpu_after is not None and server_cpu_before is not None else None),
        "client_cpu_s": round(own_cpu, 2),
    }
    problems = []
    if acknowledged == 0:
        problems.append("no command was acknowledged")
    if poller.failures:
        problems.append(f"{len(poller.failures)} healthz polls failed")
    if polls == 0:
        problems.append("no healthz poll completed")
    report["problems"] = problems

    events = (position_after - position_before) if position_before is not None and position_after is not None else None
    cmd = report["command_latency_ms"]
    lateness = report["poller_lateness_ms"]
    busy_line = (f"{len(busy_pids)} busy loops on {os.cpu_count()} cores ({busy_alive_end} still running at the end), "
                 f"CPU {sum(busy_cpu):.1f} s in all over {window:.1f} s")
    print(f"""
machine            {busy_line}
                   all cores {report['cpu_busy_fraction']:.0%} busy; load average (1 min) {load_before[0]} before, max {report['loadavg_1m']['max']}, {load_after[0]} after ({report['loadavg_after']})
healthz            {polls}/{report['healthz_expected']} polls every {args.interval * 1000:g} ms ({args.healthz_connection} connection), {len(poller.failures)} failed, {poller.skipped} ticks skipped
healthz latency    p50 {healthz.get('p50')} ms, p90 {healthz.get('p90')} ms, p99 {p99} ms, p99.9 {healthz.get('p99.9')} ms, max {healthz.get('max')} ms
                   p99 <= {args.target_ms:g} ms: {'yes' if met else 'NO'}
slowest polls      {', '.join(f"{s['ms']} ms at {s['at_s']} s" for s in report['healthz_slowest'])}
poller lateness    p50 {lateness.get('p50')} ms, p99 {lateness.get('p99')} ms, max {lateness.get('max')} ms (this client waiting for a core)
commands           {acknowledged} acknowledged of {attempted} sent, {report['commands_per_s']}/s (target {args.rate:g}/s by {len(senders)} senders, {report['commands_skipped_ticks']} ticks skipped), {non2xx} non-2xx, {sum(errors.values())} errors {dict(errors) or ''}
command latency    p50 {cmd.get('p50')} ms, p99 {cmd.get('p99')} ms, max {cmd.get('max')} ms
log position       {position_before} -> {position_after} (+{events} events)
CPU in the window  server {report['server_cpu_s']} s, this client {report['client_cpu_s']} s
result             {'OK' if not problems else 'PROBLEMS: ' + '; '.join(problems)}""")
    if poller.failures:
        for at, what, took in poller.failures[:5]:
            print(f"  healthz failure at {at} s after {took} ms: {what}", file=sys.stderr)
    return report, not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the server, http://127.0.0.1:PORT")
    parser.add_argument("--users", required=True, help="user<TAB>room<TAB>token lines (harness.py seed --out)")
    parser.add_argument("--pid", type=int, help="the server's pid, for its CPU time")
    parser.add_argument("--busy-pids", default="", help="the busy loops' pids, comma-separated")
    parser.add_argument("--duration", "-d", type=float, default=60, help="seconds of measuring")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between healthz polls")
    parser.add_argument("--healthz-connection", choices=["keepalive", "fresh"], default="keepalive")
    parser.add_argument("--healthz-timeout", type=float, default=5, help="seconds before a poll failed")
    parser.add_argument("--rate", type=float, default=100, help="commands/s in all, spread over the users")
    parser.add_argument("--command-timeout", type=float, default=10)
    parser.add_argument("--target-ms", type=float, default=100, help="the p99 reported against (not asserted)")
    parser.add_argument("--json", help="also write the JSON report to this file")
    args = parser.parse_args()
    if args.rate <= 0 or args.interval <= 0 or args.duration <= 0:
        parser.error("--rate, --interval and --duration must be positive")

    report, ok = run(args)
    harness.emit_report(report, ok, args.json)


if __name__ == "__main__":
    main()
