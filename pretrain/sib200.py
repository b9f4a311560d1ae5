"""What an encoder is worth, measured on SIB-200 (``make eval``): topic classification of the same
FLORES-200 sentences in 205 languages, one folder each (``eng_Latn/{train,dev,test}.tsv`` with
columns ``index_id category text``; rows parallel across languages).

Fine-tune on the source language (English), score the classifier zero-shot on each language of the
corpus, and without fine-tuning retrieve each language's test sentences from the source's
(``evaluate.retrieval_accuracy``, both directions).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from lid.languages import map_code
from pretrain.dist import setup
from pretrain.evaluate import (
    classification_scores,
    model_layer,
    retrieval_accuracy,
    sentence_embeddings,
    write_scores,
)
from pretrain.finetune import FinetuneConfig, FinetuneJob, finetune, finetuning_run
from pretrain.hub import from_pretrained
from pretrain.run_dir import RunDir
from pretrain.tasks import read_rows
from toolkit import storage
from toolkit.languages import VARIETY_CODES

SOURCE = "eng_Latn"  # the fine-tuning language, as XTREME's zero-shot setting has it
COLUMNS = {"text_column": "text", "label_column": "category"}
FINETUNE_DIR, RETRIEVAL_FILE = "finetune", "retrieval.csv"


class LanguageScores(NamedTuple):
    language: str  # XLM-R code
    folder: str  # SIB-200's (FLORES-200 code)
    accuracy: float  # of the classifier fine-tuned on the source language
    examples: int
    retrieval: Optional[Tuple[float, float]]  # (source -> language, language -> source); None for the source


class Sib200Result(NamedTuple):
    scores: List[LanguageScores]  # best accuracy first, the source language included
    layer: int  # of the retrieval embeddings
    majority: float  # the test accuracy of always answering the training set's commonest label


def language_folders(sib_dir: str, languages: Sequence[str]) -> Tuple[Dict[str, str], List[str]]:
    """({language: folder} for the XLM-R codes ``languages`` that SIB-200 has, the ones it lacks);
    a language's own folder before its varieties' (arb_Arab, not the dialect acm_Arab, for ar)."""
    by_code: Dict[str, str] = {}
    for name in sorted(os.listdir(sib_dir), key=lambda name: (name.split("_")[0] in VARIETY_CODES, name)):
        if os.path.isfile(os.path.join(sib_dir, name, "test.tsv")):
            by_code.setdefault(map_code(name), name)
    found = {language: by_code[language] for language in languages if language in by_code}
    return found, [language for language in languages if language not in by_code]


def parallel_texts(path: str) -> Tuple[List[str], List[str]]:
    """(index ids, texts) of a SIB-200 file."""
    rows = [row for _, row in read_rows(path)]
    if not rows or any("index_id" not in row or "text" not in row for row in rows):
        raise ValueError(f"{path}: SIB-200 rows need index_id and text columns")
    return [row["index_id"] for row in rows], [row["text"] for row in rows]


def sib200(
    init: str,
    sib_dir: str,
    languages: Sequence[str],
    out: str,
    config: FinetuneConfig,
    source: str = SOURCE,
    layer: Optional[int] = None,
    device: str = "auto",
) -> Sib200Result:
    """Fine-tune ``init`` on ``source`` into ``OUT/finetune`` (resumed when it is there, with the
    same init and config), then score each language; writes ``OUT/scores.{csv,png}`` and
    ``OUT/retrieval.csv``."""
    if not os.path.isfile(os.path.join(sib_dir, source, "train.tsv")):
        raise FileNotFoundError(f"{sib_dir}/{source}/train.tsv is missing: is {sib_dir} SIB-200's data/annotated?")
    found, missing = language_folders(sib_dir, languages)
    if missing:
        print(f"SIB-200 has no folder for {', '.join(missing)}: left out", flush=True)
    found = {map_code(source): source, **found}
    files = {language: os.path.join(sib_dir, folder, "test.tsv") for language, folder in found.items()}
    source_test = files[map_code(source)]

    finetune_dir = os.path.join(out, FINETUNE_DIR)
    resume = _can_resume(finetune_dir, init, config)
    train, dev = (os.path.join(sib_dir, source, f"{split}.tsv") for split in ("train", "dev"))
    finetune(config, FinetuneJob(init, train, dev), finetune_dir, resume=resume, device=device)
    target = setup(device).device
    classifier = from_pretrained(RunDir(finetune_dir).hf, target)
    accuracy = {name: (score, n) for name, score, n in classification_scores(classifier, finetune_dir, files, config)}

    encoder = from_pretrained(init, target)
    layer = model_layer(encoder) if layer is None else layer
    source_ids, source_texts = parallel_texts(source_test)
    source_embeddings = sentence_embeddings(encoder, source_texts, layer)
    scores = []
    for language, folder in found.items():
        retrieval = None
        if folder != source:
            ids, texts = parallel_texts(files[language])
            if ids != source_ids:
                raise ValueError(f"{files[language]}: its index_id column is not {source_test}'s, row by row")
            retrieval = retrieval_accuracy(source_embeddings, sentence_embeddings(encoder, texts, layer))
        scores.append(LanguageScores(language, folder, *accuracy[language], retrieval))
    scores.sort(key=lambda score: (-score.accuracy, score.language))
    majority, classes = _majority(train, source_test), _classes(train)
    write_scores(
        [(s.language, s.accuracy, s.examples) for s in scores],
        out,
        title=f"SIB-200 topic classification: {_name(init)} fine-tuned on {source}\n"
        f"accuracy on each language's test set ({_sizes(scores)}), zero-shot but for {source}",
        baselines=[("majority class (commonest training label)", majority), (f"chance (1/{classes})", 1 / classes)],
        highlight=map_code(source),
        xlabel="language",
    )
    lines = ["language,folder,to_language,from_language,layer"]
    lines += [
        f"{s.language},{s.folder},{s.retrieval[0]:.4f},{s.retrieval[1]:.4f},{layer}" for s in scores if s.retrieval
    ]
    storage.write_text(os.path.join(out, RETRIEVAL_FILE), "\n".join(lines) + "\n")
    return Sib200Result(scores, layer, majority)


def _majority(train: str, test: str) -> float:
    commonest = Counter(row["category"] for _, row in read_rows(train)).most_common(1)[0][0]
    labels = [row["category"] for _, row in read_rows(test)]
    return labels.count(commonest) / len(labels)


def _classes(train: str) -> int:
    return len({row["category"] for _, row in read_rows(train)})


def _sizes(scores: Sequence[LanguageScores]) -> str:
    sizes = sorted({s.examples for s in scores})
    return f"{sizes[0]} sentences" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]} sentences"


def _name(init: str) -> str:
    """A model folder's last two path parts (``out/run``), for a title."""
    return "/".join(os.path.normpath(init).split(os.sep)[-2:])


def _can_resume(finetune_dir: str, init: str, config: FinetuneConfig) -> bool:
    """Whether ``finetune_dir`` holds this fine-tuning (finished or cut short) to continue."""
    if not RunDir(finetune_dir).latest():
        return False
    saved = finetuning_run(finetune_dir)
    if saved is None or saved.init != init or saved.finetune != config:
        raise FileExistsError(
            f"{finetune_dir} holds a fine-tuning of {saved.init if saved else 'something else'} with another config: choose another --out"
        )
    return True


def table(result: Sib200Result, source: str) -> str:
    """The scores as text, best first, and a last line of means over the target languages."""
    code, scores = map_code(source), result.scores
    lines = [f"{'language':<9} {'folder':<9} {'accuracy':>8} {code + '->xx':>7} {'xx->' + code:>7}"]
    for s in scores:
        to, back = (f"{value:.3f}" for value in s.retrieval) if s.retrieval else ("-", "-")
        lines.append(f"{s.language:<9} {s.folder:<9} {s.accuracy:>8.3f} {to:>7} {back:>7}")
    targets = [s for s in scores if s.retrieval]
    if targets:
        mean = lambda values: sum(values) / len(values)
        lines.append(
            f"zero-shot accuracy {mean([s.accuracy for s in targets]):.3f} over {len(targets)} languages "
            f"(in {code}: {next(s.accuracy for s in scores if not s.retrieval):.3f}, majority class {result.majority:.3f}); "
            f"retrieval at layer {result.layer} "
            f"{code}->xx {mean([s.retrieval[0] for s in targets]):.3f} xx->{code} {mean([s.retrieval[1] for s in targets]):.3f}"
        )
    return "\n".join(lines)
