#!/usr/bin/python3
"""Convergence curves from a results directory: loss against iterations and against (simulated or real)
time, one line per point, labelled by algorithm and swept values.

    scripts/plot_convergence.py results/quickstart
    scripts/plot_convergence.py results/convergence/linear_regression --full --gap --by-world --families \\
        --summary results/convergence/linear_regression/summary.md

Reads DIR/points/*/summary.json and iterations.csv. The batch loss (mean over ranks) is drawn as a line;
with --full, the full-data loss (evaluated every schedule.eval_interval iterations and after the last)
is drawn instead, as markers joined by lines. Runs with Debian's python3 (python3-matplotlib).

Options for the convergence suite (scripts/convergence):
  --gap        draw loss - optimal loss on a logarithmic axis where the workload knows its optimum
               (linear regression); other points are drawn as with --full
  --by-world   one figure per world size, DIR/convergence_<P>ranks.png
  --families   one row of panels per family of algorithms (centralized, decentralized, local and
               adaptive), the baseline (flat gradient_allreduce) drawn in every row
  --log-time   logarithmic time axis (per-iteration times of algorithms differ by orders of magnitude)
  --summary F  a markdown table of every point's final full-data loss (and gap) against the baseline's
               of the same world size, the ratio, and for qadam against full-precision qadam
  --curves F   a compact CSV of the curves drawn (every evaluation of the full-data loss of every point),
               small enough to keep with the figures
  --finals F   every point's final loss, gap and ratios (the summary's numbers) as CSV
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


def default_title(points):
    """The config's description, unless the sweep varies something: a description says what one
    configuration is (\"100 Gbps between hosts\") and would be wrong for the other points; then the
    experiment's name and what varies."""
    first = points[0][0]
    axes = list(dict.fromkeys(k for s, _ in points for k in s.get("swept", {})))
    if not axes:
        return first["config"].get("description", "")
    parts = []
    for a in axes:
        values = list(dict.fromkeys(s["swept"][a] if isinstance(s["swept"].get(a), str)
                                    else json.dumps(s["swept"].get(a)) for s, _ in points))
        shown = ", ".join(values) if len(values) <= 4 else f"{values[0]} ... {values[-1]} ({len(values)} values)"
        parts.append(f"{a} = {shown}")
    return f"{first['config']['name']}: " + "; ".join(parts)


def label(summary):
    name = summary["config"]["algorithm"]["name"]
    swept = [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in summary.get("swept", {}).items()
             if k not in ("algorithm", "algorithm.name")]
    diverged = f" [diverged at {summary['diverged_at_iteration']}]" if summary.get("status") == "diverged" else ""
    return name + (f" ({', '.join(swept)})" if swept else "") + diverged


# ---- algorithms of the convergence suite: names, families, baselines ----------------------------------

COMPRESSOR_NAMES = {"minmax_uint8": "uint8", "sign": "sign", "identity": "fp32", "fp16": "fp16",
                    "bf16": "bf16", "qsgd": "QSGD"}


def compressor_name(a):
    c = a.get("compressor", "")
    if c == "topk":
        return f"top-{a['topk_ratio'] * 100:g}%"
    if c == "randomk":
        return f"random-{a['randomk_ratio'] * 100:g}%"
    return COMPRESSOR_NAMES.get(c, c)


def short_name(summary):
    """A short name of the point's algorithm and the parameters that tell it apart."""
    a = summary["config"]["algorithm"]
    name = a["name"]
    ef = " +EF" if a.get("error_feedback") else ""
    if name == "gradient_allreduce":
        return "allreduce" + (" hierarchical" if a.get("hierarchical") else "")
    if name == "bytegrad":
        return f"bytegrad {compressor_name(a)}{ef}"
    if name == "decentralized":
        return f"decentralized {a['peer_selection_mode']}" + (" hierarchical" if a.get("hierarchical") else "")
    if name == "low_precision_decentralized":
        return f"low-prec. decentralized {compressor_name(a)}{ef}"
    if name == "choco_sgd":
        return f"CHOCO-SGD {compressor_name(a)}"
    if name == "local_sgd":
        return f"local SGD H={a['period']}"
    if name == "qadam":
        if is_full_precision_qadam(summary):
            return "QAdam full precision"
        return "QAdam " + ("1-bit" if a.get("compressor") == "sign" else compressor_name(a))
    if name == "async_model_average":
        return f"async averaging {a['sync_interval_ms']} ms"
    return label(summary)


def family(summary):
    name = summary["config"]["algorithm"]["name"]
    if name in ("gradient_allreduce", "bytegrad"):
        return "centralized"
    if name in ("decentralized", "low_precision_decentralized", "choco_sgd"):
        return "decentralized"
    return "local and adaptive"


FAMILIES = ["centralized", "decentralized", "local and adaptive"]


def is_baseline(summary):
    a = summary["config"]["algorithm"]
    return a["name"] == "gradient_allreduce" and not a.get("hierarchical") and a.get("average", True)


def is_full_precision_qadam(summary):
    a = summary["config"]["algorithm"]
    return a["name"] == "qadam" and a["warmup_steps"] >= summary["config"]["schedule"]["iterations"]


def final_full_loss(summary):
    x = summary.get("final_full_loss")
    return math.nan if x is None else x


def gap_of(summary, loss):
    optimal = summary.get("optimal_loss")
    return None if optimal is None else loss - optimal


# ---- figures ------------------------------------------------------------------------------------------


def curve(summary, rows, column, gap):
    """(iteration, time, y) of the drawn points; y is the gap where asked and known."""
    optimal = summary.get("optimal_loss") if gap else None
    out = []
    for r in rows:
        y = number(r[column])
        if math.isnan(y):
            continue
        if optimal is not None:
            y = y - optimal
        out.append((int(r["iteration"]) + 1, number(r["time_s"]), y))
    return out


def draw(points, args, title, out):
    runtime = points[0][0]["config"]["runtime"]
    column = "full_loss" if (args.full or args.gap) else "loss"
    use_gap = args.gap and all(s.get("optimal_loss") is not None for s, _ in points)
    # A family is drawn when it has an algorithm besides the baseline.
    families = [f for f in FAMILIES if any(family(s) == f and not is_baseline(s) for s, _ in points)] \
        if args.families else [None]
    families = families or [None]
    fig, axes = plt.subplots(len(families), 2, figsize=(13, 3.6 * len(families)), squeeze=False)
    baseline = [(s, r) for s, r in points if is_baseline(s)]
    for row, fam in enumerate(families):
        by_iteration, by_time = axes[row]
        members = [(s, r) for s, r in points if fam is None or family(s) == fam]
        if fam is not None:
            members = baseline + [(s, r) for s, r in members if not is_baseline(s)]
        palette = plt.get_cmap("tab10")
        colour = 0
        for s, rows in members:
            xy = curve(s, rows, column, use_gap)
            if use_gap:
                xy = [(i, t, y) for i, t, y in xy if y > 0]
            if not xy:
                continue
            style = {"marker": "o", "markersize": 3} if column == "full_loss" else {}
            if args.families and is_baseline(s):
                style.update(color="black", linestyle="--", linewidth=1.5)
            elif args.families:
                style.update(color=palette(colour % 10))
                colour += 1
            name = short_name(s) if args.families or args.by_world else label(s)
            lines = by_iteration.plot([i for i, _, _ in xy], [y for _, _, y in xy], label=name, **style)
            style["color"] = lines[0].get_color()
            by_time.plot([t for _, t, _ in xy], [y for _, _, y in xy], **style)
            optimal = s.get("optimal_loss")
            if optimal is not None and not use_gap and not args.families:
                for plot in (by_iteration, by_time):
                    plot.axhline(optimal, color=lines[0].get_color(), linestyle=":", linewidth=1)
        if use_gap:
            ylabel = "full-data loss - optimum"
        else:
            ylabel = "full-data loss" if column == "full_loss" else "batch loss (mean over ranks)"
        by_iteration.set_xlabel("iterations")
        by_time.set_xlabel("simulated time (s)" if runtime == "sim" else "time (s)")
        for plot in (by_iteration, by_time):
            plot.set_ylabel(ylabel)
            if args.log or use_gap:
                plot.set_yscale("log")
            plot.grid(True, alpha=0.3)
        if args.log_time:
            by_time.set_xscale("log")
            # Start at the earliest second evaluation: a first evaluation before any communication (local
            # SGD) would stretch the axis over decades of nothing.
            seconds = sorted(xy[1][1] for xy in (curve(s, r, column, False) for s, r in members) if len(xy) > 1)
            if seconds:
                by_time.set_xlim(left=seconds[0] / 2)
        if fam is not None:
            by_iteration.set_title(fam, fontsize=10, loc="left")
        by_iteration.legend(fontsize=7, loc="upper right", ncol=2 if len(members) > 6 else 1)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=args.dpi)
    plt.close(fig)
    print(out)


# ---- tables -------------------------------------------------------------------------------------------


def fmt(x):
    if x is None:
        return ""
    if not math.isfinite(x):
        return "diverged"
    return f"{x:.4g}"


def ratio_text(x, ref):
    if x is None or ref is None:
        return ""
    if not math.isfinite(x):
        return "diverged"
    if ref <= 0 or not math.isfinite(ref):
        return ""
    return f"{x / ref:.3g}"


def finals(points):
    """Per point: its short name, world size, final full-data loss, gap (or None), the measure compared
    (the gap where the optimum is known, else the loss), and its ratios to the baseline's measure and, for
    compressed qadam, to full-precision qadam's."""
    has_gap = any(s.get("optimal_loss") is not None for s, _ in points)
    rows = []
    for s, _ in sorted(points, key=lambda p: p[0]["point"]):
        w = s["world_size"]
        loss = final_full_loss(s)
        measure = gap_of(s, loss) if has_gap else loss

        def measure_of(pred):
            ref = next((b for b, _ in points if b["world_size"] == w and pred(b)), None)
            if ref is None:
                return None
            rl = final_full_loss(ref)
            return gap_of(ref, rl) if has_gap else rl

        base = measure_of(is_baseline)
        qfp = None
        if s["config"]["algorithm"]["name"] == "qadam" and not is_full_precision_qadam(s):
            qfp = measure_of(is_full_precision_qadam)
        rows.append({"algorithm": short_name(s), "world_size": w, "final_full_loss": loss,
                     "gap": gap_of(s, loss) if has_gap else None, "measure": measure,
                     "x_baseline": ratio_text(measure, base), "x_qadam_fp": ratio_text(measure, qfp) if qfp else ""})
    return has_gap, rows


def summary_table(points, title):
    """Markdown: one row per algorithm, a group of columns per world size."""
    has_gap, rows = finals(points)
    worlds = sorted({r["world_size"] for r in rows})
    order = list(dict.fromkeys(r["algorithm"] for r in rows))
    cell = {(r["algorithm"], r["world_size"]): r for r in rows}
    header = ["algorithm"]
    for w in worlds:
        header += [f"{w} ranks: final loss"] + (["gap"] if has_gap else []) + ["x baseline"]
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for n in order:
        line = [n]
        for w in worlds:
            r = cell.get((n, w))
            if r is None:
                line += [""] * (3 if has_gap else 2)
                continue
            ratio = r["x_baseline"] + (f" ({r['x_qadam_fp']} x QAdam fp)" if r["x_qadam_fp"] else "")
            line += [fmt(r["final_full_loss"])] + ([fmt(r["gap"])] if has_gap else []) + [ratio]
        lines.append("| " + " | ".join(line) + " |")
    return "\n".join(lines) + "\n"


def write_finals(points, path):
    _, rows = finals(points)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        keys = ["algorithm", "world_size", "final_full_loss", "gap", "x_baseline", "x_qadam_fp"]
        w.writerow(keys)
        for r in rows:
            w.writerow(["" if r[k] is None else r[k] for k in keys])
    print(path)


def write_curves(points, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["point", "world_size", "algorithm", "iteration", "time_s", "full_loss"])
        for s, rows in sorted(points, key=lambda p: p[0]["point"]):
            for r in rows:
                if r["full_loss"] != "":
                    w.writerow([s["point"], s["world_size"], short_name(s), int(r["iteration"]) + 1,
                                r["time_s"], r["full_loss"]])
    print(path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="a results directory (the one holding points/)")
    p.add_argument("--full", action="store_true", help="plot the full-data loss instead of the batch loss")
    p.add_argument("--log", action="store_true", help="logarithmic loss axis")
    p.add_argument("--gap", action="store_true", help="plot loss - optimal loss (log axis) where the optimum is known")
    p.add_argument("--by-world", action="store_true", help="one figure per world size")
    p.add_argument("--families", action="store_true", help="one row of panels per family of algorithms")
    p.add_argument("--log-time", action="store_true", help="logarithmic time axis")
    p.add_argument("--title", default=None,
                   help="figure title (default: the experiment's description; for a sweep, its name and what "
                        "the sweep varies)")
    p.add_argument("--dpi", type=int, default=120)
    p.add_argument("--summary", default=None, help="write a markdown table of final losses against the baseline")
    p.add_argument("--curves", default=None, help="write the drawn full-loss curves as a compact CSV")
    p.add_argument("--finals", default=None, help="write every point's final loss, gap and ratios as CSV")
    p.add_argument("-o", "--output", default=None,
                   help="image file (default: convergence.png in the directory; with --by-world, "
                        "convergence_<P>ranks.png)")
    args = p.parse_args()

    points_dir = os.path.join(args.results, "points")
    folders = sorted(os.path.join(points_dir, d) for d in os.listdir(points_dir)
                     if not d.startswith(".") and os.path.isfile(os.path.join(points_dir, d, "summary.json")))
    if not folders:
        sys.exit(f"{args.results}: no completed point")
    points = []
    for f in folders:
        with open(os.path.join(f, "summary.json")) as sf:
            status = json.load(sf).get("status", "ok")
        # A failed point has no curve; a diverged one is drawn up to its divergence.
        if status == "failed" or not os.path.isfile(os.path.join(f, "iterations.csv")):
            print(f"{f}: {status}, left out", file=sys.stderr)
            continue
        points.append(read_point(f))
    if not points:
        sys.exit(f"{args.results}: no point with a curve")
    column = "full_loss" if (args.full or args.gap) else "loss"
    if not any(number(r[column]) == number(r[column]) for _, rows in points for r in rows):
        sys.exit(f"{args.results}: no {column.replace('_', ' ')} to plot (a profile workload has none: its "
                 f"points have only times; plot them with scripts/plot_tradeoff.py {args.results}/results.csv)")
    title = args.title if args.title is not None else default_title(points)

    if args.by_world:
        for w in sorted({s["world_size"] for s, _ in points}):
            group = [(s, r) for s, r in points if s["world_size"] == w]
            stem = args.output[:-4] if args.output and args.output.endswith(".png") else \
                os.path.join(args.results, "convergence")
            draw(group, args, f"{title} ({w} ranks)" if title else f"{w} ranks", f"{stem}_{w}ranks.png")
    else:
        draw(points, args, title, args.output or os.path.join(args.results, "convergence.png"))
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(summary_table(points, title))
        print(args.summary)
    if args.curves:
        write_curves(points, args.curves)
    if args.finals:
        write_finals(points, args.finals)


if __name__ == "__main__":
    main()
