"""Exact line deduplication as CCNet does it, split into pieces that scale.

CCNet (``cc_net/dedup.py``) normalizes every line, hashes it with the first 8 bytes of SHA-1,
removes every copy of a line whose hash occurs in two or more documents, and keeps the first
copy of a line that repeats only inside one document. Here that runs in steps that never need
all hashes in one place (the pipeline shuffles by hash partition between steps 2 and 3):

1. ``segment_line_hashes``: per input segment, arrays of (hash, position), which the pipeline
   commits per segment (as CCNet writes a hash file per shard);
2. ``summarize_segment``: per segment, each distinct hash once with what the global decision
   needs (how many of the segment's documents hold it, or where it first occurs), split by hash
   partition (``split_by_partition``): a line repeated on a million pages of one segment weighs
   one entry, so no partition swells with the web's boilerplate;
3. ``find_duplicated_hashes``: per hash partition, the hashes each segment loses every copy of;
4. ``removed_positions``: per segment, those hashes' lines and every repeat of the others after
   its first line; ``remove_lines`` drops them from each document.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import numpy as np

from filters.document import Document, first_of_page, page_lines_and_length
from filters.normalize import dedup_keys, dedup_keys_strict
from filters.stage import Stage
from toolkit.cli import flag, parse_size

HASH_SIZE = 8  # bytes of SHA-1 kept, as CCNet
HASH_DTYPE = np.dtype("<u8")
LINE_BITS = 24  # a position packs (record index << LINE_BITS) | line index into one uint64
MAX_LINES = 1 << LINE_BITS
# ccnet: CCNet's key and rule (a line in two or more documents loses every copy, a line repeated
# inside one document keeps its first); strict: the same rule on normalize_for_dedup_strict's
# key; keep-first: CCNet's key, the first occurrence in input order kept, every later one removed;
# none: no line dedup (a FineWeb-style job: MinHash near-dedup alone, --near-dedup minhash).
DEDUP_MODES = ("ccnet", "strict", "keep-first", "none")
MAX_PARTITIONS = 65536
# Peak memory of find_duplicated_hashes per entry of its partition (one distinct hash of one
# segment), measured with bench/dedup_memory.py: the 16 bytes of hash and value it is given,
# concatenated and sorted copies, sort order and masks.
BYTES_PER_ENTRY = 80


def partitions_for(entries: int, bytes_per_entry: int, memory_per_worker: int) -> int:
    """The fewest shuffle partitions (at most ``MAX_PARTITIONS``) whose average share of
    ``entries`` fits ``memory_per_worker``."""
    return min(MAX_PARTITIONS, max(1, -(-entries * bytes_per_entry // memory_per_worker)))


@dataclass(frozen=True)
class DedupConfig:
    mode: str = field(
        default="ccnet", metadata=flag("--dedup", choices=DEDUP_MODES)
    )  # ccnet: CCNet's key and rule; strict: the rule on a key without punctuation or spacing; keep-first: the first occurrence kept; none: no line dedup
    hash_partitions: Optional[int] = field(
        default=None, metadata=flag("--hash-partitions", "--hash-buckets")
    )  # shuffle partitions of the line-hash space, each dedup worker holding one; none: chosen from the input's distinct lines per segment and memory_per_worker
    memory_per_worker: int = field(
        default=2 * 1024**3, metadata=flag("--dedup-memory-per-worker", parse=parse_size)
    )  # memory one dedup worker may give its hash partition (bytes, or 2GiB, 512MB...): sets the automatic partition count
    min_len: int = 300  # documents shorter than this (characters, after dedup) are dropped

    def __post_init__(self):
        if self.mode not in DEDUP_MODES:
            raise ValueError(f"dedup mode must be one of {DEDUP_MODES}, got {self.mode!r}")
        if self.hash_partitions is not None and not 1 <= self.hash_partitions <= MAX_PARTITIONS:
            raise ValueError(f"hash_partitions must be in 1..{MAX_PARTITIONS}, got {self.hash_partitions}")
        if self.memory_per_worker < BYTES_PER_ENTRY:
            raise ValueError(f"memory_per_worker must be >= {BYTES_PER_ENTRY} bytes, got {self.memory_per_worker}")
        if self.min_len < 0:
            raise ValueError(f"min_len must be >= 0, got {self.min_len}")

    def partitions(self, entries: int) -> int:
        """The hash partitions for an input of ``entries`` segment summary entries (distinct
        lines per segment, summed): the ones given, else the fewest whose average partition
        fits ``memory_per_worker`` (``BYTES_PER_ENTRY``)."""
        if self.hash_partitions is not None:
            return self.hash_partitions
        return partitions_for(entries, BYTES_PER_ENTRY, self.memory_per_worker)

    @property
    def line_keys(self) -> Callable[[str], List[str]]:
        """The mode's key of every line of a text."""
        return dedup_keys_strict if self.mode == "strict" else dedup_keys


def line_hashes(text: str, line_keys: Callable[[str], List[str]] = dedup_keys) -> np.ndarray:
    """The first 8 bytes of SHA-1 of the key of each line of ``text``, as little-endian
    uint64: with CCNet's key, the values of CCNet's ``compute_hashes``."""
    sha1 = hashlib.sha1
    digests = b"".join(sha1(key.encode("utf-8")).digest()[:HASH_SIZE] for key in line_keys(text))
    return np.frombuffer(digests, dtype=HASH_DTYPE)


def segment_line_hashes(
    records: Iterable[Tuple[int, str]], line_keys: Callable[[str], List[str]] = dedup_keys
) -> Tuple[np.ndarray, np.ndarray]:
    """Hashes and positions of every line of a segment's documents: two equal-length uint64
    arrays. ``records`` yields (record index, raw_content)."""
    hash_chunks, position_chunks = [], []
    for record, content in records:
        if not content:
            continue  # a page with a title only has no lines (nlines 0)
        hashes = line_hashes(content, line_keys)
        if len(hashes) >= MAX_LINES:
            raise ValueError(f"record {record} has {len(hashes)} lines, more than {MAX_LINES - 1}")
        hash_chunks.append(hashes)
        position_chunks.append((np.uint64(record) << np.uint64(LINE_BITS)) + np.arange(len(hashes), dtype=np.uint64))
    if not hash_chunks:
        return np.empty(0, dtype=HASH_DTYPE), np.empty(0, dtype=HASH_DTYPE)
    return np.concatenate(hash_chunks), np.concatenate(position_chunks)


def summarize_segment(hashes: np.ndarray, positions: np.ndarray, mode: str) -> Tuple[np.ndarray, np.ndarray]:
    """A segment's distinct hashes (sorted) and, for each, what the global decision needs: in
    "ccnet" and "strict" mode how many of the segment's documents hold it (capped at 2: two
    is already a duplicate), in "keep-first" mode its first position in the segment.
    ``positions`` ascend, as ``segment_line_hashes`` gives them."""
    check_mode(mode)
    if mode == "keep-first":
        unique, first = np.unique(hashes, return_index=True)
        return unique, positions[first]
    records = positions >> np.uint64(LINE_BITS)
    pairs = np.unique(np.stack([hashes, records]), axis=1)  # each (hash, document) once, by hash
    unique, documents = np.unique(pairs[0], return_counts=True)
    return unique, np.minimum(documents, 2).astype(np.uint64)


def split_by_partition(hashes: np.ndarray, values: np.ndarray, partitions: int) -> List[Tuple[np.ndarray, np.ndarray]]:
    """For each partition p, the (hashes, values) whose ``hash % partitions == p``."""
    partition_of = hashes % np.uint64(partitions)
    order = np.argsort(partition_of, kind="stable")
    bounds = np.searchsorted(partition_of[order], np.arange(partitions + 1, dtype=np.uint64))
    return [
        (hashes[order[bounds[p] : bounds[p + 1]]], values[order[bounds[p] : bounds[p + 1]]]) for p in range(partitions)
    ]


def find_duplicated_hashes(parts: Iterable[Tuple[int, np.ndarray, np.ndarray]], mode: str) -> Dict[int, np.ndarray]:
    """Given every (segment index, hashes, values) of one hash partition (``summarize_segment``),
    per segment index the sorted hashes of which it loses every copy: in "ccnet" and "strict"
    mode those held by two or more documents in all, in "keep-first" mode those whose first
    occurrence by (segment index, record, line) lies in another segment."""
    check_mode(mode)
    parts = [p for p in parts if len(p[1])]
    if not parts:
        return {}
    segments = np.concatenate([np.full(len(h), s, dtype=np.int64) for s, h, _ in parts])
    hashes = np.concatenate([h for _, h, _ in parts])
    values = np.concatenate([v for _, _, v in parts])
    order = np.lexsort((values, segments, hashes))
    hashes, segments, values = hashes[order], segments[order], values[order]
    starts_group = np.ones(len(hashes), dtype=bool)
    starts_group[1:] = hashes[1:] != hashes[:-1]
    if mode == "keep-first":
        removed = ~starts_group  # the first entry of a hash holds its first occurrence
    else:
        group = np.cumsum(starts_group) - 1
        removed = np.bincount(group, weights=values)[group] > 1  # in several documents
    segments, hashes = segments[removed], hashes[removed]
    by_segment = np.argsort(segments, kind="stable")  # each segment's hashes stay sorted
    segments, hashes = segments[by_segment], hashes[by_segment]
    unique, starts = np.unique(segments, return_index=True)
    return {int(segment): part for segment, part in zip(unique, np.split(hashes, starts[1:]))}


def removed_positions(hashes: np.ndarray, positions: np.ndarray, remove_all: np.ndarray) -> np.ndarray:
    """A segment's positions to remove (sorted): every line whose hash is in ``remove_all``
    (``find_duplicated_hashes``) and every repeat of the other hashes after their first line.
    ``positions`` ascend, as ``segment_line_hashes`` gives them."""
    _, first = np.unique(hashes, return_index=True)
    removed = np.ones(len(hashes), dtype=bool)
    removed[first] = False
    removed |= np.isin(hashes, remove_all)
    return np.sort(positions[removed])


def check_mode(mode: str) -> None:
    if mode not in DEDUP_MODES:
        raise ValueError(f"dedup mode must be one of {DEDUP_MODES}, got {mode!r}")


def removed_lines_by_record(positions: np.ndarray) -> Dict[int, frozenset]:
    """Split a segment's removed positions into {record index: line indices}."""
    positions = np.sort(np.asarray(positions, dtype=np.uint64))
    records = positions >> np.uint64(LINE_BITS)
    lines = positions & np.uint64(MAX_LINES - 1)
    unique, starts = np.unique(records, return_index=True)
    ends = np.append(starts[1:], len(positions))
    return {int(record): frozenset(lines[start:end].tolist()) for record, start, end in zip(unique, starts, ends)}


def remove_lines(doc: Document, removed: frozenset) -> Document:
    """The document without the given line indices; length, nlines and CCNet's line_ids (the
    original indices of the lines kept) recounted."""
    if not removed:
        return doc
    kept = [(i, line) for i, line in enumerate(doc["raw_content"].split("\n")) if i not in removed]
    content = "\n".join(line for _, line in kept)
    line_ids = [doc["line_ids"][i] for i, _ in kept]
    return {**doc, "raw_content": content, "length": len(content), "nlines": len(kept), "line_ids": line_ids}


class DuplicateLineRemoval(Stage):
    """Stage: one document's lines that the shuffle found duplicated, removed. Made per
    document by pass 2 of the pipeline, which knows each record's removed lines."""

    name = "dedup"

    def __init__(self, removed: frozenset):
        self.removed = removed

    @classmethod
    def counts(cls, doc: Document, outcome: str) -> Dict[str, int]:
        if not first_of_page(doc):
            return {}
        nlines, length = page_lines_and_length(doc)
        return {
            "lines_in": doc["original_nlines"],
            "lines_removed": doc["original_nlines"] - nlines,
            "chars_in": doc["original_length"],
            "chars_removed": doc["original_length"] - length,
        }

    def apply(self, doc: Document) -> Tuple[Document, Optional[str]]:
        return remove_lines(doc, self.removed), None


class MinLength(Stage):
    """Stage: CCNet's minimum length, in characters after dedup (counted under "dedup")."""

    name = "dedup"
    reasons = ("too_short",)

    def __init__(self, min_len: int):
        self.min_len = min_len

    def apply(self, doc: Document) -> Tuple[Document, Optional[str]]:
        return doc, "too_short" if doc["length"] < self.min_len else None
