#!/usr/bin/python3
"""Time to accuracy from a results directory of a Fashion-MNIST sweep (configs/convergence/fashion_mnist.json):
test accuracy against iterations and against simulated time, and the time each algorithm takes to reach
a target accuracy, per world size and inter-host network.

    scripts/plot_time_to_accuracy.py results/convergence/fashion_mnist --target 0.82 \\
        --table results/convergence/fashion_mnist/summary.md

Reads DIR/points/*/summary.json and iterations.csv (test_accuracy: mean over ranks of each rank's test
accuracy, with its smallest and largest rank's). Writes DIR/accuracy_<P>ranks.png, one figure per world
size: a row per network, accuracy against iterations (left) and against simulated time (right, log
axis); the decentralized algorithms' spread over ranks is shaded. Writes DIR/curves.csv (every
evaluation of every point) and the markdown table (--table): per algorithm and (ranks, network) the
simulated time and the iterations to the target (the first evaluation at or above it; "-" when never),
and the final accuracy. Runs with Debian's python3 (python3-matplotlib).
"""

import argparse
import csv
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def number(text):
    return float(text) if text not in ("", None) else math.nan


def label(algorithm):
    name = algorithm["name"]
    extra = {k: v for k, v in algorithm.items() if k not in ("name", "hierarchical")}
    if name == "decentralized":
        return "decentralized " + extra.get("peer_selection_mode", "all")
    if name == "local_sgd":
        return f"local_sgd H={extra.get('period', 4)}"
    if name == "diloco":
        return f"diloco H={extra.get('inner_steps', 500)}"
    if name == "async_model_average":
        return f"async_model_average {extra.get('sync_interval_ms', 500)} ms"
    return name


def network(cluster_summary):
    bandwidth = cluster_summary.get("nic", {}).get("bandwidth", "")
    return bandwidth


def read_points(root):
    points = []
    folder = os.path.join(root, "points")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(folder, name, "iterations.csv"), newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["test_accuracy"] != ""]
        config = summary["config"]
        points.append({
            "label": label(config["algorithm"]),
            "ranks": summary["world_size"],
            "network": network(config["cluster"]),
            "iteration": [int(r["iteration"]) + 1 for r in rows],
            "time_s": [number(r["time_s"]) for r in rows],
            "accuracy": [number(r["test_accuracy"]) for r in rows],
            "low": [number(r["test_accuracy_min"]) for r in rows],
            "high": [number(r["test_accuracy_max"]) for r in rows],
        })
    return points


def reach(point, target):
    for it, t, a in zip(point["iteration"], point["time_s"], point["accuracy"]):
        if a >= target:
            return it, t
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--target", type=float, default=0.82)
    ap.add_argument("--table", default="")
    ap.add_argument("--dpi", type=int, default=80)
    args = ap.parse_args()
    points = read_points(args.dir)
    order = []
    for p in points:
        if p["label"] not in order:
            order.append(p["label"])
    ranks = sorted({p["ranks"] for p in points})
    networks = sorted({p["network"] for p in points}, key=lambda b: float(b.split()[0]))
    colors = plt.get_cmap("tab10")

    for world in ranks:
        fig, axes = plt.subplots(len(networks), 2, figsize=(13, 4.2 * len(networks)), squeeze=False)
        for row, net in enumerate(networks):
            for p in points:
                if p["ranks"] != world or p["network"] != net:
                    continue
                c = colors(order.index(p["label"]) % 10)
                for col, x in enumerate((p["iteration"], p["time_s"])):
                    ax = axes[row][col]
                    ax.plot(x, p["accuracy"], marker=".", color=c, label=p["label"])
                    if any(h - lo > 0 for lo, h in zip(p["low"], p["high"])):
                        ax.fill_between(x, p["low"], p["high"], color=c, alpha=0.2)
            for col, xlabel in enumerate(("iterations", "simulated time (s)")):
                ax = axes[row][col]
                ax.axhline(args.target, color="grey", linestyle=":", linewidth=1)
                ax.set_xlabel(xlabel)
                ax.set_ylabel("test accuracy")
                ax.set_ylim(0.70, 0.86)
                ax.set_title(f"{world} ranks, {net} between hosts")
                ax.grid(alpha=0.3)
                if col == 1:
                    ax.set_xscale("log")
            axes[row][0].legend(fontsize=7, loc="lower right")
        fig.suptitle(f"Fashion-MNIST softmax regression, {world} simulated V100s (dotted: target "
                     f"{args.target:.0%})")
        fig.tight_layout()
        fig.savefig(os.path.join(args.dir, f"accuracy_{world}ranks.png"), dpi=args.dpi)
        plt.close(fig)

    with open(os.path.join(args.dir, "curves.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["algorithm", "world_size", "network", "iteration", "time_s", "test_accuracy",
                    "test_accuracy_min", "test_accuracy_max"])
        for p in points:
            for i in range(len(p["iteration"])):
                w.writerow([p["label"], p["ranks"], p["network"], p["iteration"][i], repr(p["time_s"][i]),
                            repr(p["accuracy"][i]), repr(p["low"][i]), repr(p["high"][i])])

    if args.table:
        cells = {}
        for p in points:
            it, t = reach(p, args.target)
            cells[(p["label"], p["ranks"], p["network"])] = (it, t, p["accuracy"][-1])
        columns = [(world, net) for world in ranks for net in networks]
        out = [f"# Time to {args.target:.0%} test accuracy: Fashion-MNIST softmax regression", "",
               "Written by scripts/time_to_accuracy from configs/convergence/fashion_mnist.json. Each cell:",
               "simulated time to the first evaluation (every 32 steps) at or above the target, the",
               "iterations it took, and in parentheses the final accuracy after 480 steps; \"-\": never",
               "reached. Accuracy: the mean over ranks of each rank's test accuracy on all 10,000 test images.",
               "", "| algorithm | " + " | ".join(f"{w} ranks, {n}" for w, n in columns) + " |",
               "|---|" + "---|" * len(columns)]
        for name in order:
            row = [name]
            for world, net in columns:
                it, t, final = cells.get((name, world, net), (None, None, math.nan))
                reached = "-" if it is None else f"{t * 1e3:.3g} ms / {it} it"
                row.append(f"{reached} ({final:.1%})")
            out.append("| " + " | ".join(row) + " |")
        with open(args.table, "w") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
