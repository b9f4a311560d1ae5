"""Counts a job reports in stats.json, derived from what each segment committed (plain Python).

Because every number comes from committed data, a job resumed after a crash reports exactly what
an uninterrupted one does: the segments committed before the crash bring their counts along.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ccnet_pipeline.wet import BadRecord
from filters.document import Document
from filters.stage import KEPT, Counted, reason_stages
from lid.model import SCORE_BINS
from toolkit import storage
from toolkit.cli import from_dict
from toolkit.corpus import ShardEntry

READ = "read"  # the reading step's counters: read/segments, read/documents, read/bad/<kind>


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


def file_counters(entry: ShardEntry) -> Dict[str, int]:
    """The counters of one written file."""
    key = f"{entry.language}/{entry.bucket}"
    return {
        f"output/documents/{key}": entry.documents,
        f"output/characters/{key}": entry.characters,
        "output/files": 1,
    }


def sum_counters(counters: Iterable[Dict[str, int]]) -> Dict[str, int]:
    """Counters summed name by name (a Beam combine: partial sums combine again)."""
    totals: Counter = Counter()
    for counts in counters:
        totals.update(counts)
    return dict(totals)


LID_OUTCOMES = ("kept", "below_threshold", "not_selected", "script")


@dataclass(frozen=True)
class OutputCounts:
    """What a language's bucket holds."""

    documents: int
    characters: int


@dataclass(frozen=True)
class MixedPageCounts:
    """Pages in several languages (``--mixed-pages``): split into parts, or dropped."""

    split: int = 0
    parts: int = 0
    dropped: int = 0


@dataclass(frozen=True)
class LabelScores:
    """One top-1 label's documents per outcome (``LID_OUTCOMES``) and each outcome's score
    histogram (``SCORE_BINS`` bins from 0 to 1)."""

    kept: int
    below_threshold: int
    not_selected: int
    histograms: Dict[str, List[int]]
    script: int = (
        0  # in a script no model names a language of (und_<Script>); none in a stats.json older than the count
    )

    @classmethod
    def from_histograms(cls, histograms: Dict[str, List[int]]) -> LabelScores:
        """Each outcome's documents are those of its histogram."""
        return cls(**{outcome: sum(histograms[outcome]) for outcome in LID_OUTCOMES}, histograms=histograms)

    @property
    def documents(self) -> int:
        return self.kept + self.below_threshold + self.not_selected + self.script


@dataclass(frozen=True)
class JobStats:
    """OUT/stats.json: every counter (``counters``), and the same numbers grouped for reading."""

    segments: int
    hash_partitions: Optional[int]
    documents_read: int
    bad_records: Dict[str, int]
    lines_removed_by_dedup: int
    dropped: Dict[str, int]  # per reason
    identified_languages: Dict[str, int]  # documents per top-1 label
    mixed_pages: MixedPageCounts
    language_id: Dict[str, LabelScores]  # per top-1 label
    output: Dict[str, Dict[str, OutputCounts]]  # per language and bucket
    counters: Dict[str, int]

    @classmethod
    def from_counters(cls, segment_totals: Dict[str, int], files: Sequence[ShardEntry]) -> JobStats:
        """The segments' counters summed (``sum_counters``) with those of the written files."""
        counters = dict(sorted(sum_counters([segment_totals, *map(file_counters, files)]).items()))

        def with_prefix(prefix: str) -> Dict[str, int]:
            return {k[len(prefix) :]: v for k, v in counters.items() if k.startswith(prefix)}

        output: Dict[str, Dict[str, OutputCounts]] = {}
        for key, value in with_prefix("output/documents/").items():
            language, bucket = key.split("/")
            output.setdefault(language, {})[bucket] = OutputCounts(value, counters[f"output/characters/{key}"])
        histograms: Dict[str, Dict[str, List[int]]] = {}
        for name, count in with_prefix("lid/scores/").items():  # lid/scores/<outcome>/<label>/<bin>
            outcome, label, bin_index = name.split("/")
            histograms.setdefault(label, {o: [0] * SCORE_BINS for o in LID_OUTCOMES})[outcome][int(bin_index)] += count
        language_id = {label: LabelScores.from_histograms(histograms[label]) for label in sorted(histograms)}
        return cls(
            segments=counters.get("read/segments", 0),
            hash_partitions=counters.get("dedup/hash_partitions"),
            documents_read=counters.get("read/documents", 0),
            bad_records=with_prefix("read/bad/"),
            lines_removed_by_dedup=counters.get("dedup/lines_removed", 0),
            dropped={name.split("/dropped/", 1)[1]: value for name, value in counters.items() if "/dropped/" in name},
            identified_languages=with_prefix("lid/language/"),
            mixed_pages=MixedPageCounts(
                counters.get("mixed_pages/split", 0),
                counters.get("mixed_pages/parts", 0),
                counters.get("mixed_pages/dropped/mixed", 0),
            ),
            language_id=language_id,
            output=output,
            counters=counters,
        )

    def to_json(self) -> Dict:
        return asdict(self)

    @classmethod
    def read(cls, path: str) -> JobStats:
        """A stats.json read back (one written before mixed pages were counted has none: zeros)."""
        return from_dict(cls, storage.read_json(path))
