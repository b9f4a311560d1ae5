"""``python -m ccnet_pipeline report OUT``: what language ID kept and dropped, per top-1 label.

From OUT/stats.json (``language_id``: counts and score histograms per label) and the thresholds
in OUT/manifest.json's config; prints a table, most documents first, and draws the score
histogram of each label with at least ``MIN_DOCUMENTS`` documents, kept and dropped on a log axis,
with its threshold, so that a starved language shows (the labels with fewer are named under the
panels and are rows of the table)."""

from __future__ import annotations

import textwrap
from typing import Dict, List, Tuple

from ccnet_pipeline.stats import JobStats, LabelScores
from lid.model import SCORE_BINS, LidConfig
from toolkit import storage
from toolkit.cli import from_dict
from toolkit.corpus import CorpusManifest, Layout

MIN_DOCUMENTS = 20  # a label with fewer documents gets its row in the printed table, no panel
PLOTTED_LABELS = 40  # at most this many panels, most documents first
COLUMNS, PANEL_INCHES, DPI = 4, (3.6, 2.5), 100  # 1440 pixels wide
OUTCOMES = (  # bottom to top: the few dropped documents sit at the foot of the log axis
    ("script", "no language of its script (dropped)", "tab:purple"),
    ("below_threshold", "below threshold (dropped)", "tab:red"),
    ("not_selected", "not selected (dropped)", "tab:gray"),
    ("kept", "kept", "tab:green"),
)


def thresholds_of(saved: Dict) -> Dict[str, float]:
    """Each selected language's threshold, as the job that wrote the corpus applied it (its
    manifest's config read back: ``LidConfig.threshold_of``); none for a corpus import-ccnet
    converted."""
    return from_dict(LidConfig, saved["lid"]).threshold_of() if "lid" in saved else {}


def report_rows(language_id: Dict[str, LabelScores], thresholds: Dict[str, float]) -> List[Dict]:
    """One row per top-1 label (stats.json's ``language_id``): kept, dropped below threshold,
    not selected, the share dropped, and its threshold (None for a label not selected)."""
    rows = []
    for label, entry in language_id.items():
        total = entry.documents
        rows.append(
            {
                "label": label,
                "documents": total,
                "kept": entry.kept,
                "below_threshold": entry.below_threshold,
                "not_selected": entry.not_selected,
                "script": entry.script,
                "dropped_share": (total - entry.kept) / total if total else 0.0,
                "threshold": thresholds.get(label),
                "histograms": entry.histograms,
            }
        )
    return sorted(rows, key=lambda row: (-row["documents"], row["label"]))


def format_table(rows: List[Dict]) -> str:
    lines = [
        f"{'label':<10} {'documents':>9} {'kept':>8} {'below':>8} {'not sel.':>8} {'script':>8} {'dropped':>8}"
        f" {'threshold':>9}"
    ]
    for row in rows:
        threshold = "-" if row["threshold"] is None else f"{row['threshold']:.2f}"
        lines.append(
            f"{row['label']:<10} {row['documents']:>9} {row['kept']:>8} {row['below_threshold']:>8}"
            f" {row['not_selected']:>8} {row['script']:>8} {100 * row['dropped_share']:>7.1f}% {threshold:>9}"
        )
    return "\n".join(lines)


def panel_rows(rows: List[Dict], min_documents: int = MIN_DOCUMENTS) -> Tuple[List[Dict], List[Dict]]:
    """(the rows that get a panel: at least ``min_documents`` documents, at most ``PLOTTED_LABELS``
    of them, most first; the rest)."""
    enough = [row for row in rows if row["documents"] >= min_documents]
    shown = enough[:PLOTTED_LABELS]
    return shown, [row for row in rows if row not in shown]


def _left_out(rest: List[Dict], min_documents: int, width: int) -> List[str]:
    """Lines naming the labels without a panel, each with its documents and kept."""
    if not rest:
        return []
    head = (
        f"No panel for {len(rest)} label(s) ({sum(r['documents'] for r in rest)} documents, "
        f"{sum(r['kept'] for r in rest)} kept): fewer than {min_documents} documents"
        + (f", or past the first {PLOTTED_LABELS}" if any(r["documents"] >= min_documents for r in rest) else "")
        + "; all in the printed table (label documents/kept):"
    )
    names = ", ".join(f"{r['label']} {r['documents']}/{r['kept']}" for r in rest)
    return [head] + textwrap.wrap(names, width)


def draw(rows: List[Dict], min_documents: int = MIN_DOCUMENTS):
    """The report's figure: per label with at least ``min_documents`` documents, its documents per
    score bin on a log axis (below threshold, not selected and kept stacked, in that order) and a
    dashed line at its threshold; under the panels, the legend and the labels left out."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, NullFormatter

    shown, rest = panel_rows(rows, min_documents)
    footer = _left_out(rest, min_documents, width=150)
    lines = max(1, -(-len(shown) // COLUMNS))
    panels_inches, footer_inches = PANEL_INCHES[1] * lines + 0.8, 0.5 + 0.2 * len(footer)
    figure = Figure(figsize=(COLUMNS * PANEL_INCHES[0], panels_inches + footer_inches + 0.4), layout="constrained")
    figure.suptitle(
        f"Language ID: documents per score bin of each top-1 label with at least {min_documents} documents "
        f"({len(shown)} of {len(rows)} labels)",
        fontsize=13,
    )
    top, bottom_figure = figure.subfigures(2, 1, height_ratios=[panels_inches, footer_inches])
    edges = [i / SCORE_BINS for i in range(SCORE_BINS)]
    for index, row in enumerate(shown):
        axis = top.add_subplot(lines, COLUMNS, index + 1)
        bottom = [0] * SCORE_BINS
        for outcome, _, color in OUTCOMES:
            counts = row["histograms"].get(outcome, [0] * SCORE_BINS)  # no "script" in an older stats.json
            axis.bar(edges, counts, width=1 / SCORE_BINS, align="edge", bottom=bottom, color=color)
            bottom = [b + n for b, n in zip(bottom, counts)]
        if row["threshold"] is not None:
            axis.axvline(row["threshold"], color="black", linestyle="--", linewidth=1.2)
            status = f"{row['kept']} kept, {100 * row['dropped_share']:.0f}% dropped"
        else:
            status = "not selected"
        axis.set_title(f"{row['label']}: {row['documents']} docs, {status}", fontsize=11)
        axis.set_yscale("log")
        axis.set_ylim(0.5, max(10, 2 * max(bottom)))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.yaxis.set_minor_formatter(NullFormatter())
        axis.set_xlim(0, 1)
        axis.tick_params(labelsize=9)
        axis.grid(axis="y", alpha=0.3)
    if not shown:
        top.text(0.5, 0.5, f"no label has {min_documents} documents or more", ha="center", va="center", fontsize=12)
    top.supxlabel("language ID score of the top-1 label (bins of 0.05)", fontsize=11)
    top.supylabel("documents (log scale)", fontsize=11)
    handles = [Patch(color=color, label=name) for _, name, color in OUTCOMES]
    handles.append(Line2D([], [], color="black", linestyle="--", linewidth=1.2, label="the label's threshold"))
    bottom_figure.legend(handles=handles, loc="upper center", ncols=len(handles), fontsize=10, frameon=False)
    bottom_figure.text(
        0.01, 0.45 if footer else 0, "\n".join(footer), ha="left", va="top", fontsize=9, family="monospace"
    )
    return figure


def plot(rows: List[Dict], path: str, min_documents: int = MIN_DOCUMENTS):
    """Draws the report's figure (``draw``) as a PNG at ``path``; returns the figure."""
    figure = draw(rows, min_documents)
    with storage.atomic_path(path) as temporary:
        figure.savefig(temporary, format="png", dpi=DPI)
    return figure


def report(layout: Layout, png: str, min_documents: int = MIN_DOCUMENTS) -> str:
    """The table of the corpus folder ``layout``; draws its PNG at ``png`` (a panel per label
    with at least ``min_documents`` documents)."""
    stats = JobStats.read(layout.stats)
    saved = CorpusManifest.read(layout).config if storage.exists(layout.manifest) else {}
    rows = report_rows(stats.language_id, thresholds_of(saved))
    plot(rows, png, min_documents)
    few = sum(1 for row in rows if row["documents"] < min_documents)
    note = (
        f"\n{few} label(s) with fewer than {min_documents} documents: in the table, no panel in the PNG" if few else ""
    )
    mixed = stats.mixed_pages
    if mixed.split or mixed.dropped:
        note += (
            f"\npages in several languages: {mixed.split} split into {mixed.parts} parts (each a row above,"
            f" under its own label), {mixed.dropped} dropped as mixed"
        )
    return format_table(rows) + note
