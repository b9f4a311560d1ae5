"""Entity F1 as seqeval scores it (default, conlleval chunking), on hand-computed cases whose
literal values seqeval 1.2.2 gives."""

import pytest

from pretrain.metrics import entities, entity_scores


def test_the_seqeval_readme_case():
    gold = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    predicted = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    assert entities(predicted[0]) == {("MISC", 2, 5)} and entities(gold[1]) == {("PER", 0, 1)}
    scores = entity_scores(gold, predicted)
    assert (scores.precision, scores.recall, scores.f1) == (0.5, 0.5, 0.5)
    assert (scores.gold, scores.predicted) == (2, 2)


def test_an_i_after_o_starts_an_entity_and_a_change_of_type_ends_one():
    assert entities(["I-PER", "I-PER", "O", "I-LOC"]) == {("PER", 0, 1), ("LOC", 3, 3)}
    assert entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["I-PER", "I-PER", "O", "I-LOC"]]).f1 == 1.0
    assert entities(["B-PER", "I-LOC", "I-PER"]) == {("PER", 0, 0), ("LOC", 1, 1), ("PER", 2, 2)}
    assert entity_scores([["B-PER", "I-PER", "I-PER"]], [["B-PER", "I-LOC", "I-PER"]]).f1 == 0.0


def test_bioes_and_partial_credit():
    assert entities(["S-LOC", "B-PER", "E-PER", "S-PER"]) == {("LOC", 0, 0), ("PER", 1, 2), ("PER", 3, 3)}
    # Every gold entity found, 3 of 5 predicted right: P 0.6, R 1.0, F1 0.75 (seqeval's too).
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "B-LOC", "B-LOC"], ["B-ORG", "B-PER"]]
    scores = entity_scores(gold, predicted)
    assert (scores.precision, scores.recall, scores.f1, scores.gold, scores.predicted) == pytest.approx(
        (0.6, 1.0, 0.75, 3, 5)
    )


def test_nothing_to_find_scores_zero_and_lengths_must_match():
    assert entity_scores([["O", "O"]], [["O", "O"]]).f1 == 0.0
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="1 gold sentences but 2 predicted"):
        entity_scores([["O"]], [["O"], ["O"]])
