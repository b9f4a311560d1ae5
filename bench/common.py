"""Helpers shared by the benchmarks."""

import io
import os
import sys
import time
from typing import Callable, List, Sequence

from filters import normalize, quality


def drop_lookup_tables() -> None:
    """Forget the lookup tables the stages build once per process, so that a measurement pays
    for them as a fresh worker process would."""
    for table in (
        normalize._dedup_table,
        normalize._strict_dedup_table,
        normalize._lm_table,
        normalize._lm_lookup,
        normalize._lm_expanding,
        quality._char_classes,
    ):
        table.cache_clear()


def input_arguments(parser, workdir: str) -> None:
    """The flags of the benchmarks that run the whole job on ``bench_wet``'s input, taking turns."""
    parser.add_argument("--documents", type=int, default=20000)
    parser.add_argument("--segments", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", default=workdir)


def take_turns(functions: Sequence[Callable[[], object]], rounds: int) -> List[List[float]]:
    """Seconds of every call of each function over ``rounds`` rounds; the functions take turns
    within a round, so that whatever else loads the machine weighs on all of them alike."""
    times: List[List[float]] = [[] for _ in functions]
    for _ in range(rounds):
        for function, seconds in zip(functions, times):
            start = time.perf_counter()
            function()
            seconds.append(time.perf_counter() - start)
    return times


def mine_quietly(sample_dir: str, output: str, *beam_args: str) -> int:
    """``python -m ccnet_pipeline mine`` in this process on the WET files of ``sample_dir``, all
    100 languages, its summary swallowed; the exit code."""
    from ccnet_pipeline.cli import main

    argv = ["mine", "--input", os.path.join(sample_dir, "*.warc.wet.gz"), "--output", output, "--langs", "100"]
    stdout, sys.stdout = sys.stdout, io.StringIO()
    try:
        return main([*argv, *beam_args])
    finally:
        sys.stdout = stdout


def bench_wet(folder: str, documents: int = 20000, segments: int = 8) -> List[str]:
    """The benchmarks' WET input, generated once into ``folder``: ``documents`` pages of 2-5 KB
    (9-18 body lines) in the sample's 12 languages, with boilerplate and duplicates, no junk or
    bad records; the sorted paths."""
    import glob
    import shutil

    from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample

    per_segment = documents // segments
    config = SampleConfig(
        segments=segments,
        docs_per_segment=per_segment,
        paragraphs=(9, 18),
        junk_rate=0.0,
        mixed_rate=0.0,
        seed=7,
        bad_records=False,
    )
    marker = os.path.join(folder, f".{segments}x{per_segment}")
    if not os.path.exists(marker):
        shutil.rmtree(folder, ignore_errors=True)
        generate_sample(folder, config)
        open(marker, "w").close()
    return sorted(glob.glob(os.path.join(folder, "*.warc.wet.gz")))


def reference_models(lm_dir: str, languages, text_dir: str, lines: int = 20000) -> None:
    """A SentencePiece + KenLM pair per language in ``lm_dir``, trained once on ``lines``
    generated clean lines per language (written to ``text_dir``), as `make corpus` does."""
    from ccnet_pipeline.samples.embedded import generate_reference_text
    from filters.perplexity import model_paths
    from filters.train_lm import TrainLmConfig, train_language_model

    missing = [lang for lang in languages if not os.path.exists(model_paths(lm_dir, lang)[1])]
    if missing:
        generate_reference_text(text_dir, lines=lines, seed=11)
        for lang in missing:
            train_language_model(TrainLmConfig(lang, (os.path.join(text_dir, f"{lang}.txt"),), lm_dir))
