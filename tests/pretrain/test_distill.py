"""TinyBERT's distillation losses: the layer mapping, zero for a copy of the teacher, and falling
in a short run."""

import copy

import pytest
import torch

from pretrain.distill import DistillConfig, Distiller, layer_step, soft_cross_entropy
from pretrain.model import XLMRModel, model_config
from tests.pretrain.test_adapters import tokens

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
    distiller = Distiller(teacher.eval(), student)
    losses = distiller(teacher, student, ids)
    t_scores, s_scores = [], []
    t_hidden, s_hidden = teacher.features(ids, True, t_scores), student.features(ids, True, s_scores)
    real = ids.ne(1)
    mse = lambda s, t: torch.nn.functional.mse_loss(distiller.projection(s[real]), t[real])
    expected_hidden = sum(mse(s_hidden[m], t_hidden[2 * m]) for m in (1, 2, 3))
    expected_attention = sum(torch.nn.functional.mse_loss(s_scores[m - 1], t_scores[2 * m - 1]) for m in (1, 2, 3))
    torch.testing.assert_close(losses["hidden"], expected_hidden)
    torch.testing.assert_close(losses["attention"], expected_attention)
    torch.testing.assert_close(losses["embedding"], mse(s_hidden[0], t_hidden[0]))
    assert "logits" not in losses  # general distillation: intermediate layers only, by default


def test_a_copy_of_the_teacher_has_zero_losses():
    teacher = encoder(2).eval()
    student = copy.deepcopy(teacher)
    distiller = Distiller(teacher, student, DistillConfig(logits_weight=1.0, temperature=2.0))
    with torch.no_grad():
        distiller.projection.weight.copy_(torch.eye(128))
    losses = distiller(teacher, student, tokens())
    assert set(losses) == {"attention", "hidden", "embedding", "logits", "total"}
    for name, loss in losses.items():
        assert loss.item() == pytest.approx(0.0, abs=1e-6), name
    assert soft_cross_entropy(torch.tensor([[0.0, 2.0]]), torch.tensor([[2.0, 0.0]]), 1.0) > 0.5


def test_distillation_losses_fall_in_a_short_run():
    teacher = encoder(4, hidden=128, seed=0).eval()
    student = encoder(2, hidden=64, seed=1)
    distiller = Distiller(teacher, student, DistillConfig(logits_weight=1.0))
    optimizer = torch.optim.AdamW([*student.parameters(), *distiller.projection.parameters()], lr=3e-3)
    ids = torch.randint(4, VOCAB - 1, (8, 24), generator=torch.Generator().manual_seed(2))
    first = None
    for _ in range(40):
        losses = distiller(teacher, student, ids)
        optimizer.zero_grad()
        losses["total"].backward()
        optimizer.step()
        first = first or {name: loss.item() for name, loss in losses.items()}
    last = distiller(teacher, student, ids)
    for name in first:
        assert last[name].item() < 0.7 * first[name], (name, first[name], last[name].item())
    assert all(parameter.grad is None for parameter in teacher.parameters())  # the teacher stays fixed
