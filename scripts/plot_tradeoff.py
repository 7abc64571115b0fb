#!/usr/bin/python3
"""Trade-off curves from sweeps' results.csv: time per iteration (or epoch time) against each swept
bandwidth and each swept latency, one line per algorithm; or, with --winners, a map of the fastest
algorithm over a bandwidth x latency grid.

    scripts/plot_tradeoff.py results/tradeoff/results.csv
    scripts/plot_tradeoff.py results/vgg16/results.csv --epoch-samples 1281167 -o vgg16.png
    scripts/plot_tradeoff.py bw/results.csv lat/results.csv --epoch-samples 1281167 --logy \\
        --title "VGG16, 16 x 8 V100" -o vgg16.png
    scripts/plot_tradeoff.py grid/results.csv --winners --exclude async_model_average -o winners.png
    scripts/plot_tradeoff.py scaling/results.csv --scaling -o scaling.png

A column is plotted on the x axis when its values are bandwidths ("10 Gbps") or times ("5 ms"). Lines
are the values of the swept algorithm column (an axis whose path starts with "algorithm"), else of the
"algorithm_name" column. In the plot against one x column, every other swept column is held at the value of
the first point (so a grid over bandwidth x latency gives the bandwidth curve at the first latency and
the latency curve at the first bandwidth). Several results.csv files give one row of panels, in order;
a line keeps its colour in every panel. Bandwidth axes are logarithmic in base 2, latency axes linear.
The baselines (lines named ddp, horovod, byteps: the systems the paper compares with) are dashed; lines of
algorithms named async_* are dotted: they never wait for the network, so their time is the compute time
at every point. --added-latency BASE plots a latency column as the one-way latency added between hosts,
2 x (value - BASE): for sweeps that put half of the added latency on each of the two NIC links a message
between hosts crosses, on top of a base latency BASE per link.

--scaling plots throughput (samples/s) against the GPU count (the world_size column), one line per
algorithm across every results.csv given (a sweep and the points kept in another, one server's), with
the linear ideal: world_size x batch / compute time per iteration, the throughput of
compute that never waits (from the first line's points).

--winners takes one results.csv whose sweep has exactly one bandwidth and one latency axis and colours
each (bandwidth, latency) cell by the line that is fastest there (lines matched by --exclude left out;
the cell also counts the lines within --tie of the fastest), writing in the cell its time and how
many times faster it is than the line named by --baseline.

With --epoch-samples N the y axis is the epoch time N / samples_per_s (the paper's "epoch time"),
otherwise the time per iteration. Runs with Debian's python3 (python3-matplotlib).
"""

import argparse
import csv
import json
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

# results.csv: point, <one column per sweep axis>, then these fixed columns.
FIXED = ["runtime", "world_size", "algorithm_name", "time_per_iteration_s", "compute_per_iteration_s",
         "exposed_comm_per_iteration_s", "final_loss", "final_full_loss", "samples_per_s"]
STATUS = ["status", "error"]

BANDWIDTH_UNITS = {
    "bps": 1 / 8, "Kbps": 1e3 / 8, "kbps": 1e3 / 8, "Mbps": 1e6 / 8, "Gbps": 1e9 / 8, "Tbps": 1e12 / 8,
    "bit/s": 1 / 8, "kbit/s": 1e3 / 8, "Kbit/s": 1e3 / 8, "Mbit/s": 1e6 / 8, "Gbit/s": 1e9 / 8,
    "Tbit/s": 1e12 / 8, "b/s": 1 / 8, "kb/s": 1e3 / 8, "Kb/s": 1e3 / 8, "Mb/s": 1e6 / 8,
    "Gb/s": 1e9 / 8, "Tb/s": 1e12 / 8,
    "B/s": 1, "kB/s": 1e3, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
    "KiB/s": 2.0 ** 10, "MiB/s": 2.0 ** 20, "GiB/s": 2.0 ** 30, "TiB/s": 2.0 ** 40,
}
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0}
QUANTITY = re.compile(r"^\s*([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*(\S+)\s*$")
COLORS = plt.rcParams["axes.prop_cycle"].by_key()["color"]


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
    # Since points have a status, two more columns: status, error. Only ok points are drawn.
    status = header[-2:] == STATUS
    fixed_header = header[:-2] if status else header
    if fixed_header[0] != "point" or fixed_header[-len(FIXED):] != FIXED:
        sys.exit(f"{path}: not a bagua results.csv (header {header})")
    axes = fixed_header[1:-len(FIXED)]
    points = []
    skipped = 0
    for r in rows[1:]:
        if len(r) != len(header):
            continue  # a torn line
        if status and r[-2] != "ok":
            skipped += 1
            continue
        swept = dict(zip(axes, r[1:1 + len(axes)]))
        fixed = dict(zip(FIXED, r[1 + len(axes):]))
        points.append((swept, fixed))
    if skipped:
        print(f"{path}: {skipped} point(s) not ok (failed or diverged) left out", file=sys.stderr)
    if not points:
        sys.exit(f"{path}: no rows")
    return axes, points


def series_label(swept, fixed, series_axis, renames):
    label = fixed["algorithm_name"]
    if series_axis is not None:
        label = swept[series_axis]
        try:  # a swept algorithm object: its name and parameters
            obj = json.loads(label)
            if isinstance(obj, dict):
                name = obj.pop("name", fixed["algorithm_name"])
                params = ", ".join(f"{k}={v}" for k, v in obj.items())
                label = f"{name} ({params})" if params else name
        except ValueError:
            pass
    return renames.get(label, label)


def series_axis_of(axes):
    return next((a for a in axes if a == "algorithm" or a.startswith("algorithm.")), None)


def x_axes_of(axes, points):
    """The swept columns whose every value is a bandwidth, or every value a time: [(column, kind)]."""
    out = []
    for a in axes:
        kinds = {q[0] if q else None for q in (quantity(s[a]) for s, _ in points)}
        if len(kinds) == 1 and None not in kinds:
            out.append((a, kinds.pop()))
    return out


def y_value(fixed, epoch_samples):
    """Epoch time (s) or time per iteration (ms); NaN when missing."""
    if epoch_samples:
        rate = float(fixed["samples_per_s"]) if fixed["samples_per_s"] else 0.0
        return epoch_samples / rate if rate > 0 else float("nan")
    t = fixed["time_per_iteration_s"]
    return 1e3 * float(t) if t else float("nan")


def y_label(epoch_samples):
    return "epoch time (s)" if epoch_samples else "time per iteration (ms)"


def x_label(x_axis, kind, args):
    if kind == "latency" and args.added_latency is not None:
        return "added one-way latency between hosts (ms)"
    return f"{x_axis} ({'Gbit/s' if kind == 'bandwidth' else 'ms'})"


def format_y(y, epoch_samples):
    unit = "s" if epoch_samples else "ms"
    return f"{y:.3g} {unit}" if y < 1000 else f"{y:.0f} {unit}"


BASELINES = ("ddp", "horovod", "byteps")


def line_style(label):
    if label.split(" ")[0] in BASELINES:
        return "--"
    return ":" if label.startswith("async") else "-"


def x_value(text, kind, args):
    x = quantity(text)[1]
    if kind == "latency" and args.added_latency is not None:
        x = 2 * (x - args.added_latency)
    return x


def set_x_axis(plot, kind, xs, args):
    if kind == "bandwidth":
        plot.set_xscale("log", base=2)
        plot.set_xticks(xs, [f"{x:g}" for x in xs])
        plot.minorticks_off()
    elif args.added_latency is None and min(xs) > 0:
        plot.set_xscale("log")


def plot_curves(args, renames):
    tables = [(path,) + read_results(path) for path in args.results]
    panels = []
    for path, axes, points in tables:
        x_axes = x_axes_of(axes, points)
        if not x_axes:
            sys.exit(f"{path}: no swept bandwidth or latency column among {axes}")
        panels += [(path, axes, points, x_axis, kind) for x_axis, kind in x_axes]

    colors = {}
    fig, plots = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.8), squeeze=False)
    for plot, (path, axes, points, x_axis, kind) in zip(plots[0], panels):
        series_axis = series_axis_of(axes)
        first = points[0][0]
        held = [a for a in axes if a != x_axis and a != series_axis]
        lines = {}
        for swept, fixed in points:
            if any(swept[a] != first[a] for a in held):
                continue
            label = series_label(swept, fixed, series_axis, renames)
            x = x_value(swept[x_axis], kind, args)
            lines.setdefault(label, []).append((x, y_value(fixed, args.epoch_samples)))
        for label, xy in lines.items():
            xy.sort()
            color = colors.setdefault(label, COLORS[len(colors) % len(COLORS)])
            plot.plot([x for x, _ in xy], [y for _, y in xy], marker="o", markersize=4, color=color,
                      linestyle=line_style(label), label=label)
        set_x_axis(plot, kind, sorted({x for xy in lines.values() for x, _ in xy}), args)
        if args.logy:
            plot.set_yscale("log")
        plot.set_xlabel(x_label(x_axis, kind, args))
        plot.set_ylabel(y_label(args.epoch_samples))
        title = f"vs {kind}"
        if held:
            title += " (" + ", ".join(f"{a}={first[a]}" for a in held) + ")"
        plot.set_title(title, fontsize=9)
        plot.grid(True, which="both", alpha=0.3)
        plot.legend(fontsize=7)
    return fig


def plot_winners(args, renames):
    if len(args.results) != 1:
        sys.exit("--winners takes one results.csv")
    path = args.results[0]
    axes, points = read_results(path)
    x_axes = dict((kind, a) for a, kind in x_axes_of(axes, points))
    if set(x_axes) != {"bandwidth", "latency"} or len(x_axes_of(axes, points)) != 2:
        sys.exit(f"{path}: --winners needs exactly one swept bandwidth and one swept latency column")
    bw_axis, lat_axis = x_axes["bandwidth"], x_axes["latency"]
    series_axis = series_axis_of(axes)

    cells = {}  # (bandwidth text, latency text) -> {label: y}
    order = []  # labels in order of first appearance
    for swept, fixed in points:
        label = series_label(swept, fixed, series_axis, renames)
        if label not in order:
            order.append(label)
        cell = cells.setdefault((swept[bw_axis], swept[lat_axis]), {})
        cell[label] = y_value(fixed, args.epoch_samples)
    candidates = [l for l in order if not any(l.startswith(e) for e in args.exclude)]
    if not candidates:
        sys.exit("--exclude leaves no line")
    bandwidths = sorted({b for b, _ in cells}, key=lambda t: quantity(t)[1])
    latencies = sorted({l for _, l in cells}, key=lambda t: quantity(t)[1])

    color_of = {label: COLORS[i % len(COLORS)] for i, label in enumerate(order)}
    winners_seen = []
    grid = [[-1] * len(latencies) for _ in bandwidths]
    fig, ax = plt.subplots(figsize=(1.25 * len(latencies) + 3.5, 0.62 * len(bandwidths) + 2.2))
    for i, b in enumerate(bandwidths):
        for j, l in enumerate(latencies):
            times = cells.get((b, l), {})
            ranked = sorted(((y, order.index(label), label) for label, y in times.items()
                             if label in candidates and not math.isnan(y)))
            if not ranked:
                continue
            # Lines within --tie of the fastest (at the compute floor, say) are counted as tied with it.
            y, _, winner = ranked[0]  # exact ties go to the first in legend order
            tied = [label for t, _, label in ranked if t <= y * (1 + args.tie)]
            if winner not in winners_seen:
                winners_seen.append(winner)
            grid[i][j] = winners_seen.index(winner)
            text = format_y(y, args.epoch_samples)
            base = times.get(args.baseline)
            if base and winner != args.baseline and not math.isnan(base):
                speedup = base / y
                text += f"\n{speedup:.2g}x" if speedup < 10 else f"\n{speedup:.0f}x"
            if len(tied) > 1:
                text += f"\n(+{len(tied) - 1} tied)"
            ax.text(j, i, text, ha="center", va="center", fontsize=7)
    if not winners_seen:
        sys.exit(f"{path}: no cell has a time")
    cmap = ListedColormap(["white"] + [color_of[w] for w in winners_seen])
    ax.imshow([[v + 1 for v in row] for row in grid], cmap=cmap, vmin=0, vmax=len(winners_seen),
              origin="lower", aspect="auto", alpha=0.55)
    ax.set_xticks(range(len(latencies)),
                  [f"+{x_value(l, 'latency', args):g} ms" if args.added_latency is not None else l
                   for l in latencies])
    ax.set_yticks(range(len(bandwidths)), bandwidths)
    ax.set_xlabel(x_label(lat_axis, "latency", args))
    ax.set_ylabel(bw_axis)
    held = [a for a in axes if a not in (bw_axis, lat_axis, series_axis)]
    title = f"fastest of {len(candidates)} lines ({y_label(args.epoch_samples)}"
    title += f"; x = speed-up over {args.baseline})" if args.baseline in order else ")"
    if args.exclude:
        title += "\nleft out: " + ", ".join(args.exclude)
    if held:
        title += " (" + ", ".join(f"{a}={points[0][0][a]}" for a in held) + ")"
    ax.set_title(title, fontsize=9)
    ax.legend(handles=[Patch(facecolor=color_of[w], alpha=0.55, label=w) for w in winners_seen],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def plot_scaling(args, renames):
    fig, plot = plt.subplots(figsize=(7, 4.8))
    colors = {}
    ideal = {}
    lines = {}  # one line per label across the files: several sweeps may share a line (GPU counts)
    for path in args.results:
        axes, points = read_results(path)
        series_axis = series_axis_of(axes)
        for swept, fixed in points:
            if not fixed["samples_per_s"]:
                continue
            n = int(fixed["world_size"])
            rate = float(fixed["samples_per_s"])
            label = series_label(swept, fixed, series_axis, renames)
            lines.setdefault(label, []).append((n, rate))
            # Compute that never waits: samples per iteration over the compute time of an iteration.
            compute = float(fixed["compute_per_iteration_s"])
            if compute > 0 and n not in ideal:
                ideal[n] = rate * float(fixed["time_per_iteration_s"]) / compute
    for label, xy in lines.items():
        xy.sort()
        color = colors.setdefault(label, COLORS[len(colors) % len(COLORS)])
        plot.plot([x for x, _ in xy], [y for _, y in xy], marker="o", markersize=4, color=color,
                  linestyle=line_style(label), label=label)
    xs = sorted(ideal)
    plot.plot(xs, [ideal[x] for x in xs], color="0.4", linewidth=2.5, alpha=0.5,
              label="linear ideal (compute only)")
    plot.set_xscale("log", base=2)
    plot.set_yscale("log")
    plot.set_xticks(xs, [str(x) for x in xs])
    plot.minorticks_off()
    plot.set_xlabel("GPUs")
    plot.set_ylabel("throughput (samples/s)")
    plot.grid(True, which="both", alpha=0.3)
    plot.legend(fontsize=7)
    return fig


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="results.csv of a sweep (several: one row of panels)")
    p.add_argument("--epoch-samples", type=float, default=None,
                   help="samples per epoch: plot the epoch time N / samples_per_s")
    p.add_argument("-o", "--output", default=None,
                   help="image file (default: tradeoff.png, winners.png beside the first results.csv)")
    p.add_argument("--title", default=None, help="title of the whole figure (the model, the cluster)")
    p.add_argument("--note", default=None, help="a line of small print under the figure")
    p.add_argument("--logy", action="store_true", help="logarithmic y axis")
    p.add_argument("--rename", action="append", default=[], metavar="LABEL=NEW",
                   help="show line LABEL (as it would be shown) as NEW; repeatable")
    p.add_argument("--winners", action="store_true",
                   help="map of the fastest line over a bandwidth x latency grid instead of curves")
    p.add_argument("--exclude", action="append", default=[], metavar="PREFIX",
                   help="--winners: leave out lines whose label starts with PREFIX; repeatable")
    p.add_argument("--tie", type=float, default=0.01,
                   help="--winners: lines this close to the fastest (relative; default 0.01) tie")
    p.add_argument("--baseline", default="gradient_allreduce",
                   help="--winners: the line speed-ups are stated against (default gradient_allreduce)")
    p.add_argument("--scaling", action="store_true",
                   help="throughput against the GPU count (world_size), with the linear ideal")
    p.add_argument("--added-latency", default=None, metavar="BASE",
                   help="plot latency columns as the added one-way latency 2 x (value - BASE), e.g. '5 us'")
    args = p.parse_args()
    if args.added_latency is not None:
        q = quantity(args.added_latency)
        if not q or q[0] != "latency":
            sys.exit(f"--added-latency {args.added_latency!r}: expected a time, e.g. '5 us'")
        args.added_latency = q[1]

    renames = {}
    for r in args.rename:
        old, sep, new = r.rpartition("=")
        if not sep or not old:
            sys.exit(f"--rename {r!r}: expected LABEL=NEW")
        renames[old] = new
    args.baseline = renames.get(args.baseline, args.baseline)

    if args.scaling:
        fig = plot_scaling(args, renames)
    else:
        fig = plot_winners(args, renames) if args.winners else plot_curves(args, renames)
    if args.title:
        fig.suptitle(args.title, fontsize=11)
    if args.note:
        fig.text(0.01, 0.005, args.note, fontsize=7, ha="left", va="bottom", color="0.3")
    fig.tight_layout(rect=(0, 0.03 if args.note else 0, 1, 1))
    default = "winners.png" if args.winners else ("scaling.png" if args.scaling else "tradeoff.png")
    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.results[0])), default)
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
