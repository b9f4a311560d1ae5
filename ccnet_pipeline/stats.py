"""Counts a job reports in stats.json, derived from what each segment committed (plain Python).

Because every number comes from committed data, a job resumed after a crash reports exactly what
an uninterrupted one does: the segments committed before the crash bring their counts along.
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Sequence, Tuple

from ccnet_pipeline.wet import BadRecord
from filters.document import Document


def segment_counters(kept: Sequence[Document], dropped: Sequence[Tuple[str, Document]], bad: Sequence[BadRecord]) -> Dict[str, int]:
    """One segment's counters, named ``<stage>/<event>`` like the job's Beam metrics."""
    counts: Counter = Counter({"read/segments": 1})
    documents = list(kept) + [doc for _, doc in dropped]
    counts["read/documents"] = len(documents)
    for doc in documents:
        counts["dedup/lines_in"] += doc["original_nlines"]
        counts["dedup/lines_removed"] += doc["original_nlines"] - doc["nlines"]
        counts["dedup/chars_in"] += doc["original_length"]
        counts["dedup/chars_removed"] += doc["original_length"] - doc["length"]
        if doc["language"] is not None:
            counts[f"lid/language/{doc['language']}"] += 1
    for reason, _ in dropped:
        stage = "dedup" if reason == "too_short" else "quality" if reason.startswith("quality_") else "lid"
        counts[f"{stage}/dropped/{reason}"] += 1
    for record in bad:
        counts[f"read/bad/{record.kind}"] += 1
    for doc in kept:
        counts["perplexity/no_model" if doc["perplexity"] is None else "perplexity/scored"] += 1
    return dict(counts)


def job_stats(per_segment: Iterable[Dict[str, int]], files: List[Dict]) -> Dict:
    """stats.json: the segments' counters summed, the output per language and bucket from the
    written files, and the same numbers grouped for reading."""
    totals: Counter = Counter()
    for counters in per_segment:
        totals.update(counters)
    for summary in files:
        language, bucket, _ = summary["path"].split("/")
        totals[f"output/documents/{language}/{bucket}"] += summary["documents"]
        totals[f"output/characters/{language}/{bucket}"] += summary["characters"]
        totals["output/files"] += 1
    counters = dict(sorted(totals.items()))

    def with_prefix(prefix: str) -> Dict[str, int]:
        return {k[len(prefix):]: v for k, v in counters.items() if k.startswith(prefix)}

    output: Dict[str, Dict] = {}
    for key, value in with_prefix("output/documents/").items():
        language, bucket = key.split("/")
        output.setdefault(language, {})[bucket] = {"documents": value, "characters": counters[f"output/characters/{key}"]}
    return {
        "segments": counters.get("read/segments", 0),
        "documents_read": counters.get("read/documents", 0),
        "bad_records": with_prefix("read/bad/"),
        "lines_removed_by_dedup": counters.get("dedup/lines_removed", 0),
        "dropped": {**with_prefix("dedup/dropped/"), **with_prefix("quality/dropped/"), **with_prefix("lid/dropped/")},
        "identified_languages": with_prefix("lid/language/"),
        "output": output,
        "counters": counters,
    }
