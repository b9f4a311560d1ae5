"""Per-language LID thresholds calibrated on labelled text, and how a LID setup does on it.

Labelled sentences (one a line in ``<code>.txt``, rows of ``<code>/<split>.tsv`` as SIB-200 has
them, or a TSV with a language column as UDHR's) are grouped, a few consecutive sentences of one
language at a time, into documents, as web pages are. The model reads them as the mine job does
(``LanguageIdentifier``); then, for each language the model gives, the threshold is the lowest
one (on a 0.01 grid, between ``min_threshold`` and ``max_threshold``) down to which the precision
of the documents given that language at or above it stays at ``target_precision`` or more.
"""

from __future__ import annotations

import csv
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from lid.languages import map_code
from lid.model import LanguageIdentifier, default_model_path, optional_path
from lid.neighbours import SHIPPED_NEIGHBOURS, LabelledDocument, fold_model, fold_of
from toolkit.cli import flag
from toolkit.languages import XLMR_CODES

GRID = 100  # thresholds are tried in steps of 1/GRID


@dataclass(frozen=True)
class CalibrationConfig:
    model_path: str = field(
        default_factory=default_model_path, metadata=flag("--model", "--lid-model")
    )  # the fastText LID model the thresholds are for (read in the spaced mode, as they apply)
    neighbour_model: Optional[str] = field(
        default=SHIPPED_NEIGHBOURS, metadata=flag(parse=optional_path)
    )  # the spaced mode's second opinion on languages outside the 100, as the job asks it (none: without)
    neighbour_folds: int = 0  # the neighbours model's folds: each document is read with the model trained without it (<model>.fold<k>.ftz, python -m lid train-neighbours); 0: the model itself
    target_precision: float = (
        0.99  # each language's threshold: the lowest down to which its precision stays at least this
    )
    min_threshold: float = (
        0.2  # never lower: web pages are noisier than clean labelled text (docs/language-id.md: 0.1 and 0.2 compared)
    )
    max_threshold: float = 0.5  # never higher (CCNet's one threshold): calibration keeps more, never less
    other_languages_weight: float = 1.0  # how much a wrongly kept document of a language outside XLM-R counts in precision, against one of an XLM-R language (1: as in a uniform mix of the languages)
    min_documents: int = 20  # a language the model gave fewer documents keeps the default threshold (not written)
    sentences_per_document: int = 5  # consecutive sentences (lines, rows) of one language in a document

    def __post_init__(self):
        if not 0.0 < self.target_precision <= 1.0:
            raise ValueError(f"target_precision must be in (0, 1], got {self.target_precision}")
        if not 0.0 <= self.min_threshold <= self.max_threshold <= 1.0:
            raise ValueError(
                f"need 0 <= min_threshold <= max_threshold <= 1, got {self.min_threshold}, {self.max_threshold}"
            )
        if self.neighbour_folds == 1 or self.neighbour_folds < 0:
            raise ValueError(f"neighbour_folds must be 0 or at least 2, got {self.neighbour_folds}")
        if self.min_documents < 1 or self.sentences_per_document < 1:
            raise ValueError("min_documents and sentences_per_document must be >= 1")


class Prediction(NamedTuple):
    truth: str  # the document's language
    language: Optional[str]  # what the model gave (XLM-R code or bare label)
    score: float


def labelled_sentences(
    text_dirs: Sequence[str] = (),
    tsv_files: Sequence[str] = (),
    splits: Sequence[str] = (),
    language_column: str = "language",
    text_column: str = "text",
) -> Iterator[Tuple[str, str, str]]:
    """(source, language, sentence) in file order: ``DIR/<code>.txt`` one sentence a line,
    ``DIR/<code>/<split>.tsv`` (every ``.tsv`` without ``splits``) with a ``text_column``, and
    TSV files with a header naming ``language_column`` and ``text_column``. Codes map to XLM-R
    codes with ``map_code`` (``eng_Latn``, ``sr-Latn``, ``hin``)."""
    for folder in text_dirs:
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"not a folder of labelled text: {folder}")
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith(".txt") and os.path.isfile(path):
                with open(path, encoding="utf-8") as lines:
                    for line in lines:
                        if line.strip():
                            yield path, map_code(name[: -len(".txt")]), line.strip()
            elif os.path.isdir(path):
                tables = sorted(n for n in os.listdir(path) if n.endswith(".tsv"))
                chosen = [f"{split}.tsv" for split in splits] if splits else tables
                for table in chosen:
                    if table in tables:
                        for row in _rows(os.path.join(path, table), (text_column,)):
                            yield path, map_code(name), row[text_column]
    for path in tsv_files:
        for row in _rows(path, (language_column, text_column)):
            yield row[language_column], map_code(row[language_column]), row[text_column]


def _rows(path: str, columns: Sequence[str]) -> Iterator[Dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as table:
        reader = csv.DictReader(table, delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = [column for column in columns if column not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)} (columns: {', '.join(reader.fieldnames or ())})")
        for row in reader:
            if (row[columns[-1]] or "").strip():
                yield row


def build_documents(sentences: Iterable[Tuple[str, str, str]], per_document: int) -> List[LabelledDocument]:
    """Documents of ``per_document`` consecutive sentences of one source, one per line; a
    source's last, shorter group is left out."""
    by_source: Dict[Tuple[str, str], List[str]] = defaultdict(list)
    for source, language, sentence in sentences:
        by_source[(source, language)].append(sentence)
    documents = []
    for (_, language), lines in by_source.items():
        for start in range(0, len(lines) - per_document + 1, per_document):
            documents.append(LabelledDocument(language, "\n".join(lines[start : start + per_document])))
    return documents


def predict(identifier: LanguageIdentifier, documents: Sequence[LabelledDocument]) -> List[Prediction]:
    """What ``identifier`` says of each document."""
    results = identifier.predict([doc.text for doc in documents])
    return [Prediction(doc.language, language, score) for doc, (language, score) in zip(documents, results)]


def predict_calibration(config: CalibrationConfig, documents: Sequence[LabelledDocument]) -> List[Prediction]:
    """What the spaced mode says of each document, as ``config`` asks: with its neighbours model,
    or with ``neighbour_folds``, each document with the fold model trained without it (the
    neighbours model is trained on calibration's own documents: read with the final model,
    they would look easier than text it never saw)."""
    from toolkit.storage import localize

    model = localize(config.model_path)
    if not config.neighbour_folds or not config.neighbour_model:
        return predict(LanguageIdentifier(model, "spaced", config.neighbour_model), documents)
    predictions: List[Optional[Prediction]] = [None] * len(documents)
    for fold in range(config.neighbour_folds):
        chosen = [i for i, doc in enumerate(documents) if fold_of(doc.text, config.neighbour_folds) == fold]
        identifier = LanguageIdentifier(model, "spaced", fold_model(config.neighbour_model, fold))
        for i, prediction in zip(chosen, predict(identifier, [documents[i] for i in chosen])):
            predictions[i] = prediction
    return predictions


class LanguageCalibration(NamedTuple):
    threshold: float
    documents: int  # documents the model gave this language
    precision: float  # at the threshold
    reached: bool  # whether the target precision holds at max_threshold (else the threshold is max_threshold)


def calibrate(predictions: Sequence[Prediction], config: CalibrationConfig) -> Dict[str, LanguageCalibration]:
    """Each XLM-R language's threshold (module docstring), for languages the model gave at
    least ``config.min_documents`` documents."""
    given: Dict[str, List[Tuple[float, float, float]]] = defaultdict(list)  # (score, correct, weight)
    for prediction in predictions:
        if prediction.language in XLMR_CODES:
            correct = prediction.truth == prediction.language
            weight = 1.0 if correct or prediction.truth in XLMR_CODES else config.other_languages_weight
            given[prediction.language].append((prediction.score, float(correct), weight))
    grid = range(round(config.max_threshold * GRID), round(config.min_threshold * GRID) - 1, -1)
    calibrated = {}
    for language, scored in sorted(given.items()):
        if len(scored) < config.min_documents:
            continue
        threshold, precision = config.max_threshold, _precision(scored, config.max_threshold)
        reached = precision is None or precision >= config.target_precision
        for step in grid if reached else ():
            at = _precision(scored, step / GRID)
            if at is not None and at < config.target_precision:
                break
            threshold, precision = step / GRID, at if at is not None else precision
        calibrated[language] = LanguageCalibration(threshold, len(scored), precision or 0.0, reached)
    return calibrated


def _precision(scored: Sequence[Tuple[float, float, float]], threshold: float) -> Optional[float]:
    """The weighted share of correct documents at or above ``threshold``; None when there is none."""
    above = [(correct, weight) for score, correct, weight in scored if score >= threshold]
    total = sum(weight for _, weight in above)
    return sum(correct * weight for correct, weight in above) / total if total else None


class Outcome(NamedTuple):
    documents: int  # of the language
    kept_correct: int  # kept with the right language
    kept_wrong: int  # kept with another language


def outcomes(
    predictions: Sequence[Prediction], threshold_of: Mapping[str, float], default: float
) -> Dict[str, Outcome]:
    """Per true language, what a mine job keeps of its documents: a document is kept when the
    model's language is selected (a key of ``threshold_of``) and scores at least its threshold."""
    counts: Dict[str, Counter] = defaultdict(Counter)
    for prediction in predictions:
        counts[prediction.truth]["documents"] += 1
        if prediction.language in threshold_of and prediction.score >= threshold_of.get(prediction.language, default):
            counts[prediction.truth]["kept_correct" if prediction.language == prediction.truth else "kept_wrong"] += 1
    return {language: Outcome(c["documents"], c["kept_correct"], c["kept_wrong"]) for language, c in counts.items()}


class Label(NamedTuple):
    kept: int  # documents kept under the label
    correct: int  # of them, in its language

    @property
    def precision(self) -> float:
        return self.correct / self.kept if self.kept else 0.0


def labels_kept(
    predictions: Sequence[Prediction], threshold_of: Mapping[str, float], default: float
) -> Dict[str, Label]:
    """Per label a mine job keeps documents under (as ``outcomes`` keeps them), how many and how
    many rightly: what a user finds under each label."""
    counts: Dict[str, Counter] = defaultdict(Counter)
    for prediction in predictions:
        if prediction.language in threshold_of and prediction.score >= threshold_of.get(prediction.language, default):
            counts[prediction.language]["kept"] += 1
            counts[prediction.language]["correct"] += prediction.truth == prediction.language
    return {language: Label(c["kept"], c["correct"]) for language, c in sorted(counts.items())}


class Summary(NamedTuple):
    languages: int  # XLM-R languages in the data
    documents: int  # their documents
    kept_correct: float  # share kept with the right language
    kept_wrong: float  # share kept with another language
    others: int  # documents of languages outside XLM-R
    others_kept: float  # their share kept as some XLM-R language


def summarize(by_language: Mapping[str, Outcome]) -> Summary:
    ours = [outcome for language, outcome in by_language.items() if language in XLMR_CODES]
    others = [outcome for language, outcome in by_language.items() if language not in XLMR_CODES]
    documents = sum(o.documents for o in ours)
    other_documents = sum(o.documents for o in others)
    share = lambda count, total: count / total if total else 0.0
    return Summary(
        len(ours),
        documents,
        share(sum(o.kept_correct for o in ours), documents),
        share(sum(o.kept_wrong for o in ours), documents),
        other_documents,
        share(sum(o.kept_wrong for o in others), other_documents),
    )
