#!/usr/bin/env python3
"""Draws the peer comparison as a PNG from the JSON that Benchmarks/peers.sh writes.

Usage: Benchmarks/peers.sh --out peers.json
       python3 Benchmarks/plot_peers.py peers.json peers.png

Bars per system (Parley, PostgreSQL, Redis Streams, SQLite) per workload: throughput on a log scale (higher is
better), the p99 of the two queries on a log scale and bytes on disk per event (lower is better), each bar
labelled with its value. Plain Python, no dependencies: a 5x7 bitmap font and a PNG writer (zlib).
"""
import json
import math
import struct
import sys
import zlib

SYSTEMS = [
    ("parley", "PARLEY", (217, 72, 15)),
    ("postgresql", "POSTGRESQL", (28, 126, 214)),
    ("redis", "REDIS STREAMS", (47, 158, 68)),
    ("sqlite", "SQLITE", (112, 72, 232)),
]
THROUGHPUT = [
    ("append-batched", "APPENDS, 1,000/CALL, 1 PRODUCER"),
    ("append-batched-4p", "APPENDS, 1,000/CALL, 4 PRODUCERS"),
    ("append-concurrent", "256 PRODUCERS X 1 EVENT"),
    ("commands-concurrent", "VALIDATED COMMANDS, 256 SENDERS"),
    ("scan", "FULL SCAN"),
    ("replay", "REPLAY OF A SIMULATED WEEK"),
]
LATENCY = [("audit-actor", "AUDIT: EVENTS OF ONE ACTOR"), ("read-room", "NEWEST 50 MESSAGES OF A ROOM")]
SIZE = [("size", "BYTES ON DISK PER EVENT")]

# 5x7 glyphs, seven rows top to bottom; lowercase letters are drawn as capitals.
GLYPHS = {
    'A': ".###. #...# #...# ##### #...# #...# #...#", 'B': "####. #...# #...# ####. #...# #...# ####.",
    'C': ".###. #...# #.... #.... #.... #...# .###.", 'D': "####. #...# #...# #...# #...# #...# ####.",
    'E': "##### #.... #.... ####. #.... #.... #####", 'F': "##### #.... #.... ####. #.... #.... #....",
    'G': ".###. #...# #.... #.### #...# #...# .####", 'H': "#...# #...# #...# ##### #...# #...# #...#",
    'I': ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.", 'J': "..### ...#. ...#. ...#. ...#. #..#. .##..",
    'K': "#...# #..#. #.#.. ##... #.#.. #..#. #...#", 'L': "#.... #.... #.... #.... #.... #.... #####",
    'M': "#...# ##.## #.#.# #.#.# #...# #...# #...#", 'N': "#...# #...# ##..# #.#.# #..## #...# #...#",
    'O': ".###. #...# #...# #...# #...# #...# .###.", 'P': "####. #...# #...# ####. #.... #.... #....",
    'Q': ".###. #...# #...# #...# #.#.# #..#. .##.#", 'R': "####. #...# #...# ####. #.#.. #..#. #...#",
    'S': ".#### #.... #.... .###. ....# ....# ####.", 'T': "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    'U': "#...# #...# #...# #...# #...# #...# .###.", 'V': "#...# #...# #...# #...# #...# .#.#. ..#..",
    'W': "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.", 'X': "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    'Y': "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..", 'Z': "##### ....# ...#. ..#.. .#... #.... #####",
    '0': ".###. #...# #..## #.#.# ##..# #...# .###.", '1': "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    '2': ".###. #...# ....# ...#. ..#.. .#... #####", '3': "##### ...#. ..#.. ...#. ....# #...# .###.",
    '4': "...#. ..##. .#.#. #..#. ##### ...#. ...#.", '5': "##### #.... ####. ....# ....# #...# .###.",
    '6': "..##. .#... #.... ####. #...# #...# .###.", '7': "##### ....# ...#. ..#.. .#... .#... .#...",
    '8': ".###. #...# #...# .###. #...# #...# .###.", '9': ".###. #...# #...# .#### ....# ...#. .##..",
    ' ': "..... ..... ..... ..... ..... ..... .....", '.': "..... ..... ..... ..... ..... .##.. .##..",
    ',': "..... ..... ..... ..... .##.. ..#.. .#...", ':': "..... .##.. .##.. ..... .##.. .##.. .....",
    '-': "..... ..... ..... ##### ..... ..... .....", '+': "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
    '/': "..... ....# ...#. ..#.. .#... #.... .....", '%': "##... ##..# ...#. ..#.. .#... #..## ...##",
    '(': "...#. ..#.. .#... .#... .#... ..#.. ...#.", ')': ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
    '×': "..... #...# .#.#. ..#.. .#.#. #...# .....", 'µ': "..... #...# #...# #...# #..## ###.# #....",
    "'": "..#.. ..#.. .#... ..... ..... ..... .....", '=': "..... ..... ##### ..... ##### ..... .....",
    '_': "..... ..... ..... ..... ..... ..... #####", '>': ".#... ..#.. ...#. ....# ...#. ..#.. .#...",
    '<': "...#. ..#.. .#... #.... .#... ..#.. ...#.", '?': ".###. #...# ....# ...#. ..#.. ..... ..#..",
    '!': "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#..", '&': ".##.. #..#. #.#.. .#... #.#.# #..#. .##.#",
    '|': "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#..", ';': "..... .##.. .##.. ..... .##.. ..#.. .#...",
}


class Canvas:
    def __init__(self, width, height):
        self.width, self.height = width, height
        self.pixels = bytearray(b"\xff" * (width * height * 3))

    def rect(self, x, y, w, h, color):
        x0, y0 = max(0, int(x)), max(0, int(y))
        x1, y1 = min(self.width, int(x + w)), min(self.height, int(y + h))
        if x1 <= x0 or y1 <= y0:
            return
        row = bytes(color) * (x1 - x0)
        for yy in range(y0, y1):
            start = (yy * self.width + x0) * 3
            self.pixels[start:start + len(row)] = row

    def text(self, x, y, text, scale=2, color=(33, 37, 41)):
        """Draws `text` with its top-left corner at (x, y); returns the width drawn."""
        cursor = x
        for char in text:
            glyph = GLYPHS.get(char, GLYPHS.get(char.upper(), GLYPHS["?"])).replace(" ", "")
            for index, bit in enumerate(glyph):
                if bit == "#":
                    self.rect(cursor + (index % 5) * scale, y + (index // 5) * scale, scale, scale, color)
            cursor += 6 * scale
        return cursor - x

    @staticmethod
    def text_width(text, scale=2):
        return len(text) * 6 * scale

    def png(self):
        raw = b"".join(
            b"\x00" + bytes(self.pixels[y * self.width * 3:(y + 1) * self.width * 3]) for y in range(self.height)
        )

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(
            b"IEND", b"")


def fmt(value):
    if value >= 1e6:
        return f"{value / 1e6:.3g}M"
    if value >= 1e4:
        return f"{value / 1e3:.3g}k"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    report = json.load(open(sys.argv[1]))
    workloads = {w["name"]: w for w in report["workloads"]}
    systems = [s for s in SYSTEMS if s[0] in report["systems"]]
    label_width, value_width, bar_height = 420, 130, 14
    width = 1400
    plot_width = width - label_width - value_width - 40

    group_height = len(systems) * (bar_height + 2) + 16
    height = 120 + 3 * 60 + (len(THROUGHPUT) + len(LATENCY) + len(SIZE)) * group_height
    canvas = Canvas(width, height)
    machine = report["machine"]
    limits = report["limits"]
    canvas.text(20, 16, "PARLEY AND ITS PEERS: SAME EVENTS, SAME DURABILITY, ONE RUN", scale=3)
    canvas.text(
        20, 50,
        f"{machine['cores']} CORES, {machine.get('cpu', '')}, LINUX {machine['kernel']}; "
        f"FDATASYNC {limits['fdatasyncPerSecond']:.0f}/S, SEQUENTIAL WRITES {limits['sequentialWriteMBps']:.0f} MB/S",
        scale=2, color=(90, 90, 90))
    x = 20
    for _, name, color in systems:
        canvas.rect(x, 80, 16, 16, color)
        x += 24 + canvas.text(x + 24, 81, name) + 24

    y = 120

    def panel(title, rows, figure, log):
        nonlocal y
        canvas.text(20, y, title, scale=2, color=(0, 0, 0))
        y += 30
        values = [workloads[n]["results"][s][figure] for n, _ in rows for s, _, _ in systems
                  if n in workloads and s in workloads[n]["results"] and figure in workloads[n]["results"][s]]
        values = [v for v in values if v > 0]
        if not values:
            return
        if log:
            low = 10 ** math.floor(math.log10(min(values)))
            high = 10 ** math.ceil(math.log10(max(values)))
            if high == low:
                high *= 10

            def scale(v):
                return (math.log10(max(v, low)) - math.log10(low)) / (math.log10(high) - math.log10(low))

            ticks = [10 ** e for e in range(int(math.log10(low)), int(math.log10(high)) + 1)]
        else:
            high = max(values) * 1.1

            def scale(v):
                return v / high

            step = 10 ** math.floor(math.log10(high))
            ticks = [step * i for i in range(0, int(high / step) + 1)]
        top = y
        for name, label in rows:
            if name not in workloads:
                continue
            results = workloads[name]["results"]
            canvas.text(20, y + (len(systems) * (bar_height + 2) - 14) // 2, label)
            for system, _, color in systems:
                value = results.get(system, {}).get(figure)
                if value is not None and value > 0:
                    length = max(2, scale(value) * plot_width)
                    canvas.rect(label_width, y, length, bar_height, color)
                    canvas.text(label_width + length + 6, y, fmt(value), scale=2, color=(60, 60, 60))
                else:
                    canvas.text(label_width + 4, y, "-", scale=2, color=(150, 150, 150))
                y += bar_height + 2
            y += 16
        for tick in ticks:
            tx = label_width + scale(tick) * plot_width
            canvas.rect(tx, top - 4, 1, y - top - 8, (222, 226, 230))
            canvas.text(tx - canvas.text_width(fmt(tick)) / 2, y - 6, fmt(tick), scale=2, color=(120, 120, 120))
        y += 30

    panel("THROUGHPUT, EVENTS OR COMMANDS PER SECOND (LOG SCALE) - HIGHER IS BETTER", THROUGHPUT, "eventsPerSecond",
          True)
    panel("P99 LATENCY IN µS (LOG SCALE) - LOWER IS BETTER", LATENCY, "p99Micros", True)
    panel("BYTES ON DISK PER EVENT - LOWER IS BETTER", SIZE, "bytesPerEvent", False)
    with open(sys.argv[2], "wb") as out:
        out.write(canvas.png())


if __name__ == "__main__":
    main()
