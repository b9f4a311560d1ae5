"""python -m pretrain finetune: a learnable task, exact resume, the HF export, clear errors."""

import json

import pytest
import torch
from safetensors.torch import load_file

from pretrain.cli import main
from pretrain.tasks import Example, encode
from tests.pretrain.conftest import run_finetune as finetune
from tests.tokenizer.conftest import SCRIPTS
from tokenizer.xlmr import XLMRTokenizer


@pytest.mark.slow
def test_fine_tuning_learns_a_task_far_above_the_majority_class(trained_run, task, tmp_path):
    assert finetune(trained_run, task, tmp_path / "ft", "--epochs", "10") == 0
    results = json.loads((tmp_path / "ft" / "results.json").read_text())
    labels = [row.split("\t")[1] for row in open(task["test"]).read().splitlines()[1:]]
    majority = max(labels.count(label) for label in set(labels)) / len(labels)
    assert majority < 0.5 and results["test"][task["test"]]["accuracy"] >= 0.9
    assert results["labels"] == ["cyrillic", "greek", "latin"]
    metrics = (tmp_path / "ft" / "metrics.csv").read_text().splitlines()
    assert metrics[0] == "step,split,language,epoch,loss,accuracy,f1,lr" and sum(",dev," in m for m in metrics) == 10

    transformers = pytest.importorskip("transformers")
    hf = transformers.XLMRobertaForSequenceClassification.from_pretrained(str(tmp_path / "ft" / "hf"))
    assert hf.config.id2label == {0: "cyrillic", 1: "greek", 2: "latin"}
    from pretrain.hub import from_pretrained

    hub = from_pretrained(str(tmp_path / "ft"))  # the fine-tuning run itself, its latest checkpoint
    tokens = hub.encode(SCRIPTS["Greek"])
    with torch.no_grad():
        theirs = hf.eval()(input_ids=tokens[None]).logits
    best = from_pretrained(str(tmp_path / "ft" / "hf")).predict("classifier", tokens, return_logits=True)
    assert (best - theirs).abs().max().item() < 1e-4
    assert hub.predict("classifier", tokens).argmax().item() == 1  # greek


@pytest.mark.slow
def test_resume_is_exact(trained_run, task, tmp_path):
    assert finetune(trained_run, task, tmp_path / "whole") == 0
    assert finetune(trained_run, task, tmp_path / "cut", "--max-steps", "17") == 0  # mid-epoch (12 steps an epoch)
    assert finetune(trained_run, task, tmp_path / "cut", "--resume") == 0
    last = "checkpoints/step_00000048/model.safetensors"
    whole, cut = load_file(str(tmp_path / "whole" / last)), load_file(str(tmp_path / "cut" / last))
    assert whole.keys() == cut.keys() and all(torch.equal(whole[name], cut[name]) for name in whole)
    assert (tmp_path / "whole" / "results.json").read_text() == (tmp_path / "cut" / "results.json").read_text()
    assert (tmp_path / "whole" / "metrics.csv").read_text() == (tmp_path / "cut" / "metrics.csv").read_text()


def test_frozen_layers_do_not_change(trained_run, task, tmp_path):
    assert (
        finetune(trained_run, task, tmp_path / "ft", "--epochs", "1", "--freeze-embeddings", "--freeze-layers", "1")
        == 0
    )
    from pretrain.hub import load_run

    _, before, _ = load_run(trained_run)
    after = load_file(str(tmp_path / "ft" / "checkpoints" / "step_00000012" / "model.safetensors"))
    assert torch.equal(before["embed_tokens.weight"], after["embed_tokens.weight"])
    assert torch.equal(before["layers.0.fc1.weight"], after["layers.0.fc1.weight"])
    assert not torch.equal(before["layers.1.fc1.weight"], after["layers.1.fc1.weight"])


def test_pairs_are_encoded_as_fairseq_does_and_cut_to_max_length(trained_run):
    from pretrain.hub import load_run

    tokenizer = XLMRTokenizer(load_run(trained_run)[2])
    ids = encode(tokenizer, Example(("a b", "c"), "x"), 64)
    assert ids == tokenizer.encode("a b", "c")  # <s> a </s></s> b </s>
    cut = encode(tokenizer, Example((SCRIPTS["Latin"] * 3, SCRIPTS["Greek"]), "x"), 12)
    assert len(cut) == 12 and cut[0] == 0 and cut[-1] == 2 and cut.count(2) == 3


@pytest.mark.parametrize(
    "content, name, message",
    [
        ("text\tlabel\n", "empty.tsv", "no examples"),
        ("text\tlabel\nhello\n", "short.tsv", "line 2: 1 columns, the header has 2"),
        ("text\tlabel\nhello\t \n", "blank.tsv", "line 2: no label"),
        ("text\tlabel\nhello\tx\textra\n", "long.tsv", "line 2: 3 columns, the header has 2"),
        ('{"text": "hello", "label": "x"}\n{"text": "hi"\n', "broken.jsonl", "line 2: not JSON"),
        ('{"text": "hello"}\n', "nolabel.jsonl", "line 1: no label"),
    ],
)
def test_malformed_files_are_clear_errors(trained_run, task, tmp_path, capsys, content, name, message):
    bad = tmp_path / name
    bad.write_text(content)
    argv = ["finetune", "--init", trained_run, "--train", str(bad), "--dev", task["dev"], "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_label_training_never_saw_is_a_clear_error(trained_run, task, tmp_path, capsys):
    dev = tmp_path / "dev.tsv"
    dev.write_text("text\tlabel\nhello\tklingon\n")
    argv = [
        "finetune",
        "--init",
        trained_run,
        "--train",
        task["train"],
        "--dev",
        str(dev),
        "--out",
        str(tmp_path / "o"),
    ]
    assert main(argv) == 2
    assert "labels not in the training set: klingon" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_fine_tuning_runs_and_learns(trained_run, task, tmp_path, precision):
    """Autocast (and fp16's loss scaling) on the CPU, slow there: two epochs beat the majority class (0.4)."""
    assert finetune(trained_run, task, tmp_path / "ft", "--epochs", "2", "--precision", precision) == 0
    results = json.loads((tmp_path / "ft" / "results.json").read_text())
    assert results["test"][task["test"]]["accuracy"] >= 0.6
    saved = json.loads((tmp_path / "ft" / "config.json").read_text())
    assert saved["finetune"]["precision"] == precision
