import random

import pytest

from ccnet_pipeline.sample import _Language
from filters.perplexity import (
    PERCENTILES,
    BucketConfig,
    LanguageModel,
    LanguageModels,
    available_languages,
    bucket,
    format_cutoffs,
    read_cutoffs,
)


def held_out_text(language: str, seed: int, lines: int = 8) -> str:
    """New text from the same generator as the training text, with another seed."""
    generator = _Language(language, language, "en_US", random.Random(seed))
    return "\n".join(generator.paragraph() for _ in range(lines))


def shuffled(text: str, seed: int = 0) -> str:
    rng = random.Random(seed)
    lines = []
    for line in text.split("\n"):
        words = line.split()
        rng.shuffle(words)
        lines.append(" ".join(words))
    return "\n".join(lines)


def test_ccnet_layout(lm_dir):
    assert available_languages(str(lm_dir)) == ("de", "en", "fr")
    assert {p.name for p in lm_dir.iterdir()} >= {"en.sp.model", "en.arpa.bin", "en.train.json"}


@pytest.mark.parametrize("language, other", [("en", "fr"), ("fr", "de"), ("de", "en")])
def test_clean_text_scores_lower_than_shuffled_and_other_language(lm_dir, language, other):
    model = LanguageModel(str(lm_dir), language)
    for seed in range(5):
        text = held_out_text(language, seed=100 + seed)
        clean = model.perplexity(text)
        assert clean < model.perplexity(shuffled(text, seed))
        assert clean < model.perplexity(held_out_text(other, seed=200 + seed))


def test_perplexity_formula(lm_dir):
    """10 ** (-sum log10 p / sum (pieces + 1)) over lines, rounded to one decimal."""
    import kenlm
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(lm_dir / "en.sp.model"))
    lm = kenlm.Model(str(lm_dir / "en.arpa.bin"))
    lines = ["The house is big.", "We are going home, today!"]
    pieces = [sp.encode_as_pieces(line.lower()) for line in lines]
    expected = 10 ** (-sum(lm.score(" ".join(p)) for p in pieces) / sum(len(p) + 1 for p in pieces))
    assert LanguageModel(str(lm_dir), "en").perplexity("\n".join(lines)) == round(expected, 1)


def test_language_without_model_has_no_perplexity(lm_dir):
    models = LanguageModels(str(lm_dir))
    assert models.perplexity("some text", "sw") is None
    assert models.perplexity("some text", None) is None
    assert models.perplexity("some text", "en") > 0


def test_missing_and_corrupt_model_files_are_clear_errors(lm_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="language model folder not found"):
        LanguageModels(str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match="model file not found"):
        LanguageModel(str(tmp_path), "en").load()
    (tmp_path / "en.sp.model").write_bytes((lm_dir / "en.sp.model").read_bytes())
    (tmp_path / "en.arpa.bin").write_bytes(b"this is not a KenLM model")
    with pytest.raises(ValueError, match="cannot load KenLM model"):
        LanguageModel(str(tmp_path), "en").load()
    (tmp_path / "en.sp.model").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="cannot load SentencePiece model"):
        LanguageModel(str(tmp_path), "en").load()


CUTOFFS = {"en": [float(10 * p) for p in PERCENTILES], "fr": [float(p) for p in PERCENTILES]}


@pytest.mark.parametrize(
    "perplexity, language, expected",
    [
        (250.0, "en", "head"),  # below the 30th percentile (300)
        (300.0, "en", "middle"),  # at a cutoff: middle, as CCNet
        (600.0, "en", "middle"),
        (600.1, "en", "tail"),
        (29.9, "fr", "head"),
        (None, "en", "all"),  # no model for the language
        (50.0, "de", "all"),  # no cutoffs for the language
    ],
)
def test_bucket_on_known_cutoffs(perplexity, language, expected):
    assert bucket(perplexity, language, CUTOFFS, BucketConfig()) == expected


def test_bucket_percentiles_are_configurable():
    config = BucketConfig(head_percentile=10, tail_percentile=20)
    assert [bucket(v, "en", CUTOFFS, config) for v in (99.0, 150.0, 250.0)] == ["head", "middle", "tail"]
    with pytest.raises(ValueError):
        BucketConfig(head_percentile=70, tail_percentile=60)


def test_read_ccnet_cutoff_csv(tmp_path):
    path = tmp_path / "cutoff.csv"
    rows = [",af,en"] + [f"{p},{100 + p}.5,{2 * p}" for p in PERCENTILES]
    path.write_text("\n".join(rows) + "\n")
    cutoffs = read_cutoffs(str(path))
    assert sorted(cutoffs) == ["af", "en"]
    assert cutoffs["af"][30] == 130.5 and cutoffs["en"][60] == 120.0
    written = tmp_path / "written.csv"
    written.write_text(format_cutoffs(cutoffs))
    assert read_cutoffs(str(written)) == cutoffs


def test_malformed_cutoff_csv(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(",en\n0,1.0\n1,x\n")
    with pytest.raises(ValueError, match="bad.csv:3"):
        read_cutoffs(str(path))
    path.write_text(",en\n" + "".join(f"{p},{p}\n" for p in range(50)))
    with pytest.raises(ValueError, match="missing"):
        read_cutoffs(str(path))
    with pytest.raises(FileNotFoundError):
        read_cutoffs(str(tmp_path / "absent.csv"))
