"""Counts a job reports in stats.json, derived from what each segment committed (plain Python).

Because every number comes from committed data, a job resumed after a crash reports exactly what
an uninterrupted one does: the segments committed before the crash bring their counts along.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Sequence, Tuple

from ccnet_pipeline.steps.read import READ
from ccnet_pipeline.wet import BadRecord
from filters.document import Document
from filters.stage import KEPT, Counted, reason_stages
from lid.model import SCORE_BINS


class SegmentCounts:
    """Counters named ``<step>/<event>`` like the job's Beam metrics, counted document by
    document by the job's steps (``filters.stage.Counted``: each adds its own, the stage whose
    reason dropped a document ``<stage>/dropped/<reason>``); a segment's are the sum of those of
    its parts (``segment_counters``)."""

    def __init__(self, steps: Sequence[Counted]):
        self.steps = steps
        self.stage_of = reason_stages(steps)
        self.counts: Counter = Counter()

    def done(self, doc: Document, outcome: str = KEPT) -> None:
        """Count ``doc``, kept by the job or dropped for the reason ``outcome``."""
        for step in self.steps:
            for event, amount in step.counts(doc, outcome).items():
                self.counts[f"{step.name}/{event}"] += amount
        if outcome != KEPT:
            self.counts[f"{self.stage_of[outcome]}/dropped/{outcome}"] += 1

    def bad(self, record: BadRecord) -> None:
        self.counts[f"{READ}/bad/{record.kind}"] += 1


def document_counters(
    steps: Sequence[Counted],
    kept: Iterable[Document] = (),
    dropped: Iterable[Tuple[str, Document]] = (),
    bad: Iterable[BadRecord] = (),
) -> Dict[str, int]:
    """The counters ``steps`` count for some of a segment's kept and dropped (reason, document)
    documents and bad records."""
    counts = SegmentCounts(steps)
    for doc in kept:
        counts.done(doc)
    for reason, doc in dropped:
        counts.done(doc, reason)
    for record in bad:
        counts.bad(record)
    return dict(counts.counts)


def segment_counters(parts: Iterable[Dict[str, int]]) -> Dict[str, int]:
    """A segment's counters: those of its parts (``document_counters``) summed, one segment."""
    return sum_counters([{f"{READ}/segments": 1, f"{READ}/documents": 0}, *parts])


def file_counters(summary: Dict) -> Dict[str, int]:
    """The counters of one written file (its summary: path, language, bucket, documents, characters)."""
    key = f"{summary['language']}/{summary['bucket']}"
    return {
        f"output/documents/{key}": summary["documents"],
        f"output/characters/{key}": summary["characters"],
        "output/files": 1,
    }


def sum_counters(counters: Iterable[Dict[str, int]]) -> Dict[str, int]:
    """Counters summed name by name (a Beam combine: partial sums combine again)."""
    totals: Counter = Counter()
    for counts in counters:
        totals.update(counts)
    return dict(totals)


def job_stats(segment_totals: Dict[str, int], files: List[Dict]) -> Dict:
    """stats.json: the segments' counters summed (``sum_counters``), the output per language
    and bucket from the written files, and the same numbers grouped for reading."""
    totals: Counter = Counter(segment_totals)
    for summary in files:
        totals.update(file_counters(summary))
    counters = dict(sorted(totals.items()))

    def with_prefix(prefix: str) -> Dict[str, int]:
        return {k[len(prefix) :]: v for k, v in counters.items() if k.startswith(prefix)}

    output: Dict[str, Dict] = {}
    for key, value in with_prefix("output/documents/").items():
        language, bucket = key.split("/")
        output.setdefault(language, {})[bucket] = {
            "documents": value,
            "characters": counters[f"output/characters/{key}"],
        }
    return {
        "segments": counters.get("read/segments", 0),
        "hash_partitions": counters.get("dedup/hash_partitions"),
        "documents_read": counters.get("read/documents", 0),
        "bad_records": with_prefix("read/bad/"),
        "lines_removed_by_dedup": counters.get("dedup/lines_removed", 0),
        "dropped": {name.split("/dropped/", 1)[1]: value for name, value in counters.items() if "/dropped/" in name},
        "identified_languages": with_prefix("lid/language/"),
        "mixed_pages": {  # pages in several languages (--mixed-pages): split into parts, or dropped
            "split": counters.get("mixed_pages/split", 0),
            "parts": counters.get("mixed_pages/parts", 0),
            "dropped": counters.get("mixed_pages/dropped/mixed", 0),
        },
        "language_id": language_id_stats(with_prefix("lid/scores/")),
        "output": output,
        "counters": counters,
    }


LID_OUTCOMES = ("kept", "below_threshold", "not_selected")


def language_id_stats(scores: Dict[str, int]) -> Dict[str, Dict]:
    """Per top-1 label: documents kept, dropped below its threshold and not selected, and each
    outcome's score histogram (``SCORE_BINS`` bins from 0 to 1), from the
    ``lid/scores/<outcome>/<label>/<bin>`` counters."""
    labels: Dict[str, Dict] = {}
    for name, count in scores.items():
        outcome, label, bin_index = name.split("/")
        entry = labels.setdefault(
            label, {**dict.fromkeys(LID_OUTCOMES, 0), "histograms": {o: [0] * SCORE_BINS for o in LID_OUTCOMES}}
        )
        entry[outcome] += count
        entry["histograms"][outcome][int(bin_index)] += count
    return dict(sorted(labels.items()))
