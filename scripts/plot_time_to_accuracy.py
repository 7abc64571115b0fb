#!/usr/bin/python3
"""Time to accuracy from the results directories of the Fashion-MNIST sweeps
(configs/convergence/fashion_mnist.json: softmax regression; fashion_mnist_mlp.json: the MLP): test
accuracy against iterations and against simulated time, and the time each algorithm takes to reach a
target accuracy, per model, world size and inter-host network.

    scripts/plot_time_to_accuracy.py results/convergence/fashion_mnist \\
        --run softmax results/convergence/fashion_mnist/softmax 0.82 \\
        --run mlp results/convergence/fashion_mnist/mlp 0.85 \\
        --table results/convergence/fashion_mnist/summary.md

Each --run NAME DIR TARGET reads DIR/points/*/summary.json and iterations.csv (test_accuracy: mean
over ranks of each rank's test accuracy, with its smallest and largest rank's, and
test_accuracy_avg_model: the accuracy of the mean of the ranks' weights). Writes into OUT
accuracy_<NAME>_<P>ranks.png, one figure per model and world size: a row per network, accuracy against
iterations (left) and against simulated time (right, log axis); the spread over ranks is shaded and,
where the replicas differ, the averaged model's accuracy dashed. Writes OUT/curves.csv (every
evaluation of every point of every run) and the markdown file (--table), one table per run: per
algorithm and (ranks, network) the simulated time and the iterations to the run's target (the first
evaluation at or above it; "-" when never), and the final accuracy. Runs with Debian's python3
(python3-matplotlib).
"""

import argparse
import csv
import json
import math
import os
import textwrap

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
            "averaged": [number(r["test_accuracy_avg_model"]) for r in rows],
            "iterations": config["schedule"]["iterations"],
            "eval_interval": config["schedule"]["eval_interval"],
            "model": config["workload"].get("model", "softmax"),
        })
    return points


def reach(point, target):
    for it, t, a in zip(point["iteration"], point["time_s"], point["accuracy"]):
        if a >= target:
            return it, t
    return None, None


TITLES = {"softmax": "softmax regression", "mlp": "MLP (784-100-10, tanh)"}


def plot(out, name, points, target, dpi):
    order = labels_in_order(points)
    ranks = sorted({p["ranks"] for p in points})
    networks = sorted({p["network"] for p in points}, key=lambda b: float(b.split()[0]))
    colors = plt.get_cmap("tab10")
    top = max(max(p["high"]) for p in points)
    for world in ranks:
        fig, axes = plt.subplots(len(networks), 2, figsize=(13, 4.2 * len(networks)), squeeze=False)
        for row, net in enumerate(networks):
            for p in points:
                if p["ranks"] != world or p["network"] != net:
                    continue
                index = order.index(p["label"])
                c = colors(index % 10)
                style = "-" if index < 10 else "--"
                for col, x in enumerate((p["iteration"], p["time_s"])):
                    ax = axes[row][col]
                    ax.plot(x, p["accuracy"], marker=".", color=c, linestyle=style, label=p["label"])
                    if any(h - lo > 0 for lo, h in zip(p["low"], p["high"])):
                        ax.fill_between(x, p["low"], p["high"], color=c, alpha=0.2)
                    if any(a != m for a, m in zip(p["averaged"], p["accuracy"])):
                        ax.plot(x, p["averaged"], color=c, linestyle=":", linewidth=1)
            for col, xlabel in enumerate(("iterations", "simulated time (s)")):
                ax = axes[row][col]
                ax.axhline(target, color="grey", linestyle=":", linewidth=1)
                ax.set_xlabel(xlabel)
                ax.set_ylabel("test accuracy")
                ax.set_ylim(0.70, max(0.86, top + 0.01))
                ax.set_title(f"{world} ranks, {net} between hosts")
                ax.grid(alpha=0.3)
                if col == 1:
                    ax.set_xscale("log")
            axes[row][0].legend(fontsize=7, loc="lower right")
        model = TITLES.get(points[0]["model"], points[0]["model"])
        fig.suptitle(f"Fashion-MNIST {model}, {world} simulated V100s (grey: target {target:.0%}; "
                     "thin dotted: the averaged model where replicas differ)")
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"accuracy_{name}_{world}ranks.png"), dpi=dpi)
        plt.close(fig)


def labels_in_order(points):
    order = []
    for p in points:
        if p["label"] not in order:
            order.append(p["label"])
    return order


def table(name, points, target, config):
    order = labels_in_order(points)
    ranks = sorted({p["ranks"] for p in points})
    networks = sorted({p["network"] for p in points}, key=lambda b: float(b.split()[0]))
    cells = {}
    for p in points:
        it, t = reach(p, target)
        cells[(p["label"], p["ranks"], p["network"])] = (it, t, p["accuracy"][-1])
    columns = [(world, net) for world in ranks for net in networks]
    model = TITLES.get(points[0]["model"], points[0]["model"])
    text = (f"From {config}. Each cell: simulated time to the first evaluation (every "
            f"{points[0]['eval_interval']} steps) at or above the target, the iterations it took, and in "
            f"parentheses the final accuracy after {points[0]['iterations']} steps; \"-\": never reached. "
            "Accuracy: the mean over ranks of each rank's test accuracy on all 10,000 test images.")
    out = [f"## Time to {target:.0%} test accuracy: Fashion-MNIST {model}", ""] + textwrap.wrap(text, 100)
    out += ["", "| algorithm | " + " | ".join(f"{w} ranks, {n}" for w, n in columns) + " |",
           "|---|" + "---|" * len(columns)]
    for label in order:
        row = [label]
        for world, net in columns:
            it, t, final = cells.get((label, world, net), (None, None, math.nan))
            reached = "-" if it is None else f"{t * 1e3:.3g} ms / {it} it"
            row.append(f"{reached} ({final:.1%})")
        out.append("| " + " | ".join(row) + " |")
    return out


CONFIGS = {"softmax": "configs/convergence/fashion_mnist.json",
           "mlp": "configs/convergence/fashion_mnist_mlp.json"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--run", nargs=3, action="append", metavar=("NAME", "DIR", "TARGET"), required=True)
    ap.add_argument("--table", default="")
    ap.add_argument("--dpi", type=int, default=80)
    args = ap.parse_args()
    runs = [(name, read_points(folder), float(target)) for name, folder, target in args.run]

    for name, points, target in runs:
        plot(args.out, name, points, target, args.dpi)

    with open(os.path.join(args.out, "curves.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "algorithm", "world_size", "network", "iteration", "time_s",
                    "test_accuracy", "test_accuracy_min", "test_accuracy_max",
                    "test_accuracy_avg_model"])
        for name, points, _ in runs:
            for p in points:
                for i in range(len(p["iteration"])):
                    w.writerow([name, p["label"], p["ranks"], p["network"], p["iteration"][i],
                                repr(p["time_s"][i]), repr(p["accuracy"][i]), repr(p["low"][i]),
                                repr(p["high"][i]), repr(p["averaged"][i])])

    if args.table:
        out = ["# Time to accuracy on Fashion-MNIST", "",
               "Written by scripts/time_to_accuracy, one table per model.", ""]
        for name, points, target in runs:
            out += table(name, points, target, CONFIGS.get(name, name)) + [""]
        with open(args.table, "w") as f:
            f.write("\n".join(out[:-1]) + "\n")


if __name__ == "__main__":
    main()
