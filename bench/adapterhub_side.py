"""The AdapterHub half of ``bench/adapters_interop.py``; runs in .venv-adapters (adapters 1.3.0 on
transformers 4.57), imports nothing of this project.

  outputs  --hf DIR --adapter FOLDER ... --tokens FILE --out FILE
           load the adapters with ``load_adapter``, stack them in the order given, and write the
           hidden states of every layer and the masked-LM logits for the tokens
  make     --hf DIR --out DIR
           a language adapter (seq_bn_inv, factor 2) and a task adapter (seq_bn, factor 16) made by
           the library with random weights, saved with ``save_adapter``, and their outputs
"""

import argparse
import os

import torch
from adapters import SeqBnConfig, SeqBnInvConfig, XLMRobertaAdapterModel
from adapters.composition import Stack
from safetensors.torch import load_file, save_file

PAD = 1


def load_model(hf_dir):
    """The HF masked LM as the library's flex-head model, its LM head copied into a masked_lm head."""
    model = XLMRobertaAdapterModel.from_pretrained(hf_dir)
    model.add_masked_lm_head("mlm")
    weights = load_file(os.path.join(hf_dir, "model.safetensors"))
    head = model.heads["mlm"]
    with torch.no_grad():
        head[0].weight.copy_(weights["lm_head.dense.weight"])
        head[0].bias.copy_(weights["lm_head.dense.bias"])
        head[2].weight.copy_(weights["lm_head.layer_norm.weight"])
        head[2].bias.copy_(weights["lm_head.layer_norm.bias"])
        head[3].weight.copy_(weights["roberta.embeddings.word_embeddings.weight"])
        head[3].bias.copy_(weights["lm_head.bias"])
    return model.eval()


def outputs(model, names, tokens):
    model.set_active_adapters(Stack(*names))
    with torch.no_grad():
        out = model(input_ids=tokens, attention_mask=tokens.ne(PAD).long(), output_hidden_states=True, head="mlm")
    result = {f"hidden.{i}": h.contiguous() for i, h in enumerate(out.hidden_states)}
    result["logits"] = out.logits.contiguous()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("outputs", "make"))
    parser.add_argument("--hf", required=True)
    parser.add_argument("--adapter", action="append", default=[])
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    model = load_model(args.hf)
    tokens = load_file(args.tokens)["tokens"]
    if args.mode == "outputs":
        names = [model.load_adapter(folder) for folder in args.adapter]  # returns the name it loaded as
        save_file(outputs(model, names, tokens), args.out)
        return
    torch.manual_seed(1)
    model.add_adapter("de", config=SeqBnInvConfig(reduction_factor=2))
    model.add_adapter("news", config=SeqBnConfig(reduction_factor=16))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".adapters." in name or "invertible_adapters." in name:
                parameter.normal_(std=0.05)
    os.makedirs(args.out, exist_ok=True)
    for name in ("de", "news"):
        model.save_adapter(os.path.join(args.out, name), name)
    save_file(outputs(model, ["de", "news"], tokens), os.path.join(args.out, "outputs.safetensors"))


if __name__ == "__main__":
    main()
