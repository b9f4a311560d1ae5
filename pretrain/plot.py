"""Loss curves of a run as a PNG: training loss and held-out loss per language by step."""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from typing import Dict, List, Tuple

from pretrain.train import METRICS_FILE
from toolkit import storage


def read_curves(run_dir: str) -> Dict[str, List[Tuple[int, float]]]:
    """``{"train": [(step, loss)], "eval/<lang>": [...]}`` from the run's metrics.csv."""
    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: is {run_dir} a training run?")
    curves: Dict[str, List[Tuple[int, float]]] = defaultdict(list)
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            name = "train" if row["split"] == "train" else f"eval/{row['language']}"
            curves[name].append((int(row["step"]), float(row["loss"])))
    return dict(curves)


def plot_run(run_dir: str, out: str) -> Dict[str, List[Tuple[int, float]]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = read_curves(run_dir)
    figure, (train_axes, eval_axes) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.cm.tab20.colors  # 20 distinct colours: the default cycle repeats after 10 languages
    for i, (name, points) in enumerate(sorted(curves.items())):
        axes = train_axes if name == "train" else eval_axes
        steps, losses = zip(*points)
        axes.plot(
            steps, losses, marker="." if len(points) < 30 else None, label=name.split("/")[-1], color=colors[i % 20]
        )
    train_axes.set_title("training MLM loss")
    eval_axes.set_title("held-out MLM loss per language")
    for axes in (train_axes, eval_axes):
        axes.set_xlabel("step")
        axes.set_ylabel("loss (nats / masked token)")
        axes.grid(alpha=0.3)
    if any(name.startswith("eval/") for name in curves):
        eval_axes.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    with storage.atomic_path(out) as temporary:
        figure.savefig(temporary, dpi=110, format="png")
    plt.close(figure)
    return curves
