import pytest
import torch
import torch.nn.functional as F

from pretrain.data import mask_tokens, masking_generator
from pretrain.model import PAD, ModelConfig, XLMRModel, model_config, position_ids

VOCAB = 300


def random_tokens(batch, length, seed=0):
    tokens = torch.randint(4, VOCAB - 1, (batch, length), generator=torch.Generator().manual_seed(seed))
    tokens[:, 0], tokens[:, -1] = 0, 2
    return tokens


@pytest.mark.slow
def test_presets_match_xlmr():
    base, large = model_config("base", 250_002), model_config("large", 250_002)
    assert (base.layers, base.hidden, base.heads, base.ffn, base.max_positions) == (12, 768, 12, 3072, 514)
    assert (large.layers, large.hidden, large.heads, large.ffn) == (24, 1024, 16, 4096)
    # XLM-R base has 278M parameters, 86M of them outside the embeddings.
    assert 270e6 < XLMRModel(base).num_parameters() < 280e6
    with pytest.raises(ValueError):
        model_config("huge", 100)
    with pytest.raises(ValueError):
        ModelConfig(hidden=100, heads=12)


def test_positions_start_after_padding_and_skip_pads():
    tokens = torch.tensor([[0, 9, 9, 2, PAD, PAD]])
    assert position_ids(tokens).tolist() == [[2, 3, 4, 5, 1, 1]]


def test_padding_does_not_change_the_real_tokens_outputs():
    torch.manual_seed(0)
    model = XLMRModel(model_config("tiny", VOCAB)).eval()
    tokens = random_tokens(1, 10)
    padded = torch.cat([tokens, torch.full((1, 6), PAD)], dim=1)
    with torch.no_grad():
        assert torch.allclose(model(tokens), model(padded)[:, :10], atol=1e-5)


def test_head_at_masked_positions_equals_the_full_head():
    torch.manual_seed(0)
    model = XLMRModel(model_config("tiny", VOCAB)).eval()
    tokens = random_tokens(3, 16)
    inputs, masked = mask_tokens(tokens, VOCAB - 1, masking_generator(0, 1))
    with torch.no_grad():
        assert torch.allclose(model(inputs, masked), model(inputs)[masked], atol=1e-5)


def test_bert_initialization():
    torch.manual_seed(0)
    model = XLMRModel(model_config("tiny", VOCAB))
    assert model.embed_tokens.weight[PAD].abs().sum() == 0
    assert abs(model.layers[0].fc1.weight.std().item() - 0.02) < 0.002
    assert model.layers[0].fc1.bias.abs().sum() == 0 and model.head_bias.abs().sum() == 0


@pytest.mark.slow
def test_tiny_model_overfits_one_batch():
    torch.manual_seed(0)
    model = XLMRModel(model_config("tiny", VOCAB, dropout=0.0, attention_dropout=0.0))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    tokens = random_tokens(4, 32)
    inputs, masked = mask_tokens(tokens, VOCAB - 1, masking_generator(0, 0), mask_prob=0.3)
    for _ in range(150):
        loss = F.cross_entropy(model(inputs, masked), tokens[masked])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert masked.sum() > 20 and loss.item() < 0.5


def test_bf16_autocast_on_cpu_trains():
    torch.manual_seed(0)
    model = XLMRModel(model_config("tiny", VOCAB, dropout=0.0, attention_dropout=0.0))
    tokens = random_tokens(2, 16)
    inputs, masked = mask_tokens(tokens, VOCAB - 1, masking_generator(0, 0))
    reference = F.cross_entropy(model(inputs, masked), tokens[masked])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(inputs, masked)
    assert logits.dtype == torch.bfloat16
    loss = F.cross_entropy(logits.float(), tokens[masked])
    loss.backward()
    assert abs(loss.item() - reference.item()) < 0.05
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in model.parameters())


def test_too_long_input_is_a_clear_error():
    model = XLMRModel(model_config("tiny", VOCAB, max_positions=10))
    with pytest.raises(ValueError, match="holds 8"):
        model(random_tokens(1, 9))
