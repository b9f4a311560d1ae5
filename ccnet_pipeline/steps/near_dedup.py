"""Near-duplicate removal on Beam: MinHash LSH per language, the clusters found as connected
components without any worker holding the whole graph.

``NearDedup`` takes the batches that language ID keeps and gives them back without their
near-duplicates, in five steps, each of bounded shuffles:

1. ``Sign``: per segment, each document's MinHash signature and band keys (``filters.minhash``),
   committed to ``_work/minhash/NNNNN.npz`` (a rerun reads those of committed segments back, so
   that every run clusters the same documents); the documents wait in ``NNNNN.pkl`` beside it;
2. candidate pairs: documents sharing a band key are linked to the key's smallest id;
3. connected components: ``config.rounds`` alternations of large-star and small-star steps: a component
   becomes a star on its smallest id, the earliest document by segment and record. Every step
   gives out its place's edges as the stars of their own components (local contraction), so
   that a graph whose edges fit one partition is done after one step, whatever its shape.
   Steps 2 and 3 are ``RunStep``s (``filters.minhash_clusters``): two shuffles each, partial minima by
   group, then the answers joined with the edges by edge partition, so that no worker is given
   a whole group, not even the neighbours of a template's hub or the pages of a frequent key;
   each document is then labelled by its smaller neighbour;
4. the kept document of each cluster looked up in its segment's file, once per cluster and
   asking segment: its url, and with ``verify`` its signature, against which each document's
   estimated Jaccard is checked;
5. per segment, the documents whose cluster is another's are dropped as ``near_duplicate`` (with
   ``cluster``, the kept document's id, and ``kept``, its url, in the quarantine); the clusters
   and kept documents are side inputs looked up by segment, so the batches are not shuffled.

Ids are ``segment index << 32 | record index`` and every choice is a minimum, so that the
clusters and the kept documents are the same on every runner and every rerun.
"""

from __future__ import annotations

import io
import pickle
from collections import Counter
from typing import Dict, Iterable, Tuple

import apache_beam as beam
import numpy as np

from ccnet_pipeline.steps.batches import COUNTERS, DROPPED, KEPT, PROGRESS, Batch, counter, raise_counters
from ccnet_pipeline.steps.stage import split_results
from filters import minhash_clusters
from filters.dedup import partitions_for
from filters.minhash import MinHashConfig, band_keys, estimated_jaccard, signatures
from filters.stage import Counted
from toolkit import storage
from toolkit.corpus import Layout

NEAR_DUPLICATE, STAGE = "near_duplicate", "near_dedup"  # the drop reason and its stage's name
ROUNDS_CHANGED, UNCONVERGED = f"{STAGE}/rounds", f"{STAGE}/unconverged"


class NearDuplicates(Counted):
    """Near-dedup's counting of documents: its one drop reason."""

    name = STAGE
    reasons = (NEAR_DUPLICATE,)


def save_minhash(layout: Layout, index: int, arrays: Dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    storage.write_bytes(layout.minhash(index), buffer.getvalue())


def load_minhash(layout: Layout, index: int) -> Dict[str, np.ndarray]:
    with np.load(io.BytesIO(storage.read_bytes(layout.minhash(index)))) as arrays:
        return {name: arrays[name] for name in arrays.files}


class Sign(beam.DoFn):
    """A kept batch -> its segment index (main), its documents written to wait for the clusters
    and their band keys committed, and on ``keys`` (segment index, (ids, keys)). The documents
    wait in the work folder rather than in the runner: the FnApiRunner would hold every batch
    in its own process and move it twice through its data plane (about 1.7 s of a 21 s job
    for 58 MB, measured), while each worker writes and reads its own file."""

    def __init__(self, config: MinHashConfig, layout: Layout):
        self.config = config
        self.layout = layout

    def process(self, batch: Batch):
        index, docs = batch
        records = np.array([record for record, _ in docs], dtype=np.int64)
        languages = [doc["language"] or "" for _, doc in docs]
        sigs = signatures([doc["raw_content"] for _, doc in docs], languages, self.config)
        keys = band_keys(sigs, languages, self.config)
        urls = np.array([doc["url"] for _, doc in docs], dtype=str)  # fixed-width text: no pickle
        arrays = {"records": records, "keys": keys, "urls": urls}
        save_minhash(self.layout, index, {**arrays, "signatures": sigs} if self.config.verify else arrays)
        storage.write_bytes(self.layout.waiting_documents(index), pickle.dumps(docs, protocol=pickle.HIGHEST_PROTOCOL))
        yield index
        yield beam.pvalue.TaggedOutput("keys", (index, (minhash_clusters.document_id(index, records), keys)))


def read_committed_keys(index: int, layout: Layout):
    """A segment committed by an earlier run -> (index, (ids, keys)) from its minhash file."""
    saved = load_minhash(layout, index)
    yield index, (minhash_clusters.document_id(index, saved["records"]), saved["keys"])


CHUNK, REQUEST, ANSWER = 0, 1, 2  # what a value is, in a step's two shuffles


def contribute(element, step: minhash_clusters.Step, partitions: int):
    """A place's chunk -> its requests by group partition, and the chunk itself on its way to its
    place through the same shuffle."""
    place, chunk = element
    for partition, request in minhash_clusters.contribute(step, place, chunk, partitions):
        yield (REQUEST, partition), request
    yield (CHUNK, place), chunk


def answer(element):
    """A group partition's requests -> (place, answer) for each; a place's chunks pass through."""
    (kind, key), values = element
    if kind == CHUNK:
        for chunk in values:
            yield key, (CHUNK, chunk)
    else:
        for place, reply in minhash_clusters.answer(values):
            yield place, (ANSWER, reply)


def finish(element, step: minhash_clusters.Step, partitions: int, name: str):
    """A place's chunks and answers -> the step's outputs; its changes counted under ``name``
    (``progress`` namespace) and yielded on ``changes``."""
    _, values = element
    parts = {CHUNK: [], ANSWER: []}
    for kind, value in values:
        parts[kind].append(value)
    outputs, changed = minhash_clusters.finish(step, parts[CHUNK], parts[ANSWER], partitions)
    yield from outputs
    if name:
        counter(name, PROGRESS).inc(changed)
        yield beam.pvalue.TaggedOutput("changes", (name, changed))


class RunStep(beam.PTransform):
    """(place, chunk) -> the outputs of ``step`` (``filters.minhash_clusters``), in two shuffles: the
    chunks' partial minima by group partition, then the answers with the place's chunks. The
    chunks travel through the first shuffle too, under a key of their own: a Flatten of the
    chunks and the answers would cost every step a third stage on the portable runners, the
    fixed cost that dominates a job of a few segments. With ``name``, also {changes: (name, count)}."""

    def __init__(self, step: minhash_clusters.Step, partitions, name: str = ""):
        super().__init__()
        self.step = step
        self.partitions = partitions
        self.name = name

    def expand(self, chunks):
        finished = beam.FlatMap(finish, self.step, self.partitions, self.name)
        return (
            chunks
            | "Contribute" >> beam.FlatMap(contribute, self.step, self.partitions)
            | "ByGroup" >> beam.GroupByKey()
            | "Answer" >> beam.FlatMap(answer)
            | "ByPlace" >> beam.GroupByKey()
            | "Finish" >> (finished.with_outputs("changes", main="outputs") if self.name else finished)
        )


def wanted_kept(element):
    """(a segment, (records, labels)) -> (the segment of each label's kept document, (labels, segment))."""
    segment, (_, labels) = element
    for kept_segment, (wanted,) in minhash_clusters.split_by(labels >> np.int64(32), labels):
        yield kept_segment, (np.unique(wanted), segment)


def kept_documents(element, layout: Layout, verify: bool):
    """(a kept segment, [(labels, asking segment)]) -> (asking segment, {label: (url, signature?)})
    from the kept segment's file: one entry per label and asking segment, however large the cluster."""
    segment, requests = element
    saved = load_minhash(layout, segment)
    row = {record: i for i, record in enumerate(saved["records"].tolist())}
    for labels, asking in requests:
        rows = [row[record] for record in minhash_clusters.split_id(labels)[1].tolist()]
        found = {}
        for label, kept in zip(labels.tolist(), rows):
            found[label] = (str(saved["urls"][kept]), *((saved["signatures"][kept],) if verify else ()))
        yield asking, found


class Drop(beam.DoFn):
    """A segment index, with the clusters and kept documents of every segment as side inputs
    looked up by segment -> the segment's waiting batch without the documents another one
    stands for (main), those on ``dropped`` with ``cluster``, ``kept`` (and with ``verify``,
    ``similarity``): the ones under the threshold stay."""

    def __init__(self, config: MinHashConfig, layout: Layout):
        self.config = config
        self.layout = layout

    def process(self, index: int, clusters, kept):
        docs = pickle.loads(storage.read_bytes(self.layout.waiting_documents(index)))
        found = {label: about for answers in kept[index] for label, about in answers.items()}
        labelled = {
            record: (label, *found[label])
            for record, label in minhash_clusters.smallest_labels(clusters[index]).items()
        }
        yield from self.split(index, docs, labelled)

    def split(self, index: int, docs, clusters: Dict[int, Tuple]):
        own = load_minhash(self.layout, index) if self.config.verify and clusters else None
        rows = {record: i for i, record in enumerate(own["records"].tolist())} if own is not None else {}
        results = []
        for record, doc in docs:
            if record not in clusters:
                results.append((doc, None))
                continue
            label, kept_url, *signature = clusters[record]
            extra = {"cluster": int(label), "kept": kept_url}
            if signature:
                similarity = float(estimated_jaccard(own["signatures"][rows[record]], signature[0]))
                if similarity < self.config.threshold:
                    results.append((doc, None))
                    continue
                extra["similarity"] = similarity
            results.append(({**doc, **extra}, NEAR_DUPLICATE))
        yield from split_results(index, [record for record, _ in docs], results, STAGE)


def round_counters(changes: Iterable[Tuple[str, int]], cap: int) -> Dict[str, int]:
    """The rounds that still changed the graph (``near_dedup/rounds``) and whether the last of the
    ``cap`` did (``near_dedup/unconverged``: the cap was too low for a long chain of near-duplicates,
    which then keeps a few documents besides its earliest; every dropped one still points to an
    earlier document of its chain); raised as the job's counters."""
    totals: Counter = Counter()
    for name, changed in changes:
        totals[name] += changed
    active = [int(name.rsplit("_", 1)[1]) for name, changed in totals.items() if changed]
    rounds = max(active, default=-1) + 1
    return raise_counters({ROUNDS_CHANGED: rounds, UNCONVERGED: int(rounds >= cap)})


@beam.ptransform_fn
def ChoosePartitions(sizes, bytes_per_entry: int, memory_per_worker: int):
    """Sizes -> one element: the partitions that keep each step's share under ``memory_per_worker``."""
    return (
        sizes
        | "Total" >> beam.CombineGlobally(sum)
        | "Choose" >> beam.Map(partitions_for, bytes_per_entry, memory_per_worker)
    )


class NearDedup(beam.PTransform):
    """(kept batches after language ID, indexes of the segments committed by an earlier run) ->
    {kept: the batches without near-duplicates, dropped: the near-duplicates' batches,
    counters: one element, the rounds the components took (raised as the job's counters)}."""

    def __init__(self, config: MinHashConfig, layout: Layout, memory_per_worker: int):
        super().__init__()
        self.config = config
        self.layout = layout
        self.memory_per_worker = memory_per_worker

    def expand(self, inputs):
        batches, committed = inputs
        signed = batches | "Sign" >> beam.ParDo(Sign(self.config, self.layout)).with_outputs("keys", main="indexes")
        keys = (
            signed["keys"],
            committed | "ReadCommittedKeys" >> beam.FlatMap(read_committed_keys, self.layout),
        ) | "AllKeys" >> beam.Flatten()
        key_partitions = beam.pvalue.AsSingleton(
            keys
            | "KeyEntries" >> beam.MapTuple(lambda _, arrays: arrays[1].size)
            | "KeyPartitions" >> ChoosePartitions(minhash_clusters.BYTES_PER_KEY, self.memory_per_worker)
        )
        edges = keys | "Candidates" >> RunStep(minhash_clusters.Candidates(), key_partitions)
        edge_partitions = beam.pvalue.AsSingleton(
            edges
            | "EdgeCount" >> beam.MapTuple(lambda _, e: len(e[0]))
            | "EdgePartitions" >> ChoosePartitions(minhash_clusters.BYTES_PER_EDGE, self.memory_per_worker)
        )
        changes = []
        for number in range(self.config.rounds):
            for label, step in (("large", minhash_clusters.LargeStar()), ("small", minhash_clusters.SmallStar())):
                name = f"{STAGE}/changes_{number:02d}"
                stepped = edges | f"{label.title()}Star{number:02d}" >> RunStep(step, edge_partitions, name)
                edges = stepped["outputs"]
                changes.append(stepped["changes"])
        clusters = edges | "Labels" >> beam.FlatMapTuple(lambda _, place_edges: minhash_clusters.labels(place_edges))
        kept = (
            clusters
            | "WantedKept" >> beam.FlatMap(wanted_kept)
            | "ByKeptSegment" >> beam.GroupByKey()
            | "KeptDocuments" >> beam.FlatMap(kept_documents, self.layout, self.config.verify)
        )
        # Side inputs looked up by segment (a portable worker fetches one key's values), so that
        # the batches go on to the next stage without a shuffle of every document.
        by_segment = beam.pvalue.AsMultiMap(clusters), beam.pvalue.AsMultiMap(kept)
        split = signed["indexes"] | "Drop" >> beam.ParDo(Drop(self.config, self.layout), *by_segment).with_outputs(
            DROPPED, main=KEPT
        )
        counters = (
            changes
            | "AllChanges" >> beam.Flatten()
            | "RoundCounters" >> beam.combiners.ToList()
            | "Rounds" >> beam.Map(round_counters, self.config.rounds)
        )
        return {KEPT: split[KEPT], DROPPED: split[DROPPED], COUNTERS: counters}
