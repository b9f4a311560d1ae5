"""python -m ccnet_pipeline {mine,estimate,import-ccnet,download,sample,report} ...

Every flag ``mine`` or ``import-ccnet`` does not know is passed to Beam unchanged (``--runner=DataflowRunner``,
``--direct_num_workers=2 --direct_running_mode=multi_processing``, ...); one that Beam does not know either
is an error that names it and the nearest valid flag, before any work starts."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shutil
import sys
from typing import Dict, List, Optional, Tuple

from ccnet_pipeline import pipeline
from ccnet_pipeline.config import ImportConfig, MineConfig
from ccnet_pipeline.download import DownloadConfig, DumpSelection
from ccnet_pipeline.estimate import EstimateConfig, estimate, spread
from ccnet_pipeline.report import MIN_DOCUMENTS
from ccnet_pipeline.runner import TESTED_RUNNERS, check_beam_args, check_runner
from ccnet_pipeline.samples.embedded import SampleConfig
from ccnet_pipeline.stats import JobStats, OutputCounts
from filters.perplexity import BUCKETS, LanguageModel, available_languages
from lid.languages import languages_without_label
from lid.model import LanguageIdentifier, LidConfig
from toolkit import storage
from toolkit.cli import UsageError, add_config_arguments, build_config, given, run_cli
from toolkit.corpus import Layout


class _DropBeamImportNoise(logging.Filter):
    """Beam warns on import that optional GCP client libraries are missing; they are optional."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("apitools not found")


def _mine_parser(sub) -> None:
    mine = sub.add_parser(
        "mine", allow_abbrev=False, help="WET files -> deduplicated, language-identified Parquet shards"
    )
    source = mine.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="glob of WET files, e.g. 'data/*.warc.wet.gz'")
    source.add_argument("--dump", help="a CommonCrawl dump, e.g. CC-MAIN-2019-09: download what is missing, then mine")
    add_config_arguments(mine, MineConfig)
    _download_arguments(mine)
    mine.add_argument(
        "--overwrite",
        action="store_true",
        help="replace what --output holds when it is another job's output (the same job resumes)",
    )
    _runner_arguments(mine)


def _runner_arguments(parser) -> None:
    parser.add_argument(
        "--allow-untested-runner",
        action="store_true",
        help=f"run on a Beam runner the job's tests do not cover (tested: {', '.join(TESTED_RUNNERS)})",
    )


def _download_arguments(parser) -> None:
    add_config_arguments(parser, DumpSelection, prefix="selection.")
    add_config_arguments(parser, DownloadConfig, prefix="download.")


def _download_parser(sub) -> None:
    download = sub.add_parser("download", help="fetch a CommonCrawl dump's WET files into a cache")
    download.add_argument("--dump", required=True, help="e.g. CC-MAIN-2019-09")
    _download_arguments(download)


def _download_configs(args) -> Tuple[DumpSelection, DownloadConfig]:
    """What ``args`` select of ``args.dump`` and how to fetch it, checked before any request."""
    selection = build_config(DumpSelection, given(args, "selection."), {"dump": args.dump})
    return selection, build_config(DownloadConfig, given(args, "download."), {"progress": sys.stderr.isatty()})


def _download(args, sample: Optional[int] = None) -> Tuple[List[str], int]:
    """Fetch the selected WET files of ``args.dump`` (with ``sample``, only that many of them,
    ``spread`` over the selection); their local paths and the number selected. Fails clearly,
    with the list of files that could not be fetched after every retry."""
    from ccnet_pipeline.download import Downloader

    selection, config = _download_configs(args)
    downloader = Downloader(config)
    try:
        selected = selection.select(downloader.list_wet_paths(selection.dump))
    except RuntimeError as error:
        raise UsageError(str(error)) from None
    fetched = selected if sample is None else spread(selected, sample)
    failures = downloader.fetch_all(fetched)
    if failures:
        report = "\n".join(f"  {path}: {reason}" for path, reason in failures)
        raise UsageError(f"{len(failures)} of {len(fetched)} files could not be downloaded:\n{report}")
    print(f"{len(fetched)} WET files of {selection.dump} are in {config.cache}")
    return [os.path.join(config.cache, path) for path in fetched], len(selected)


def _import_parser(sub) -> None:
    imported = sub.add_parser(
        "import-ccnet",
        allow_abbrev=False,
        help="CCNet output (or Dolma-wrapped CCNet) -> this project's Parquet corpus",
    )
    add_config_arguments(imported, ImportConfig)
    imported.add_argument(
        "--overwrite", action="store_true", help="replace what --output holds when it is another job's output"
    )
    _runner_arguments(imported)


def _import(args, beam_args: List[str]) -> int:
    config = build_config(ImportConfig, given(args)).with_absolute_paths()
    files = pipeline.list_segments(config.input)
    _prepare_output(config.layout, {"config": config.to_json(), "segments": files}, args.overwrite)
    return _run_once(config.layout, lambda: pipeline.run_import(config, files, beam_args))


def _run_once(layout: Layout, run_job) -> int:
    """Run the job unless its output folder holds its finished output already; print its summary."""
    output, stats = layout.root, pipeline.finished_stats(layout)
    if stats is not None:
        print(f"{output} already holds this job's finished output")
    else:
        stats = run_job()
    if stats is None:
        print(f"dry run: the job was translated and submitted nowhere; nothing in {output} is marked done")
        return 0
    _print_summary(stats, output)
    return 0


def _print_summary(stats: JobStats, output: str) -> None:
    print(f"read {stats.documents_read} documents from {stats.segments} segments into {output}")
    print(
        f"dedup removed {stats.lines_removed_by_dedup} lines; dropped: {stats.dropped}; bad records: {stats.bad_records}"
    )
    mixed = stats.mixed_pages
    if mixed.split:
        print(f"{mixed.split} pages in several languages split into {mixed.parts} rows, one per language")
    if mixed.dropped:
        print(f"{mixed.dropped} pages in several languages dropped as mixed")
    if "near_dedup/rounds" in stats.counters:
        print(f"near-dedup dropped {stats.dropped.get('near_duplicate', 0)} near-duplicate documents")
    invalid_dates = stats.counters.get("read/invalid_date", 0)
    if invalid_dates:
        print(f"{invalid_dates} documents have no valid WARC-Date: kept, with a null date_download")
    escaped = stats.counters.get("read/url_bytes_escaped", 0)
    if escaped:
        print(f"{escaped} URLs have bytes that are not UTF-8: kept, those bytes percent-encoded (caf%E9)")
    print(format_output_table(stats.output))


def format_output_table(output: Dict[str, Dict[str, OutputCounts]]) -> str:
    """Documents per language in each bucket the job wrote (head/middle/tail with models, all without),
    their total and their characters."""
    present = [b for b in BUCKETS if any(b in buckets for buckets in output.values())]
    lines = ["  " + f"{'language':9s}" + "".join(f"{b:>8s}" for b in present) + f"{'total':>8s}{'characters':>12s}"]
    for language, buckets in sorted(output.items()):
        counts = [buckets[b].documents if b in buckets else 0 for b in present]
        characters = sum(bucket.characters for bucket in buckets.values())
        lines.append(f"  {language:9s}" + "".join(f"{n:8d}" for n in counts) + f"{sum(counts):8d}{characters:12d}")
    return "\n".join(lines)


def _report_parser(sub) -> None:
    report = sub.add_parser("report", help="per language: documents kept and dropped by language ID, and a PNG")
    report.add_argument("output", help="a corpus folder (the mine job's --output)")
    report.add_argument("--png", help="where to draw the score histograms (default: OUTPUT/lid_report.png)")
    report.add_argument(
        "--min-documents",
        type=int,
        default=MIN_DOCUMENTS,
        help=f"labels with fewer documents get a row in the table, no panel in the PNG (default: {MIN_DOCUMENTS})",
    )


def _report(args) -> int:
    from ccnet_pipeline.report import report

    layout = Layout(args.output)
    png = args.png or layout.path("lid_report.png")
    print(report(layout, png, args.min_documents))
    print(f"wrote {png}")
    return 0


def _sample_parser(sub) -> None:
    sample = sub.add_parser("sample", help="generate the embedded multilingual WET sample")
    sample.add_argument("--output", required=True, help="folder for the generated *.warc.wet.gz")
    sample.add_argument(
        "--reference-lines", type=int, default=3000, help="clean lines per language in OUTPUT/reference/"
    )
    add_config_arguments(sample, SampleConfig)


def _prepare_output(layout: Layout, run: Dict, overwrite: bool) -> None:
    """Create the corpus folder, or resume the run it holds when ``run`` (config and input
    segments) is the same; fail clearly when it cannot be written or holds other data."""
    output = layout.root
    if storage.is_remote(output):
        return  # object stores have no folders to check; Beam reports write errors there
    run = json.loads(json.dumps(run))  # tuples as lists, as the file holds them
    if os.path.isdir(output) and os.listdir(output):
        if os.path.exists(layout.run_file) and storage.read_json(layout.run_file) == run:
            return  # the same job: resume it
        is_corpus = any(os.path.exists(p) for p in (layout.manifest, layout.stats, layout.work))
        if not overwrite:
            raise UsageError(f"output folder {output} holds another job's output; pass --overwrite to replace it")
        if not is_corpus:
            raise UsageError(f"output folder {output} is not empty and holds no corpus; refusing to overwrite it")
        shutil.rmtree(output)
    try:
        storage.write_json(layout.run_file, run)
    except OSError as error:
        raise UsageError(f"cannot write to output folder {output}: {error.strerror or error}") from None


def _check_language_models(lm_dir: str) -> None:
    """Every model pair in ``lm_dir`` loads: a missing half or a corrupt file fails here,
    not on a worker. (KenLM binaries are memory-mapped, so this is quick.) On shared storage
    the pairs are only listed: workers fetch each language when they first need it."""
    if storage.is_remote(lm_dir):
        if not available_languages(lm_dir):
            raise ValueError(f"{lm_dir} holds no <lang>.sp.model + <lang>.arpa.bin pair")
        return
    languages = available_languages(lm_dir)
    names = os.listdir(lm_dir)
    halves = sorted({n.split(".")[0] for n in names if n.endswith((".sp.model", ".arpa.bin"))} - set(languages))
    if halves:
        raise ValueError(f"{lm_dir}: {', '.join(halves)} lack(s) a .sp.model or .arpa.bin file")
    if not languages:
        raise ValueError(f"{lm_dir} holds no <lang>.sp.model + <lang>.arpa.bin pair")
    for language in languages:
        LanguageModel(lm_dir, language).load()


def _warn_of_languages_without_label(identifier: LanguageIdentifier, lid: LidConfig) -> None:
    """A warning that names the selected languages the LID model has no label for: no
    threshold keeps their documents."""
    missing = languages_without_label(identifier.languages(), lid.languages, rules=lid.mode != "ccnet")
    if missing:
        model = f"the LID model {os.path.basename(lid.model_path)}"
        models = f"{model} has no" if lid.mode == "ccnet" else f"neither {model} nor CLD3 has a"
        print(
            f"warning: {models} label for {', '.join(missing)}:"
            " the job keeps no document in these languages (docs/language-id.md: which model decides which language)",
            file=sys.stderr,
        )


def _mine(args, beam_args: List[str]) -> int:
    config = _checked_mine_config(args)
    if args.dump:
        config = dataclasses.replace(config, input=tuple(_download(args)[0])).with_absolute_paths()
    segments = pipeline.list_segments(config.input)
    _prepare_output(config.layout, {"config": config.to_json(), "segments": segments}, args.overwrite)
    return _run_once(config.layout, lambda: pipeline.run(config, segments, beam_args))


def _checked_mine_config(args) -> MineConfig:
    """The mine job's config from its flags, everything it names checked before a download of
    --dump or any work starts."""
    config = build_config(MineConfig, given(args), {"input": (args.input or args.dump,)}).with_absolute_paths()
    if args.dump:
        _download_configs(args)
    identifier = config.lid.identifier()
    identifier.model  # noqa: B018 -- a missing or corrupt model fails here, not on a worker
    if identifier.neighbours is not None:
        identifier.neighbours.model  # noqa: B018 -- the same for the neighbours model
    if config.lm_dir:
        _check_language_models(config.lm_dir)
    if config.cutoffs_file:
        pipeline.load_cutoffs(config)  # a malformed file fails here
    _warn_of_languages_without_label(identifier, config.lid)
    return config


def _estimate_parser(sub) -> None:
    estimate = sub.add_parser(
        "estimate",
        allow_abbrev=False,
        help="the mine job's cost on a whole dump (or input), from a few of its WET files mined here",
    )
    source = estimate.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="glob of WET files, e.g. 'data/*.warc.wet.gz'")
    source.add_argument("--dump", help="a CommonCrawl dump, e.g. CC-MAIN-2019-09: only the sample is downloaded")
    add_config_arguments(estimate, MineConfig)
    _download_arguments(estimate)
    add_config_arguments(estimate, EstimateConfig, prefix="estimate.")
    _runner_arguments(estimate)


def _estimate(args, beam_args: List[str]) -> int:
    config = _checked_mine_config(args)
    options = build_config(EstimateConfig, given(args, "estimate."))
    if beam_args:
        print(f"not used by the estimate, whose sample runs here on the FnApiRunner: {' '.join(beam_args)}")
    if args.dump:
        sample, segments = _download(args, options.sample_segments)
    else:
        listed = pipeline.list_segments(config.input)
        sample, segments = spread(listed, options.sample_segments), len(listed)
    print("\n".join(estimate(config, sample, segments, options).lines()))
    return 0


def _sample(args) -> int:
    from ccnet_pipeline.samples.embedded import generate_reference_text, generate_sample

    config = build_config(SampleConfig, given(args))
    paths = generate_sample(args.output, config)
    reference = os.path.join(args.output, "reference")
    texts = generate_reference_text(reference, lines=args.reference_lines, seed=config.seed)
    print(
        f"wrote {len(paths)} WET segments to {args.output} and reference text for {len(texts)} languages to {reference}"
    )
    return 0


COMMANDS = {"mine": _mine, "import-ccnet": _import, "estimate": _estimate}  # flags they do not know go to Beam


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ccnet_pipeline", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _mine_parser(sub)
    _estimate_parser(sub)
    _import_parser(sub)
    _download_parser(sub)
    _sample_parser(sub)
    _report_parser(sub)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().addFilter(_DropBeamImportNoise())

    def run(args, rest: List[str]) -> int:
        if args.command in COMMANDS:
            check_beam_args(rest, sub.choices[args.command])
            check_runner(rest, args.allow_untested_runner)
            return COMMANDS[args.command](args, rest)
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        if args.command == "download":
            _download(args)
            return 0
        return _report(args) if args.command == "report" else _sample(args)

    return run_cli(run, parser, argv, known_only=True)
