"""The tokens task: NER from CoNLL or JSONL, each word labelled on its first piece, entity F1,
the HF token classifier, and clear errors."""

import json

import pytest
import torch

from pretrain.cli import main
from pretrain.finetune import FinetuneConfig
from pretrain.tasks import encode_words, read_examples
from tests.pretrain.conftest import run_finetune as finetune
from tokenizer.xlmr import XLMRTokenizer


@pytest.mark.slow
def test_a_tagger_learns_entities_and_exports_an_hf_token_classifier(trained_run, tagged_task, tmp_path, capsys):
    out = tmp_path / "ner"
    assert finetune(trained_run, tagged_task, out, "--task", "tokens", "--epochs", "8", "--lr", "2e-3") == 0
    results = json.loads((out / "results.json").read_text())
    assert results["metric"] == "f1" and results["labels"] == ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]
    assert results["test"][tagged_task["test"]]["f1"] >= 0.85  # tagging every word O scores 0

    transformers = pytest.importorskip("transformers")
    hf = transformers.XLMRobertaForTokenClassification.from_pretrained(str(out / "hf")).eval()
    assert hf.config.id2label == dict(enumerate(results["labels"]))
    from pretrain.hub import from_pretrained

    hub = from_pretrained(str(out / "hf"))
    tokens = hub.encode("Библиотека открывается the library")
    with torch.no_grad():
        theirs = hf(input_ids=tokens[None]).logits
    ours = hub.predict("classifier", tokens, return_logits=True)
    assert ours.shape == theirs.shape == (1, len(tokens), 5) and (ours - theirs).abs().max().item() < 1e-4

    capsys.readouterr()
    argv = ["evaluate", "classify", "--model", str(out / "hf"), "--test", f"xx={tagged_task['test']}"]
    assert main([*argv, "--out", str(tmp_path / "eval")]) == 0  # the task inferred from the token head
    f1 = results["test"][tagged_task["test"]]["f1"]
    assert f"xx  f1 {f1:.4f}  (64 examples)" in capsys.readouterr().out
    assert main([*argv, "--task", "classify", "--out", str(tmp_path / "eval")]) == 2
    assert "has a tokens classification head: it cannot score the classify task" in capsys.readouterr().err


def test_each_word_is_labelled_on_its_first_piece_and_long_sentences_are_cut(trained_run):
    from pretrain.hub import load_run

    tokenizer = XLMRTokenizer(load_run(trained_run)[2])
    words = ["Библиотека", "открывается", "library"]
    pieces = tokenizer.encode_words(words)
    ids, firsts = encode_words(tokenizer, words, 64)
    assert ids == [0, *sum(pieces, []), 2] and ids == tokenizer.encode(" ".join(words))
    assert firsts == [1, 1 + len(pieces[0]), 1 + len(pieces[0]) + len(pieces[1])]
    cut, kept = encode_words(tokenizer, words, 2 + len(pieces[0]) + 1)
    assert len(cut) == 2 + len(pieces[0]) + 1 and kept == firsts[:2] and cut[-1] == 2


def test_conll_and_jsonl_read_alike(tmp_path):
    conll = tmp_path / "a.conll"
    conll.write_text("-DOCSTART- -X- O O\n\nAnna NNP B-PER\nsings VBZ O\n\n\nOslo B-LOC\n")
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"tokens": ["Anna", "sings"], "tags": ["B-PER", "O"]}\n{"tokens": ["Oslo"], "tags": ["B-LOC"]}\n')
    config = FinetuneConfig(task="tokens")
    assert read_examples(str(conll), config) == read_examples(str(jsonl), config)
    assert read_examples(str(conll), config)[0] == (("Anna", "sings"), ("B-PER", "O"))


@pytest.mark.parametrize(
    "content, name, message",
    [
        ("Anna B-PER\nsings\n", "short.conll", "line 2: a word and its tag, got 'sings'"),
        ("\n\n-DOCSTART- O\n", "empty.conll", "no sentences"),
        ('{"tokens": ["Anna", "sings"], "tags": ["B-PER"]}\n', "mismatch.jsonl", "line 1: 2 tokens but 1 tags"),
        ('{"tokens": "Anna sings", "tags": ["B-PER", "O"]}\n', "string.jsonl", "line 1: no list tokens and tags"),
    ],
)
def test_malformed_tagged_files_are_clear_errors(trained_run, tagged_task, tmp_path, capsys, content, name, message):
    bad = tmp_path / name
    bad.write_text(content)
    argv = ["finetune", "--init", trained_run, "--task", "tokens", "--train", str(bad), "--dev", tagged_task["dev"]]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
