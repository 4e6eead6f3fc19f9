#!/usr/bin/env python3
"""Draws docs/bench-sweep.svg from `parley bench --sweep --json` output (the peer comparison's chart is
Benchmarks/plot_peers.py).

Usage: .build/release/parley bench --sweep --json > sweep.json
       python3 Benchmarks/plot.py sweep.json docs/bench-sweep.svg

Two log-log panels: throughput against events per append call (one producer, each call durable), and
throughput against concurrent producers (one event per call, each durable). Plain SVG, no dependencies.
"""
import json
import math
import sys

WIDTH, HEIGHT = 980, 420
PANEL_W, PANEL_H = 400, 300
COLORS = {"Parley": "#d9480f"}


def fmt(value):
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def panel(x0, y0, title, xlabel, points):
    xs = [p["x"] for p in points]
    series = {"Parley": [(p["x"], p["parleyEventsPerSecond"]) for p in points]}
    ys = [y for s in series.values() for _, y in s if y > 0]
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if lx1 == lx0:
        lx1 += 1

    def sx(x):
        return x0 + (math.log10(x) - lx0) / (lx1 - lx0) * PANEL_W

    def sy(y):
        return y0 + PANEL_H - (math.log10(y) - ly0) / (ly1 - ly0) * PANEL_H

    out = [f'<text x="{x0 + PANEL_W / 2}" y="{y0 - 14}" text-anchor="middle" font-weight="bold">{title}</text>']
    out.append(f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#888"/>')
    for decade in range(ly0, ly1 + 1):
        y = sy(10 ** decade)
        out.append(f'<line x1="{x0}" x2="{x0 + PANEL_W}" y1="{y}" y2="{y}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4}" text-anchor="end">{fmt(10 ** decade)}</text>')
    for x in xs:
        out.append(f'<line x1="{sx(x)}" x2="{sx(x)}" y1="{y0}" y2="{y0 + PANEL_H}" stroke="#f3f3f3"/>')
        out.append(f'<text x="{sx(x)}" y="{y0 + PANEL_H + 16}" text-anchor="middle">{fmt(x)}</text>')
    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{y0 + PANEL_H + 36}" text-anchor="middle">{xlabel}</text>')
    out.append(
        f'<text x="{x0 - 52}" y="{y0 + PANEL_H / 2}" text-anchor="middle" '
        f'transform="rotate(-90 {x0 - 52} {y0 + PANEL_H / 2})">events per second</text>'
    )
    for name, values in series.items():
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in values if y > 0)
        out.append(f'<polyline points="{path}" fill="none" stroke="{COLORS[name]}" stroke-width="2.5"/>')
        for x, y in values:
            if y > 0:
                out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" fill="{COLORS[name]}">'
                           f'<title>{name}: {fmt(x)} → {y:,.0f} events/s</title></circle>')
    return out


def main():
    source, target = sys.argv[1], sys.argv[2]
    report = json.load(open(source))
    sweep = report["sweep"]
    machine = report["machine"]
    limits = report["limits"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="Helvetica, Arial, sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    parts += panel(90, 50, "Durable appends, one producer", "events per append call", sweep["batchSize"])
    parts += panel(570, 50, "Durable appends, one event per call", "concurrent producers", sweep["producers"])
    legend_y = HEIGHT - 12
    x = 90
    for name, color in COLORS.items():
        parts.append(f'<rect x="{x}" y="{legend_y - 10}" width="14" height="4" fill="{color}"/>')
        parts.append(f'<text x="{x + 20}" y="{legend_y - 5}">{name}</text>')
        x += 90
    parts.append(
        f'<text x="{x}" y="{legend_y - 5}" fill="#555">{machine["cores"]} cores, Linux {machine["kernel"]}; '
        f'fdatasync {limits["fdatasyncPerSecond"]:,.0f}/s, LZ4 {limits["lz4CompressMBps"]:,.0f} MB/s</text>'
    )
    parts.append("</svg>")
    with open(target, "w") as handle:
        handle.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
