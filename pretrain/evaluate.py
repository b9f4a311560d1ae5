"""Evaluation: a fine-tuned classifier's accuracy (entity F1 for a token classifier) on test sets
(one per target language, for zero-shot transfer), and sentence retrieval without fine-tuning (the XTREME Tatoeba protocol:
mean-pooled hidden states of one layer, nearest neighbour by cosine, accuracy both ways).
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from pretrain.adapter_files import adapter_folder, load_adapter
from pretrain.finetune import TASK_ADAPTER, FinetuneConfig, evaluate, labels_of
from pretrain.hub import XLMRHub
from pretrain.model import head_kind
from pretrain.tasks import HEAD, check_labels, collate, encode_rows, head_kind_of, read_examples
from toolkit import storage


def default_layer(layers: int, sentence_encoder: bool = False) -> int:
    """The retrieval layer by model kind: a sentence encoder's last (what it was trained to pool);
    an MLM encoder's two thirds of the way up, XTREME's choice for XLM-R base (8 of 12)."""
    return layers if sentence_encoder else max(1, layers * 2 // 3)


def model_layer(hub: XLMRHub) -> int:
    """``default_layer`` of the hub's model (a model that came without an LM head is a sentence encoder)."""
    return default_layer(hub.model.config.layers, sentence_encoder=not hub.model.config.lm_head)


@torch.no_grad()
def layer_embeddings(
    hub: XLMRHub, sentences: Sequence[str], layers: Sequence[int], batch_size: int = 32
) -> List[torch.Tensor]:
    """Per layer of ``layers`` (0 = the embeddings), in one pass: [sentences, hidden], each
    sentence's hidden states averaged over its tokens, ``<s>`` and ``</s>`` included."""
    for layer in layers:
        if not 0 <= layer <= hub.model.config.layers:
            raise ValueError(f"layer {layer}: the model has layers 0 (embeddings) to {hub.model.config.layers}")
    limit = hub.model.config.max_tokens
    rows = [
        ids[: limit - 1] + ids[-1:] if len(ids) > limit else ids for ids in (hub.tokenizer.encode(s) for s in sentences)
    ]
    out: List[List[torch.Tensor]] = [[] for _ in layers]
    pad = hub.model.config.pad_id
    for start in range(0, len(rows), batch_size):
        tokens = collate(rows[start : start + batch_size], pad).to(hub.device)
        hiddens = hub.model.features(tokens, return_all_hiddens=True)
        real = tokens.ne(pad).unsqueeze(-1).float()
        for parts, layer in zip(out, layers):
            parts.append((hiddens[layer].float() * real).sum(1) / real.sum(1))
    return [torch.cat(parts) for parts in out]


def sentence_embeddings(hub: XLMRHub, sentences: Sequence[str], layer: int, batch_size: int = 32) -> torch.Tensor:
    """[sentences, hidden] of one layer (``layer_embeddings``)."""
    return layer_embeddings(hub, sentences, [layer], batch_size)[0]


def retrieval_accuracy(source: torch.Tensor, target: torch.Tensor) -> Tuple[float, float]:
    """(source -> target, target -> source): the share of rows whose nearest neighbour by cosine
    on the other side is the row of the same index."""
    if len(source) != len(target) or not len(source):
        raise ValueError(
            f"retrieval needs two line-aligned, non-empty sides; got {len(source)} and {len(target)} lines"
        )
    similarity = F.normalize(source, dim=-1) @ F.normalize(target, dim=-1).T
    expected = torch.arange(len(source), device=similarity.device)
    forward = (similarity.argmax(1) == expected).float().mean().item()
    backward = (similarity.argmax(0) == expected).float().mean().item()
    return forward, backward


def read_lines(path: str) -> List[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def retrieval(
    hub: XLMRHub, source_file: str, target_file: str, layers: Optional[Sequence[int]] = None
) -> List[Tuple[int, float, float]]:
    """(layer, source -> target, target -> source) for each of ``layers`` (default: the model's
    ``default_layer``), the embeddings computed in one pass."""
    source, target = read_lines(source_file), read_lines(target_file)
    if len(source) != len(target):
        raise ValueError(
            f"{source_file} has {len(source)} lines, {target_file} {len(target)}: they must be line-aligned"
        )
    layers = list(layers) if layers is not None else [model_layer(hub)]
    pairs = zip(layer_embeddings(hub, source, layers), layer_embeddings(hub, target, layers))
    return [(layer, *retrieval_accuracy(a, b)) for layer, (a, b) in zip(layers, pairs)]


def classification_scores(
    hub: XLMRHub,
    model_dir: str,
    tests: Dict[str, str],
    config: FinetuneConfig,
    language_adapters: Optional[Dict[str, str]] = None,
) -> List[Tuple[str, float, int]]:
    """(name, score, examples) per test file of a fine-tuned classifier, best first: accuracy,
    or entity F1 for a token classifier (``config.task`` tokens). ``language_adapters``: test
    name -> adapter folder, swapped in under the task adapter for that test (MAD-X)."""
    language_adapters = language_adapters or {}
    trained_stack = hub.model.active_adapters
    if language_adapters and TASK_ADAPTER not in trained_stack:
        raise ValueError(f"{model_dir} has no task adapter: --language-adapter needs a model fine-tuned with --adapter")
    unknown = sorted(set(language_adapters) - set(tests))
    if unknown:
        raise ValueError(f"--language-adapter {unknown[0]}: no --test of that name")
    labels = labels_of(model_dir)
    if labels is None or HEAD not in hub.model.classification_heads:
        raise ValueError(f"{model_dir} is not a classifier: fine-tune it first (python -m pretrain finetune)")
    kind = head_kind(hub.model.classification_heads[HEAD])
    if kind != head_kind_of(config.task):
        raise ValueError(f"{model_dir} has a {kind} classification head: it cannot score the {config.task} task")
    scores = []
    for name, path in tests.items():
        examples = read_examples(path, config)
        check_labels(path, examples, labels, "labels the classifier does not know")
        rows = encode_rows(
            hub.tokenizer, examples, labels, config.task, min(config.max_length, hub.model.config.max_tokens)
        )
        if name in language_adapters:
            swapped = load_adapter(hub.model, adapter_folder(language_adapters[name]), f"language-{name}")
            hub.model.set_active_adapters(swapped, TASK_ADAPTER)
        _, score = evaluate(hub.model, examples, rows, labels, config, hub.device)
        if name in language_adapters:
            hub.model.remove_adapter(swapped)
            hub.model.set_active_adapters(*trained_stack)
        scores.append((name, score, len(examples)))
    return sorted(scores, key=lambda score: (-score[1], score[0]))


def write_scores(
    scores: Sequence[Tuple[str, float, int]], out_dir: str, metric: str = "accuracy", **plot_options
) -> str:
    """``scores.csv`` and a bar chart ``scores.png`` (``pretrain.plot.draw_scores``: its title,
    baselines, ... from ``plot_options``), best first; the table as text."""
    from pretrain.plot import plot_scores

    lines = [f"name,{metric},examples"] + [f"{name},{value:.4f},{count}" for name, value, count in scores]
    storage.write_text(os.path.join(out_dir, "scores.csv"), "\n".join(lines) + "\n")
    plot_scores(scores, os.path.join(out_dir, "scores.png"), metric=metric, **plot_options)
    width = max(len(name) for name, _, _ in scores)
    return "\n".join(f"{name:<{width}}  {metric} {value:.4f}  ({count} examples)" for name, value, count in scores)
