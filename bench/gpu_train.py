"""This trainer's training step on one CUDA GPU: tokens/s and MFU in bf16 and fp16.

For preset base (vocabulary 250,002) at 32 x 512 tokens per step by default, times steps of
pretrain.optim.train_step (autocast to the precision, GradScaler in fp16, fused AdamW from
make_optimizer, clipping) on random ids with a fresh 15% mask each step, after warm-up steps, and
prints one line per precision: step time, tokens/s, model FLOP/s and MFU, the model FLOP/s over the
GPU's peak dense bf16/fp16 FLOP/s (known GPUs below, or --peak-tflops). Model FLOPs as
bench/train.py counts them: the LM head only at the masked positions, where this trainer runs it.
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import time

import torch

from bench.train import describe_flops, flops_per_token, random_batch
from pretrain.dist import Dist
from pretrain.model import MODEL_PRESETS, ModelConfig, XLMRModel, model_config
from pretrain.optim import Optimization, train_step
from pretrain.run_record import train_config
from pretrain.train import MaskedLM

# Peak dense (no sparsity) bf16 = fp16 tensor-core TFLOP/s, by device-name pattern, first match wins.
PEAK_TFLOPS = [
    (r"\bH200\b", 989.0, "H200"),
    (r"\bH100\b.*\bPCIe\b", 756.0, "H100 PCIe"),
    (r"\bH100\b.*\bNVL\b", 835.0, "H100 NVL"),
    (r"\bH100\b", 989.0, "H100 SXM"),
    (r"\bA100\b", 312.0, "A100"),
    (r"\bL4\b", 121.0, "L4"),
]


def known_peak(device_name: str):
    """(peak TFLOP/s, label) of a GPU in PEAK_TFLOPS, else (None, the name)."""
    for pattern, tflops, label in PEAK_TFLOPS:
        if re.search(pattern, device_name):
            return tflops, label
    return None, device_name


def run(args, config: ModelConfig, precision: str, device: torch.device, peak_tflops) -> str:
    train_cfg = train_config(args.config, precision=precision)
    torch.manual_seed(0)
    model = XLMRModel(config).to(device)
    optimization = Optimization.of(model, train_cfg, device)  # fused AdamW, GradScaler in fp16
    for group in optimization.optimizer.param_groups:
        group["lr"] = train_cfg.lr  # the run's schedule would set it
    step_model = MaskedLM(torch.compile(model) if args.compile else model)
    # All batches built before timing: the trainer masks on the CPU while the GPU works.
    batches = [
        tuple(t.to(device) for t in random_batch(config, args.batch, args.length, seed)[:3])
        for seed in range(args.warmup + args.steps)
    ]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    dist = Dist(device=device)

    for batch in batches[: args.warmup]:  # compilation, allocator and cuBLAS heuristics settle here
        train_step(step_model, [batch], optimization, dist)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    skipped = 0
    sync()
    start = time.perf_counter()
    for batch in batches[args.warmup :]:
        skipped += train_step(step_model, [batch], optimization, dist).skipped
    sync()
    seconds = time.perf_counter() - start

    tokens = args.steps * args.batch * args.length
    masked_fraction = sum(int(masked.sum()) for _, masked, _ in batches[args.warmup :]) / tokens
    flops = flops_per_token(config, args.length, masked_fraction) * tokens / seconds
    mfu = f"MFU {100 * flops / (peak_tflops * 1e12):5.1f}%" if peak_tflops else "MFU n/a (no --peak-tflops)"
    memory = (
        f" | peak memory {torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB" if device.type == "cuda" else ""
    )
    del model, step_model, optimization, batches  # the next precision starts from an empty GPU
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return (
        f"{precision}: {seconds / args.steps:.3f} s/step | {tokens / seconds:10,.0f} tokens/s | "
        f"{flops / 1e12:7.2f} TFLOP/s | {mfu}{memory}" + (f" | {skipped} skipped (fp16 overflow)" if skipped else "")
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=list(MODEL_PRESETS), default="base", help="model (and AdamW) preset")
    parser.add_argument("--vocab", type=int, default=250_002)
    parser.add_argument("--batch", type=int, default=32, help="sequences per step")
    parser.add_argument("--length", type=int, default=512, help="tokens per sequence")
    parser.add_argument("--precisions", nargs="+", choices=["bf16", "fp16"], default=["bf16", "fp16"])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per precision")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (more with --compile)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--peak-tflops", type=float, help="the GPU's peak dense bf16/fp16 TFLOP/s (default: by name)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a dry run of the logic")
    args = parser.parse_args(argv)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            parser.error("torch sees no CUDA device (--device cpu for a dry run)")
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        name = torch.cuda.get_device_name(device)
    else:
        device, name = torch.device("cpu"), "CPU"
    peak, label = (args.peak_tflops, name) if args.peak_tflops else known_peak(name)
    config = model_config(args.config, args.vocab)
    print(
        f"{name}: model {args.config}, vocabulary {args.vocab:,}, {args.batch} x {args.length} tokens per step, "
        f"{args.steps} steps after {args.warmup} warm-up{', compiled' if args.compile else ''}; "
        f"peak {f'{peak:.0f} TFLOP/s ({label})' if peak else 'unknown'}"
    )
    print(describe_flops(config, args.length) + ", here the masked fraction")
    for precision in args.precisions:
        print(run(args, config, precision, device, peak), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
