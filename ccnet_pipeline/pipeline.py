"""Build and run the mine job: read WET -> dedup -> language ID -> Parquet shards, manifest,
stats and quarantine."""
from __future__ import annotations

import json
import logging
from typing import Dict, List, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from ccnet_pipeline.config import MineConfig
from ccnet_pipeline.transforms import (
    BAD,
    DROPPED,
    KEPT,
    NAMESPACE,
    Bucket,
    Deduplicate,
    LanguageId,
    Perplexity,
    QualitySignals,
    Quarantine,
    WriteDropped,
    WriteShards,
    is_remote,
    localize,
    remote_languages,
    write_atomically,
)
from filters.perplexity import Cutoffs, available_languages, format_cutoffs, read_cutoffs

DEFAULT_RUNNER = "FnApiRunner"  # Beam 2.77's DirectRunner first downloads Prism, which fails offline


def list_segments(patterns: Sequence[str]) -> List[str]:
    """The sorted files matching the globs; their order numbers the segments."""
    paths = set()
    for pattern, result in zip(patterns, FileSystems.match(list(patterns))):
        matched = [m.path for m in result.metadata_list if not m.path.endswith("/")]
        if not matched:
            raise FileNotFoundError(f"the input glob matches no file: {pattern}")
        paths.update(matched)
    return sorted(paths)


def build(pipeline: beam.Pipeline, config: MineConfig, segments: Sequence[str], options: Dict) -> None:
    """Add the mine job to ``pipeline``."""
    paths = pipeline | "Segments" >> beam.Create(list(enumerate(segments)))
    deduped = paths | "Deduplicate" >> Deduplicate(config.dedup, config.read)
    scored = deduped[KEPT] | "QualitySignals" >> QualitySignals(config.quality)
    identified = scored[KEPT] | "LanguageId" >> LanguageId(config.lid)
    docs = identified[KEPT]
    if config.lm_dir:
        given = load_cutoffs(config) if config.cutoffs_file else None
        docs, cutoffs = docs | "Perplexity" >> Perplexity(config.lm_dir) | "Bucket" >> Bucket(config.buckets, given)
        cutoffs | "WriteCutoffs" >> beam.Map(write_cutoffs, config.output)
    else:
        cutoffs = pipeline | "NoCutoffs" >> beam.Create([{}])
    summaries = docs | "WriteShards" >> WriteShards(config.output, config.segments_per_shard)
    (
        summaries
        | "CollectSummaries" >> beam.combiners.ToList()
        | "WriteManifest" >> beam.Map(write_manifest, config, options, beam.pvalue.AsSingleton(cutoffs))
    )
    deduped[BAD] | "Quarantine" >> Quarantine(config.output)
    if config.keep_dropped:
        dropped = (deduped[DROPPED], scored[DROPPED], identified[DROPPED]) | "AllDropped" >> beam.Flatten()
        dropped | "WriteDropped" >> WriteDropped(config.output, config.segments_per_shard)


def load_cutoffs(config: MineConfig) -> Cutoffs:
    """The cutoff.csv's columns for the languages that have a model in ``lm_dir``."""
    with_model = set(remote_languages(config.lm_dir) if is_remote(config.lm_dir) else available_languages(config.lm_dir))
    return {lang: values for lang, values in read_cutoffs(localize(config.cutoffs_file)).items() if lang in with_model}


def write_cutoffs(cutoffs: Cutoffs, output: str) -> None:
    text = format_cutoffs(cutoffs)
    write_atomically(f"{output}/cutoffs.csv", lambda stream: stream.write(text.encode("utf-8")))


def write_json(path: str, data) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_atomically(path, lambda stream: stream.write(text.encode("utf-8")))


def write_manifest(summaries: List[Dict], config: MineConfig, options: Dict, cutoffs: Cutoffs) -> None:
    """OUT/manifest.json: documents, characters and files per language and bucket, every file,
    the perplexity cutoffs used, and the exact config that produced them."""
    languages: Dict[str, Dict[str, Dict[str, int]]] = {}
    for summary in summaries:
        language, bucket, _ = summary["path"].split("/")
        entry = languages.setdefault(language, {}).setdefault(
            bucket, {"documents": 0, "characters": 0, "files": 0}
        )
        entry["documents"] += summary["documents"]
        entry["characters"] += summary["characters"]
        entry["files"] += 1
    write_json(
        f"{config.output}/manifest.json",
        {
            "format": "parquet",
            "layout": "<language>/<bucket>/part-XXXXX.parquet",
            "documents": sum(s["documents"] for s in summaries),
            "characters": sum(s["characters"] for s in summaries),
            "languages": languages,
            "files": sorted(summaries, key=lambda s: s["path"]),
            "cutoffs": {
                lang: {
                    "head": values[config.buckets.head_percentile],
                    "tail": values[config.buckets.tail_percentile],
                }
                for lang, values in sorted(cutoffs.items())
            },
            "config": config.to_json(),
            "pipeline_options": options,
        },
    )


def collect_stats(result) -> Dict:
    """Every counter of the job, plus the same numbers grouped for reading."""
    counters = {}
    for metric in result.metrics().query(beam.metrics.MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        name = metric.key.metric.name
        counters[name] = counters.get(name, 0) + (metric.committed or 0)
    counters = dict(sorted(counters.items()))

    def with_prefix(prefix: str) -> Dict[str, int]:
        return {k[len(prefix) :]: v for k, v in counters.items() if k.startswith(prefix)}

    per_language: Dict[str, Dict] = {}
    for key, value in with_prefix("output/documents/").items():
        language, bucket = key.split("/")
        per_language.setdefault(language, {})[bucket] = {
            "documents": value,
            "characters": counters.get(f"output/characters/{key}", 0),
        }
    return {
        "documents_read": counters.get("read/documents", 0),
        "bad_records": with_prefix("read/bad/"),
        "lines_removed_by_dedup": counters.get("dedup/lines_removed", 0),
        "dropped": {**with_prefix("dedup/dropped/"), **with_prefix("quality/dropped/"), **with_prefix("lid/dropped/")},
        "identified_languages": with_prefix("lid/language/"),
        "output": per_language,
        "counters": counters,
    }


def run(config: MineConfig, beam_args: Sequence[str]) -> Dict:
    """Run the job to completion and write OUT/stats.json; returns the stats."""
    segments = list_segments(config.input)
    args = list(beam_args)
    if not any(arg.startswith("--runner") for arg in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    if not any(arg.startswith("--default_sdk_harness_log_level") for arg in args):
        args.append("--default_sdk_harness_log_level=ERROR")  # local workers are chatty at INFO
    options = PipelineOptions(args)
    pipeline = beam.Pipeline(options=options)
    build(pipeline, config, segments, options.get_all_options(drop_default=True))
    logging.info("mining %d segments into %s", len(segments), config.output)
    result = pipeline.run()
    result.wait_until_finish()
    stats = collect_stats(result)
    stats["segments"] = len(segments)
    write_json(f"{config.output}/stats.json", stats)
    return stats
