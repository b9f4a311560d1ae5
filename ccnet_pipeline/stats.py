"""Counts a job reports in stats.json, derived from what each segment committed (plain Python).

Because every number comes from committed data, a job resumed after a crash reports exactly what
an uninterrupted one does: the segments committed before the crash bring their counts along.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from ccnet_pipeline.wet import BadRecord
from filters.document import Document


class SegmentCounts:
    """Counters named ``<stage>/<event>`` like the job's Beam metrics, counted document by
    document; a segment's are the sum of those of its parts (``segment_counters``)."""

    def __init__(self):
        self.counts: Counter = Counter()

    def read(self, doc: Document) -> None:
        counts = self.counts
        counts["read/documents"] += 1
        counts["dedup/lines_in"] += doc["original_nlines"]
        counts["dedup/lines_removed"] += doc["original_nlines"] - doc["nlines"]
        counts["dedup/chars_in"] += doc["original_length"]
        counts["dedup/chars_removed"] += doc["original_length"] - doc["length"]
        if doc["language"] is not None:
            counts[f"lid/language/{doc['language']}"] += 1

    def kept(self, doc: Document) -> None:
        self.read(doc)
        self.counts["perplexity/no_model" if doc["perplexity"] is None else "perplexity/scored"] += 1

    def dropped(self, stage: str, reason: str, doc: Document) -> None:
        self.read(doc)
        self.counts[f"{stage}/dropped/{reason}"] += 1

    def bad(self, record: BadRecord) -> None:
        self.counts[f"read/bad/{record.kind}"] += 1


def document_counters(
    kept: Iterable[Document] = (),
    dropped: Iterable[Tuple[str, Document]] = (),
    bad: Iterable[BadRecord] = (),
    stages: Optional[Mapping[str, str]] = None,
) -> Dict[str, int]:
    """The counters of some of a segment's kept and dropped documents (``stages`` names the
    stage of each drop reason) and bad records."""
    counts = SegmentCounts()
    for doc in kept:
        counts.kept(doc)
    for reason, doc in dropped:
        counts.dropped(stages[reason], reason, doc)
    for record in bad:
        counts.bad(record)
    return dict(counts.counts)


def segment_counters(parts: Iterable[Dict[str, int]]) -> Dict[str, int]:
    """A segment's counters: those of its parts (``document_counters``) summed, one segment."""
    return sum_counters([{"read/segments": 1, "read/documents": 0}, *parts])


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
        "output": output,
        "counters": counters,
    }
