"""What travels between the steps of the mine job, and how they count.

Documents travel a segment at a time, as batches ``(segment index, [(record index, Document)])``
in record order: the stages see all of a segment's documents in one call (one fastText call for
all, one language model at a time), Beam's per-element costs are paid per segment, and the
commit needs no shuffle of documents, so that writers restore input order and reruns write
identical files. A step's outputs are tagged: kept batches on ``kept`` (main), dropped documents
on ``dropped`` as ``(segment index, [(record index, reason, Document)])``, bad input on ``bad``
as ``(segment index, [BadRecord])``.

Counters live in two namespaces: ``ccnet``, the job's counters (those of stats.json, raised by
the commits and the shard writer from what they write), and ``progress``, the stages' live
``<stage>/kept`` and ``<stage>/dropped/<reason>`` counters, to watch a running job.
"""

from __future__ import annotations

from functools import cache
from typing import List, Mapping, Tuple

from apache_beam.metrics import Metrics

from filters.document import Document

NAMESPACE = "ccnet"  # the job's counters, those of stats.json
PROGRESS = "progress"  # live counters of the stages
KEPT, DROPPED, BAD, SEEN, COUNTERS, PERPLEXITIES = "kept", "dropped", "bad", "seen", "counters", "perplexities"
HASH_PASS, FILTER_PASS, IMPORT_PASS = "hash", "filter", "import"  # the passes over the input (progress files)


@cache
def counter(name: str, namespace: str = NAMESPACE):
    """The Beam counter ``<namespace>:<name>``, made once per name and process."""
    return Metrics.counter(namespace, name)


def raise_counters(counts: Mapping[str, int]) -> Mapping[str, int]:
    """``counts`` raised as the job's Beam metrics where they are made; returned, for stats.json."""
    for name, value in counts.items():
        counter(name).inc(value)
    return counts


# A part of a split document (lid.mixed) takes a key of its own, after every record's:
# PART_KEYS | record << PART_BITS | part, so that ids (segment << 32 | key) stay unique.
PART_BITS = 3
PART_KEYS = 1 << 31


def part_key(record: int, part: int) -> int:
    if part >> PART_BITS or record >> (31 - PART_BITS):
        raise ValueError(f"no key for part {part} of record {record}")
    return PART_KEYS | record << PART_BITS | part


Segment = Tuple[str, str]  # an input file: (path, cc_segment)
Batch = Tuple[int, List[Tuple[int, Document]]]  # (segment index, [(record index, document)])
DroppedBatch = Tuple[int, List[Tuple[int, str, Document]]]  # (segment index, [(record, reason, doc)])
