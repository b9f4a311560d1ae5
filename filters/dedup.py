"""Exact line deduplication as CCNet does it, split into pieces that scale.

CCNet normalizes every line, hashes it with the first 8 bytes of SHA-1, and removes lines whose
hash occurs more than once in the data. Here that runs in three steps that never need all
hashes in one place (the pipeline shuffles by hash bucket between steps 1 and 2):

1. ``segment_line_hashes``: per input segment, arrays of (hash, position), which the pipeline
   commits per segment (as CCNet's hash files) and splits by hash bucket (``split_by_bucket``);
2. ``find_removed_lines``: per hash bucket, which positions hold a duplicated line;
3. ``remove_lines``: per document, drop those lines.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

from filters.document import Document
from filters.normalize import normalize_for_dedup

HASH_SIZE = 8  # bytes of SHA-1 kept, as CCNet
HASH_DTYPE = np.dtype("<u8")
LINE_BITS = 24  # a position packs (record index << LINE_BITS) | line index into one uint64
MAX_LINES = 1 << LINE_BITS
DEDUP_MODES = ("ccnet", "keep-first")


@dataclass(frozen=True)
class DedupConfig:
    mode: str = "ccnet"  # "ccnet": drop every copy of a repeated line; "keep-first": keep the first
    hash_buckets: int = 16  # shuffle partitions of the hash space; each holds 1/N of all hashes
    min_len: int = 300  # documents shorter than this (characters, after dedup) are dropped

    def __post_init__(self):
        if self.mode not in DEDUP_MODES:
            raise ValueError(f"dedup mode must be one of {DEDUP_MODES}, got {self.mode!r}")
        if not 1 <= self.hash_buckets <= 65536:
            raise ValueError(f"hash_buckets must be in 1..65536, got {self.hash_buckets}")
        if self.min_len < 0:
            raise ValueError(f"min_len must be >= 0, got {self.min_len}")


def line_hashes(lines: Sequence[str]) -> np.ndarray:
    """The first 8 bytes of SHA-1 of each normalized line, as little-endian uint64 (CCNet's)."""
    sha1 = hashlib.sha1
    digests = b"".join(
        sha1(normalize_for_dedup(line).encode("utf-8")).digest()[:HASH_SIZE] for line in lines
    )
    return np.frombuffer(digests, dtype=HASH_DTYPE)


def segment_line_hashes(records: Iterable[Tuple[int, str]]) -> Tuple[np.ndarray, np.ndarray]:
    """Hashes and positions of every line of a segment's documents: two equal-length uint64
    arrays. ``records`` yields (record index, raw_content)."""
    hash_chunks, position_chunks = [], []
    for record, content in records:
        if not content:
            continue  # a page with a title only has no lines (nlines 0)
        lines = content.split("\n")
        if len(lines) >= MAX_LINES:
            raise ValueError(f"record {record} has {len(lines)} lines, more than {MAX_LINES - 1}")
        hash_chunks.append(line_hashes(lines))
        position_chunks.append((np.uint64(record) << np.uint64(LINE_BITS)) + np.arange(len(lines), dtype=np.uint64))
    if not hash_chunks:
        return np.empty(0, dtype=HASH_DTYPE), np.empty(0, dtype=HASH_DTYPE)
    return np.concatenate(hash_chunks), np.concatenate(position_chunks)


def split_by_bucket(hashes: np.ndarray, positions: np.ndarray, buckets: int) -> List[Tuple[np.ndarray, np.ndarray]]:
    """For each bucket b, the (hashes, positions) whose ``hash % buckets == b``."""
    bucket_of = hashes % np.uint64(buckets)
    order = np.argsort(bucket_of, kind="stable")
    bounds = np.searchsorted(bucket_of[order], np.arange(buckets + 1, dtype=np.uint64))
    return [
        (hashes[order[bounds[b] : bounds[b + 1]]], positions[order[bounds[b] : bounds[b + 1]]])
        for b in range(buckets)
    ]


def find_removed_lines(
    parts: Iterable[Tuple[int, np.ndarray, np.ndarray]], mode: str
) -> Dict[int, np.ndarray]:
    """Given every (segment index, hashes, positions) of one hash bucket, the sorted positions
    to remove, per segment index.

    "ccnet" removes every occurrence of a hash seen more than once; "keep-first" keeps the
    occurrence that comes first by (segment index, record, line) and removes the others.
    """
    if mode not in DEDUP_MODES:
        raise ValueError(f"dedup mode must be one of {DEDUP_MODES}, got {mode!r}")
    parts = [p for p in parts if len(p[1])]
    if not parts:
        return {}
    segments = np.concatenate([np.full(len(h), s, dtype=np.int64) for s, h, _ in parts])
    hashes = np.concatenate([h for _, h, _ in parts])
    positions = np.concatenate([p for _, _, p in parts])
    order = np.lexsort((positions, segments, hashes))
    hashes, segments, positions = hashes[order], segments[order], positions[order]
    starts_group = np.ones(len(hashes), dtype=bool)
    starts_group[1:] = hashes[1:] != hashes[:-1]
    if mode == "keep-first":
        removed = ~starts_group
    else:
        group = np.cumsum(starts_group) - 1
        removed = np.bincount(group)[group] > 1
    result = {}
    for segment in np.unique(segments[removed]):
        result[int(segment)] = np.sort(positions[removed & (segments == segment)])
    return result


def removed_lines_by_record(positions: np.ndarray) -> Dict[int, frozenset]:
    """Split a segment's removed positions into {record index: line indices}."""
    positions = np.sort(np.asarray(positions, dtype=np.uint64))
    records = positions >> np.uint64(LINE_BITS)
    lines = positions & np.uint64(MAX_LINES - 1)
    unique, starts = np.unique(records, return_index=True)
    ends = np.append(starts[1:], len(positions))
    return {
        int(record): frozenset(lines[start:end].tolist())
        for record, start, end in zip(unique, starts, ends)
    }


def remove_lines(doc: Document, removed: frozenset) -> Document:
    """The document without the given line indices; length and nlines recounted."""
    if not removed:
        return doc
    kept = [line for i, line in enumerate(doc["raw_content"].split("\n")) if i not in removed]
    content = "\n".join(kept)
    return {**doc, "raw_content": content, "length": len(content), "nlines": len(kept)}
