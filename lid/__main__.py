"""python -m lid {calibrate,evaluate} ...

calibrate: per-language thresholds for a fastText LID model from labelled text, written as the
CSV ``--lang-thresholds`` reads, with a report of each language's recall before and after.
evaluate: what a LID setup (the mine job's flags) keeps of labelled text, per language."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
from typing import Dict, List, Mapping, Optional

from lid.calibrate import (
    CalibrationConfig,
    LanguageCalibration,
    Outcome,
    build_documents,
    calibrate,
    labelled_sentences,
    outcomes,
    predict,
    summarize,
)
from lid.model import LanguageIdentifier, LidConfig, write_thresholds
from toolkit import storage
from toolkit.cli import add_config_arguments, build_config, given, run_cli
from toolkit.languages import XLMR_CODES


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("labelled text (one or more)")
    data.add_argument(
        "--text-dir", action="append", default=[], help="folder of <code>.txt (a sentence a line) or <code>/<split>.tsv"
    )
    data.add_argument("--tsv", action="append", default=[], help="TSV with a header, e.g. UDHR's udhr_paragraphs.tsv")
    data.add_argument("--splits", default="", help="the <split>.tsv files of --text-dir folders, e.g. train,dev (all)")
    data.add_argument("--language-column", default="language", help="--tsv column of language codes (UDHR: bcp47)")
    data.add_argument("--text-column", default="text", help="--tsv / <split>.tsv column of text (UDHR: paragraph)")


def _documents(args, per_document: int):
    if not args.text_dir and not args.tsv:
        raise ValueError("give labelled text: --text-dir DIR or --tsv FILE")
    splits = [split.strip() for split in args.splits.split(",") if split.strip()]
    sentences = labelled_sentences(args.text_dir, args.tsv, splits, args.language_column, args.text_column)
    documents = build_documents(sentences, per_document)
    if not documents:
        raise ValueError("the labelled text makes no document")
    return documents


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _summary_line(name: str, by_language: Mapping[str, Outcome]) -> str:
    s = summarize(by_language)
    return (
        f"{name}: kept with the correct language {_percent(s.kept_correct)}, with a wrong one {_percent(s.kept_wrong)}"
        f" ({s.documents} documents in {s.languages} XLM-R languages); other languages' documents kept"
        f" {_percent(s.others_kept)} of {s.others}"
    )


def _calibrate(args) -> int:
    config = build_config(CalibrationConfig, given(args))
    documents = _documents(args, config.sentences_per_document)
    identifier = LanguageIdentifier(storage.localize(config.model_path), mode="spaced")
    predictions = predict(identifier, documents)
    calibrated: Dict[str, LanguageCalibration] = calibrate(predictions, config)
    selected = [code for code in XLMR_CODES if code in set(identifier.languages()) | set(calibrated)]
    before = outcomes(predictions, dict.fromkeys(selected, config.max_threshold), config.max_threshold)
    thresholds = {language: result.threshold for language, result in calibrated.items()}
    after = outcomes(predictions, {**dict.fromkeys(selected, config.max_threshold), **thresholds}, config.max_threshold)
    print(f"{'language':<9} {'documents':>9} {'given':>6} {'threshold':>9} {'precision':>9} {'recall':>15}")
    report = {}
    for language in sorted(set(before) & set(XLMR_CODES)):
        result = calibrated.get(language)
        recall = lambda table, language=language: table[language].kept_correct / table[language].documents
        report[language] = {
            **(result._asdict() if result else {}),
            "recall_before": recall(before),
            "recall_after": recall(after),
        }
        threshold = f"{result.threshold:.2f}{'' if result.reached else '*'}" if result else "-"
        precision = f"{result.precision:.3f}" if result else "-"
        given_count = result.documents if result else 0
        print(
            f"{language:<9} {before[language].documents:>9} {given_count:>6} {threshold:>9} {precision:>9}"
            f" {_percent(recall(before)):>6} -> {_percent(recall(after)):>6}"
        )
    print(f"* target precision not reached at {config.max_threshold}: kept there")
    print(_summary_line(f"one threshold {config.max_threshold}", before))
    print(_summary_line("calibrated", after))
    write_thresholds(args.out, thresholds)
    model_file = storage.localize(config.model_path)
    details = {  # the model by name and digest: a path would name this machine's folders
        "config": {**dataclasses.asdict(config), "model_path": os.path.basename(config.model_path)},
        "model_sha256": hashlib.sha256(storage.read_bytes(model_file)).hexdigest(),
        "data": {"text_dir": args.text_dir, "tsv": args.tsv, "splits": args.splits, "documents": len(documents)},
        "languages": report,
    }
    storage.write_json(args.out.removesuffix(".csv") + ".calibration.json", details)
    print(f"wrote {len(thresholds)} thresholds to {args.out}")
    return 0


def _evaluate(args) -> int:
    config = build_config(LidConfig, given(args))
    documents = _documents(args, args.sentences_per_document)
    predictions = predict(LanguageIdentifier(storage.localize(config.model_path), config.mode), documents)
    by_language = outcomes(predictions, config.threshold_of(), config.threshold)
    print(f"{'language':<9} {'documents':>9} {'kept':>6} {'wrong':>6}")
    for language in sorted(set(by_language) & set(XLMR_CODES)):
        outcome = by_language[language]
        print(
            f"{language:<9} {outcome.documents:>9} {_percent(outcome.kept_correct / outcome.documents):>6}"
            f" {_percent(outcome.kept_wrong / outcome.documents):>6}"
        )
    print(_summary_line(f"{config.mode} mode", by_language))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lid", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    calibration = sub.add_parser("calibrate", help="per-language thresholds from labelled text")
    _data_arguments(calibration)
    calibration.add_argument("--out", required=True, help="thresholds CSV to write (and a .calibration.json report)")
    add_config_arguments(calibration, CalibrationConfig)
    evaluation = sub.add_parser("evaluate", help="what a LID setup keeps of labelled text")
    _data_arguments(evaluation)
    evaluation.add_argument("--sentences-per-document", type=int, default=5, help="as calibrate's")
    add_config_arguments(evaluation, LidConfig)
    return run_cli(lambda args: _calibrate(args) if args.command == "calibrate" else _evaluate(args), parser, argv)


if __name__ == "__main__":
    sys.exit(main())
