import hashlib

import numpy as np
import pytest

from filters.dedup import (
    LINE_BITS,
    DedupConfig,
    find_removed_lines,
    line_hashes,
    remove_lines,
    removed_lines_by_record,
    segment_line_hashes,
    split_by_bucket,
)
from filters.document import make_document


def test_line_hash_is_first_8_bytes_of_sha1_little_endian():
    hashes = line_hashes(["hello world", "Hello, World!", "other"])
    assert hashes.dtype == np.dtype("<u8")
    assert int(hashes[0]) == 13028719972609469994
    assert int(hashes[0]) == int.from_bytes(hashlib.sha1(b"hello world").digest()[:8], "little")
    assert hashes[0] == hashes[1] != hashes[2]


def _dedup(segments, mode, buckets=4):
    """Run the three dedup steps in memory over {segment: [content, ...]}."""
    per_bucket = {}
    for segment, contents in segments.items():
        parts = split_by_bucket(*segment_line_hashes(enumerate(contents)), buckets)
        for bucket, (hashes, positions) in enumerate(parts):
            per_bucket.setdefault(bucket, []).append((segment, hashes, positions))
    removed = {}
    for parts in per_bucket.values():
        for segment, positions in find_removed_lines(parts, mode).items():
            removed.setdefault(segment, []).append(positions)
    result = {}
    for segment, contents in segments.items():
        by_record = removed_lines_by_record(np.concatenate(removed.get(segment, [np.empty(0, np.uint64)])))
        result[segment] = [
            remove_lines(make_document(url="u", date_download="d", digest="x", title="t", raw_content=c, cc_segment="s"), by_record.get(i, frozenset()))["raw_content"]
            for i, c in enumerate(contents)
        ]
    return result


CORPUS = {
    0: ["Menu, Home\nA unique first line.\nShared footer - 2019", "Another page\nmenu home\nBody two"],
    1: ["Shared footer: 2018\nThird page text\nThird page text"],
}


def test_ccnet_mode_removes_every_copy_across_segments_and_within_documents():
    assert _dedup(CORPUS, "ccnet") == {
        0: ["A unique first line.", "Another page\nBody two"],
        1: [""],  # the footer differs only by digits and punctuation; the repeated line goes too
    }


def test_keep_first_mode_keeps_first_occurrence_by_segment_and_record():
    assert _dedup(CORPUS, "keep-first") == {
        0: ["Menu, Home\nA unique first line.\nShared footer - 2019", "Another page\nBody two"],
        1: ["Third page text"],
    }


@pytest.mark.parametrize("mode", ["ccnet", "keep-first"])
def test_result_does_not_depend_on_bucket_count(mode):
    assert _dedup(CORPUS, mode, buckets=1) == _dedup(CORPUS, mode, buckets=7)


def test_segment_line_hashes_partitions_by_bucket():
    parts = split_by_bucket(*segment_line_hashes([(0, "a\nb\nc"), (5, "d")]), buckets=3)
    all_positions = sorted(int(p) for _, positions in parts for p in positions)
    assert all_positions == [0, 1, 2, 5 << LINE_BITS]
    for bucket, (hashes, _) in enumerate(parts):
        assert all(int(h) % 3 == bucket for h in hashes)


def test_remove_lines_recounts():
    doc = make_document(url="https://a.b/c", date_download="d", digest="x", title="t", raw_content="one\ntwo\nthree", cc_segment="s")
    out = remove_lines(doc, frozenset({1}))
    assert (out["raw_content"], out["nlines"], out["length"]) == ("one\nthree", 2, 9)
    assert (out["original_nlines"], out["original_length"]) == (3, 13)


def test_config_validation():
    with pytest.raises(ValueError, match="dedup mode"):
        DedupConfig(mode="fuzzy")
    with pytest.raises(ValueError, match="hash_buckets"):
        DedupConfig(hash_buckets=0)
