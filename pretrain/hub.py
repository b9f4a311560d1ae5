"""A trained encoder behind fairseq's hub interface: ``from_pretrained(RUN_DIR)`` then
``encode``, ``decode``, ``extract_features``, ``fill_mask``, and ``register_classification_head``
+ ``predict`` for fine-tuning heads. Also reads an exported (or any XLM-R) Hugging Face folder,
masked LM or classifier."""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F

from pretrain import checkpoint
from pretrain.export import HF_TORCH_WEIGHTS, HF_WEIGHTS, load_hf
from pretrain.model import ModelConfig, XLMRModel, load_weights
from pretrain.run_dir import RunDir
from tokenizer.hf import open_tokenizer, tokenizer_file

MASK = "<mask>"


class XLMRHub:
    def __init__(self, model: XLMRModel, tokenizer):
        check_vocabulary(model.config, tokenizer)
        self.model, self.tokenizer = model.eval(), tokenizer

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def encode(self, sentence: str, *pairs: str) -> torch.Tensor:
        """``<s> sentence </s>`` (``</s></s> pair </s>`` for each pair) as a 1-D id tensor, in
        the tokenizer's own specials (BERT's ``[CLS] sentence [SEP]``)."""
        ids = self.tokenizer.encode(sentence)
        for pair in pairs:
            ids += [self.tokenizer.eos, *self.tokenizer.encode(pair)[1:]]
        return torch.tensor(ids, dtype=torch.long)

    def decode(self, tokens: torch.Tensor) -> str:
        return self.tokenizer.decode(tokens.tolist())

    @torch.no_grad()
    def extract_features(
        self, tokens: torch.Tensor, return_all_hiddens: bool = False
    ) -> Union[torch.Tensor, List[torch.Tensor]]:
        """[batch, length, hidden] of the last layer, or the embeddings' and every layer's."""
        tokens = (tokens.unsqueeze(0) if tokens.dim() == 1 else tokens).to(self.device)
        hiddens = self.model.features(tokens, return_all_hiddens)
        return hiddens if return_all_hiddens else hiddens[-1]

    def register_classification_head(self, name: str, num_classes: int, kind: str = "sentence") -> None:
        """fairseq's: a new head ``name`` (sentence: on ``<s>``; tokens: at every token)."""
        self.model.register_classification_head(name, num_classes, kind).to(self.device)

    @torch.no_grad()
    def predict(self, head: str, tokens: torch.Tensor, return_logits: bool = False) -> torch.Tensor:
        """fairseq's: log-probabilities (or logits) of head ``head`` for ``tokens`` ([length] or
        [batch, length], e.g. ``encode(a, b)`` for a pair): [batch, classes], or [batch, length,
        classes] for a token head."""
        tokens = (tokens.unsqueeze(0) if tokens.dim() == 1 else tokens).to(self.device)
        logits = self.model.classify(tokens, head)
        return logits if return_logits else F.log_softmax(logits.float(), dim=-1)

    def _pieces(self, text: str) -> List[int]:
        return self.tokenizer.encode(text)[1:-1] if text.strip() else []

    @torch.no_grad()
    def fill_mask(self, masked_input: str, topk: int = 5) -> List[Tuple[str, float, str]]:
        """The ``topk`` fillings of the single ``<mask>`` in ``masked_input``:
        (filled text, probability, predicted piece), best first."""
        if masked_input.count(MASK) != 1:
            raise ValueError(f"put exactly one {MASK} in the input")
        left, right = masked_input.split(MASK)
        tokenizer = self.tokenizer
        ids = [tokenizer.bos, *self._pieces(left), tokenizer.mask, *self._pieces(right), tokenizer.eos]
        tokens = torch.tensor([ids], device=self.device)
        masked = tokens.eq(tokenizer.mask)
        probs = self.model(tokens, masked)[0].float().softmax(-1)
        values, indices = probs.topk(topk)
        out = []
        for prob, index in zip(values.tolist(), indices.tolist()):
            piece = self.tokenizer.piece(index)
            word = piece.replace("\u2581", " ")
            glue = left.rstrip() + word if word.startswith(" ") else left + word
            out.append(((glue + right).strip(), prob, piece))
        return out


def check_vocabulary(config: ModelConfig, tokenizer) -> None:
    """The one vocabulary rule: the embedding matrix may hold more rows than the tokenizer has
    ids (padding rows, as real checkpoints have), never fewer."""
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(
            f"the tokenizer {tokenizer.model_path} has {tokenizer.vocab_size} ids, the model's embedding matrix"
            f" {config.vocab_size} rows: the tokenizer is not the model's"
        )


def is_hf_folder(path: str) -> bool:
    """A Hugging Face model folder: config.json and the weights beside it (a run folder keeps its
    weights in checkpoints/, a checkpoint folder has no config.json)."""
    weights = (HF_WEIGHTS, HF_TORCH_WEIGHTS)
    return os.path.exists(os.path.join(path, "config.json")) and any(
        os.path.exists(os.path.join(path, name)) for name in weights
    )


def load_run(path: str) -> Tuple[ModelConfig, Dict[str, torch.Tensor], str]:
    """(model config, weights, tokenizer file) of a run folder's latest checkpoint, of one
    checkpoint folder, or of a Hugging Face folder (XLM-R, RoBERTa or BERT)."""
    if is_hf_folder(path):
        model_cfg, state = load_hf(path)
        return model_cfg, state, tokenizer_file(path)
    run = RunDir(path)
    if not run.has_record():  # a checkpoint folder: RUN/checkpoints/step_XXXXXXXX
        run = RunDir(os.path.dirname(os.path.dirname(path)))
    ckpt = path if run.path != path else run.latest()
    if ckpt is None or not os.path.exists(os.path.join(ckpt, checkpoint.MODEL_FILE)):
        raise FileNotFoundError(
            f"{path}: no checkpoint: give a run folder, a checkpoint folder, or a Hugging Face folder (config.json,"
            " model.safetensors or pytorch_model.bin, and a tokenizer)"
        )
    model_cfg = checkpoint.read_state(ckpt).model
    return model_cfg, checkpoint.load_model(ckpt), run.tokenizer


def load_model(path: str, masked_lm: bool = False) -> Tuple[XLMRModel, str]:
    """(the model with the heads it holds, its tokenizer file) of what ``load_run`` reads; a
    model that comes without an LM head gets a fresh one, said in one line where the caller
    trains or uses it (``masked_lm``: an adapter's or a teacher's training, not an evaluation)."""
    model_cfg, state, tokenizer = load_run(path)
    model = XLMRModel(model_cfg)
    load_weights(model, state)
    if masked_lm and not model_cfg.lm_head:
        print(
            f"{path} has no masked-LM head: a fresh one is added (masked-LM training starts it from scratch)",
            flush=True,
        )
    return model, tokenizer


def from_pretrained(path: str, device: Optional[str] = None) -> XLMRHub:
    """A run folder (its latest checkpoint), one checkpoint folder, or a Hugging Face folder."""
    model, tokenizer = load_model(path)
    return XLMRHub(model.to(device or "cpu"), open_tokenizer(tokenizer))
