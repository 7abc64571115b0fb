#!/usr/bin/python3
"""Convergence curves from a results directory: loss against iterations and against (simulated or real)
time, one line per point, labelled by algorithm and swept values.

    scripts/plot_convergence.py results/quickstart
    scripts/plot_convergence.py results/convergence --full -o convergence.png

Reads DIR/points/*/summary.json and iterations.csv. The batch loss (mean over ranks) is drawn as a line;
with --full, the full-data loss (evaluated every schedule.eval_interval iterations and after the last)
is drawn instead, as markers joined by lines. Runs with Debian's python3 (python3-matplotlib).
"""

import argparse
import csv
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def number(text):
    return float(text) if text not in ("", None) else math.nan


def read_point(folder):
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(folder, "iterations.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return summary, rows


def label(summary):
    name = summary["config"]["algorithm"]["name"]
    swept = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in summary.get("swept", {}).items()
             if k not in ("algorithm", "algorithm.name")]
    return name + (f" ({', '.join(swept)})" if swept else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="a results directory (the one holding points/)")
    p.add_argument("--full", action="store_true", help="plot the full-data loss instead of the batch loss")
    p.add_argument("--log", action="store_true", help="logarithmic loss axis")
    p.add_argument("-o", "--output", default=None, help="image file (default: convergence.png in the directory)")
    args = p.parse_args()

    points_dir = os.path.join(args.results, "points")
    folders = sorted(os.path.join(points_dir, d) for d in os.listdir(points_dir)
                     if not d.startswith(".") and os.path.isfile(os.path.join(points_dir, d, "summary.json")))
    if not folders:
        sys.exit(f"{args.results}: no completed point")

    column = "full_loss" if args.full else "loss"
    fig, (by_iteration, by_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    for folder in folders:
        summary, rows = read_point(folder)
        xy = [(int(r["iteration"]) + 1, number(r["time_s"]), number(r[column])) for r in rows]
        xy = [(i, t, y) for i, t, y in xy if not math.isnan(y)]
        if not xy:
            continue
        style = {"marker": "o", "markersize": 3} if args.full else {}
        lines = by_iteration.plot([i for i, _, _ in xy], [y for _, _, y in xy], label=label(summary), **style)
        by_time.plot([t for _, t, _ in xy], [y for _, _, y in xy], color=lines[0].get_color(), **style)
        optimal = summary.get("optimal_loss")
        if optimal is not None:
            for plot in (by_iteration, by_time):
                plot.axhline(optimal, color=lines[0].get_color(), linestyle=":", linewidth=1)
    runtime = json.load(open(os.path.join(folders[0], "summary.json")))["config"]["runtime"]
    ylabel = "full-data loss" if args.full else "batch loss (mean over ranks)"
    by_iteration.set_xlabel("iterations")
    by_time.set_xlabel("simulated time (s)" if runtime == "sim" else "time (s)")
    for plot in (by_iteration, by_time):
        plot.set_ylabel(ylabel)
        if args.log:
            plot.set_yscale("log")
        plot.grid(True, alpha=0.3)
    by_iteration.legend(fontsize=8)
    fig.tight_layout()
    out = args.output or os.path.join(args.results, "convergence.png")
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main()
