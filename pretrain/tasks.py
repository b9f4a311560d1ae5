"""The fine-tuning tasks, apart from training: sentence (``classify``) and sentence-pair
(``pair``) classification from TSV or JSONL files, token classification (``tokens``: NER from
CoNLL or JSONL files, each word labelled on its first piece); reading and encoding their examples,
and the head's loss. Fine-tuning (``finetune``) and evaluation (``evaluate``) both use them."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from typing import List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F

from pretrain.export import HF_HEAD_NAME
from pretrain.model import XLMRModel
from toolkit.cli import flag

TASKS = ("classify", "pair", "tokens")
HEAD = HF_HEAD_NAME  # the head's name here and in an exported or imported HF classifier
IGNORED = -100  # the target of a piece that is not a word's first (and of padding): no loss, no prediction


@dataclass(frozen=True)
class ExamplesConfig:
    """How a file of examples is read: the task and its columns (fine-tuning and evaluation)."""

    task: str = field(
        default="classify", metadata=flag(choices=TASKS)
    )  # classify: a text column; pair: text_a and text_b; tokens: words and their tags
    text_column: str = "text"  # the text of a classify row (SIB-200: text)
    label_column: str = "label"  # the label of a row (SIB-200: category)
    tokens_column: str = "tokens"  # a tokens task's JSONL: the list of words
    tags_column: str = "tags"  # a tokens task's JSONL: the list of their tags (BIO or BIOES)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {self.task!r}")


def metric_of(task: str) -> str:
    """What the dev set picks the best model by, and what a test set reports."""
    return "f1" if task == "tokens" else "accuracy"


def head_kind_of(task: str) -> str:
    return "tokens" if task == "tokens" else "sentence"


class Example(NamedTuple):
    texts: Tuple[str, ...]  # one text, the pair, or a sentence's words (tokens task)
    label: Union[str, Tuple[str, ...]]  # the class, or each word's tag (tokens task)


def labels_in(example: Example) -> Tuple[str, ...]:
    return example.label if isinstance(example.label, tuple) else (example.label,)


def read_examples(path: str, config: ExamplesConfig) -> List[Example]:
    """The rows of a TSV (with a header) or JSONL file (``.jsonl``/``.json``): the text column(s)
    and the label; for the tokens task, CoNLL sentences or JSONL lists of words and tags. A
    malformed row or an empty file is an error naming the file and line."""
    if config.task == "tokens":
        examples = list(_tagged_sentences(path, config))
        if not examples:
            raise ValueError(f"{path}: no sentences")
        return examples
    columns = (config.text_column,) if config.task == "classify" else ("text_a", "text_b")
    wanted = (*columns, config.label_column)
    examples = []
    for number, row in read_rows(path):
        missing = [column for column in wanted if not isinstance(row.get(column), str) or not row[column].strip()]
        if missing:
            raise ValueError(
                f"{path}, line {number}: no {', '.join(missing)} (a {config.task} row needs {', '.join(wanted)})"
            )
        examples.append(Example(tuple(row[column] for column in columns), row[config.label_column].strip()))
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples


def _tagged_sentences(path: str, config: ExamplesConfig):
    if path.endswith((".jsonl", ".json")):
        for number, row in read_rows(path):
            words, tags = row.get(config.tokens_column), row.get(config.tags_column)
            if not isinstance(words, list) or not isinstance(tags, list) or not words:
                raise ValueError(
                    f"{path}, line {number}: no list {config.tokens_column} and {config.tags_column} (a tokens row needs both)"
                )
            if len(words) != len(tags):
                raise ValueError(f"{path}, line {number}: {len(words)} {config.tokens_column} but {len(tags)} tags")
            yield Example(tuple(map(str, words)), tuple(str(tag) for tag in tags))
        return
    yield from _conll_sentences(path)


def _conll_sentences(path: str):
    """CoNLL: a word a line, its tag in the last column (tab or space separated), a blank line
    after each sentence; ``-DOCSTART-`` lines are skipped."""
    words, tags = [], []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            cells = line.split()
            if cells and cells[0] == "-DOCSTART-":
                continue
            if not cells:
                if words:
                    yield Example(tuple(words), tuple(tags))
                words, tags = [], []
                continue
            if len(cells) < 2:
                raise ValueError(f"{path}, line {number}: a word and its tag, got {line.strip()!r}")
            words.append(cells[0])
            tags.append(cells[-1])
    if words:
        yield Example(tuple(words), tuple(tags))


def read_rows(path: str):
    """(line number, row) of a TSV file with a header or of a JSONL file; a malformed row is an
    error naming the file and line."""
    with open(path, encoding="utf-8", newline="") as handle:
        if path.endswith((".jsonl", ".json")):
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}, line {number}: not JSON ({error.msg})") from None
                if not isinstance(row, dict):
                    raise ValueError(f"{path}, line {number}: a JSON object per line, got {type(row).__name__}")
                yield (
                    number,
                    {key: str(value) if isinstance(value, (int, float)) else value for key, value in row.items()},
                )
            return
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        for row in reader:
            if None in row or None in row.values():  # more or fewer cells than the header
                cells = sum(value is not None for key, value in row.items() if key is not None) + len(
                    row.get(None) or ()
                )
                raise ValueError(
                    f"{path}, line {reader.line_num}: {cells} columns, the header has {len(reader.fieldnames or ())}"
                )
            yield reader.line_num, row


def label_set(train: Sequence[Example], others: Mapping[str, Sequence[Example]]) -> List[str]:
    """The training labels, sorted; another file's label that training never saw is an error."""
    labels = sorted({label for example in train for label in labels_in(example)})
    for path, examples in others.items():
        check_labels(path, examples, labels, "labels not in the training set")
    return labels


def check_labels(path: str, examples: Sequence[Example], labels: Sequence[str], problem: str) -> None:
    """An error naming ``path``'s labels outside ``labels``."""
    unknown = sorted({label for example in examples for label in labels_in(example)} - set(labels))
    if unknown:
        raise ValueError(f"{path}: {problem}: {', '.join(unknown)} (known: {', '.join(labels)})")


def encode(tokenizer, example: Example, max_length: int) -> List[int]:
    """``<s> a </s>`` or ``<s> a </s></s> b </s>`` (in the tokenizer's own specials and joining,
    BERT's ``[CLS] a [SEP] b [SEP]``), the longer text cut first to ``max_length``."""
    return tokenizer.encode_example(example.texts, max_length)[0]


def encode_words(tokenizer, words: Sequence[str], max_length: int) -> Tuple[List[int], List[int]]:
    """``<s> pieces </s>`` of a sentence's words, cut to ``max_length``, and the position of each
    word's first piece (the words whose first piece was cut off have none)."""
    ids, firsts = [tokenizer.bos], []
    for pieces in tokenizer.encode_words(words):
        if len(ids) + 1 > max_length - 1:
            break
        firsts.append(len(ids))
        ids += pieces[: max_length - 1 - len(ids)]
    return [*ids, tokenizer.eos], firsts


class Row(NamedTuple):
    ids: List[int]
    target: Union[int, List[int]]  # the class, or per position a tag (IGNORED but at first pieces)
    types: Optional[List[int]] = None  # token types, where a pair's second text has its own (BERT)


def encode_rows(tokenizer, examples: Sequence[Example], labels: Sequence[str], task: str, max_length: int) -> List[Row]:
    """``examples`` of ``task`` as rows of at most ``max_length`` ids, their targets indexed in ``labels``."""
    index = {label: i for i, label in enumerate(labels)}
    rows = []
    for example in examples:
        if task != "tokens":
            ids, types = tokenizer.encode_example(example.texts, max_length)
            rows.append(Row(ids, index[example.label], types if any(types) else None))
            continue
        ids, firsts = encode_words(tokenizer, example.texts, max_length)
        target = [IGNORED] * len(ids)
        for position, tag in zip(firsts, example.label):
            target[position] = index[tag]
        rows.append(Row(ids, target))
    return rows


def collate(rows: Sequence[List[int]], padding_value: int) -> torch.Tensor:
    return torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(r) for r in rows], batch_first=True, padding_value=padding_value
    )


def collate_rows(rows: Sequence[Row], device, pad: int) -> Tuple[torch.Tensor, ...]:
    """(tokens, targets) of a batch, and the token types when a row has some: targets [batch] of
    classes, or [batch, length] of tags; tokens padded with the tokenizer's ``pad``."""
    tokens = collate([row.ids for row in rows], pad).to(device)
    if isinstance(rows[0].target, int):
        gold = torch.tensor([row.target for row in rows], device=device)
    else:
        gold = collate([row.target for row in rows], IGNORED).to(device)
    if all(row.types is None for row in rows):
        return tokens, gold
    types = collate([row.types or [0] * len(row.ids) for row in rows], 0).to(device)
    return tokens, gold, types


def task_loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of sentence logits [batch, classes] or token logits [batch, length, classes]."""
    return F.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORED, reduction=reduction
    )


class TaskLoss(torch.nn.Module):
    """Fine-tuning's objective (``optim``): the cross-entropy of the head, summed over the
    examples (or the tagged words of the tokens task)."""

    def __init__(self, model: XLMRModel):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, gold: torch.Tensor, types: Optional[torch.Tensor] = None) -> torch.Tensor:
        return task_loss(self.model.classify(tokens, HEAD, types), gold, "sum")

    def units(self, tokens: torch.Tensor, gold: torch.Tensor, types: Optional[torch.Tensor] = None) -> torch.Tensor:
        return gold.ne(IGNORED).sum()
