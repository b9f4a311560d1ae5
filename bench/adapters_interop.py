"""make bench-adapters: MAD-X adapters here and in AdapterHub's ``adapters`` library give the same
outputs, both ways.

The library (adapters 1.3.0 on transformers 4.57) lives in .venv-adapters, apart from the test
extra's transformers; ``bench/adapterhub_side.py`` runs there. On one encoder (a pretraining run
given with --init, or a random one of the ``small`` shape below) exported as an HF folder:
  here -> library: a language adapter (invertible, factor 2) and a task adapter (factor 16) with
      random weights, saved here, loaded with ``load_adapter`` and stacked there;
  library -> here: the same kinds made and saved by the library, loaded here.
For a padded batch, compares the hidden states of every layer and the masked-LM logits (the
invertible block undone before the vocabulary projection) of the stack language -> task, and
prints the largest absolute difference of each; exits 1 above 1e-4.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

from pretrain.adapter_files import load_adapter, save_adapter
from pretrain.adapters import adapter_config
from pretrain.export import hf_config, to_hf
from pretrain.hub import load_model
from pretrain.model import XLMRModel, model_config
from toolkit import storage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY_PYTHON = os.path.join(ROOT, ".venv-adapters", "bin", "python")
SMALL = dict(layers=4, hidden=256, heads=4, ffn=1024)  # the random encoder's shape, vocabulary 5,000
TOLERANCE = 1e-4


def base_model(init: str | None) -> XLMRModel:
    torch.manual_seed(0)
    model = load_model(init)[0] if init else XLMRModel(model_config("tiny", 5000, **SMALL))
    return model.eval()


def our_outputs(model: XLMRModel, names, tokens) -> dict:
    model.set_active_adapters(*names)
    with torch.no_grad():
        hiddens = model.features(tokens, return_all_hiddens=True)
        logits = model.lm_logits(hiddens[-1])
    return {**{f"hidden.{i}": h for i, h in enumerate(hiddens)}, "logits": logits}


def library(*args: str) -> None:
    subprocess.run([LIBRARY_PYTHON, os.path.join(ROOT, "bench", "adapterhub_side.py"), *args], check=True)


def largest_differences(ours: dict, theirs: dict) -> tuple:
    hidden = max((ours[k] - theirs[k]).abs().max().item() for k in ours if k.startswith("hidden."))
    return hidden, (ours["logits"] - theirs["logits"]).abs().max().item()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--init", default=None, help="a pretraining run or HF folder (default: a random small encoder)")
    args = parser.parse_args(argv)
    if not os.path.exists(LIBRARY_PYTHON):
        print(f"{LIBRARY_PYTHON} is missing: run `make bench-adapters`, which installs it", file=sys.stderr)
        return 2
    base = base_model(args.init)
    tokens = torch.randint(4, base.config.vocab_size - 1, (4, 40), generator=torch.Generator().manual_seed(7))
    tokens[:, 0], tokens[:, -1], tokens[3, 25:] = 0, 2, 1  # <s>, </s>, a padded row
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = os.path.join(tmp, "hf")
        os.makedirs(hf_dir)
        storage.write_json(os.path.join(hf_dir, "config.json"), hf_config(base.config))
        save_file(to_hf(base.state_dict(), base.config), os.path.join(hf_dir, "model.safetensors"))
        save_file({"tokens": tokens}, os.path.join(tmp, "tokens.safetensors"))

        torch.manual_seed(1)
        base.add_adapter("sw", adapter_config("language"))
        base.add_adapter("topic", adapter_config("task"))
        with torch.no_grad():
            for name in ("sw", "topic"):
                for tensor in base.adapter_weights(name).values():
                    tensor.normal_(std=0.05)
                save_adapter(base, name, os.path.join(tmp, name))
        ours = our_outputs(base, ("sw", "topic"), tokens)
        library("outputs", "--hf", hf_dir, "--adapter", os.path.join(tmp, "sw"), "--adapter", os.path.join(tmp, "topic"),
                "--tokens", os.path.join(tmp, "tokens.safetensors"), "--out", os.path.join(tmp, "theirs.safetensors"))  # fmt: skip
        rows.append(("here -> library", *largest_differences(ours, load_file(os.path.join(tmp, "theirs.safetensors")))))

        library(
            "make",
            "--hf",
            hf_dir,
            "--tokens",
            os.path.join(tmp, "tokens.safetensors"),
            "--out",
            os.path.join(tmp, "hub"),
        )
        fresh = base_model(args.init)
        names = [load_adapter(fresh, os.path.join(tmp, "hub", name)) for name in ("de", "news")]
        theirs = load_file(os.path.join(tmp, "hub", "outputs.safetensors"))
        rows.append(("library -> here", *largest_differences(our_outputs(fresh, names, tokens), theirs)))

    shape = base.config
    print(
        f"encoder {shape.layers} layers x {shape.hidden}, vocabulary {shape.vocab_size:,}; stack language -> task; batch 4 x 40 (one row padded)"
    )
    print(f"{'direction':<17} {'hidden states':>14} {'MLM logits':>12}  (largest |difference|)")
    for direction, hidden, logits in rows:
        print(f"{direction:<17} {hidden:>14.2e} {logits:>12.2e}")
    worst = max(max(hidden, logits) for _, hidden, logits in rows)
    print(f"equal outputs: {'yes' if worst <= TOLERANCE else 'NO'} (largest {worst:.2e}, tolerance {TOLERANCE:g})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
