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
    split_by_partition,
)
from filters.document import make_document

# CCNet's own values: cc_net.dedup.str_hash(cc_net.text_normalizer.normalize_for_dedup(line)),
# computed with CCNet's code (facebookresearch/cc_net at bda555b).
CCNET_HASHES = {
    "hello world": 13028719972609469994,
    "Hello, World!": 17533495694488439071,
    "E?": 18304256783496761231,
    "東京は２０２０年に…": 18157778378525224740,
    "": 957977401221134810,
}


def test_line_hashes_are_ccnets():
    hashes = line_hashes(list(CCNET_HASHES))
    assert hashes.dtype == np.dtype("<u8")
    assert [int(h) for h in hashes] == list(CCNET_HASHES.values())
    assert int(hashes[0]) == int.from_bytes(hashlib.sha1(b"hello world").digest()[:8], "little")


def test_strict_key_merges_punctuation_and_spacing_variants():
    strict = line_hashes(["Hello, World!", "hello   world", "Hello World"], DedupConfig(mode="strict").normalize)
    assert len(set(strict.tolist())) == 1
    assert len(set(line_hashes(["Hello, World!", "hello   world", "Hello World"]).tolist())) == 3


def _dedup(segments, mode, partitions=4):
    """Run the three dedup steps in memory over {segment: [content, ...]}."""
    per_partition = {}
    for segment, contents in segments.items():
        parts = split_by_partition(
            *segment_line_hashes(enumerate(contents), DedupConfig(mode=mode).normalize), partitions
        )
        for partition, (hashes, positions) in enumerate(parts):
            per_partition.setdefault(partition, []).append((segment, hashes, positions))
    removed = {}
    for parts in per_partition.values():
        for segment, positions in find_removed_lines(parts, mode).items():
            removed.setdefault(segment, []).append(positions)
    result = {}
    for segment, contents in segments.items():
        by_record = removed_lines_by_record(np.concatenate(removed.get(segment, [np.empty(0, np.uint64)])))
        result[segment] = [
            remove_lines(
                make_document(url="u", date_download="d", digest="x", title="t", raw_content=c, cc_segment="s"),
                by_record.get(i, frozenset()),
            )["raw_content"]
            for i, c in enumerate(contents)
        ]
    return result


CORPUS = {
    0: ["Menu, Home\nA unique first line.\nShared footer - 2019", "Another page\nmenu home\nBody two"],
    1: ["Shared footer: 2018\nThird page text\nThird page text"],
}

# Three pages and what CCNet's HashesCollector + DuplicatesRemover (cc_net/dedup.py, as mine.py
# runs them) make of them: a line in two pages loses every copy, "HOME | NEWS" is "Home | News"
# lowercased; a line repeated inside one page keeps its first copy, the empty line included.
CCNET_PAGES = [
    "Home | News\nShared line, in two pages.\nOnly in A.\nOnly in A.\nRepeated in A!\n\nRepeated in A!\nThe end of A.",
    "HOME | NEWS\nShared line, in two pages.\nOnly in B: 42.\nShared line, in two pages.",
    "Unique C.\nUnique C.\nunique c.\nUnique C!",
]
CCNET_RESULT = ["Only in A.\nRepeated in A!\n\nThe end of A.", "Only in B: 42.", "Unique C.\nUnique C!"]
CCNET_LINE_IDS = [[2, 4, 5, 7], [2], [0, 3]]


@pytest.mark.parametrize("segments", [[0, 0, 0], [0, 1, 2], [2, 0, 1]])
def test_ccnet_mode_gives_ccnets_result(segments):
    corpus = {}
    for page, segment in zip(CCNET_PAGES, segments):
        corpus.setdefault(segment, []).append(page)
    result = _dedup(corpus, "ccnet")
    ours = [result[segment][corpus[segment].index(page)] for page, segment in zip(CCNET_PAGES, segments)]
    assert ours == CCNET_RESULT


def test_ccnet_mode_recounts_line_ids_as_ccnet():
    removed = find_removed_lines([(0, *segment_line_hashes(enumerate(CCNET_PAGES)))], "ccnet")
    by_record = removed_lines_by_record(removed[0])
    docs = [
        make_document(url="u", date_download="d", digest="x", title="t", raw_content=c, cc_segment="s")
        for c in CCNET_PAGES
    ]
    assert [
        remove_lines(doc, by_record.get(i, frozenset()))["line_ids"] for i, doc in enumerate(docs)
    ] == CCNET_LINE_IDS


def test_ccnet_mode_keeps_punctuation_variants_and_one_copy_of_a_page_repeat():
    assert _dedup(CORPUS, "ccnet") == {
        0: ["Menu, Home\nA unique first line.\nShared footer - 2019", "Another page\nmenu home\nBody two"],
        1: ["Shared footer: 2018\nThird page text"],
    }


def test_strict_mode_removes_punctuation_and_digit_variants():
    assert _dedup(CORPUS, "strict") == {
        0: ["A unique first line.", "Another page\nBody two"],
        1: ["Third page text"],  # the footer differs only by digits and punctuation
    }


def test_keep_first_mode_keeps_first_occurrence_by_segment_and_record():
    assert _dedup({0: CCNET_PAGES}, "keep-first") == {
        0: [
            "Home | News\nShared line, in two pages.\nOnly in A.\nRepeated in A!\n\nThe end of A.",
            "Only in B: 42.",
            "Unique C.\nUnique C!",
        ]
    }


@pytest.mark.parametrize("mode", ["ccnet", "strict", "keep-first"])
def test_result_does_not_depend_on_partition_count(mode):
    corpus = {**CORPUS, 2: CCNET_PAGES}
    assert _dedup(corpus, mode, partitions=1) == _dedup(corpus, mode, partitions=7)


def test_segment_line_hashes_split_by_partition():
    parts = split_by_partition(*segment_line_hashes([(0, "a\nb\nc"), (5, "d")]), partitions=3)
    all_positions = sorted(int(p) for _, positions in parts for p in positions)
    assert all_positions == [0, 1, 2, 5 << LINE_BITS]
    for partition, (hashes, _) in enumerate(parts):
        assert all(int(h) % 3 == partition for h in hashes)


def test_remove_lines_recounts():
    doc = make_document(
        url="https://a.b/c", date_download="d", digest="x", title="t", raw_content="one\ntwo\nthree", cc_segment="s"
    )
    out = remove_lines(doc, frozenset({1}))
    assert (out["raw_content"], out["nlines"], out["length"]) == ("one\nthree", 2, 9)
    assert (out["original_nlines"], out["original_length"], out["line_ids"]) == (3, 13, [0, 2])


def test_config_validation():
    with pytest.raises(ValueError, match="dedup mode"):
        DedupConfig(mode="fuzzy")
    with pytest.raises(ValueError, match="hash_partitions"):
        DedupConfig(hash_partitions=0)
    with pytest.raises(ValueError, match="memory_per_worker"):
        DedupConfig(memory_per_worker=10)


def test_hash_partitions_follow_the_input_unless_given():
    automatic = DedupConfig(memory_per_worker=800)  # 10 lines of BYTES_PER_LINE = 80 per partition
    assert [automatic.partitions(lines) for lines in (0, 1, 10, 11, 25, 10**12)] == [1, 1, 1, 2, 3, 65536]
    assert DedupConfig().partitions(10**9) == 38  # 80 GB of working memory at the default 2 GiB
    assert DedupConfig(hash_partitions=7, memory_per_worker=800).partitions(10**6) == 7
