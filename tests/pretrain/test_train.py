import csv
import json
import os

import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file

from pretrain.cli import main
from pretrain.data import mask_tokens, masking_generator
from pretrain.dist import Dist
from pretrain.model import XLMRModel, model_config
from pretrain.optim import OptimConfig, Optimization, make_optimizer, train_step
from pretrain.optim import learning_rate as schedule
from pretrain.run_record import TrainConfig
from pretrain.train import MaskedLM
from tests.pretrain.conftest import run_torchrun, run_train

VOCAB = 300


def test_schedule_warms_up_then_decays_polynomially():
    config = TrainConfig(lr=1e-3, warmup_steps=10, total_steps=110, end_lr=1e-5, power=1.0)
    learning_rate = lambda step, config: schedule(step, config, config.total_steps)
    assert learning_rate(5, config) == pytest.approx(5e-4)
    assert learning_rate(10, config) == pytest.approx(1e-3)
    assert learning_rate(60, config) == pytest.approx((1e-3 - 1e-5) * 0.5 + 1e-5)
    assert learning_rate(110, config) == pytest.approx(1e-5) and learning_rate(500, config) == 1e-5
    with pytest.raises(ValueError):
        TrainConfig(precision="fp8")
    with pytest.raises(ValueError):
        TrainConfig(warmup_steps=500, total_steps=100)
    with pytest.raises(ValueError, match="total-steps"):
        TrainConfig(max_steps=500, total_steps=100)


def fixed_batch(rows=8, length=24):
    tokens = torch.randint(4, VOCAB - 1, (rows, length), generator=torch.Generator().manual_seed(5))
    tokens[:, 0], tokens[:, -1] = 0, 2
    tokens[1, 15:] = 1  # a padded row
    inputs, masked = mask_tokens(tokens, VOCAB - 1, masking_generator(0, 0))
    return inputs, masked, tokens


def fresh_model_and_optimizer():
    torch.manual_seed(0)
    model = XLMRModel(model_config("tiny", VOCAB, dropout=0.0, attention_dropout=0.0))
    optimizer = make_optimizer(model, TrainConfig())
    for group in optimizer.param_groups:
        group["lr"] = 1e-3
    return model, optimizer


def step_on(model, optimizer, parts, dist=Dist(), precision="fp32", scaler=None):
    scaler = scaler or torch.amp.GradScaler("cpu", enabled=False)
    batches = [(inputs, masked, tokens[masked]) for inputs, masked, tokens in parts]
    objective = model if isinstance(model, torch.nn.parallel.DistributedDataParallel) else MaskedLM(model)
    optimization = Optimization(optimizer, scaler, OptimConfig(precision=precision, clip_norm=1.0))
    return train_step(objective, batches, optimization, dist)


def split(parts, pieces):
    inputs, masked, tokens = parts
    size = inputs.size(0) // pieces
    return [
        (inputs[i * size : (i + 1) * size], masked[i * size : (i + 1) * size], tokens[i * size : (i + 1) * size])
        for i in range(pieces)
    ]


def test_gradient_accumulation_equals_the_big_batch():
    batch = fixed_batch()
    big, big_opt = fresh_model_and_optimizer()
    step_on(big, big_opt, [batch])
    small, small_opt = fresh_model_and_optimizer()
    step_on(small, small_opt, split(batch, 2))
    for a, b in zip(big.parameters(), small.parameters()):
        assert torch.allclose(a, b, atol=1e-6)


def _ddp_worker(rank, world_size, init_file, out_dir):
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    model, optimizer = fresh_model_and_optimizer()
    ddp = torch.nn.parallel.DistributedDataParallel(MaskedLM(model))
    step_on(ddp, optimizer, [split(fixed_batch(), world_size)[rank]], Dist(rank, world_size))
    torch.save(model.state_dict(), os.path.join(out_dir, f"rank{rank}.pt"))
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_ddp_with_two_gloo_processes_equals_one_process_on_the_doubled_batch(tmp_path):
    mp.spawn(_ddp_worker, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    single, optimizer = fresh_model_and_optimizer()
    step_on(single, optimizer, [fixed_batch()])
    for rank in range(2):
        state = torch.load(tmp_path / f"rank{rank}.pt", weights_only=True)
        for name, tensor in single.state_dict().items():
            assert torch.allclose(state[name], tensor, atol=1e-6), name
    before, _ = fresh_model_and_optimizer()
    assert not torch.allclose(before.layers[0].fc1.weight, single.layers[0].fc1.weight)


def test_fp16_loss_scaling_skips_overflowing_steps_and_counts_them():
    model, optimizer = fresh_model_and_optimizer()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**120)  # scaled loss overflows
    before = [p.detach().clone() for p in model.parameters()]
    *_, skipped = step_on(model, optimizer, [fixed_batch()], precision="fp16", scaler=scaler)
    assert skipped and scaler.get_scale() == 2.0**119
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    loss, count, grad_norm, skipped = step_on(model, optimizer, [fixed_batch()], precision="fp16", scaler=scaler)
    assert not skipped and count > 0 and 0 < grad_norm < float("inf")
    assert not all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_cuda_mixed_precision_step(precision):
    model, optimizer = fresh_model_and_optimizer()
    model.cuda()
    optimizer = make_optimizer(model, TrainConfig())
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
    parts = [tuple(t.cuda() for t in fixed_batch())]
    loss, count, grad_norm, skipped = step_on(
        model, optimizer, parts, Dist(device=torch.device("cuda", 0)), precision, scaler
    )
    assert count > 0 and loss > 0 and not skipped


def metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_resumed_run_equals_the_uninterrupted_run_bitwise(data_dir, tmp_path):
    flags = [
        "--max-steps",
        "12",
        "--total-steps",
        "12",
        "--warmup-steps",
        "3",
        "--save-interval",
        "6",
        "--eval-interval",
        "6",
        "--log-interval",
        "3",
    ]
    assert run_train(data_dir, tmp_path / "whole", *flags) == 0
    assert run_train(data_dir, tmp_path / "cut", *flags[2:], "--max-steps", "6") == 0
    assert run_train(data_dir, tmp_path / "cut", *flags, "--resume") == 0
    whole, cut = metrics(tmp_path / "whole"), metrics(tmp_path / "cut")
    assert [r["step"] for r in whole] == [r["step"] for r in cut]  # the cut run's log reads as one run
    for a, b in zip(whole, cut):
        assert (a["loss"], a["grad_norm"], a["lr"]) == (b["loss"], b["grad_norm"], b["lr"])
    last = "checkpoints/step_00000012/model.safetensors"
    a, b = load_file(tmp_path / "whole" / last), load_file(tmp_path / "cut" / last)
    assert all(torch.equal(a[name], b[name]) for name in a)


def test_run_folder_contents_and_losses(trained_run):
    rows = metrics(trained_run)
    train = [float(r["loss"]) for r in rows if r["split"] == "train"]
    assert len(train) == 8 and train[-1] < train[0] - 0.5  # the loss falls
    evals = {(r["step"], r["language"]) for r in rows if r["split"] == "eval"}
    assert evals == {(s, lang) for s in ("20", "40") for lang in ("el", "en", "ru")}
    config = json.load(open(os.path.join(trained_run, "config.json")))
    assert config["train"]["max_steps"] == 40 and config["model"]["layers"] == 2
    checkpoint = os.path.join(trained_run, "checkpoints", "step_00000040")
    assert sorted(os.listdir(checkpoint)) == [
        "model.safetensors",
        "optimizer.pt",
        "rank0.json",
        "rank0.rng.pt",
        "state.json",
    ]
    assert os.path.exists(os.path.join(trained_run, "tokenizer", "sentencepiece.model"))
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(os.path.join(trained_run, "tensorboard"))
    events.Reload()
    assert [e.step for e in events.Scalars("train/loss")] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert "eval/en/perplexity" in events.Tags()["scalars"]


def test_an_existing_run_needs_resume(trained_run, data_dir, capsys):
    assert run_train(data_dir, trained_run, "--max-steps", "41") == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["train", "--data", "/nonexistent", "--out", "/tmp/x"]) == 2


def torchrun(data_dir, run_dir, device, *flags):
    schedule = ["--total-steps", "6", "--warmup-steps", "2", "--batch-size", "4", "--device", device]
    intervals = ["--log-interval", "3", "--save-interval", "3", "--eval-blocks", "8"]
    return run_torchrun("train", "--data", data_dir, "--out", str(run_dir), *schedule, *intervals, *flags)


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=[
                pytest.mark.gpu,
                pytest.mark.skipif(torch.cuda.device_count() < 2, reason="nccl needs 2 CUDA devices"),
            ],
        ),
    ],
)
@pytest.mark.slow
def test_torchrun_ddp_end_to_end_and_resumed(data_dir, tmp_path, device):
    assert f"2 process(es) on {device}" in torchrun(data_dir, tmp_path / "whole", device)
    checkpoint = tmp_path / "whole" / "checkpoints" / "step_00000006"
    assert {"rank0.json", "rank1.json", "rank0.rng.pt", "rank1.rng.pt"} <= set(os.listdir(checkpoint))
    assert json.loads((checkpoint / "rank0.json").read_text()) != json.loads((checkpoint / "rank1.json").read_text())
    assert json.loads((checkpoint / "state.json").read_text())["world_size"] == 2
    # Cut after step 3, then resumed by two processes: the same losses as the whole run.
    torchrun(data_dir, tmp_path / "cut", device, "--max-steps", "3")
    assert "resuming at step 3" in torchrun(data_dir, tmp_path / "cut", device, "--max-steps", "6", "--resume")
    # (The cut run also evaluated at its last step, 3.)
    whole, cut = (
        [
            (r["step"], r["language"], r["loss"])
            for r in metrics(tmp_path / run)
            if r["step"] == "6" or r["split"] == "train"
        ]
        for run in ("whole", "cut")
    )
    assert len(whole) == 5 and whole == cut
    if device == "cpu":
        last = "checkpoints/step_00000006/model.safetensors"
        a, b = load_file(tmp_path / "whole" / last), load_file(tmp_path / "cut" / last)
        assert all(torch.equal(a[name], b[name]) for name in a)
