import math

import torch

from pretrain.data import FIRST_PIECE, mask_tokens, masking_generator
from tokenizer.xlmr import BOS, EOS, PAD

MASK = 999


def batch():
    tokens = torch.randint(FIRST_PIECE, MASK, (64, 512), generator=torch.Generator().manual_seed(1))
    tokens[:, 0], tokens[:, 100::101] = BOS, EOS
    tokens[:8, 400:] = PAD
    return tokens


def test_masking_statistics():
    tokens = batch()
    inputs, picked = mask_tokens(tokens, MASK, masking_generator(0, 0, 0))
    eligible = (tokens != BOS) & (tokens != EOS) & (tokens != PAD)
    n = int(eligible.sum())
    assert not picked[~eligible].any()  # never <s>, </s> or <pad>
    rate = picked.sum().item() / n
    assert abs(rate - 0.15) < 4 * math.sqrt(0.15 * 0.85 / n)
    k = int(picked.sum())
    as_mask = (inputs[picked] == MASK).float().mean().item()
    unchanged = (inputs[picked] == tokens[picked]).float().mean().item()
    random = 1 - as_mask - unchanged
    # A random replacement equals the original with probability ~1/995, counted as unchanged.
    for share, target in ((as_mask, 0.8), (unchanged, 0.1), (random, 0.1)):
        assert abs(share - target) < 4 * math.sqrt(target * (1 - target) / k) + 0.002
    assert (inputs[~picked] == tokens[~picked]).all()
    replaced = inputs[picked & (inputs != MASK) & (inputs != tokens)]
    assert ((replaced >= FIRST_PIECE) & (replaced < MASK)).all()


def test_masks_are_drawn_afresh_per_step_and_rank_and_reproducibly():
    tokens = batch()[:4]
    first = mask_tokens(tokens, MASK, masking_generator(7, 3, 0))
    again = mask_tokens(tokens, MASK, masking_generator(7, 3, 0))
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    for keys in ((7, 4, 0), (7, 3, 1), (8, 3, 0)):
        assert not torch.equal(first[1], mask_tokens(tokens, MASK, masking_generator(*keys))[1])
