"""Connected components by large-star / small-star rounds in bounded steps equal a union-find's,
and no step is given a whole group, however large a cluster is."""

import numpy as np
import pytest

from filters import minhash_clusters


def union_find_labels(edges, nodes):
    parent = {node: node for node in nodes}

    def root(node):
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for a, b in edges:
        ra, rb = root(a), root(b)
        parent[max(ra, rb)] = min(ra, rb)
    return {node: root(node) for node in nodes}


def found_labels(labels):
    """{segment: [(records, labels)]} -> {node id: label}."""
    found = {}
    for segment, parts in labels.items():
        for records, label in parts:
            found.update(zip(minhash_clusters.document_id(segment, records).tolist(), label.tolist()))
    return found


def run_rounds(larger, smaller, partitions, rounds, call=minhash_clusters._direct):
    edges = minhash_clusters.shuffle(
        minhash_clusters.by_edge_partition(minhash_clusters.normalized(larger, smaller), partitions)
    )
    labels, changes = minhash_clusters.components_in_memory(edges, partitions, rounds, call)
    return found_labels(labels), changes


@pytest.mark.parametrize("seed, nodes, edges", [(0, 60, 40), (1, 500, 450), (2, 300, 900), (3, 2000, 1900)])
def test_partitioned_rounds_find_the_union_find_components(seed, nodes, edges):
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(2**40, size=nodes, replace=False)).astype(np.int64)
    a, b = ids[rng.integers(0, nodes, edges)], ids[rng.integers(0, nodes, edges)]
    larger, smaller = minhash_clusters.normalized(a, b)
    found, changes = run_rounds(larger, smaller, partitions=7, rounds=12)
    truth = union_find_labels(zip(larger.tolist(), smaller.tolist()), ids.tolist())
    assert found == {node: label for node, label in truth.items() if label != node}
    assert changes[-1] == changes[-2] == 0  # converged well before the cap


def test_a_long_chain_converges_and_the_earliest_document_leads():
    ids = np.arange(1, 1025, dtype=np.int64) * 7
    found, changes = run_rounds(ids[1:], ids[:-1], partitions=3, rounds=14)
    assert set(found.values()) == {7} and len(found) == 1023
    assert 0 < sum(1 for c in changes if c) < len(changes)


def test_a_chain_longer_than_the_cap_keeps_extra_documents_and_loses_none():
    """Past ``--minhash-rounds``: every dropped document points to a smaller one of its chain, the
    earliest stays, a few others stay too, and the counters say the cap was reached."""
    from ccnet_pipeline.steps.near_dedup import round_counters

    ids = (np.random.default_rng(1).permutation(1024) + 1).astype(np.int64) * 7  # a chain in random order
    found, changes = run_rounds(ids[1:], ids[:-1], partitions=3, rounds=3)
    assert 7 not in found and all(label < node and label % 7 == 0 for node, label in found.items())
    assert 0 < len(ids) - 1 - len(found) < len(ids) // 20  # kept besides the earliest: a few
    names = [f"near_dedup/changes_{number // 2:02d}" for number in range(len(changes))]
    assert round_counters(zip(names, changes), 3) == {"near_dedup/rounds": 3, "near_dedup/unconverged": 1}
    assert round_counters(zip(names, changes), 4) == {"near_dedup/rounds": 3, "near_dedup/unconverged": 0}


def test_candidates_link_each_key_to_its_smallest_document_across_segments():
    ids = minhash_clusters.document_id(0, np.array([3, 1, 2, 4]))
    later = minhash_clusters.document_id(1, np.array([0, 5]))
    keys = {
        0: (ids, np.array([[5, 11], [5, 12], [5, 13], [9, 14]], np.uint64)),
        1: (later, np.array([[9, 16], [3, 14]], np.uint64)),
    }
    edges, _ = minhash_clusters.run_step(minhash_clusters.Candidates(), {s: [chunk] for s, chunk in keys.items()}, 4)
    pairs = sorted(pair for parts in edges.values() for e in parts for pair in zip(*(x.tolist() for x in e)))
    i, j = ids.tolist(), later.tolist()
    assert pairs == sorted([(i[0], i[1]), (i[2], i[1]), (j[0], i[3]), (j[1], i[3])])
    assert minhash_clusters.split_id(minhash_clusters.document_id(3, np.array([7])))[1].tolist() == [7]


def pure(kind):
    """The step alone, its place's output edges not contracted into local stars."""
    step = kind()
    step.contract = False
    return step


def test_each_step_counts_what_it_changes():
    def step(kind, larger, smaller):
        edges = minhash_clusters.shuffle(minhash_clusters.by_edge_partition((np.array(larger), np.array(smaller)), 2))
        out, changed = minhash_clusters.run_step(kind, edges, 2)
        return changed, sorted(
            {pair for parts in out.values() for e in parts for pair in zip(*(x.tolist() for x in e))}
        )

    # 5 hangs on 3 and 4, which hang on 1: small-star relinks 5's larger smaller neighbour ...
    assert step(pure(minhash_clusters.SmallStar), [5, 5, 3, 4], [3, 4, 1, 1]) == (1, [(3, 1), (4, 1), (4, 3), (5, 3)])
    # ... and large-star moves 5's edges onto 1, the smallest neighbour of 3 and of 4.
    assert step(pure(minhash_clusters.LargeStar), [5, 5, 3, 4], [3, 4, 1, 1]) == (2, [(3, 1), (4, 1), (5, 1)])
    # A star on 1 is left as it is by both steps.
    for kind in (minhash_clusters.SmallStar, minhash_clusters.LargeStar):
        assert step(pure(kind), [3, 4, 5], [1, 1, 1]) == (0, [(3, 1), (4, 1), (5, 1)])
        assert step(kind(), [3, 4, 5], [1, 1, 1]) == (0, [(3, 1), (4, 1), (5, 1)])
    # Contracted, small-star's edges (4, 3) and (5, 3), in one place, become (5, 1) there.
    assert step(minhash_clusters.SmallStar(), [5, 5, 3, 4], [3, 4, 1, 1]) == (1, [(3, 1), (4, 1), (5, 1)])


def test_local_stars_are_the_union_find_components_of_the_edges_given():
    rng = np.random.default_rng(4)
    ids = rng.choice(2**40, size=3000, replace=False).astype(np.int64)
    for a, b in [
        (ids[1:], ids[:-1]),
        (np.sort(ids)[1:], np.sort(ids)[:-1]),
        tuple(ids[rng.integers(0, 3000, (2, 2500))]),
    ]:
        larger, smaller = minhash_clusters.normalized(a, b)
        truth = union_find_labels(zip(larger.tolist(), smaller.tolist()), np.unique(np.r_[a, b]).tolist())
        nodes, centres = minhash_clusters.local_stars(larger, smaller)
        assert dict(zip(nodes.tolist(), centres.tolist())) == {n: label for n, label in truth.items() if label != n}
        assert len(nodes) <= len(larger)
    assert [x.tolist() for x in minhash_clusters.local_stars(ids[:0], ids[:0])] == [[], []]


def test_one_partition_converges_in_the_first_step_however_long_the_chain():
    """Every graph that fits one partition (memory_per_worker) is its stars after one step: the
    chain below takes 10 rounds without the contraction."""
    ids = (np.random.default_rng(2).permutation(4096) + 1).astype(np.int64) * 7
    found, changes = run_rounds(ids[1:], ids[:-1], partitions=1, rounds=2)
    assert set(found.values()) == {7} and len(found) == 4095
    assert changes[0] > 0 and changes[1:] == [0, 0, 0]


def test_no_step_holds_a_hub_nodes_whole_group():
    """One node linked to 40,000 others (a template on a tenth of the pages), then chained: every
    call of every phase is given a share of the edges, never the hub's 40,000."""
    hub, leaves = 1, np.arange(2, 40_002, dtype=np.int64)
    chain = np.arange(40_002, 40_100, dtype=np.int64)
    larger = np.r_[leaves, chain]
    smaller = np.r_[np.full(len(leaves), hub), chain - 1]
    largest = []

    def measured(function, *args):
        arrays = list(minhash_clusters.arrays_given(args))
        largest.append(max((a.size for a in arrays), default=0))
        return function(*args)

    found, changes = run_rounds(larger, smaller, partitions=16, rounds=8, call=measured)
    assert set(found.values()) == {hub} and len(found) == len(larger) and changes[-1] == 0
    assert max(largest) < 2 * len(larger) / 16  # about one partition's share; the hub's group alone is 40,000
