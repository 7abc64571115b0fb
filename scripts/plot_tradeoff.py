#!/usr/bin/python3
"""Trade-off curves from a sweep's results.csv: time per iteration (or epoch time) against each swept
bandwidth and each swept latency, one line per algorithm.

    scripts/plot_tradeoff.py results/tradeoff/results.csv
    scripts/plot_tradeoff.py results/vgg16/results.csv --epoch-samples 1281167 -o vgg16.png

A column is plotted on the x axis when its values are bandwidths ("10 Gbps") or times ("5 ms"). Lines are
the values of the swept algorithm column (an axis whose path starts with "algorithm"), else of the
"algorithm" column. In the plot against one x column, every other swept column is held at the value of
the first point (so a grid over bandwidth x latency gives the bandwidth curve at the first latency and
the latency curve at the first bandwidth).

With --epoch-samples N the y axis is the epoch time N / samples_per_s (the paper's "epoch time"),
otherwise the time per iteration. Runs with Debian's python3 (python3-matplotlib).
"""

import argparse
import csv
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# results.csv: point, <one column per sweep axis>, then these fixed columns.
FIXED = ["runtime", "world_size", "algorithm", "time_per_iteration_s", "compute_per_iteration_s",
         "exposed_comm_per_iteration_s", "final_loss", "final_full_loss", "samples_per_s"]

BANDWIDTH_UNITS = {
    "bps": 1 / 8, "Kbps": 1e3 / 8, "kbps": 1e3 / 8, "Mbps": 1e6 / 8, "Gbps": 1e9 / 8, "Tbps": 1e12 / 8,
    "bit/s": 1 / 8, "kbit/s": 1e3 / 8, "Kbit/s": 1e3 / 8, "Mbit/s": 1e6 / 8, "Gbit/s": 1e9 / 8,
    "Tbit/s": 1e12 / 8, "b/s": 1 / 8, "kb/s": 1e3 / 8, "Kb/s": 1e3 / 8, "Mb/s": 1e6 / 8, "Gb/s": 1e9 / 8,
    "Tb/s": 1e12 / 8, "B/s": 1, "kB/s": 1e3, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
    "KiB/s": 2.0 ** 10, "MiB/s": 2.0 ** 20, "GiB/s": 2.0 ** 30, "TiB/s": 2.0 ** 40,
}
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0}
QUANTITY = re.compile(r"^\s*([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*(\S+)\s*$")


def quantity(text):
    """("bandwidth", Gbit/s) or ("latency", ms) or None."""
    m = QUANTITY.match(text)
    if not m:
        return None
    value, unit = float(m.group(1)), m.group(2)
    if unit in BANDWIDTH_UNITS:
        return "bandwidth", value * BANDWIDTH_UNITS[unit] * 8 / 1e9  # Gbit/s
    if unit in TIME_UNITS:
        return "latency", value * TIME_UNITS[unit] * 1e3  # ms
    return None


def read_results(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        sys.exit(f"{path}: empty")
    header = rows[0]
    if header[0] != "point" or header[-len(FIXED):] != FIXED:
        sys.exit(f"{path}: not a bagua results.csv (header {header})")
    axes = header[1:-len(FIXED)]
    points = []
    for r in rows[1:]:
        if len(r) != len(header):
            continue  # a torn line
        swept = dict(zip(axes, r[1:1 + len(axes)]))
        fixed = dict(zip(FIXED, r[1 + len(axes):]))
        points.append((swept, fixed))
    return axes, points


def series_label(swept, fixed, series_axis):
    if series_axis is None:
        return fixed["algorithm"]
    text = swept[series_axis]
    try:  # a swept algorithm object: its name and parameters
        obj = json.loads(text)
        if isinstance(obj, dict):
            name = obj.pop("name", fixed["algorithm"])
            params = ", ".join(f"{k}={v}" for k, v in obj.items())
            return f"{name} ({params})" if params else name
    except ValueError:
        pass
    return text


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="results.csv of a sweep")
    p.add_argument("--epoch-samples", type=float, default=None,
                   help="samples per epoch: plot epoch time = N / samples_per_s instead of time per iteration")
    p.add_argument("-o", "--output", default=None, help="image file (default: tradeoff.png beside results.csv)")
    args = p.parse_args()

    axes, points = read_results(args.results)
    if not points:
        sys.exit(f"{args.results}: no rows")
    series_axis = next((a for a in axes if a == "algorithm" or a.startswith("algorithm.")), None)
    x_axes = []
    for a in axes:
        kinds = {q[0] if q else None for q in (quantity(s[a]) for s, _ in points)}
        if len(kinds) == 1 and None not in kinds:
            x_axes.append((a, kinds.pop()))
    if not x_axes:
        sys.exit(f"{args.results}: no swept bandwidth or latency column among {axes}")

    fig, plots = plt.subplots(1, len(x_axes), figsize=(6 * len(x_axes), 4.5), squeeze=False)
    first = points[0][0]
    for plot, (x_axis, kind) in zip(plots[0], x_axes):
        held = [a for a in axes if a != x_axis and a != series_axis]
        lines = {}
        for swept, fixed in points:
            if any(swept[a] != first[a] for a in held):
                continue
            if args.epoch_samples:
                rate = float(fixed["samples_per_s"]) if fixed["samples_per_s"] else 0.0
                y = args.epoch_samples / rate if rate > 0 else float("nan")
            else:
                y = 1e3 * float(fixed["time_per_iteration_s"]) if fixed["time_per_iteration_s"] else float("nan")
            lines.setdefault(series_label(swept, fixed, series_axis), []).append((quantity(swept[x_axis])[1], y))
        for label, xy in lines.items():
            xy.sort()
            plot.plot([x for x, _ in xy], [y for _, y in xy], marker="o", label=label)
        plot.set_xscale("log")
        plot.set_xlabel(f"{x_axis} ({'Gbit/s' if kind == 'bandwidth' else 'ms'})")
        plot.set_ylabel("epoch time (s)" if args.epoch_samples else "time per iteration (ms)")
        title = f"vs {kind}"
        if held:
            title += " (" + ", ".join(f"{a}={first[a]}" for a in held) + ")"
        plot.set_title(title, fontsize=9)
        plot.grid(True, which="both", alpha=0.3)
        plot.legend(fontsize=8)
    fig.tight_layout()
    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.results)), "tradeoff.png")
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main()
