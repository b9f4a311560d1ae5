"""Distillation: TinyBERT's losses (the layer mapping, zero for a copy of the teacher, falling in
a short run), then ``python -m pretrain distill`` and ``distill-task``: a student that is a normal
run, exact resume, clear errors."""

import copy
import csv
import json
import os

import pytest
import torch
from safetensors.torch import load_file

from pretrain.cli import main
from pretrain.distill import DistillConfig, Distiller, layer_step, soft_cross_entropy
from pretrain.hub import from_pretrained, load_run
from pretrain.model import XLMRModel, model_config
from tests.pretrain.conftest import run_finetune, run_torchrun
from tests.pretrain.test_adapters import tokens
from tests.tokenizer.conftest import SCRIPTS

VOCAB = 300


def encoder(layers, hidden=128, heads=2, seed=0, dropout=0.0):
    torch.manual_seed(seed)
    return XLMRModel(model_config("tiny", VOCAB, layers=layers, hidden=hidden, heads=heads, ffn=2 * hidden,
                                  dropout=dropout, attention_dropout=dropout))  # fmt: skip


def test_attention_scores_are_the_ones_the_fused_kernel_uses():
    model, ids = encoder(2).eval(), tokens()
    scores = []
    explicit = model.features(ids, True, scores)
    fused = model.features(ids, True)
    assert len(scores) == 2 and scores[0].shape == (3, 2, 12, 12)
    for a, b in zip(explicit, fused):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert scores[0][2, :, :, 8:].abs().max() == 0  # padded keys (row 2 is padded from 8) read 0


def test_student_layer_m_learns_from_teacher_layer_m_times_k():
    teacher = encoder(6)
    assert layer_step(teacher, encoder(3)) == 2 and layer_step(teacher, encoder(1)) == 6
    with pytest.raises(ValueError, match="must divide the teacher's 6"):
        layer_step(teacher, encoder(4))
    with pytest.raises(ValueError, match="needs 2 heads, has 4"):
        layer_step(teacher, encoder(3, heads=4))
    with pytest.raises(ValueError, match="vocabulary"):
        layer_step(teacher, XLMRModel(model_config("tiny", 400, layers=3)))
    # Mapped to layers 2, 4, 6 (and the embeddings to the embeddings), computed by hand.
    student, ids = encoder(3, seed=1).eval(), tokens()
    distiller = Distiller(teacher.eval(), student, DistillConfig(logits_weight=0.0))
    losses = distiller.losses(ids)
    t_scores, s_scores = [], []
    t_hidden, s_hidden = teacher.features(ids, True, t_scores), student.features(ids, True, s_scores)
    real = ids.ne(1)
    mse = lambda s, t: torch.nn.functional.mse_loss(distiller.projection(s[real]), t[real])
    expected_hidden = sum(mse(s_hidden[m], t_hidden[2 * m]) for m in (1, 2, 3))
    expected_attention = sum(torch.nn.functional.mse_loss(s_scores[m - 1], t_scores[2 * m - 1]) for m in (1, 2, 3))
    torch.testing.assert_close(losses["hidden"], expected_hidden)
    torch.testing.assert_close(losses["attention"], expected_attention)
    torch.testing.assert_close(losses["embedding"], mse(s_hidden[0], t_hidden[0]))
    assert "logits" not in losses  # TinyBERT's general distillation: the intermediate layers only
    assert not student.head_dense.weight.requires_grad  # no loss reaches the MLM head (DDP would wait for it)


def test_a_copy_of_the_teacher_has_zero_losses():
    teacher = encoder(2).eval()
    student = copy.deepcopy(teacher)
    distiller = Distiller(teacher, student, DistillConfig(logits_weight=1.0, temperature=2.0))
    with torch.no_grad():
        distiller.projection.weight.copy_(torch.eye(128))
    losses = distiller.losses(tokens())
    assert set(losses) == {"attention", "hidden", "embedding", "logits", "total"}
    for name, loss in losses.items():
        assert loss.item() == pytest.approx(0.0, abs=1e-6), name
    assert soft_cross_entropy(torch.tensor([[0.0, 2.0]]), torch.tensor([[2.0, 0.0]]), 1.0) > 0.5


def test_distillation_losses_fall_in_a_short_run():
    teacher = encoder(4, hidden=128, seed=0).eval()
    student = encoder(2, hidden=64, seed=1)
    distiller = Distiller(teacher, student, DistillConfig(logits_weight=1.0))
    optimizer = torch.optim.AdamW(distiller.parameters(), lr=3e-3)  # the student's and the projection's
    ids = torch.randint(4, VOCAB - 1, (8, 24), generator=torch.Generator().manual_seed(2))
    first = None
    for _ in range(40):
        losses = distiller.losses(ids)
        optimizer.zero_grad()
        losses["total"].backward()
        optimizer.step()
        first = first or {name: loss.item() for name, loss in losses.items()}
    last = distiller.losses(ids)
    for name in first:
        assert last[name].item() < 0.7 * first[name], (name, first[name], last[name].item())
    assert all(parameter.grad is None for parameter in teacher.parameters())  # the teacher stays fixed
    assert not any(name.startswith("teacher") for name in distiller.state_dict())


def run_distill(teacher, data_dir, out, *flags):
    """``python -m pretrain distill`` in-process: a mini student of the tiny run, 30 steps."""
    argv = ["distill", "--teacher", teacher, "--student-config", "mini", "--data", data_dir, "--out", str(out)]
    schedule = ["--total-steps", "30", "--warmup-steps", "3", "--batch-size", "8", "--eval-blocks", "8"]
    intervals = ["--log-interval", "5", "--eval-interval", "10", "--save-interval", "10"]
    return main([*argv, *schedule, *intervals, *flags])


@pytest.fixture(scope="module")
def student(trained_run, data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "whole"
    assert run_distill(trained_run, data_dir, out) == 0
    return str(out)


@pytest.mark.slow
def test_general_distillation_makes_a_normal_run_and_resumes_exactly(student, trained_run, data_dir, tmp_path):
    cut = tmp_path / "cut"
    assert run_distill(trained_run, data_dir, cut, "--max-steps", "15") == 0
    assert run_distill(trained_run, data_dir, cut, "--resume") == 0
    for name in ("model.safetensors", "objective.safetensors"):  # the student, and the projection
        whole = load_file(os.path.join(student, "checkpoints", "step_00000030", name))
        again = load_file(str(cut / "checkpoints" / "step_00000030" / name))
        assert whole.keys() == again.keys() and all(torch.equal(whole[key], again[key]) for key in whole)
    losses = lambda path: [(row["step"], row["loss"]) for row in csv.DictReader(open(path)) if row["split"] == "train"]
    assert losses(os.path.join(student, "metrics.csv")) == losses(cut / "metrics.csv")

    model_cfg, state, _ = load_run(student)  # a run like pretraining's, with the teacher's vocabulary and heads
    teacher_cfg, _, _ = load_run(trained_run)
    assert (model_cfg.layers, model_cfg.hidden, model_cfg.heads) == (1, 64, teacher_cfg.heads)
    assert model_cfg.vocab_size == teacher_cfg.vocab_size and not any(key.startswith("projection") for key in state)
    rows = list(csv.DictReader(open(os.path.join(student, "metrics.csv"))))
    heldout = [float(row["loss"]) for row in rows if row["split"] == "eval" and row["language"] == "en"]
    trained = [float(row["loss"]) for row in rows if row["split"] == "train"]
    assert heldout[-1] < heldout[0] and trained[-1] < 0.7 * trained[0]  # the student's own MLM loss falls too
    assert all(row["perplexity"] == "" for row in rows if row["split"] == "train")  # no perplexity of a sum of MSEs
    saved = json.load(open(os.path.join(student, "config.json")))
    assert saved["distill"]["teacher"] == trained_run and saved["train"]["model"] == "mini"

    transformers = pytest.importorskip("transformers")
    assert main(["export-hf", student, str(tmp_path / "hf")]) == 0
    hf = transformers.XLMRobertaForMaskedLM.from_pretrained(str(tmp_path / "hf")).eval()
    hub = from_pretrained(student)
    ids = hub.encode(SCRIPTS["Greek"])
    with torch.no_grad():
        theirs = hf(input_ids=ids[None]).logits[0]
    assert (hub.model.eval()(ids[None])[0] - theirs).abs().max().item() < 1e-4


@pytest.mark.slow
def test_task_distillation_learns_the_fine_tuned_teacher(student, trained_run, task, tmp_path, capsys):
    teacher = tmp_path / "teacher"
    assert run_finetune(trained_run, task, teacher, "--epochs", "6", "--lr", "3e-3") == 0
    argv = ["distill-task", "--teacher", str(teacher), "--student", student, "--train", task["train"]]
    argv += ["--dev", task["dev"], "--test", task["test"], "--epochs", "6", "--lr", "5e-3"]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    assert main([*argv, "--out", str(tmp_path / "cut"), "--max-steps", "29"]) == 0  # mid-epoch (12 steps an epoch)
    assert main(["distill-task", "--out", str(tmp_path / "cut"), "--resume", *argv[5:]]) == 0
    results = json.loads((tmp_path / "whole" / "results.json").read_text())
    scored = results["test"][task["test"]]
    assert scored["accuracy"] >= 0.7 and scored["loss"] < 0.6  # majority class 0.4; a head that learned nothing: ln 3
    assert (tmp_path / "whole" / "results.json").read_text() == (tmp_path / "cut" / "results.json").read_text()
    for name in ("model.safetensors", "objective.safetensors"):
        whole = load_file(str(tmp_path / "whole" / "checkpoints" / "step_00000072" / name))
        again = load_file(str(tmp_path / "cut" / "checkpoints" / "step_00000072" / name))
        assert all(torch.equal(whole[key], again[key]) for key in whole)
    saved = json.loads((tmp_path / "whole" / "config.json").read_text())
    assert saved["teacher"] == str(teacher) and saved["distill"]["logits_weight"] == 1.0

    # A fine-tuned student like any other: evaluate reads it, its HF export holds the student.
    capsys.readouterr()
    assert main(["evaluate", "classify", "--model", str(tmp_path / "whole"), "--test", f"t={task['test']}",
                 "--out", str(tmp_path / "eval")]) == 0  # fmt: skip
    accuracy = results["test"][task["test"]]["accuracy"]
    assert f"{accuracy:.3f}" in capsys.readouterr().out
    assert json.loads((tmp_path / "whole" / "hf" / "config.json").read_text())["num_hidden_layers"] == 1


def hf_teacher(folder, trained_run, **shape):
    """A random teacher of another shape as an HF folder, with the trained run's tokenizer."""
    from pretrain.export import export_hf

    model_cfg, _, sentencepiece_model = load_run(trained_run)
    teacher = XLMRModel(model_config("tiny", **{"vocab_size": model_cfg.vocab_size, **shape}))
    export_hf(teacher.state_dict(), teacher.config, sentencepiece_model, str(folder))
    return str(folder)


@pytest.mark.parametrize(
    "command, teacher, message",
    [
        (["distill", "--student-config", "small"], "trained", "the student's 4 layers must divide the teacher's 2"),
        (
            ["distill", "--student-config", "tiny"],
            "12 heads",
            "student 'tiny' with the teacher's 12 heads: hidden (128)",
        ),
        (["distill", "--student-config", "mini"], "vocabulary", "the model's embedding has 100 rows, DATA_DIR's"),
        (["distill"], None, "give --teacher and --student-config"),
        (["distill-task", "--student", "STUDENT"], "trained", "is no classifier: fine-tune it first"),
    ],
)
def test_a_student_that_cannot_learn_the_teacher_is_a_clear_error(
    command, teacher, message, student, trained_run, data_dir, task, tmp_path, capsys
):
    teachers = {
        "trained": lambda: trained_run,
        "12 heads": lambda: hf_teacher(tmp_path / "t", trained_run, hidden=96, heads=12, ffn=192),
        "vocabulary": lambda: hf_teacher(tmp_path / "t", trained_run, vocab_size=100),  # fewer rows than ids
        None: lambda: None,
    }
    teacher_path = teachers[teacher]()
    argv = [*command, *(["--teacher", teacher_path] if teacher_path else []), "--out", str(tmp_path / "out")]
    if command[0] == "distill":
        argv += ["--data", data_dir]
    else:
        argv = [
            *(student if part == "STUDENT" else part for part in argv),
            "--train",
            task["train"],
            "--dev",
            task["dev"],
        ]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("logits_weight", ["1", "0"])  # 0: no loss reaches the MLM head, which DDP must not wait for
def test_general_distillation_under_torchrun_ddp(logits_weight, trained_run, data_dir, tmp_path):
    argv = ["distill", "--teacher", trained_run, "--student-config", "mini", "--data", data_dir, "--out", str(tmp_path)]
    schedule = ["--total-steps", "4", "--warmup-steps", "1", "--batch-size", "4", "--device", "cpu"]
    out = run_torchrun(*argv, *schedule, "--save-interval", "4", "--eval-blocks", "4", "--logits-weight", logits_weight)
    assert "2 process(es) on cpu" in out
    last = tmp_path / "checkpoints" / "step_00000004"
    assert {"rank0.json", "rank1.json", "objective.safetensors"} <= set(os.listdir(last))
