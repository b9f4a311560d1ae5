"""Knowledge distillation of an encoder into a smaller student, TinyBERT's losses (Jiao et al.
2020). No I/O.

With k = teacher layers / student layers, student layer m (1-based) learns from teacher layer
m·k: the MSE of their attention scores (before the softmax, 0 at padded keys, per head, so the
two have as many heads) and of their hidden states, the student's projected to the teacher's
width by a learned linear map. The embedding outputs (layer 0) match the same way (the embedding
loss). And the soft cross-entropy of the student's masked-LM (or classifier) logits against the
teacher's, both divided by a temperature, as TinyBERT's prediction-layer loss. It is summed over
the classes and averaged over the positions, the usual cross-entropy; TinyBERT's code averages
over the classes too (its loss is this one divided by their number), which at a 250k vocabulary
would shrink the loss's weight 250,000-fold. TinyBERT's general distillation leaves it out
(``logits_weight=0``); by default it is in, so that a student of general distillation is a working
masked LM (held-out loss, ``fill_mask``), and task distillation learns all of them at once where
TinyBERT runs the intermediate layers, then the predictions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import torch
import torch.nn.functional as F
from torch import nn

from pretrain.model import LM_HEAD_PARAMETERS, XLMRModel


@dataclass(frozen=True)
class DistillConfig:
    attention_weight: float = 1.0  # attention-score MSE, summed over the mapped layers
    hidden_weight: float = 1.0  # hidden-state MSE of the mapped layers
    embedding_weight: float = 1.0  # hidden-state MSE of the embedding outputs
    logits_weight: float = (
        1.0  # soft cross-entropy on the logits (0: the intermediate layers only, TinyBERT's general distillation)
    )
    temperature: float = 1.0  # the logits of both divided by this

    def __post_init__(self):
        for name in ("attention_weight", "hidden_weight", "embedding_weight", "logits_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")


def layer_step(teacher: XLMRModel, student: XLMRModel) -> int:
    """k: student layer m learns from teacher layer m·k. The two must share a vocabulary and
    heads, and the student's layers divide the teacher's."""
    t, s = teacher.config, student.config
    if t.vocab_size != s.vocab_size:
        raise ValueError(f"the student's vocabulary has {s.vocab_size} ids, the teacher's {t.vocab_size}")
    if t.heads != s.heads:
        raise ValueError(f"attention scores are compared per head: the student needs {t.heads} heads, has {s.heads}")
    if s.layers > t.layers or t.layers % s.layers:
        raise ValueError(f"the student's {s.layers} layers must divide the teacher's {t.layers}")
    return t.layers // s.layers


def soft_cross_entropy(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """TinyBERT's soft cross-entropy less the teacher's entropy, i.e. KL(teacher || student) at
    ``temperature``: the same gradients, and 0 when the student predicts as the teacher does."""
    targets = F.log_softmax(teacher_logits.float() / temperature, dim=-1)
    predicted = F.log_softmax(student_logits.float() / temperature, dim=-1)
    return (targets.exp() * (targets - predicted)).sum(-1).mean()


class Distiller(nn.Module):
    """A student learning from a fixed teacher: the objective (``optim``) of general distillation
    on masked blocks, or with ``head`` of task distillation on a fine-tuning set. Its parameters
    are the student's (``model``) and the learned projection of the student's hidden states to the
    teacher's width; the teacher stays outside them (no gradients, not in the state dict, the
    optimizer or DDP, always in eval mode)."""

    def __init__(
        self,
        teacher: XLMRModel,
        student: XLMRModel,
        config: DistillConfig = DistillConfig(),
        head: Optional[str] = None,
    ):
        super().__init__()
        self.step, self.config, self.head = layer_step(teacher, student), config, head
        self.model = student
        self.projection = nn.Linear(student.config.hidden, teacher.config.hidden)
        nn.init.normal_(self.projection.weight, std=student.config.init_std)
        nn.init.zeros_(self.projection.bias)
        self.__dict__["teacher"] = teacher.eval().requires_grad_(False)  # not a submodule
        if not config.logits_weight:  # no loss reaches the MLM head: frozen, else DDP waits for its gradients
            for name in LM_HEAD_PARAMETERS:
                student.get_parameter(name).requires_grad_(False)

    def _apply(self, fn, *args, **kwargs):
        self.teacher._apply(fn, *args, **kwargs)  # .to(device) moves the teacher with the student
        return super()._apply(fn, *args, **kwargs)

    def losses(
        self, tokens: torch.Tensor, masked: Optional[torch.Tensor] = None, head: Optional[str] = None
    ) -> Dict[str, torch.Tensor]:
        """Each loss and their weighted ``total`` for a batch. The logits compared are the MLM
        head's at the ``masked`` positions (all real ones when None), or classification head
        ``head``'s (task distillation)."""
        teacher, student = self.teacher, self.model
        with torch.no_grad():
            teacher_scores: List[torch.Tensor] = []
            teacher_hiddens = teacher.features(tokens, True, teacher_scores)
        student_scores: List[torch.Tensor] = []
        student_hiddens = student.features(tokens, True, student_scores)
        real = tokens.ne(student.config.pad_id)  # hidden states of padding carry nothing to learn
        mapped = [self.step * m for m in range(1, len(student_hiddens))]
        hidden_mse = lambda s, t: F.mse_loss(self.projection(student_hiddens[s][real]), teacher_hiddens[t][real])
        losses = {
            "attention": sum(F.mse_loss(student_scores[m - 1], teacher_scores[t - 1]) for m, t in enumerate(mapped, 1)),
            "hidden": sum(hidden_mse(m, t) for m, t in enumerate(mapped, 1)),
            "embedding": hidden_mse(0, 0),
        }
        if self.config.logits_weight:
            student_logits, teacher_logits = self._logits(student_hiddens[-1], teacher_hiddens[-1], real, masked, head)
            losses["logits"] = soft_cross_entropy(student_logits, teacher_logits, self.config.temperature)
        weights = {
            "attention": self.config.attention_weight,
            "hidden": self.config.hidden_weight,
            "embedding": self.config.embedding_weight,
            "logits": self.config.logits_weight,
        }
        losses["total"] = sum(weights[name] * loss for name, loss in losses.items())
        return losses

    def _logits(self, student_hidden, teacher_hidden, real, masked, head):
        """(student's, teacher's) logits: [positions, vocabulary] or [rows, classes]."""
        teacher, student = self.teacher, self.model
        if head is None:
            picked = real if masked is None else masked
            with torch.no_grad():
                teacher_logits = teacher.lm_logits(teacher_hidden[picked])
            return student.lm_logits(student_hidden[picked]), teacher_logits
        with torch.no_grad():
            teacher_logits = teacher.classification_heads[head](teacher_hidden)
        student_logits = student.classification_heads[head](student_hidden)
        if student_logits.dim() == 3:  # a token head: every real position
            return student_logits[real], teacher_logits[real]
        return student_logits, teacher_logits

    def forward(self, tokens: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        """A micro-batch's total loss summed over its units: (inputs, masked positions, targets)
        of masked blocks, the targets being the teacher's to give; or with a ``head``, (tokens,
        labels) of a fine-tuning set, the labels the teacher's to give too."""
        masked = rest[0] if self.head is None else None
        return self.losses(tokens, masked, self.head)["total"] * self.units(tokens, *rest)

    def units(self, tokens: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        """The masked positions of a block batch, the examples of a fine-tuning batch."""
        return rest[0].sum() if self.head is None else torch.tensor(len(tokens))
