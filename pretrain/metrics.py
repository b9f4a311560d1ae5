"""Entity precision, recall and F1 over tag sequences, as seqeval scores them by default (the
CoNLL-2000 ``conlleval`` chunking): exact spans of the same type, micro-averaged over types.

Tags are ``B-X``, ``I-X``, ``E-X``, ``S-X`` or ``O``. As in conlleval, an ``I-X`` after ``O`` or
after another type starts an entity, and a change of type ends one.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence, Set, Tuple

_ENDS_AFTER = {"E", "S"}  # a previous tag that always closes its entity
_ENDS_BEFORE = {"B", "S", "O"}  # a tag that closes an entity opened by B or I
_STARTS_AFTER = {("E", "E"), ("E", "I"), ("S", "E"), ("S", "I"), ("O", "E"), ("O", "I")}


class EntityScores(NamedTuple):
    precision: float
    recall: float
    f1: float
    gold: int  # entities in the gold tags
    predicted: int


def _split(tag: str) -> Tuple[str, str]:
    """(prefix, type) of ``B-PER`` and the like; ``O`` has no type, a bare ``B`` the type ``_``."""
    return tag[0], tag[1:].split("-", maxsplit=1)[-1] or "_"


def entities(tags: Sequence[str]) -> Set[Tuple[str, int, int]]:
    """The entities of one sentence's tags: (type, first word, last word)."""
    found, start = set(), 0
    previous, previous_type = "O", ""
    for i, tag in enumerate([*tags, "O"]):
        prefix, type_ = _split(tag)
        typed = previous not in ("O", ".") and previous_type != type_
        if previous in _ENDS_AFTER or (previous in ("B", "I") and prefix in _ENDS_BEFORE) or typed:
            found.add((previous_type, start, i - 1))
        if (
            prefix in ("B", "S")
            or (previous, prefix) in _STARTS_AFTER
            or (prefix not in ("O", ".") and previous_type != type_)
        ):
            start = i
        previous, previous_type = prefix, type_
    return found


def entity_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> EntityScores:
    """Micro-averaged entity scores of ``predicted`` against ``gold``, sentence by sentence (0
    where a ratio is undefined, as seqeval's default)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    true_positives = gold_count = predicted_count = 0
    for number, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"sentence {number}: {len(gold_tags)} gold tags but {len(predicted_tags)} predicted")
        gold_entities, predicted_entities = entities(gold_tags), entities(predicted_tags)
        true_positives += len(gold_entities & predicted_entities)
        gold_count += len(gold_entities)
        predicted_count += len(predicted_entities)
    precision = true_positives / predicted_count if predicted_count else 0.0
    recall = true_positives / gold_count if gold_count else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return EntityScores(precision, recall, f1, gold_count, predicted_count)
