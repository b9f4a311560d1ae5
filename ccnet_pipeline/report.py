"""``python -m ccnet_pipeline report OUT``: what language ID kept and dropped, per top-1 label.

From OUT/stats.json (``language_id``: counts and score histograms per label) and the thresholds
in OUT/manifest.json's config; prints a table, most documents first, and draws each label's
score histogram, kept and dropped, with its threshold, so that a starved language shows."""

from __future__ import annotations

from typing import Dict, List

from ccnet_pipeline.stats import SCORE_BINS
from lid.model import language_thresholds
from toolkit import storage
from toolkit.corpus import Layout

PLOTTED_LABELS = 30  # the report's PNG shows the labels with the most documents


def thresholds_of(manifest: Dict) -> Dict[str, float]:
    """Each selected language's threshold in a corpus's manifest (its own, else the default)."""
    lid = manifest.get("config", {}).get("lid", {})
    return language_thresholds(lid.get("languages", []), lid.get("thresholds", []), lid.get("threshold", 0.5))


def report_rows(stats: Dict, thresholds: Dict[str, float]) -> List[Dict]:
    """One row per top-1 label: kept, dropped below threshold, not selected, the share
    dropped, and its threshold (None for a label not selected)."""
    rows = []
    for label, entry in stats.get("language_id", {}).items():
        total = entry["kept"] + entry["below_threshold"] + entry["not_selected"]
        rows.append(
            {
                "label": label,
                "documents": total,
                "kept": entry["kept"],
                "below_threshold": entry["below_threshold"],
                "not_selected": entry["not_selected"],
                "dropped_share": (total - entry["kept"]) / total if total else 0.0,
                "threshold": thresholds.get(label),
                "histograms": entry["histograms"],
            }
        )
    return sorted(rows, key=lambda row: (-row["documents"], row["label"]))


def format_table(rows: List[Dict]) -> str:
    lines = [f"{'label':<10} {'documents':>9} {'kept':>8} {'below':>8} {'not sel.':>8} {'dropped':>8} {'threshold':>9}"]
    for row in rows:
        threshold = "-" if row["threshold"] is None else f"{row['threshold']:.2f}"
        lines.append(
            f"{row['label']:<10} {row['documents']:>9} {row['kept']:>8} {row['below_threshold']:>8}"
            f" {row['not_selected']:>8} {100 * row['dropped_share']:>7.1f}% {threshold:>9}"
        )
    return "\n".join(lines)


def plot(rows: List[Dict], path: str) -> None:
    """Small multiples: per label, its documents per score bin, kept, below threshold and not
    selected stacked, and a line at its threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = rows[:PLOTTED_LABELS]
    columns = 5
    lines = max(1, -(-len(shown) // columns))
    figure, axes = plt.subplots(lines, columns, figsize=(3.2 * columns, 2.2 * lines), squeeze=False)
    edges = [i / SCORE_BINS for i in range(SCORE_BINS)]
    width = 1 / SCORE_BINS
    for axis, row in zip(axes.flat, shown):
        bottom = [0] * SCORE_BINS
        for outcome, color in (("kept", "tab:green"), ("below_threshold", "tab:red"), ("not_selected", "tab:gray")):
            counts = row["histograms"][outcome]
            axis.bar(
                edges, counts, width=width, align="edge", bottom=bottom, color=color, label=outcome.replace("_", " ")
            )
            bottom = [b + n for b, n in zip(bottom, counts)]
        if row["threshold"] is not None:
            axis.axvline(row["threshold"], color="black", linewidth=1)
        axis.set_title(f"{row['label']}: {row['kept']} kept, {100 * row['dropped_share']:.0f}% dropped", fontsize=9)
        axis.set_xlim(0, 1)
        axis.tick_params(labelsize=7)
    for axis in list(axes.flat)[len(shown) :]:
        axis.axis("off")
    if shown:
        axes.flat[0].legend(fontsize=7)
    figure.supxlabel("language ID score of the top-1 label (line: threshold)")
    figure.tight_layout()
    with storage.atomic_path(path) as temporary:
        figure.savefig(temporary, format="png", dpi=80)
    plt.close(figure)


def report(output: str, png: str) -> str:
    """The table of a corpus at ``output``; draws its PNG at ``png``."""
    layout = Layout(output)
    stats = storage.read_json(layout.stats)
    manifest = storage.read_json(layout.manifest) if storage.exists(layout.manifest) else {}
    rows = report_rows(stats, thresholds_of(manifest))
    plot(rows, png)
    return format_table(rows)
