import os

import pytest
import torch

from pretrain.cli import main
from pretrain.hub import from_pretrained
from tests.tokenizer.conftest import SCRIPTS


def test_encode_decode_and_features(trained_run):
    hub = from_pretrained(trained_run)
    tokens = hub.encode(SCRIPTS["Latin"])
    assert tokens[0] == 0 and tokens[-1] == 2 and hub.decode(tokens) == SCRIPTS["Latin"]
    pair = hub.encode("a", "b")
    assert pair.tolist()[-1] == 2 and pair.tolist().count(2) == 3
    features = hub.extract_features(tokens)
    assert features.shape == (1, len(tokens), 128)
    every = hub.extract_features(tokens, return_all_hiddens=True)
    assert len(every) == 3 and torch.equal(every[-1], features)  # embeddings + 2 layers


def test_fill_mask_ranks_the_models_predictions(trained_run):
    hub = from_pretrained(trained_run)
    results = hub.fill_mask("The library opens every <mask> at nine.", topk=5)
    assert len(results) == 5
    probs = [p for _, p, _ in results]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1
    text, _, piece = results[0]
    assert text.startswith("The library opens every") and text.endswith("at nine.")
    assert piece.replace("\u2581", "") in text
    with pytest.raises(ValueError):
        hub.fill_mask("no mask here")


def test_checkpoint_folder_and_plot(trained_run, tmp_path):
    checkpoint = os.path.join(trained_run, "checkpoints", "step_00000040")
    a, b = from_pretrained(trained_run), from_pretrained(checkpoint)
    tokens = a.encode(SCRIPTS["Greek"])
    assert torch.equal(a.extract_features(tokens), b.extract_features(tokens))
    png = tmp_path / "loss.png"
    assert main(["plot", trained_run, "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert main(["plot", str(tmp_path)]) == 2
