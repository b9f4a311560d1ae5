"""Perplexity under per-language SentencePiece + KenLM models, and head/middle/tail buckets.

Models use CCNet's layout and names, ``LM_DIR/<lang>.sp.model`` and ``LM_DIR/<lang>.arpa.bin``,
so CCNet's published models drop in. A document's perplexity is 10 ** (-log10 p / (tokens + 1)),
rounded to one decimal, in one of two modes:

- ``ccnet``, as CCNet's mine step (``MultiSentencePiece(normalize=True)`` then ``DocLM``): the
  whole document normalized at once, which deletes its newlines, then scored as one sentence;
  CCNet's cutoff.csv percentiles come from these scores. A document that normalizes to nothing
  gets no perplexity (bucket ``all``), as in CCNet.
- ``lines``: each line normalized and scored as its own sentence, log-probabilities and token
  counts summed over the lines (what CCNet's ``DocLM`` computes on text that keeps its newlines).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from filters.document import Document
from filters.normalize import normalize_for_lm, normalize_lines_for_lm
from filters.stage import KEPT, Result, Stage
from toolkit import storage

NO_BUCKET = "all"  # documents without a model or without cutoffs for their language
BUCKETS = ("head", "middle", "tail", NO_BUCKET)  # lowest perplexity first, then the documents without one
PERCENTILES = tuple(range(100))  # the rows of a CCNet cutoff.csv: 0..99
PERPLEXITY_MODES = ("ccnet", "lines")


def model_paths(lm_dir: str, language: str) -> Tuple[str, str]:
    return storage.join(lm_dir, f"{language}.sp.model"), storage.join(lm_dir, f"{language}.arpa.bin")


def available_languages(lm_dir: str) -> Tuple[str, ...]:
    """Languages with both a SentencePiece and a KenLM file in ``lm_dir`` (local or remote)."""
    if storage.is_remote(lm_dir):
        names = [path.rsplit("/", 1)[-1] for path in storage.match(storage.join(lm_dir, "*"))]
    elif os.path.isdir(lm_dir):
        names = os.listdir(lm_dir)
    else:
        raise FileNotFoundError(f"language model folder not found: {lm_dir}")
    languages = sorted(n[: -len(".sp.model")] for n in names if n.endswith(".sp.model"))
    return tuple(lang for lang in languages if f"{lang}.arpa.bin" in names)


class ModelError(ValueError):
    """A model file that cannot be loaded: the message names the file and says what is wrong."""


KENLM_BINARY_MAGIC = b"mmap lm http://kheafield.com/code format version "  # how build_binary's files begin
KENLM_BINARY_VERSION = b"5\n\0"  # the format version the kenlm module reads
ARPA_START = b"\\data\\"  # the first non-blank line of an ARPA file


def load_sentencepiece(path: str):
    """A ``SentencePieceProcessor`` of ``path``, or a ``ModelError`` naming the file."""
    import sentencepiece

    _check_model_file(path, "SentencePiece")
    try:
        return sentencepiece.SentencePieceProcessor(model_file=path)
    except (OSError, RuntimeError, ValueError) as error:
        raise sentencepiece_error(path, error) from None


def sentencepiece_error(path: str, error: BaseException) -> ModelError:
    """The ``ModelError`` for SentencePiece's ``error`` on loading ``path``."""
    message = re.sub(r"^[A-Z_]+: ", "", str(error)).strip()  # "INTERNAL: could not parse ModelProto from x"
    if "could not parse ModelProto" in message or "unk is not defined" in message:
        message = "not a SentencePiece model (corrupt, cut short, or another kind of file)"
    return ModelError(f"cannot load SentencePiece model {path}: {message}")


def load_kenlm(path: str):
    """A ``kenlm.Model`` of ``path`` (KenLM binary or ARPA), or a ``ModelError`` naming the file.
    A file that is neither is refused before KenLM reads it: KenLM would take it for ARPA text,
    print a progress bar and fail with bytes that are not even UTF-8."""
    import kenlm

    _check_model_file(path, "KenLM")
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head.startswith(KENLM_BINARY_MAGIC):
        version = head[len(KENLM_BINARY_MAGIC) :].split(b"\n", 1)[0].decode("ascii", "replace")
        if not head[len(KENLM_BINARY_MAGIC) :].startswith(KENLM_BINARY_VERSION):
            raise ModelError(
                f"cannot load KenLM model {path}: a KenLM binary of format version {version}, this KenLM reads"
                f" version {KENLM_BINARY_VERSION[:1].decode()}: build it again with build_binary (make kenlm)"
            )
    elif not head.lstrip().startswith(ARPA_START):
        raise ModelError(
            f"cannot load KenLM model {path}: neither a KenLM binary (build_binary's) nor an ARPA file"
            " (corrupt, or another kind of file)"
        )
    try:
        return kenlm.Model(path)
    except (OSError, RuntimeError, ValueError) as error:  # UnicodeDecodeError is a ValueError
        raise ModelError(f"cannot load KenLM model {path}: {_kenlm_reason(error)}") from None


def _kenlm_reason(error: BaseException) -> str:
    """KenLM's message without its wrapper and C++ source location, e.g. "Binary file has size
    100000 but the headers say it should be at least 8921308" (a file cut short)."""
    if isinstance(error, UnicodeDecodeError):
        return "unreadable (KenLM's own message is not UTF-8: a corrupt file?)"
    message = str(error)
    match = re.search(r"threw \w+(?: because `.*?'\.)?\.?\s*(.*?)\)?$", message, re.DOTALL)
    return (match.group(1).strip() if match and match.group(1).strip() else message).replace("\n", " ")


def _check_model_file(path: str, kind: str) -> None:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{kind} model file not found: {path}")
    if os.path.getsize(path) == 0:
        raise ModelError(f"cannot load {kind} model {path}: the file is empty")


class LanguageModel:
    """One language's SentencePiece + KenLM pair: paths held, models loaded on first use."""

    def __init__(self, lm_dir: str, language: str):
        self.language = language
        self.sp_path, self.lm_path = model_paths(lm_dir, language)
        self._sp = None
        self._lm = None

    def load(self) -> LanguageModel:
        if self._lm is None:
            for path in (self.sp_path, self.lm_path):
                if not os.path.isfile(path):
                    raise FileNotFoundError(f"model file not found: {path}")
            self._sp, self._lm = load_sentencepiece(self.sp_path), load_kenlm(self.lm_path)
        return self

    def perplexity(self, text: str, mode: str = "ccnet") -> Optional[float]:
        """The document's perplexity in ``mode`` (see the module docstring)."""
        self.load()
        if mode == "ccnet":
            tokenized = " ".join(self._sp.encode(normalize_for_lm(text), out_type=str))
            if not tokenized:
                return None
            return round(10.0 ** (-self._lm.score(tokenized) / (len(tokenized.split()) + 1)), 1)
        encode, score = self._sp.encode, self._lm.score
        log_score, length = 0.0, 0
        for line in normalize_lines_for_lm(text):
            pieces = encode(line, out_type=str)
            log_score += score(" ".join(pieces))
            length += len(pieces) + 1
        return round(10.0 ** (-log_score / length), 1)


class LanguageModels:
    """The models of every language found in ``lm_dir`` (or of ``languages``, when the caller
    fills the folder itself), each loaded on first use."""

    def __init__(self, lm_dir: str, languages: Optional[Sequence[str]] = None, mode: str = "ccnet"):
        check_perplexity_mode(mode)
        self.lm_dir = lm_dir
        self.languages = tuple(languages) if languages is not None else available_languages(lm_dir)
        self.mode = mode
        self._models: Dict[str, LanguageModel] = {}

    def perplexity(self, text: str, language: Optional[str]) -> Optional[float]:
        """The perplexity of ``text`` under its language's model; None without a model."""
        if language not in self.languages:
            return None
        model = self._models.get(language)
        if model is None:
            model = self._models[language] = LanguageModel(self.lm_dir, language).load()
        return model.perplexity(text, self.mode)


class PerplexityScorer(Stage):
    """Stage: ``perplexity`` set under the document's language model (null without one). Models
    on a Beam file system are fetched language by language, on first use, to the worker."""

    name = "perplexity"

    def __init__(self, lm_dir: str, mode: str = "ccnet"):
        check_perplexity_mode(mode)
        self.lm_dir = lm_dir
        self.mode = mode
        self.models: Optional[LanguageModels] = None

    @classmethod
    def counts(cls, doc: Document, outcome: str) -> Dict[str, int]:
        if outcome != KEPT:
            return {}
        return {"no_model" if doc["perplexity"] is None else "scored": 1}

    def setup(self) -> None:
        if self.models is not None:
            return
        if storage.is_remote(self.lm_dir):
            self.models = LanguageModels(tempfile.mkdtemp(prefix="lm-"), available_languages(self.lm_dir), self.mode)
            self.fetched: set = set()
        else:
            self.models = LanguageModels(self.lm_dir, mode=self.mode)  # each language's pair loads on first use

    def apply(self, doc: Document) -> Result:
        language = doc["language"]
        if storage.is_remote(self.lm_dir) and language in self.models.languages and language not in self.fetched:
            for local in model_paths(self.models.lm_dir, language):
                storage.fetch(storage.join(self.lm_dir, os.path.basename(local)), local)
            self.fetched.add(language)
        return {**doc, "perplexity": self.models.perplexity(doc["raw_content"], language)}, None

    def apply_batch(self, docs: Sequence[Document]) -> List[Result]:
        """The documents scored language by language, so that one language's models stay in
        the CPU caches while they score; results in input order."""
        results: List[Optional[Result]] = [None] * len(docs)
        for i in sorted(range(len(docs)), key=lambda i: docs[i]["language"] or ""):
            results[i] = self.apply(docs[i])
        return results

    def __getstate__(self):  # loaded models do not pickle: workers load their own
        return {**self.__dict__, "models": None}


def check_perplexity_mode(mode: str) -> None:
    if mode not in PERPLEXITY_MODES:
        raise ValueError(f"perplexity mode must be one of {PERPLEXITY_MODES}, got {mode!r}")


@dataclass(frozen=True)
class BucketConfig:
    head_percentile: int = 30  # perplexity below this percentile of its language: head
    tail_percentile: int = 60  # above this one: tail; in between: middle

    def __post_init__(self):
        if not 0 <= self.head_percentile <= self.tail_percentile <= PERCENTILES[-1]:
            raise ValueError(
                f"need 0 <= head <= tail <= {PERCENTILES[-1]} percentiles, got {self.head_percentile}, {self.tail_percentile}"
            )


# Cutoffs: {language: 100 perplexities, the value at percentile 0, 1, ..., 99}.
Cutoffs = Dict[str, List[float]]


def bucket(
    perplexity: Optional[float], language: Optional[str], cutoffs: Mapping[str, Sequence[float]], config: BucketConfig
) -> str:
    """CCNet's PerplexityBucket: head below the head cutoff, middle below the tail cutoff,
    tail from the tail cutoff on."""
    values = cutoffs.get(language) if language else None
    if perplexity is None or values is None:
        return NO_BUCKET
    head, middle, tail, _ = BUCKETS
    if perplexity < values[config.head_percentile]:
        return head
    if perplexity < values[config.tail_percentile]:
        return middle
    return tail


def read_cutoffs(path: str) -> Cutoffs:
    """A CCNet cutoff.csv (local or remote): a header ``,lang1,lang2,...`` then rows
    ``percentile,pp1,pp2,...`` for percentiles 0..99 (a row 100, which files of earlier versions of this project have,
    is ignored)."""
    try:
        rows = list(csv.reader(io.StringIO(storage.read_text(path), newline="")))
    except OSError as error:
        raise FileNotFoundError(f"cannot read cutoffs file {path}: {error.strerror or error}") from None
    if not rows or len(rows[0]) < 2:
        raise ValueError(f"{path}: not a CCNet cutoff CSV (expected a header ',lang1,lang2,...')")
    languages = rows[0][1:]
    cutoffs: Cutoffs = {lang: [math.nan] * len(PERCENTILES) for lang in languages}
    seen = set()
    for number, row in enumerate(rows[1:], start=2):
        try:
            percentile = int(float(row[0]))
            values = [float(v) for v in row[1:]]
        except (ValueError, IndexError):
            raise ValueError(f"{path}:{number}: expected a percentile and {len(languages)} numbers") from None
        if percentile == len(PERCENTILES) and len(values) == len(languages):
            continue
        if percentile not in PERCENTILES or len(values) != len(languages):
            raise ValueError(
                f"{path}:{number}: expected a percentile in 0..{PERCENTILES[-1]} and {len(languages)} numbers"
            )
        seen.add(percentile)
        for lang, value in zip(languages, values):
            cutoffs[lang][percentile] = value
    if seen != set(PERCENTILES):
        raise ValueError(f"{path}: percentiles {sorted(set(PERCENTILES) - seen)[:5]}... are missing")
    return cutoffs


def format_cutoffs(cutoffs: Cutoffs) -> str:
    """``cutoffs`` as a CCNet cutoff.csv (languages sorted)."""
    languages = sorted(cutoffs)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["", *languages])
    for p in PERCENTILES:
        writer.writerow([p, *(repr(round(float(cutoffs[lang][p]), 4)) for lang in languages)])
    return out.getvalue()
