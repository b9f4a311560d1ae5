"""Connected components of a graph too large for one memory, in steps that each see a bounded part
of it (pure numpy, no Beam): the candidate edges of MinHash LSH and the alternating large-star /
small-star rounds of Kiveris et al. (2014, "Connected components in MapReduce and beyond").

Nodes are int64 ids (a document's segment index << 32 | its record index), so the smallest id of
a component, which every step converges to, is its earliest document. An edge is (larger,
smaller). Repeated, the steps turn the graph into one star per component, centred on its smallest
node. Each step gives out its place's edges as the stars of their own components
(``local_stars``): a graph whose edges fit one partition is done after one step, whatever its
shape; a larger one still takes its rounds.

Every step needs, for some nodes, the minimum over a group of pairs: the smallest neighbour of a
node, the smallest document of a band key. A hub node (one template on a tenth of the pages) or a
frequent key has a group as large as its cluster, so no worker is ever given a whole group. Each
step is a ``Step`` run in three phases, each over a bounded share of the data:

1. ``contribute``: each chunk of a place (a partition of edges by their hash, or a segment's band
   keys) reduces its pairs to one partial minimum per group and names the groups it needs, sent by
   group partition: a group then has at most one entry per chunk, however many pairs it has;
2. ``answer``: a group partition reduces the partial minima and answers each place's requests;
3. ``finish``: a place's chunks, merged, and the answers to its requests give the step's result.

``run_in_memory`` plays the three phases over all places in one process, as a test or a bench
does; the mine job runs them on Beam (``ccnet_pipeline.steps.near_dedup``).
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Iterator, List, Sequence, Tuple

import numpy as np

from filters.dedup import partitions_for

Edges = Tuple[np.ndarray, np.ndarray]  # (larger ends, smaller ends), int64
ID_DTYPE = np.int64
# The memory of a step's largest call per band-key entry and per candidate edge of its partition
# (its partial minima, wants and answers, sort orders and copies): measured by make bench-memory.
BYTES_PER_KEY, BYTES_PER_EDGE = 96, 320
NO_MINIMUM = np.iinfo(np.int64).max  # the answer for a group without any pair: no smaller neighbour
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads consecutive ids over partitions
_EDGE_MIX = np.uint64(0xC2B2AE3D27D4EB4F)  # an odd constant that makes (larger, smaller) one value


def document_id(segment: int, records: np.ndarray) -> np.ndarray:
    """The ids of a segment's records: (segment << 32) | record."""
    return (np.int64(segment) << np.int64(32)) | records.astype(ID_DTYPE)


def split_id(ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(segment indexes, record indexes) of ids."""
    return ids >> np.int64(32), ids & np.int64(0xFFFFFFFF)


def partition_of(values: np.ndarray, partitions: int) -> np.ndarray:
    """A partition in [0, partitions) for each id or key, spread evenly."""
    mixed = values.astype(np.uint64) * _GOLDEN
    return (mixed >> np.uint64(32)).astype(np.int64) % partitions


def edge_partition(edges: Edges, partitions: int) -> np.ndarray:
    """A partition for each edge, by both its ends: the copies of an edge meet in one place."""
    larger, smaller = edges
    return partition_of(larger.astype(np.uint64) * _EDGE_MIX ^ smaller.astype(np.uint64), partitions)


def by_edge_partition(edges: Edges, partitions: int) -> List[Tuple[int, Edges]]:
    """(edge partition, its edges) for each partition the edges fall in."""
    return list(split_by(edge_partition(edges, partitions), *edges))


def normalized(larger: np.ndarray, smaller: np.ndarray) -> Edges:
    """Edges oriented (larger, smaller), self-loops and repeats removed, sorted."""
    high, low = np.maximum(larger, smaller), np.minimum(larger, smaller)
    keep = high != low
    pairs = np.unique(np.stack([high[keep], low[keep]], axis=1), axis=0) if keep.any() else np.empty((0, 2), ID_DTYPE)
    return pairs[:, 0].astype(ID_DTYPE), pairs[:, 1].astype(ID_DTYPE)


def local_stars(larger: np.ndarray, smaller: np.ndarray) -> Edges:
    """The components of the given edges alone, each as a star on its smallest node: (node,
    smallest) for every other node (a union-find's answer, without a Python loop per edge). A
    step replaces the edges a place gives out by these (the local contraction of Łącki et al.,
    2018): connectivity is unchanged, never more edges come out than went in, and a graph whose
    edges all fit one place (one partition: every graph up to memory_per_worker) comes out as
    its final stars from one step, however long its chains. In each pass, every root hooks onto
    its smallest neighbouring root, then every node jumps to its root (pointer doubling). A root
    that hooks onto none is the smallest among its neighbours' roots, which hook onto it or onto
    smaller ones, and then it hooks in the next pass: every two passes merge each root with at
    least one other, so that O(log n) passes of a few scans of the edges find the components."""
    if not len(larger):
        return larger, smaller
    nodes, ends = np.unique(np.r_[larger, smaller], return_inverse=True)  # index order is id order
    ends = ends.reshape(2, -1)
    parent = np.arange(len(nodes))
    while True:
        roots = parent[ends]
        high, low = roots.max(axis=0), roots.min(axis=0)
        apart = high != low
        if not apart.any():
            break
        np.minimum.at(parent, high[apart], low[apart])  # a root hooks onto a smaller one: no cycle
        while True:  # every node to its root
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
    linked = parent != np.arange(len(nodes))
    return nodes[linked], nodes[parent[linked]]


def split_by(where: np.ndarray, *arrays: np.ndarray) -> Iterator[Tuple[int, Tuple[np.ndarray, ...]]]:
    """(partition, the arrays' entries in it) for each partition in ``where``, one sort for all."""
    order = np.argsort(where, kind="stable")
    where = where[order]
    starts = np.flatnonzero(np.r_[True, where[1:] != where[:-1]]) if len(where) else np.empty(0, np.int64)
    for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(where)]):
        chosen = order[start:end]
        yield int(where[start]), tuple(array[chosen] for array in arrays)


def group_minima(groups: np.ndarray, values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(each distinct group, sorted; the smallest value of its pairs)."""
    if not len(groups):
        return groups[:0], values[:0]
    order = np.lexsort((values, groups))
    groups, values = groups[order], values[order]
    starts = np.r_[True, groups[1:] != groups[:-1]]
    return groups[starts], values[starts]


def look_up(groups: np.ndarray, minima: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The minimum of each wanted group in the sorted ``groups`` (``NO_MINIMUM`` where absent)."""
    where = np.minimum(np.searchsorted(groups, wanted), max(len(groups) - 1, 0))
    found = (groups[where] == wanted) if len(groups) else np.zeros(len(wanted), bool)
    return np.where(found, minima[where] if len(groups) else NO_MINIMUM, NO_MINIMUM).astype(ID_DTYPE)


class Step:
    """One step over the places' chunks: which pairs it reduces, which groups each chunk needs,
    and what a place gives once it has their minima."""

    def merge(self, chunks: Sequence) -> Tuple[np.ndarray, ...]:
        """A place's chunks as one."""
        return tuple(np.concatenate(arrays) for arrays in zip(*chunks))

    def pairs(self, chunk) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(groups, values, the groups whose minimum the chunk needs)."""
        raise NotImplementedError

    def finish(self, chunk, minima: np.ndarray, partitions: int) -> Tuple[List, int]:
        """([(key, value)] outputs, how many things changed) of a merged chunk, with the minimum
        of each group it needs."""
        raise NotImplementedError


class Candidates(Step):
    """Band keys -> candidate edges: a place is a segment, its chunk (ids, keys [n, bands]); each
    document sharing a key with others is linked to the key's smallest id (a star per key: the
    components of its clique, with far fewer edges)."""

    def pairs(self, chunk):
        ids, keys = chunk
        flat = keys.reshape(-1)
        return flat, np.repeat(ids, keys.shape[1]), flat

    def finish(self, chunk, minima, partitions):
        _, values, _ = self.pairs(chunk)
        return by_edge_partition(local_stars(*normalized(values, minima)), partitions), 0


class EdgeStep(Step):
    """A step over edges: a place is an edge partition, its chunks edges (with repeats: the copies
    of an edge meet in its place and are merged). ``relink`` gives a place's new edges, which
    go out as their ``local_stars`` (``contract``)."""

    contract = True

    def relink(self, chunk, minima: np.ndarray) -> Tuple[Edges, int]:
        """(the new edges, how many things changed) of a merged chunk."""
        raise NotImplementedError

    def finish(self, chunk, minima, partitions):
        edges, changed = self.relink(chunk, minima)
        return by_edge_partition(local_stars(*edges) if self.contract else edges, partitions), changed

    def merge(self, chunks):
        return normalized(*super().merge(chunks))

    def pairs(self, chunk):
        larger, smaller = chunk
        return larger, smaller, self.wanted(chunk)  # groups: nodes; values: their smaller neighbours

    def wanted(self, chunk) -> np.ndarray:
        return chunk[0]


class LargeStar(EdgeStep):
    """Each node's larger neighbours are linked to m, the smallest of the node and its neighbours:
    the edge (larger, smaller) becomes (larger, m(smaller)). Counts the edges it moved."""

    def wanted(self, chunk):
        return chunk[1]

    def relink(self, chunk, minima):
        larger, smaller = chunk
        centres = np.minimum(smaller, minima)
        return normalized(larger, centres), int(np.count_nonzero(centres != smaller))


class SmallStar(EdgeStep):
    """A node and its smaller neighbours are linked to m, the smallest of them: the edge (larger,
    smaller) becomes (smaller, m(larger)) and (larger, m(larger)). Counts the edges whose smaller
    end is not m (0: every node hangs on one smaller neighbour at most)."""

    def relink(self, chunk, minima):
        larger, smaller = chunk
        return normalized(np.r_[smaller, larger], np.r_[minima, minima]), int(np.count_nonzero(smaller != minima))


def labels(edges: Edges) -> List[Tuple[int, Tuple[np.ndarray, np.ndarray]]]:
    """The rounds' last edges of a place -> (segment, (records, labels)) per segment: each node
    labelled by its smaller neighbour, its component's earliest document once the rounds
    converged (a star). Past the cap a node may have several, in several places: whoever reads
    the labels keeps the smallest (``smallest_labels``)."""
    larger, smaller = edges
    segments, records = split_id(larger)
    return list(split_by(segments, records, smaller))


def smallest_labels(parts: Iterable[Tuple[np.ndarray, np.ndarray]]) -> Dict[int, int]:
    """A segment's (records, labels) parts -> {record: its smallest label}."""
    found: Dict[int, int] = {}
    for records, labelled in parts:
        for record, label in zip(records.tolist(), labelled.tolist()):
            found[record] = min(label, found.get(record, label))
    return found


Request = Tuple[np.ndarray, np.ndarray, np.ndarray, object]  # (groups, partial minima, wanted groups, place)


def contribute(step: Step, place, chunk, partitions: int) -> List[Tuple[int, Request]]:
    """Phase 1 for one chunk of ``place``: (group partition, its partial minima and wants)."""
    groups, values, wanted = step.pairs(chunk)
    groups, minima = group_minima(groups, values)
    wanted = np.unique(wanted)
    have, want = partition_of(groups, partitions), partition_of(wanted, partitions)
    shares: Dict[int, List] = {}
    for partition, (g, m) in split_by(have, groups, minima):
        shares[partition] = [g, m, wanted[:0]]
    for partition, (w,) in split_by(want, wanted):
        shares.setdefault(partition, [groups[:0], minima[:0], None])[2] = w
    return [(partition, (g, m, w, place)) for partition, (g, m, w) in sorted(shares.items())]


def answer(requests: Iterable[Request]) -> List[Tuple[object, Tuple[np.ndarray, np.ndarray]]]:
    """Phase 2 for one group partition: (place, (wanted groups, their minima)) per request."""
    requests = list(requests)
    groups, minima = group_minima(*(np.concatenate(arrays) for arrays in zip(*(r[:2] for r in requests))))
    return [(place, (wanted, look_up(groups, minima, wanted))) for _, _, wanted, place in requests if len(wanted)]


def finish(step: Step, chunks: Sequence, answers: Sequence, partitions: int) -> Tuple[List, int]:
    """Phase 3 for one place: its merged chunks and the minima of the groups they want."""
    chunk = step.merge(chunks)
    groups, minima = group_minima(*(np.concatenate(arrays) for arrays in zip(*answers)))
    return step.finish(chunk, look_up(groups, minima, step.pairs(chunk)[2]), partitions)


def shuffle(outputs: Iterable[Tuple]) -> Dict:
    """(key, value) pairs -> {key: [values]}, keys sorted: a GroupByKey in one process."""
    grouped: Dict = {}
    for key, value in outputs:
        grouped.setdefault(key, []).append(value)
    return dict(sorted(grouped.items()))


def _direct(function: Callable, *args):
    return function(*args)


def arrays_given(value) -> Iterator[np.ndarray]:
    """The numpy arrays in a call's arguments (nested in lists and tuples): what a ``call`` of
    ``run_step`` hands one worker, for the bench and the tests that measure it."""
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from arrays_given(item)


def run_step(step: Step, chunks: Dict, partitions: int, call: Callable = _direct):
    """The three phases of ``step`` over {place: [chunks]} in one process; ``call(f, *args)`` runs
    each phase's call for one chunk or partition (a bench measures them). -> ({key: [outputs]}, changed)."""
    requests = shuffle(
        share
        for place, parts in chunks.items()
        for chunk in parts
        for share in call(contribute, step, place, chunk, partitions)
    )
    answers = shuffle(reply for part in requests.values() for reply in call(answer, part))
    outputs, changed = [], 0
    for place, parts in chunks.items():
        produced, count = call(finish, step, parts, answers.get(place, []), partitions)
        outputs.extend(produced)
        changed += count
    return shuffle(outputs), changed


def run_in_memory(keys_by_segment: Dict[int, Tuple], memory_per_worker: int, rounds: int, call: Callable = _direct):
    """Candidates, ``rounds`` large-star / small-star alternations and the labels, as the mine
    job runs them, in one process, from {segment: (ids, band keys)}, the partitions chosen as
    the job does: ({segment: [(records, labels)]}, changes per step, {key_entries, key_partitions,
    edges, edge_partitions})."""
    sizes = {"key_entries": sum(keys.size for _, keys in keys_by_segment.values())}
    sizes["key_partitions"] = partitions_for(sizes["key_entries"], BYTES_PER_KEY, memory_per_worker)
    places = {segment: [chunk] for segment, chunk in keys_by_segment.items()}
    edges, _ = run_step(Candidates(), places, sizes["key_partitions"], call)
    sizes["edges"] = sum(len(larger) for parts in edges.values() for larger, _ in parts)
    sizes["edge_partitions"] = partitions_for(sizes["edges"], BYTES_PER_EDGE, memory_per_worker)
    return (*components_in_memory(edges, sizes["edge_partitions"], rounds, call), sizes)


def components_in_memory(edges: Dict, partitions: int, rounds: int, call: Callable = _direct):
    """The rounds and the labels from {edge partition: [edges]} (``run_in_memory``)."""
    changes = []
    for _ in range(rounds):
        for step in (LargeStar(), SmallStar()):
            edges, changed = run_step(step, edges, partitions, call)
            changes.append(changed)
    return shuffle(found for parts in edges.values() for chunk in parts for found in call(labels, chunk)), changes
