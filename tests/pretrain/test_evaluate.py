"""python -m pretrain evaluate: retrieval accuracy on hand-made cases and a planted permutation,
and a fine-tuned classifier's accuracy per test set."""

import pytest
import torch

from pretrain.cli import main
from pretrain.evaluate import default_layer, retrieval_accuracy
from tests.pretrain.conftest import run_finetune as finetune
from tests.pretrain.conftest import write_task
from tests.tokenizer.conftest import SCRIPTS


def test_retrieval_accuracy_by_hand():
    source = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # target 0 and 1 swapped: rows 0 and 1 find each other's partner; row 2 finds its own.
    target = torch.tensor([[0.0, 2.0], [3.0, 0.0], [1.0, 1.1]])
    assert retrieval_accuracy(source, target) == pytest.approx((1 / 3, 1 / 3))
    # Cosine, not dot product: by dot product row 0 would take target 1 (5 > 1); back, target 1
    # is nearer row 0 (0.78) than row 1 (0.62).
    assert retrieval_accuracy(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([[1.0, 0.1], [5.0, 4.0]])) == (
        1.0,
        0.5,
    )
    with pytest.raises(ValueError, match="line-aligned"):
        retrieval_accuracy(source, target[:2])
    assert default_layer(12) == 8 and default_layer(2) == 1


def test_retrieval_command_on_a_planted_permutation(trained_run, tmp_path, capsys):
    sentences = [SCRIPTS[script] for script in sorted(SCRIPTS)]
    source, target = tmp_path / "src.txt", tmp_path / "tgt.txt"
    source.write_text("\n".join(sentences) + "\n")
    target.write_text("\n".join(sentences) + "\n")
    assert main(["evaluate", "retrieval", "--model", trained_run, "--src", str(source), "--tgt", str(target)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "retrieval src->tgt 1.000 tgt->src 1.000"
    swapped = sentences[:]
    swapped[0], swapped[1], swapped[2] = swapped[1], swapped[2], swapped[0]  # 3 of 12 lines out of place
    target.write_text("\n".join(swapped) + "\n")
    assert (
        main(
            [
                "evaluate",
                "retrieval",
                "--model",
                trained_run,
                "--src",
                str(source),
                "--tgt",
                str(target),
                "--layer",
                "2",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines()[-1] == "retrieval src->tgt 0.750 tgt->src 0.750"
    target.write_text("one line\n")
    assert main(["evaluate", "retrieval", "--model", trained_run, "--src", str(source), "--tgt", str(target)]) == 2
    assert "must be line-aligned" in capsys.readouterr().err


@pytest.mark.slow
def test_classification_scores_per_test_set(trained_run, task, tmp_path, capsys):
    assert finetune(trained_run, task, tmp_path / "ft", "--epochs", "10") == 0
    easy = write_task(tmp_path / "easy.tsv", 30, 7, shares=(0.0, 0.0, 1.0))  # all Latin, which it learned
    capsys.readouterr()
    code = main(
        ["evaluate", "classify", "--model", str(tmp_path / "ft"), "--test", f"mixed={task['test']}"]
        + ["--test", f"latin={easy}", "--out", str(tmp_path / "eval")]
    )
    assert code == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert first.startswith("latin") and "accuracy 1.0000  (30 examples)" in first
    assert second.startswith("mixed") and "(60 examples)" in second
    assert (tmp_path / "eval" / "scores.csv").read_text().splitlines()[0] == "name,accuracy,examples"
    assert (tmp_path / "eval" / "scores.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["evaluate", "classify", "--model", trained_run, "--test", f"x={easy}"]) == 2
    assert "is not a classifier" in capsys.readouterr().err
