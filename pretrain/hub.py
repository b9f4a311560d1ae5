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
from pretrain.export import load_hf
from pretrain.model import ModelConfig, XLMRModel, load_weights
from pretrain.run_dir import RunDir
from tokenizer.xlmr import BOS, EOS, XLMRTokenizer

MASK = "<mask>"


class XLMRHub:
    def __init__(self, model: XLMRModel, tokenizer: XLMRTokenizer):
        if model.config.vocab_size != tokenizer.vocab_size:
            raise ValueError(f"model vocabulary {model.config.vocab_size} != tokenizer's {tokenizer.vocab_size}")
        self.model, self.tokenizer = model.eval(), tokenizer

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def encode(self, sentence: str, *pairs: str) -> torch.Tensor:
        """``<s> sentence </s>`` (``</s></s> pair </s>`` for each pair) as a 1-D id tensor."""
        ids = self.tokenizer.encode(sentence)
        for pair in pairs:
            ids += [EOS, *self.tokenizer.encode(pair)[1:]]
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
        ids = [BOS, *self._pieces(left), self.tokenizer.mask, *self._pieces(right), EOS]
        tokens = torch.tensor([ids], device=self.device)
        masked = tokens.eq(self.tokenizer.mask)
        probs = self.model(tokens, masked)[0].float().softmax(-1)
        values, indices = probs.topk(topk)
        out = []
        for prob, index in zip(values.tolist(), indices.tolist()):
            piece = self.tokenizer.piece(index)
            word = piece.replace("\u2581", " ")
            glue = left.rstrip() + word if word.startswith(" ") else left + word
            out.append(((glue + right).strip(), prob, piece))
        return out


def load_run(path: str) -> Tuple[ModelConfig, Dict[str, torch.Tensor], str]:
    """(model config, weights, SentencePiece model path) of a run folder's latest checkpoint, of
    one checkpoint folder, or of a Hugging Face XLM-R folder."""
    if os.path.exists(os.path.join(path, "sentencepiece.bpe.model")):
        model_cfg, state = load_hf(path)
        return model_cfg, state, os.path.join(path, "sentencepiece.bpe.model")
    run = RunDir(path)
    if not run.has_record():  # a checkpoint folder: RUN/checkpoints/step_XXXXXXXX
        run = RunDir(os.path.dirname(os.path.dirname(path)))
    ckpt = path if run.path != path else run.latest()
    if ckpt is None or not os.path.exists(os.path.join(ckpt, checkpoint.MODEL_FILE)):
        raise FileNotFoundError(f"{path}: no checkpoint (a run folder, a checkpoint folder or a Hugging Face folder)")
    model_cfg = ModelConfig(**checkpoint.read_state(ckpt)["model"])
    return model_cfg, checkpoint.load_model(ckpt), run.sentencepiece_model


def load_model(path: str) -> Tuple[XLMRModel, str]:
    """(the model with the heads it holds, its SentencePiece model path) of what ``load_run`` reads."""
    model_cfg, state, sp_model = load_run(path)
    model = XLMRModel(model_cfg)
    load_weights(model, state)
    return model, sp_model


def from_pretrained(path: str, device: Optional[str] = None) -> XLMRHub:
    """A run folder (its latest checkpoint), one checkpoint folder, or a Hugging Face folder."""
    model, sp_model = load_model(path)
    return XLMRHub(model.to(device or "cpu"), XLMRTokenizer(sp_model))
