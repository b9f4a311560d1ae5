"""The neighbours model: a second opinion that knows the languages around XLM-R's 100.

lid.176 has no label for Tigrinya, Shan, Silesian, Faroese, Awadhi or Nuer, so it stores their
text under a neighbour it knows (am, my, pl, is, hi, fi), often at 0.95 or more. The neighbours
model is a compact fastText model the project trains itself (``python -m lid train-neighbours``,
``make lid-model``) on openly licensed labelled text: SIB-200's train and dev sentences
(FLORES-200, 205 languages, CC BY-SA 4.0) and the Tatoeba sentences of ``../shared``'s reference
text (36 XLM-R languages, CC-BY 2.0 FR), so that conversational text of those languages is not
taken for their written neighbours. UDHR is in none of it: it measures what the model learned.

In the spaced mode it is asked of every document lid.176 gives an XLM-R language the model knows:
when it names a language outside XLM-R's 100 with ``OUTSIDE_AT`` or more, the document takes that
label (and the mine job drops it as not selected). It also names the language of a text whose
script its lid.176 label does not fit (``lid.scripts``), among the languages of that script.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from lid import scripts
from lid.languages import han_language, map_label
from toolkit.languages import XLMR_CODES

SHIPPED_NEIGHBOURS = str(Path(__file__).parent / "models" / "neighbours.ftz")  # make lid-model builds it
OUTSIDE_AT = 0.9  # the neighbours model's probability from which its language outside the 100 is taken
IN_SCRIPT_AT = 0.5  # ... from which its language is taken for a text its first label's script does not fit
_XLMR = frozenset(XLMR_CODES)
HAN_VARIANTS = ("zh", "zh_Hant")
READ_CHARS = (
    1000  # of a text's content the model reads (``content``): 500 is cheaper but less sure (docs/language-id.md)
)
CONTENT_LINE = 40  # characters of a line that is content: shorter ones (menus, buttons, dates) are left out

Verdict = Optional[Tuple[str, float]]  # a new (label, score), or None: the first model's answer stands


class LabelledDocument(NamedTuple):
    """Text in a known language: what the neighbours model trains on and calibration scores."""

    language: str  # XLM-R code, or the data's own code for a language outside XLM-R
    text: str


@dataclass(frozen=True)
class NeighboursConfig:
    """How the neighbours model is trained (``python -m lid train-neighbours``)."""

    max_lines: int = 5000  # sentences of one source (a language's file or folder) at most
    per_document: int = 5  # sentences of a document, as calibration builds them (folds are by document)
    folds: int = 5  # models trained each without one fold of the documents, for calibration (0: none)
    dim: int = 16  # fastText's vector size (as lid.176's: 64 reads 3 times slower and identifies no better, docs/language-id.md)
    min_char_ngram: int = 1  # the character n-grams of each word, from this length...
    max_char_ngram: int = 4  # ... to this one
    epochs: int = 5  # passes over the training sentences
    learning_rate: float = 0.5  # fastText's starting learning rate
    buckets: int = 200_000  # hash buckets of the character n-grams
    cutoff: int = 30_000  # words and n-grams the quantized model keeps
    seed: int = 1  # of fastText's training and of the order of the sentences

    def __post_init__(self):
        if min(self.max_lines, self.per_document, self.dim, self.epochs, self.buckets, self.cutoff) < 1:
            raise ValueError("max_lines, per_document, dim, epochs, buckets and cutoff must be >= 1")
        if self.folds == 1 or self.folds < 0:
            raise ValueError(f"folds must be 0 (none) or at least 2, got {self.folds}")
        if not 1 <= self.min_char_ngram <= self.max_char_ngram:
            raise ValueError("need 1 <= min_char_ngram <= max_char_ngram")


def fold_of(text: str, folds: int) -> int:
    """The fold a document belongs to, by its text (so calibration finds it without a list)."""
    return zlib.crc32(text.encode("utf-8")) % folds


def fold_model(path: str, fold: int) -> str:
    """Where the model trained without fold ``fold``'s documents lies, beside the model at ``path``."""
    return path.removesuffix(".ftz") + f".fold{fold}.ftz"


def _label_scripts(label: str) -> Optional[frozenset]:
    """The scripts (indices into ``scripts.SCRIPTS``) a label's text is written in: an XLM-R
    language's, or the script subtag of a label outside them (``tzm_Tfng``); None: unknown."""
    if label in scripts.LANGUAGE_SCRIPTS:
        return scripts.LANGUAGE_SCRIPTS[label]
    subtag = label.rsplit("_", 1)[-1]
    if len(subtag) == 4 and "_" in label:
        return frozenset(scripts.SCRIPTS.index(s) for s in scripts.written_with(subtag) if s in scripts.SCRIPTS)
    return None


def fits(label: str, counts) -> bool:
    """Whether a text of ``scripts.letter_bytes`` ``counts`` may carry ``label``."""
    if label in _XLMR:
        return scripts.fits(label, counts)
    written = _label_scripts(label)
    total = counts.sum()
    return written is None or (total > 0 and counts[sorted(written)].sum() >= scripts.FIT_SHARE * total)


class NeighbourModel:
    """The neighbours model, loaded on first use (each worker loads its own)."""

    def __init__(self, path: str):
        self.path = path
        self._model = None
        self._labels: frozenset = frozenset()

    @property
    def model(self):
        if self._model is None:
            import fasttext

            if not Path(self.path).is_file():
                raise FileNotFoundError(f"neighbours model not found: {self.path} (make lid-model builds one)")
            self._model = fasttext.load_model(self.path)
            self._labels = frozenset(map_label(label) for label in self._model.get_labels())
        return self._model

    def outside(self, texts: Sequence[str], languages: Sequence[str]) -> List[Verdict]:
        """For each text (one line: ``content``) and the XLM-R language the first model gave
        it: the label of a language outside the 100 the model is sure of (``OUTSIDE_AT``), when
        the model knows ``language`` too; else None."""
        verdicts: List[Verdict] = [None] * len(texts)
        if texts:
            labels, probabilities = self.model.predict(list(texts), k=1)
            for i, (label, probability) in enumerate(zip(labels, probabilities)):
                top = map_label(label[0])
                if languages[i] in self._labels and top not in _XLMR and probability[0] >= OUTSIDE_AT:
                    verdicts[i] = (top, float(probability[0]))
        return verdicts

    def in_script(self, text: str, counts) -> Verdict:
        """The most probable language whose script fits a text (one line: ``content``) of letters
        ``counts``, with its probability, where it reaches ``IN_SCRIPT_AT``; else None. The model's
        zh and zh_Hant are one language, told apart by the characters as lid.176's zh is."""
        labels, probabilities = self.model.predict(text, k=-1)
        fitting: Dict[str, float] = {}
        for label, probability in zip(labels, probabilities):
            language = map_label(label)
            if language in HAN_VARIANTS:
                language = han_language(text)
            if fits(language, counts):
                fitting[language] = fitting.get(language, 0.0) + float(probability)
        best = max(fitting, key=fitting.get, default=None)
        return (best, min(fitting[best], 1.0)) if best is not None and fitting[best] >= IN_SCRIPT_AT else None

    def __getstate__(self):  # a loaded fastText model does not pickle: workers load their own
        return {"path": self.path, "_model": None, "_labels": frozenset()}


def content(text: str) -> str:
    """What the model reads of a text: its lines of ``CONTENT_LINE`` characters or more (all of
    it where none is), as one line, the first ``READ_CHARS`` characters."""
    lines = text.split("\n")
    read, size = [], 0
    for line in (line for line in lines if len(line) >= CONTENT_LINE):
        read.append(line.strip())
        size += len(line) + 1
        if size >= READ_CHARS:  # a long page is read no further
            break
    return " ".join(read or [line.strip() for line in lines])[:READ_CHARS].strip()


def second_opinions(
    texts: Sequence[str], answers: Sequence[Tuple[str, float]], model: Optional[NeighbourModel]
) -> List[Verdict]:
    """The script check and the neighbours model's opinion of the first model's XLM-R answers
    (``(language, score)`` per text): for a text its language's script
    does not fit, the model's best label among those that fit (``und_<Script>`` with the first
    score where none does, or without a model); for the others, a language outside the 100
    the model is sure of (``NeighbourModel.outside``); None where the answer stands."""
    counts = [scripts.letter_bytes(text) for text in texts]
    fitting = [i for i, (language, _) in enumerate(answers) if scripts.fits(language, counts[i])]
    verdicts: List[Verdict] = [None] * len(texts)
    if model is not None:
        outside = model.outside([content(texts[i]) for i in fitting], [answers[i][0] for i in fitting])
        for i, verdict in zip(fitting, outside):
            verdicts[i] = verdict
    for i in sorted(set(range(len(texts))) - set(fitting)):
        found = model.in_script(content(texts[i]), counts[i]) if model is not None else None
        verdicts[i] = found or (scripts.unknown_language(counts[i]), answers[i][1])
    return verdicts


def training_lines(documents: Sequence[LabelledDocument], seed: int) -> List[str]:
    """fastText's ``__label__<language> <sentence>`` lines of ``documents``, shuffled."""
    lines = [f"__label__{doc.language} {line}" for doc in documents for line in doc.text.split("\n")]
    random.Random(seed).shuffle(lines)
    return lines


def train(documents: Sequence[LabelledDocument], config: NeighboursConfig, out: str, work_dir: str) -> Dict[str, str]:
    """The neighbours model trained on ``documents`` into ``out`` (quantized), and with
    ``config.folds``, each fold's model beside it (``fold_model``: trained without the documents
    of fold ``k``). Returns the paths by name. Byte-reproducible: one thread, fixed seeds, and each
    model in a process of its own (a second fastText training in one process can differ)."""
    import multiprocessing

    folds = {"all": documents}
    for k in range(config.folds):
        folds[f"fold{k}"] = [doc for doc in documents if fold_of(doc.text, config.folds) != k]
    written = {}
    spawn = multiprocessing.get_context("spawn")
    for name, chosen in folds.items():
        lines_path = str(Path(work_dir) / f"{name}.txt")
        Path(lines_path).write_text("\n".join(training_lines(chosen, config.seed)) + "\n", encoding="utf-8")
        path = out if name == "all" else fold_model(out, int(name.removeprefix("fold")))
        process = spawn.Process(target=_train_one, args=(lines_path, config, path))
        process.start()
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"training the neighbours model {path} failed (exit code {process.exitcode})")
        written[name] = path
    return written


def _train_one(lines_path: str, config: NeighboursConfig, path: str) -> None:
    import fasttext

    from toolkit import storage

    model = fasttext.train_supervised(
        lines_path,
        dim=config.dim,
        minn=config.min_char_ngram,
        maxn=config.max_char_ngram,
        epoch=config.epochs,
        lr=config.learning_rate,
        bucket=config.buckets,
        loss="softmax",
        thread=1,
        seed=config.seed,
        verbose=0,
    )
    model.quantize(input=lines_path, qnorm=True, retrain=True, cutoff=config.cutoff, thread=1, verbose=0)
    with storage.atomic_path(path) as temporary:
        model.save_model(temporary)
