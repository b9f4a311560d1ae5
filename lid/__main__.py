"""python -m lid {calibrate,evaluate,train-neighbours} ...

calibrate: per-language thresholds for a fastText LID model from labelled text, written as the
CSV ``--lang-thresholds`` reads, with a report of each language's recall before and after.
evaluate: what a LID setup (the mine job's flags) keeps of labelled text, per language.
train-neighbours: the neighbours model (``lid.neighbours``) from labelled text, and its folds."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
import tempfile
from collections import Counter
from typing import Dict, List, Mapping, Optional

from lid.calibrate import (
    CalibrationConfig,
    Label,
    LanguageCalibration,
    Outcome,
    build_documents,
    calibrate,
    labelled_sentences,
    labels_kept,
    outcomes,
    predict,
    predict_calibration,
    summarize,
)
from lid.model import LanguageIdentifier, LidConfig, write_thresholds
from lid.neighbours import NeighboursConfig, train
from toolkit import storage
from toolkit.cli import add_config_arguments, build_config, given, run_cli
from toolkit.languages import XLMR_CODES

LOW_PRECISION = 0.9  # evaluate names the labels whose documents are less often right than this


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("labelled text (one or more)")
    data.add_argument(
        "--text-dir", action="append", default=[], help="folder of <code>.txt (a sentence a line) or <code>/<split>.tsv"
    )
    data.add_argument("--tsv", action="append", default=[], help="TSV with a header, e.g. UDHR's udhr_paragraphs.tsv")
    data.add_argument("--splits", default="", help="the <split>.tsv files of --text-dir folders, e.g. train,dev (all)")
    data.add_argument("--language-column", default="language", help="--tsv column of language codes (UDHR: bcp47)")
    data.add_argument("--text-column", default="text", help="--tsv / <split>.tsv column of text (UDHR: paragraph)")


def _documents(args, per_document: int, max_lines: Optional[int] = None):
    """Documents of ``per_document`` sentences of the labelled text given, at most ``max_lines``
    sentences of each source."""
    if not args.text_dir and not args.tsv:
        raise ValueError("give labelled text: --text-dir DIR or --tsv FILE")
    splits = [split.strip() for split in args.splits.split(",") if split.strip()]
    sentences = labelled_sentences(args.text_dir, args.tsv, splits, args.language_column, args.text_column)
    if max_lines is not None:
        seen: Counter = Counter()
        sentences = (s for s in sentences if seen.update([s[:2]]) or seen[s[:2]] <= max_lines)
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
    predictions = predict_calibration(config, documents)
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
    neighbours = config.neighbour_model
    details = {  # the models by name and digest: a path would name this machine's folders
        "config": {
            **dataclasses.asdict(config),
            "model_path": os.path.basename(config.model_path),
            "neighbour_model": neighbours and os.path.basename(neighbours),
        },
        "model_sha256": _sha256(config.model_path),
        "neighbour_model_sha256": neighbours and _sha256(neighbours),
        "data": {"text_dir": args.text_dir, "tsv": args.tsv, "splits": args.splits, "documents": len(documents)},
        "languages": report,
    }
    storage.write_json(args.out.removesuffix(".csv") + ".calibration.json", details)
    print(f"wrote {len(thresholds)} thresholds to {args.out}")
    return 0


def _sha256(path: str) -> str:
    return hashlib.sha256(storage.read_bytes(storage.localize(path))).hexdigest()


def _evaluate(args) -> int:
    config = build_config(LidConfig, given(args))
    documents = _documents(args, args.sentences_per_document)
    identifier = LanguageIdentifier(storage.localize(config.model_path), config.mode, config.neighbour_model)
    predictions = predict(identifier, documents)
    by_language = outcomes(predictions, config.threshold_of(), config.threshold)
    labels = labels_kept(predictions, config.threshold_of(), config.threshold)
    print(f"{'language':<9} {'documents':>9} {'kept':>6} {'wrong':>6} {'under label':>11} {'precision':>9}")
    for language in sorted((set(by_language) | set(labels)) & set(XLMR_CODES)):
        outcome = by_language.get(language, Outcome(0, 0, 0))
        label = labels.get(language, Label(0, 0))
        right, wrong = (
            (_percent(count / outcome.documents) if outcome.documents else "-")
            for count in (outcome.kept_correct, outcome.kept_wrong)
        )
        precision = f"{label.precision:.3f}" if label.kept else "-"
        print(f"{language:<9} {outcome.documents:>9} {right:>6} {wrong:>6} {label.kept:>11} {precision:>9}")
    print(_summary_line(f"{config.mode} mode", by_language))
    low = [f"{language} {label.precision:.2f}" for language, label in labels.items() if label.precision < LOW_PRECISION]
    print(
        f"labels kept: {len(labels)}; with a precision under {LOW_PRECISION}: {len(low)} ({', '.join(low) or 'none'})"
    )
    return 0


def _train_neighbours(args) -> int:
    config = build_config(NeighboursConfig, given(args))
    documents = _documents(args, config.per_document, config.max_lines)
    with tempfile.TemporaryDirectory(prefix="neighbours-") as work_dir:
        written = train(documents, config, args.out, work_dir)
    languages = Counter(doc.language for doc in documents)
    record = {
        "config": dataclasses.asdict(config),
        "data": {"text_dir": [os.path.basename(os.path.normpath(d)) for d in args.text_dir], "splits": args.splits},
        "documents": len(documents),
        "labels": dict(sorted(languages.items())),
        "sha256": {os.path.basename(path): _sha256(path) for path in written.values()},
    }
    storage.write_json(args.out.removesuffix(".ftz") + ".json", record)
    print(f"trained on {len(documents)} documents in {len(languages)} languages: {', '.join(written.values())}")
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
    training = sub.add_parser("train-neighbours", help="the neighbours model from labelled text (make lid-model)")
    _data_arguments(training)
    training.add_argument("--out", required=True, help="model to write (.ftz; its folds and a .json record beside it)")
    add_config_arguments(training, NeighboursConfig)
    commands = {"calibrate": _calibrate, "evaluate": _evaluate, "train-neighbours": _train_neighbours}
    return run_cli(lambda args: commands[args.command](args), parser, argv)


if __name__ == "__main__":
    sys.exit(main())
