"""The pictures of pretraining and evaluation: a run's loss curves (``loss.png``: training loss and
held-out loss per language by step) and a bar chart of scores per test set (``scores.png``)."""

from __future__ import annotations

import csv
import math
import os
from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

from pretrain.model import ModelConfig
from pretrain.run_dir import METRICS_FILE, RunDir
from pretrain.run_record import PretrainingRun, TrainConfig
from toolkit import storage

LOSS_DPI = SCORES_DPI = 100  # loss.png 1400 pixels wide, scores.png at least 1200


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


def read_record(run_dir: str) -> Optional[PretrainingRun]:
    """The run's record (config.json; None when it has none)."""
    run = RunDir(run_dir)
    return run.read_record(PretrainingRun) if run.has_record() else None


def draw_curves(
    curves: Dict[str, List[Tuple[int, float]]],
    train_config: Optional[TrainConfig] = None,
    model: Optional[ModelConfig] = None,
    name: str = "",
):
    """Two panels on one loss axis: the training loss (each point the mean over the steps since the
    last one logged) with the held-out mean over languages, and the held-out loss per language;
    every logged point marked, so that a sparse log reads as the few points it is, and, given
    the ``model``, a line at ln(vocabulary), the loss of a uniform guess. ``train_config`` names
    the intervals in the titles."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(14, 5.5), layout="constrained")
    train_axes, eval_axes = figure.subplots(1, 2, sharey=True)
    train = curves.get("train", [])
    evals = {name.split("/", 1)[1]: points for name, points in curves.items() if name != "train"}
    evals = dict(
        sorted(evals.items(), key=lambda item: (-item[1][-1][1], item[0]))
    )  # legend top down: worst last loss first
    last = max((step for points in curves.values() for step, _ in points), default=0)
    if train:
        steps, losses = zip(*train)
        train_axes.plot(steps, losses, marker="o" if len(train) <= 60 else None, markersize=4, label="training loss")
    if evals:
        by_step: Dict[int, List[float]] = defaultdict(list)
        for points in evals.values():
            for step, loss in points:
                by_step[step].append(loss)
        steps = sorted(by_step)
        means = [sum(by_step[step]) / len(by_step[step]) for step in steps]
        label = f"held-out loss, mean of {len(evals)} languages"
        train_axes.plot(steps, means, color="black", linestyle="--", marker="s", markersize=5, label=label)
    colors = _language_colors(len(evals))
    for (language, points), color in zip(evals.items(), colors):
        steps, losses = zip(*points)
        eval_axes.plot(steps, losses, marker="o", markersize=4, color=color, label=language)
    vocabulary = model.vocab_size if model else None
    if vocabulary:
        label = f"uniform guess over {vocabulary:,} pieces: ln V = {math.log(vocabulary):.2f}"
        for axes in (train_axes, eval_axes):
            axes.axhline(math.log(vocabulary), color="dimgray", linestyle=":", linewidth=1.5, label=label)
    interval, eval_interval = (train_config.log_interval, train_config.eval_interval) if train_config else (0, 0)
    train_axes.set_title(
        f"training loss: {len(train)} points"
        + (f"\neach the mean over the {interval} steps up to it" if interval else ""),
        fontsize=12,
    )
    eval_axes.set_title(
        f"held-out loss per language: {max((len(p) for p in evals.values()), default=0)} points"
        + (f"\nevery {eval_interval} steps and at the end" if eval_interval else ""),
        fontsize=12,
    )
    if 0 < len(train) < 5 and last >= 5 * len(train):  # fewer points than a curve needs, and steps to log
        advice = (
            f"only {len(train)} training points logged:\ntrain with --log-interval {max(1, last // 30)} for a curve"
        )
        box = dict(facecolor="white", edgecolor="tab:red", alpha=0.9)
        train_axes.text(
            0.5, 0.5, advice, transform=train_axes.transAxes, ha="center", va="center", color="tab:red", bbox=box
        )
    for axes in (train_axes, eval_axes):
        axes.set_xlabel("step", fontsize=11)
        axes.set_xlim(0, max(last, 1) * 1.02)
        axes.grid(alpha=0.3)
        axes.tick_params(labelsize=10, labelleft=True)
    train_axes.set_ylabel("MLM loss (nats per masked token)", fontsize=11)
    if train or evals or vocabulary:
        train_axes.legend(fontsize=9, loc="best")
    if evals:
        eval_axes.legend(fontsize=9, ncols=1 + len(evals) // 13, loc="center left", bbox_to_anchor=(1.01, 0.5))
    about = ""
    if model:  # the model's shape, and the preset it was built from
        about = f" ({train_config.model} preset, " if train_config else " ("
        about += f"{model.layers} layers x {model.hidden})"
    figure.suptitle(f"{name or 'run'}: masked-LM loss over {last} steps{about}", fontsize=13)
    return figure


def _language_colors(count: int):
    """``count`` distinct colours: tab10 up to 10 languages, tab20 up to 20, then a colormap's."""
    from matplotlib import colormaps

    if count <= 10:
        return colormaps["tab10"].colors[:count]
    if count <= 20:  # the 10 strong colours first, then their light pairs
        return (colormaps["tab20"].colors[0::2] + colormaps["tab20"].colors[1::2])[:count]
    return [colormaps["turbo"](i / (count - 1)) for i in range(count)]


def plot_run(run_dir: str, out: str) -> Dict[str, List[Tuple[int, float]]]:
    """The loss curves of ``run_dir`` (``draw_curves``) as a PNG at ``out``; returns the curves."""
    curves, record = read_curves(run_dir), read_record(run_dir)
    name = "/".join(os.path.normpath(run_dir).split(os.sep)[-2:])
    figure = draw_curves(curves, record and record.train, record and record.model, name)
    with storage.atomic_path(out) as temporary:
        figure.savefig(temporary, dpi=LOSS_DPI, format="png")
    return curves


def draw_scores(
    scores: Sequence[Tuple[str, float, int]],
    metric: str = "accuracy",
    title: Optional[str] = None,
    baselines: Sequence[Tuple[str, float]] = (),
    highlight: Optional[str] = None,
    xlabel: str = "test set",
):
    """A bar per (name, score, examples), in the order given, on a 0-1 axis, its value over it;
    a horizontal line per (label, value) of ``baselines`` (the majority class, chance), so that a
    bar shows against what it has to beat; the bar named ``highlight`` in another colour."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    names, values = [name for name, _, _ in scores], [value for _, value, _ in scores]
    figure = Figure(figsize=(max(12.0, 0.3 * len(scores) + 2), 6.0), layout="constrained")
    axis = figure.add_subplot()
    colors = ["tab:orange" if name == highlight else "tab:blue" for name in names]
    bars = axis.bar(names, values, color=colors)
    if len(scores) <= 30:
        box = dict(facecolor="white", edgecolor="none", pad=0.5)  # a value stays legible over a baseline
        axis.bar_label(bars, labels=[f"{value:.2f}" for value in values], fontsize=9, padding=2, bbox=box)
    handles = []
    styles = [("tab:red", "--"), ("dimgray", ":"), ("tab:purple", "-.")]
    for (label, value), (color, style) in zip(baselines, styles * len(baselines)):
        handles.append(axis.axhline(value, color=color, linestyle=style, linewidth=1.5, label=f"{label}: {value:.3f}"))
    if highlight in names:
        handles.append(Patch(color="tab:orange", label=f"{highlight}: the language fine-tuned on"))
    if handles:
        axis.legend(handles=handles, loc="upper right", fontsize=10, framealpha=0.9)
    axis.set_ylim(0, 1.1)  # room over a bar of 1.0 for its value and the legend
    axis.set_yticks([i / 10 for i in range(11)])
    axis.set_ylabel(metric, fontsize=11)
    axis.set_xlabel(xlabel, fontsize=11)
    pad = max(0.0, (8 - len(scores)) / 2)  # a few bars stay bar-wide, centred
    axis.set_xlim(-0.6 - pad, len(scores) - 0.4 + pad)
    axis.tick_params(axis="x", rotation=90 if len(scores) > 15 else 0, labelsize=10)
    axis.grid(axis="y", alpha=0.3)
    examples = sorted({count for _, _, count in scores})
    each = f"{examples[0]} examples each" if len(examples) == 1 else f"{examples[0]}-{examples[-1]} examples"
    axis.set_title(title or f"{metric} per test set ({each}), best first", fontsize=13)
    return figure


def plot_scores(scores: Sequence[Tuple[str, float, int]], path: str, **options):
    """``draw_scores`` as a PNG at ``path``; returns the figure."""
    figure = draw_scores(scores, **options)
    with storage.atomic_path(path) as temporary:
        figure.savefig(temporary, format="png", dpi=SCORES_DPI)
    return figure
