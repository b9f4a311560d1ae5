"""make bench-perplexity: the SentencePiece + KenLM stage against the raw libraries.

Trains reference models for three languages on generated clean text (as `make corpus` does),
then on the same generated web pages times, on one core, for each perplexity mode:
  - the stage: filters.perplexity.LanguageModel.perplexity (CCNet normalization + pieces + score);
  - the raw libraries on the same text, normalized beforehand, nothing else: sp.encode(...,
    out_type=str) + kenlm.Model.score of the whole document (ccnet) or of each line (lines);
and prints documents/s for both and their ratio (target <= 1.2), then the whole mine job's
documents/s with the stage on and off.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import kenlm
import sentencepiece

from bench.common import drop_lookup_tables, mine_quietly, reference_models, take_turns
from ccnet_pipeline.samples.embedded import SampleConfig, generate_pages, generate_sample
from filters.normalize import normalize_for_lm, normalize_lines_for_lm
from filters.perplexity import PERPLEXITY_MODES, LanguageModel, model_paths

LANGUAGES = ("en", "de", "fr")


def best_of(repeats, *functions):
    """The fastest of ``repeats`` runs of each function, in seconds, taking turns."""
    return [min(seconds) for seconds in take_turns(functions, repeats)]


def mine_seconds(sample_dir: str, output: str, *extra: str) -> float:
    """The mine job in this process, from scratch, paying its one-time lookup tables as a fresh
    process would."""
    shutil.rmtree(output, ignore_errors=True)
    drop_lookup_tables()
    start = time.perf_counter()
    code = mine_quietly(sample_dir, output, "--direct_num_workers=1", *extra)
    seconds = time.perf_counter() - start
    if code != 0:
        raise SystemExit("mine failed")
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="out/bench-perplexity")
    parser.add_argument("--reference-lines", type=int, default=20000)
    parser.add_argument("--documents", type=int, default=6000)
    args = parser.parse_args(argv)

    lm_dir = os.path.join(args.workdir, "lm")
    reference_models(lm_dir, LANGUAGES, os.path.join(args.workdir, "reference"), args.reference_lines)

    config = SampleConfig(segments=4, docs_per_segment=args.documents // 4, seed=13, bad_records=False)
    pages = [(p.language, p.text) for segment in generate_pages(config) for p in segment if p.language in LANGUAGES]
    n_docs, n_lines = len(pages), sum(text.count("\n") + 1 for _, text in pages)

    stage = {lang: LanguageModel(lm_dir, lang).load() for lang in LANGUAGES}
    raw = {
        lang: (
            sentencepiece.SentencePieceProcessor(model_file=model_paths(lm_dir, lang)[0]),
            kenlm.Model(model_paths(lm_dir, lang)[1]),
        )
        for lang in LANGUAGES
    }

    def run_stage(mode):
        for lang, text in pages:
            stage[lang].perplexity(text, mode)

    # The raw libraries get the text already normalized (outside the timing), so that they
    # encode and score exactly what the stage does.
    normalized = {
        "ccnet": [(lang, [normalize_for_lm(text)]) for lang, text in pages],
        "lines": [(lang, normalize_lines_for_lm(text)) for lang, text in pages],
    }

    def run_raw(mode):
        for lang, sentences in normalized[mode]:
            sp, lm = raw[lang]
            for sentence in sentences:
                lm.score(" ".join(sp.encode(sentence, out_type=str)))

    times = {
        mode: best_of(5, lambda mode=mode: run_stage(mode), lambda mode=mode: run_raw(mode))
        for mode in PERPLEXITY_MODES
    }

    sample_dir = os.path.join(args.workdir, "wet")
    if not os.path.isdir(sample_dir):
        generate_sample(sample_dir, config)
    t_off = mine_seconds(sample_dir, os.path.join(args.workdir, "corpus-off"))
    t_on = mine_seconds(sample_dir, os.path.join(args.workdir, "corpus-on"), "--lm-dir", lm_dir)
    total = sum(len(segment) for segment in generate_pages(config))

    print(
        f"input: {n_docs} generated pages in {', '.join(LANGUAGES)} ({n_lines} lines); models trained on "
        f"{args.reference_lines} generated lines per language"
    )
    for mode, (t_stage, t_raw) in times.items():
        print(f"--perplexity {mode}:")
        print(
            f"  SentencePiece+KenLM stage (normalize, pieces, score): {n_docs / t_stage:8.0f} docs/s/core ({t_stage:.2f} s)"
        )
        print(
            f"  raw sp.encode + kenlm.Model.score:                   {n_docs / t_raw:8.0f} docs/s/core ({t_raw:.2f} s)"
        )
        print(f"  stage / raw time: {t_stage / t_raw:.2f}  (target <= 1.2)")
    print(
        f"whole mine job, 1 worker, {total} pages: {total / t_off:.0f} docs/s without perplexity, "
        f"{total / t_on:.0f} docs/s with --lm-dir ({t_off:.1f} s without, {t_on:.1f} s with)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
