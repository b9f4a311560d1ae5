import json
import math

import numpy as np
import pytest

from pretrain.data import BlockStream, heldout_blocks, heldout_count
from sampling import MixtureConfig
from tokenizer.pack import INDEX_DTYPE, PackedData, PackedManifest
from tokenizer.xlmr import BOS, PAD


def write_numbered_blocks(root, counts, length=8):
    """A packed folder whose block i of a language holds ids [<s>, 10000·l + i, ...]: every block unique."""
    languages = {}
    for number, (language, count) in enumerate(sorted(counts.items())):
        blocks = np.array([[BOS] + [10_000 * (number + 1) + i] * (length - 1) for i in range(count)], dtype="<u4")
        blocks.tofile(root / f"{language}.bin")
        index = np.array([(i * length, length) for i in range(count)], dtype=INDEX_DTYPE)
        np.save(root / f"{language}.idx.npy", index)
        languages[language] = {"blocks": count, "tokens": count * length}
    (root / "manifest.json").write_text(
        json.dumps({"vocab_size": 100_000, "tokens_per_sample": length, "languages": languages})
    )
    return str(root)


def test_languages_follow_the_smoothed_token_shares(data_dir):
    stream = BlockStream(PackedData.open(data_dir), MixtureConfig(alpha=0.3), seed=0)
    manifest = PackedManifest.read(data_dir)
    assert set(stream.probs) == set(manifest.languages)
    draws = 6000
    languages = [lang for _ in range(draws // 50) for lang in stream.next_batch(50)[1]]
    for language, p in stream.probs.items():
        share = languages.count(language) / draws
        assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / draws)
    assert max(stream.epochs.values()) >= 1  # the small languages ran out and restarted


def test_batches_are_padded_blocks(data_dir):
    tokens, languages = BlockStream(PackedData.open(data_dir), seed=0).next_batch(16)
    assert tokens.shape[0] == 16 and tokens.shape[1] <= PackedManifest.read(data_dir).tokens_per_sample
    assert (tokens[:, 0] == BOS).all() and len(languages) == 16
    short = (tokens == PAD).any(dim=1)
    assert (tokens[~short] != PAD).all()


def test_deterministic_and_exactly_resumable(data_dir):
    a, b = BlockStream(PackedData.open(data_dir), seed=3), BlockStream(PackedData.open(data_dir), seed=3)
    for _ in range(5):
        assert np.array_equal(a.next_batch(8)[0], b.next_batch(8)[0])
    state = a.state_dict()
    expected = [a.next_batch(8)[0] for _ in range(40)]
    resumed = BlockStream(PackedData.open(data_dir), seed=3)
    resumed.load_state_dict(state)
    assert all(np.array_equal(x, resumed.next_batch(8)[0]) for x in expected)
    assert not np.array_equal(
        BlockStream(PackedData.open(data_dir), seed=4).next_batch(8)[0],
        BlockStream(PackedData.open(data_dir), seed=3).next_batch(8)[0],
    )


def test_ranks_read_disjoint_blocks_and_never_the_heldout_ones(tmp_path):
    data_dir = write_numbered_blocks(tmp_path, {"en": 100, "de": 40})
    read = {}
    for rank in range(2):
        stream = BlockStream(PackedData.open(data_dir), seed=0, rank=rank, world_size=2, heldout=5)
        while stream.epochs["en"] == 0:
            tokens, languages = stream.next_batch(1)
            if languages == ["en"] and stream.epochs["en"] == 0:
                read.setdefault(rank, []).append(int(tokens[0, 1]) - 20_000)
    assert len(set(read[0])) == len(read[0]) and len(set(read[1])) == len(read[1])  # one epoch, no repeats
    assert not set(read[0]) & set(read[1])  # ranks disjoint ...
    assert sorted(read[0] + read[1]) == list(range(95))  # ... covering the training blocks, not the 5 held out
    assert read[0] != sorted(read[0])  # shuffled
    heldout = heldout_blocks(PackedData.open(data_dir), 5)
    assert [int(b[1]) - 20_000 for b in heldout["en"]] == list(range(95, 100)) and len(heldout["de"]) == 4
    assert heldout_count(30, 8) == 3  # at most a tenth


def test_bad_arguments(data_dir, tmp_path):
    with pytest.raises(ValueError):
        BlockStream(PackedData.open(data_dir), rank=2, world_size=2)
    with pytest.raises(FileNotFoundError, match="tokenizer pack"):
        BlockStream(PackedData.open(str(tmp_path)))
    stream = BlockStream(PackedData.open(data_dir))
    with pytest.raises(ValueError, match="language"):
        stream.load_state_dict({"rng": stream.state_dict()["rng"], "positions": {"xx": [0, 0]}})
