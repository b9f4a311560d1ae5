import hashlib

import numpy as np
import pytest

from filters.dedup import (
    LINE_BITS,
    DedupConfig,
    find_duplicated_hashes,
    line_hashes,
    remove_lines,
    removed_lines_by_record,
    removed_positions,
    segment_line_hashes,
    split_by_partition,
    summarize_segment,
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
    hashes = line_hashes("\n".join(CCNET_HASHES))
    assert hashes.dtype == np.dtype("<u8")
    assert [int(h) for h in hashes] == list(CCNET_HASHES.values())
    assert int(hashes[0]) == int.from_bytes(hashlib.sha1(b"hello world").digest()[:8], "little")


def test_strict_key_merges_punctuation_and_spacing_variants():
    variants = "Hello, World!\nhello   world\nHello World"
    assert len(set(line_hashes(variants, DedupConfig(mode="strict").line_keys).tolist())) == 1
    assert len(set(line_hashes(variants).tolist())) == 3


def _dedup(segments, mode, partitions=4):
    """Run the dedup steps in memory over {segment: [content, ...]}."""
    hashed, per_partition = {}, {}
    for segment, contents in segments.items():
        hashed[segment] = segment_line_hashes(enumerate(contents), DedupConfig(mode=mode).line_keys)
        parts = split_by_partition(*summarize_segment(*hashed[segment], mode), partitions)
        for partition, (hashes, values) in enumerate(parts):
            per_partition.setdefault(partition, []).append((segment, hashes, values))
    remove_all = {}
    for parts in per_partition.values():
        for segment, hashes in find_duplicated_hashes(parts, mode).items():
            remove_all.setdefault(segment, []).append(hashes)
    result = {}
    for segment, contents in segments.items():
        removed = removed_positions(*hashed[segment], np.concatenate(remove_all.get(segment, [np.empty(0, np.uint64)])))
        by_record = removed_lines_by_record(removed)
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
    hashes, positions = segment_line_hashes(enumerate(CCNET_PAGES))
    (remove_all,) = find_duplicated_hashes([(0, *summarize_segment(hashes, positions, "ccnet"))], "ccnet").values()
    by_record = removed_lines_by_record(removed_positions(hashes, positions, remove_all))
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


def test_a_segment_summary_holds_each_hash_once():
    pages = [(0, "menu\nx\nmenu"), (1, "menu\ny"), (2, "menu\nx"), (4, "z")]
    hashes, positions = segment_line_hashes(pages)
    h = {line: int(line_hashes(line)[0]) for line in ("menu", "x", "y", "z")}  # menu: 3 pages, counted 2
    unique, documents = summarize_segment(hashes, positions, "ccnet")
    assert dict(zip(unique.tolist(), documents.tolist())) == {h["menu"]: 2, h["x"]: 2, h["y"]: 1, h["z"]: 1}
    unique, first = summarize_segment(hashes, positions, "keep-first")
    assert dict(zip(unique.tolist(), first.tolist())) == {
        h["menu"]: 0,
        h["x"]: 1,
        h["y"]: (1 << LINE_BITS) + 1,
        h["z"]: 4 << LINE_BITS,
    }


def test_duplicated_hashes_across_segments():
    ccnet = [
        (0, np.array([1, 2, 3], np.uint64), np.array([1, 2, 1], np.uint64)),
        (1, np.array([3, 4], np.uint64), np.array([1, 1], np.uint64)),
    ]
    assert {s: h.tolist() for s, h in find_duplicated_hashes(ccnet, "ccnet").items()} == {0: [2, 3], 1: [3]}
    first = [
        (0, np.array([5, 6], np.uint64), np.array([9, 3], np.uint64)),
        (1, np.array([5, 6], np.uint64), np.array([1, 0], np.uint64)),
    ]
    # the lower segment index holds the first occurrence, whatever the position inside
    assert {s: h.tolist() for s, h in find_duplicated_hashes(first, "keep-first").items()} == {1: [5, 6]}
    hashes, positions = np.array([7, 8, 7, 9, 8], np.uint64), np.arange(5, dtype=np.uint64)
    assert removed_positions(hashes, positions, np.array([9], np.uint64)).tolist() == [2, 3, 4]


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
