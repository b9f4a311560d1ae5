"""Build and run the mine job: read WET -> dedup -> language ID -> Parquet shards, manifest,
stats and quarantine. Reading (``steps.read``) happens inside both dedup passes: each segment is
streamed twice, as CCNet does, rather than its documents held between the passes."""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import re
from typing import Dict, List, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystem import FileSystem

from ccnet_pipeline import progress
from ccnet_pipeline.config import ImportConfig, MineConfig
from ccnet_pipeline.plan import Step, step_plan
from ccnet_pipeline.runner import dry_run, new_pipeline
from ccnet_pipeline.stats import JobStats
from ccnet_pipeline.steps.batches import (
    BAD,
    COUNTERS,
    DROPPED,
    FILTER_PASS,
    HASH_PASS,
    IMPORT_PASS,
    KEPT,
    NAMESPACE,
    PERPLEXITIES,
    SEEN,
)
from ccnet_pipeline.steps.commit import CommitSegments, SegmentMarker
from ccnet_pipeline.steps.cutoffs import ComputeCutoffs, ReadPerplexities
from ccnet_pipeline.steps.dedup import Deduplicate
from ccnet_pipeline.steps.import_ccnet import ImportCcnet
from ccnet_pipeline.steps.near_dedup import NearDedup, NearDuplicates
from ccnet_pipeline.steps.read import Reading
from ccnet_pipeline.steps.stage import ApplyStage
from ccnet_pipeline.steps.write import WriteManifestAndStats, WriteShards, write_cutoffs
from filters.dedup import DuplicateLineRemoval, MinLength
from filters.document import segment_names
from filters.perplexity import BucketConfig, Cutoffs, available_languages, read_cutoffs
from toolkit import storage
from toolkit.corpus import Layout


def list_segments(patterns: Sequence[str]) -> List[str]:
    """The sorted entries matching the globs (Beam's glob syntax); their order numbers the
    segments. Directories are skipped, with one warning line naming them. Broken links, link
    loops and other local entries that are not files stay in, also named in one warning line:
    the job counts each as a bad input file (``unreadable_file``) and goes on. A glob that
    matches no readable file at all is an error."""
    paths, directories, unreadable = set(), set(), set()
    for pattern in patterns:
        entries = set(match_local(pattern) if not storage.is_remote(pattern) else storage.match(pattern))
        found_directories = {e for e in entries if e.endswith("/") or (not storage.is_remote(e) and os.path.isdir(e))}
        found_unreadable = {
            e for e in entries - found_directories if not storage.is_remote(e) and not os.path.isfile(e)
        }
        if not entries - found_directories - found_unreadable:
            matched = ", ".join(sorted(entries))
            raise FileNotFoundError(
                f"the input glob matches no file: {pattern}"
                + (f" (only directories or broken links: {matched})" if matched else "")
            )
        paths.update(entries - found_directories)
        directories.update(found_directories)
        unreadable.update(found_unreadable)
    if directories:
        logging.warning(
            "skipping %d directories the input glob matches: %s", len(directories), ", ".join(sorted(directories))
        )
    if unreadable:
        logging.warning(
            "%d input entries are not readable files (broken or looping links...), counted as unreadable_file: %s",
            len(unreadable),
            ", ".join(sorted(unreadable)),
        )
    return sorted(paths)


def match_local(pattern: str) -> List[str]:
    """Every local entry ``pattern`` matches, in Beam's glob syntax (``*`` within a path
    component, ``**`` across), directories and broken links included: Beam's own match drops
    those silently. A pattern without a directory part matches in the current directory."""
    if pattern.endswith("/"):
        pattern += "*"  # as Beam does
    prefix = _GLOB_FREE_PREFIX.match(pattern).group(0)
    if prefix == pattern:
        return [pattern] if os.path.lexists(pattern) else []
    root = posixpath.dirname(prefix)
    matches = re.compile(FileSystem.translate_pattern(pattern)).match
    found = []
    for directory, subdirectories, files in os.walk(root or "."):
        for name in subdirectories + files:
            path = os.path.join(directory, name) if root else os.path.relpath(os.path.join(directory, name))
            if matches(path):
                found.append(path)
    return found


_GLOB_FREE_PREFIX = re.compile(r"^[^[*?]*")


def build(
    pipeline: beam.Pipeline,
    config: MineConfig,
    segments: Sequence[str],
    options: Dict,
    committed: Dict[int, SegmentMarker],
    plan: Optional[Sequence[Step]] = None,
) -> None:
    """Add the mine job to ``pipeline``; ``committed`` holds the markers of segments an earlier
    run committed, which are read back instead of mined again; ``plan``, its document steps
    after line dedup (default: ``step_plan(config)``)."""
    layout = config.layout
    indexed = list(enumerate(zip(segments, segment_names(segments))))
    every = pipeline | "Segments" >> beam.Create(indexed)
    to_mine = pipeline | "SegmentsToMine" >> beam.Create([s for s in indexed if s[0] not in committed])
    earlier = pipeline | "CommittedSegments" >> beam.Create(sorted(committed))
    deduped = (every, to_mine) | "Deduplicate" >> Deduplicate(config.dedup, config.read, layout)
    docs, dropped = deduped[KEPT], [deduped[DROPPED]]

    def kept(out):  # a filtering step's output: its drops set aside, its kept batches go on
        dropped.append(out[DROPPED])
        return out[KEPT]

    counters = [deduped[COUNTERS]]  # the job-level ones; the documents' are counted at the commit
    steps = [Reading, DuplicateLineRemoval, MinLength(config.dedup.min_len)]  # the steps that count, in order
    for step in step_plan(config) if plan is None else plan:
        if step is NearDuplicates:
            out = (docs, earlier) | "NearDedup" >> NearDedup(config.minhash, layout, config.dedup.memory_per_worker)
            docs = kept(out)
            counters.append(out[COUNTERS])
        else:
            docs = kept(docs | type(step).__name__ >> ApplyStage(step))
        steps.append(step)
    results = {SEEN: deduped[SEEN], KEPT: docs, DROPPED: dropped | "AllDropped" >> beam.Flatten(), BAD: deduped[BAD]}
    new = results | "CommitSegments" >> CommitSegments(layout, config.keep_dropped, steps)
    if config.lm_dir:
        perplexities = (
            new[PERPLEXITIES],
            earlier | "ReadPerplexities" >> beam.ParDo(ReadPerplexities(layout)),
        ) | "AllPerplexities" >> beam.Flatten()
        given = load_cutoffs(config) if config.cutoffs_file else None
        cutoffs = perplexities | "Cutoffs" >> ComputeCutoffs(given)
        cutoffs | "WriteCutoffs" >> beam.Map(write_cutoffs, layout)
    else:
        cutoffs = pipeline | "NoCutoffs" >> beam.Create([{}])
    counters = (
        new[COUNTERS],
        pipeline | "CommittedCounters" >> beam.Create([marker.counters for _, marker in sorted(committed.items())]),
        *counters,
    ) | "AllCounters" >> beam.Flatten()
    buckets = config.buckets if config.lm_dir else None
    files = (
        (new[KEPT], earlier)
        | "AllSegments" >> beam.Flatten()
        | "WriteShards" >> WriteShards(layout, config.target_shard_size, buckets, cutoffs, config.output_format)
    )
    used = cutoffs | "CutoffsUsed" >> beam.Map(cutoffs_used, config.buckets)
    (files, counters, used) | "WriteManifestAndStats" >> WriteManifestAndStats(
        layout, config.output_format, config.to_json(), options
    )


def committed_segments(layout: Layout, segments: Sequence[str]) -> Dict[int, SegmentMarker]:
    """The markers of segments committed by an earlier run of this job, by segment index."""
    markers = {}
    for path in storage.match(layout.markers):
        marker = SegmentMarker.read(path)
        if marker.index < len(segments) and segments[marker.index] == marker.path:
            markers[marker.index] = marker
    return markers


def load_cutoffs(config: MineConfig) -> Cutoffs:
    """The cutoff.csv's columns for the languages that have a model in ``lm_dir``."""
    with_model = set(available_languages(config.lm_dir))
    return {lang: values for lang, values in read_cutoffs(config.cutoffs_file).items() if lang in with_model}


def cutoffs_used(cutoffs: Cutoffs, buckets: BucketConfig) -> Dict[str, Dict[str, float]]:
    """Per language, the head and tail perplexity cutoffs the buckets were cut at."""
    return {
        lang: {"head": values[buckets.head_percentile], "tail": values[buckets.tail_percentile]}
        for lang, values in sorted(cutoffs.items())
    }


def run(config: MineConfig, segments: Sequence[str], beam_args: Sequence[str]) -> Optional[JobStats]:
    """Run the job on ``segments`` (``list_segments`` of the input, listed once) to completion,
    resuming after the segments an earlier run committed; returns the stats it wrote (None
    after a dry run, which translates the job and runs nothing)."""
    execute(config, segments, beam_args)
    return finished_stats(config.layout)


def execute(
    config: MineConfig,
    segments: Sequence[str],
    beam_args: Sequence[str],
    progress_seconds: float = progress.REPORT_SECONDS,
    plan: Optional[Sequence[Step]] = None,
):
    """``run``, returning Beam's result of the job (its metrics: ``job_counters``); every
    ``progress_seconds`` it prints how far the job got (``progress.reporting``), if that changed.
    ``plan``: the document steps after line dedup, as ``build`` takes them."""
    pipeline, options = new_pipeline(beam_args)
    layout = config.layout
    committed = committed_segments(layout, segments)
    build(pipeline, config, segments, options, committed, plan)
    logging.info(
        "mining %d segments into %s (%d committed by an earlier run)", len(segments), config.output, len(committed)
    )
    hashed = {Layout.segment_of(path) for path in storage.match(layout.hash_files)}
    passes = [
        progress.Pass(HASH_PASS, "hashing", tuple(i for i in range(len(segments)) if i not in hashed)),
        progress.Pass(FILTER_PASS, "filtering", tuple(i for i in range(len(segments)) if i not in committed)),
    ]
    report = progress.reporting(layout, segments, passes, count_commits=True, seconds=progress_seconds)
    return finish(pipeline, layout, report)


def finish(pipeline: beam.Pipeline, layout: Layout, watch=None):
    """Run ``pipeline`` to its end (inside the context manager ``watch``, if any), then mark
    the job's output complete; Beam's result."""
    dry = dry_run(pipeline.options)
    with (None if dry else watch) or contextlib.nullcontext():
        result = pipeline.run()
        result.wait_until_finish()
    if not dry:  # a dry run ran nothing: nothing to mark complete
        mark_complete(layout)
    return result


def job_counters(result, namespace: str = NAMESPACE) -> Dict[str, int]:
    """The committed Beam counters of a finished job, summed over the steps that raised them;
    the attempted ones where the runner commits none (Beam's portable Spark runner)."""
    from apache_beam.metrics.metric import MetricsFilter

    totals: Dict[str, int] = {}
    for metric in result.metrics().query(MetricsFilter().with_namespace(namespace))["counters"]:
        value = metric.committed if metric.committed is not None else metric.attempted
        totals[metric.key.metric.name] = totals.get(metric.key.metric.name, 0) + value
    return dict(sorted(totals.items()))


def run_import(config: ImportConfig, files: Sequence[str], beam_args: Sequence[str]) -> Optional[JobStats]:
    """Convert CCNet output ``files`` into a Parquet corpus at ``config.output`` (shards,
    manifest, stats, quarantine); returns the stats it wrote."""
    pipeline, options = new_pipeline(beam_args)
    layout = config.layout
    passes = [progress.Pass(IMPORT_PASS, "converting", tuple(range(len(files))))]
    converted = (
        pipeline
        | "Files" >> beam.Create(list(enumerate(zip(files, segment_names(files)))))
        | "ImportCcnet" >> ImportCcnet(layout)
    )
    no_cutoffs = pipeline | "NoCutoffs" >> beam.Create([{}])
    (converted[KEPT], converted[COUNTERS], no_cutoffs) | "WriteManifestAndStats" >> WriteManifestAndStats(
        layout, "parquet", config.to_json(), options
    )
    finish(pipeline, layout, progress.reporting(layout, files, passes, prefix="import-ccnet"))
    return finished_stats(layout)


def is_complete(layout: Layout) -> bool:
    return storage.exists(layout.complete)


def finished_stats(layout: Layout) -> Optional[JobStats]:
    """The stats.json of the finished job at ``layout``; None when nothing is marked done (a
    dry run translated the job and ran nothing)."""
    return JobStats.read(layout.stats) if is_complete(layout) else None


def mark_complete(layout: Layout) -> None:
    """Drop the committed intermediates (the shards hold the documents now) and mark the job
    done, so that running the same command again changes nothing."""
    storage.delete([path for pattern in layout.intermediates for path in storage.match(pattern, temporaries=True)])
    storage.write_bytes(layout.complete, b"complete\n")
