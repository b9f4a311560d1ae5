import argparse
import json
import os
import random
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

import filters.minhash as minhash
from ccnet_pipeline.samples.near_duplicates import after_line_dedup, generate, true_pairs
from filters.minhash import (
    EMPTY,
    MinHashConfig,
    band_keys,
    by_characters,
    collision_probability,
    estimated_jaccard,
    jaccard,
    shingles,
    signatures,
    token_hashes,
    tokens,
)
from tests.support.helpers import TEXT, letters
from toolkit.cli import add_config_arguments, build_config, given

CONFIG = MinHashConfig()
ROOT = Path(__file__).resolve().parents[2]


def test_normalization_makes_case_digit_and_punctuation_variants_one_text():
    assert tokens("The cat, 12 dogs!", "en") == tokens("the cat 34 dogs", "en") == ["the", "cat", "00", "dogs"]
    assert shingles("The cat, 12 dogs!", "en", 2) == {("the", "cat"), ("cat", "00"), ("00", "dogs")}
    first, second = signatures(["The cat, 12 dogs!", "the cat 34 dogs"], ["en", "en"], CONFIG)
    assert (first == second).all()


def test_tokens_are_words_or_characters_by_language():
    assert tokens("Привет, мир! 2024 год.", "ru") == ["привет", "мир", "0000", "год"]
    assert tokens("L'été à Paris — 3 € !", "fr") == ["lété", "à", "paris", "0", "€"]  # accents and symbols stay
    assert tokens("नमस्ते दुनिया", "hi") == ["नमस्ते", "दुनिया"]  # vowel signs stay inside the word
    assert tokens("我爱北京。\n天安门！", "zh") == ["我", "爱", "北", "京", "天", "安", "门"]
    assert tokens("東京は２０２０年に…", "ja") == ["東", "京", "は", "0", "0", "0", "0", "年", "に"]
    assert tokens("สวัสดี ครับ", "th") == ["ส", "ว", "ั", "ส", "ด", "ี", "ค", "ร", "ั", "บ"]
    assert [by_characters(code) for code in ("zh_Hant", "my_zaw", "yue", "ko", "vi", "en")] == [True] * 3 + [False] * 3


def test_a_chinese_text_is_shingled_by_characters_across_line_breaks():
    assert shingles("我爱北京天\n安门。", "zh", 5) == {
        ("我", "爱", "北", "京", "天"),
        ("爱", "北", "京", "天", "安"),
        ("北", "京", "天", "安", "门"),
    }
    assert jaccard("我爱北京天安门。", "我爱北\n京天安门", "zh", 5) == 1.0


def test_reflowed_text_has_the_same_shingles():
    text = "\n".join([TEXT["en"], TEXT["fr"]])
    reflowed = "\n".join(" ".join(text.split()[i : i + 7]) for i in range(0, len(text.split()), 7))
    assert shingles(text, "en", 5) == shingles(reflowed, "en", 5)
    assert (signatures([text], ["en"], CONFIG) == signatures([reflowed], ["en"], CONFIG)).all()


def test_short_and_empty_documents():
    assert shingles("Just three words", "en", 5) == {("just", "three", "words")}
    assert shingles(" ... !!! ", "en", 5) == set() and jaccard("", "!!!", "en", 5) == 1.0
    sigs = signatures(["", " ... !!! ", "Just three words", "just THREE words!", "just three more"], ["en"] * 5, CONFIG)
    assert (sigs[:2] == EMPTY).all()
    assert not (sigs[2:] == EMPTY).any() and (sigs[2:] < 2**63).all()
    assert estimated_jaccard(sigs[0], sigs[2]) == 0.0
    assert estimated_jaccard(sigs[2], sigs[3]) == 1.0 and estimated_jaccard(sigs[2], sigs[4]) == 0.0
    keys = band_keys(sigs, ["en"] * 5, CONFIG)
    assert not np.isin(keys[0], keys[2:]).any()


def test_signatures_are_pinned_values():
    """The values of the default config: signatures committed by one version are read by the next."""
    sigs = signatures(
        ["The village library opens every morning at nine.", "我爱北京天安门，天安门上太阳升。"], ["en", "zh"], CONFIG
    )
    assert sigs.shape == (2, 112) and sigs.dtype == np.uint64
    assert [hex(int(v)) for v in sigs[0, :3]] == ["0x1561867b2ae21ac", "0x1e637e54216c31ef", "0x1ada2009499225cf"]
    assert [hex(int(v)) for v in sigs[1, :3]] == ["0x67f37ae8f06ddcd", "0x625a4a8f48195b3", "0x2f7a69fa3a2c943"]
    keys = band_keys(sigs, ["en", "zh"], CONFIG)
    assert [hex(int(v)) for v in keys[:, 0]] == ["0x985f5b01b81283d8", "0x49d457e16b0255da"]


def test_signatures_are_the_minimum_of_each_permutation(monkeypatch):
    """Against the definition, in Python integers: per permutation, the least
    (a * x + b) mod 2^64 over the shingle hashes x, shifted by one bit; with tiny chunks and
    blocks, so that documents straddle them."""
    rng = random.Random(3)
    words = [letters(i) for i in range(40)]
    texts = [" ".join(rng.choices(words, k=rng.choice([0, 1, 4, 5, 6, 30, 90]))) for _ in range(25)]
    config = MinHashConfig(bands=3, rows=2, ngram=3)
    monkeypatch.setattr(minhash, "DOCS_PER_CHUNK", 4)
    monkeypatch.setattr(minhash, "SHINGLES_PER_BLOCK", 16)
    sigs = signatures(texts, ["en"] * len(texts), config)
    a, b = (values.tolist() for values in minhash._permutations(config.seed, 6))
    assert all(p % 2 == 1 for p in a)
    for text, row in zip(texts, sigs):
        hashes, _ = minhash._shingle_hashes(*token_hashes([text], ["en"]), 3)
        expected = [
            min((((p * x + r) % 2**64) >> 1 for x in hashes.tolist()), default=int(EMPTY)) for p, r in zip(a, b)
        ]
        assert row.tolist() == expected


def test_token_hashes_are_those_of_the_tokens_one_by_one():
    """The vectorised tokens (runs of the key's code points, or code points) are ``tokens``: each
    token hashed alone gives the hash at its place, in a batch mixing scripts, word and character
    languages, empty and punctuation-only documents, tabs, and a lowercase that changes length."""
    texts = [*TEXT.values(), "", "!!! ... ,,,", "İstanbul\tİZMİR  12\n\nßtraße", "我爱北京。\n天安门！", "สวัสดี ครับ"]
    languages = [*TEXT, "en", "en", "tr", "zh", "th"]
    hashes, counts = token_hashes(texts, languages)
    assert counts.tolist() == [len(tokens(text, language)) for text, language in zip(texts, languages)]
    expected = [
        int(token_hashes([token], [language])[0][0])
        for text, language in zip(texts, languages)
        for token in tokens(text, language)
    ]
    assert hashes.tolist() == expected
    assert len(set(expected)) == len(
        {token for text, language in zip(texts, languages) for token in tokens(text, language)}
    )


def test_one_document_has_the_same_signature_in_any_batch():
    texts = [f"{TEXT[language]} {letters(i)}" for i, language in enumerate(sorted(TEXT) * 50)]
    languages = sorted(TEXT) * 50
    batch = signatures(texts, languages, CONFIG)  # more documents than one chunk
    alone = np.vstack([signatures([text], [language], CONFIG) for text, language in zip(texts[::37], languages[::37])])
    assert (batch[::37] == alone).all()


def test_token_order_counts():
    text = "one two three four five six seven"
    forward, backward = signatures([text, " ".join(reversed(text.split()))], ["en", "en"], CONFIG)
    assert jaccard(text, " ".join(reversed(text.split())), "en", 5) == 0.0
    assert estimated_jaccard(forward, backward) < 0.05


def test_signatures_are_deterministic_across_processes():
    texts, languages = [TEXT["en"], TEXT["ru"], "我爱北京天安门。", ""], ["en", "ru", "zh", "en"]
    program = (
        "import json, sys; from filters.minhash import MinHashConfig, signatures, band_keys;"
        "texts, languages = json.load(sys.stdin); sigs = signatures(texts, languages, MinHashConfig(seed=7));"
        "print(json.dumps([sigs.tolist(), band_keys(sigs, languages, MinHashConfig(seed=7)).tolist()]))"
    )
    results = []
    for hash_seed in ("1", "4242"):
        environment = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
        output = subprocess.run(
            [sys.executable, "-c", program],
            input=json.dumps([texts, languages]),
            capture_output=True,
            text=True,
            check=True,
            env=environment,
        ).stdout
        results.append(json.loads(output))
    sigs = signatures(texts, languages, MinHashConfig(seed=7))
    assert results[0] == results[1] == [sigs.tolist(), band_keys(sigs, languages, MinHashConfig(seed=7)).tolist()]
    assert (signatures(texts, languages, MinHashConfig(seed=8)) != sigs)[:3].mean() > 0.99


def test_estimated_jaccard_is_within_sampling_error_of_the_exact_one():
    """300 pairs from 0 to 1 Jaccard: each estimate a binomial share of 112 permutations."""
    rng = random.Random(11)
    words = [letters(i) for i in range(3000)]
    pairs = []
    for _ in range(300):
        first = rng.sample(words, 120)
        replaced = 0.3 * rng.random() ** 2  # a share r of words replaced: about (1 - r)^5 of the shingles kept
        second = [rng.choice(words) if rng.random() < replaced else word for word in first]
        pairs.append((" ".join(first), " ".join(second)))
    exact = np.array([jaccard(a, b, "en", 5) for a, b in pairs])
    sigs = signatures([text for pair in pairs for text in pair], ["en"] * 600, CONFIG)
    estimate = estimated_jaccard(sigs[0::2], sigs[1::2])
    z = (estimate - exact) / np.sqrt(np.maximum(exact * (1 - exact), 1e-3) / 112)
    assert exact.min() < 0.2 and exact.max() == 1.0 and ((exact > 0.4) & (exact < 0.9)).sum() > 80
    assert abs(np.mean(estimate - exact)) < 3 * np.sqrt(np.mean(exact * (1 - exact)) / 112 / len(pairs))  # unbiased
    assert np.mean(np.abs(z) < 2) > 0.9 and np.abs(z).max() < 4.5  # 95.4% and 0.0007% for a normal law


def test_band_keys_separate_languages_and_bands():
    text = TEXT["en"]
    sigs = signatures([text, text, text], ["en", "en", "fr"], CONFIG)
    keys = band_keys(sigs, ["en", "en", "fr"], CONFIG)
    assert keys.shape == (3, 14) and keys.dtype == np.uint64
    assert (keys[0] == keys[1]).all()
    assert not np.isin(keys[2], keys[0]).any()
    same_rows = np.full((1, 112), 12345, dtype=np.uint64)  # every band's rows alike
    assert len(set(band_keys(same_rows, ["en"], CONFIG)[0].tolist())) == 14
    with pytest.raises(ValueError, match=r"need \[2, 112\] signatures"):
        band_keys(sigs, ["en", "en"], CONFIG)


def test_collision_probability_is_the_s_curve():
    assert collision_probability(0.8, 14, 8) == pytest.approx(1 - (1 - 0.8**8) ** 14)
    assert collision_probability(0.8, 14, 8) == pytest.approx(0.9235, abs=1e-4)
    assert collision_probability(0.0, 14, 8) == 0.0 and collision_probability(1.0, 14, 8) == 1.0
    curve = collision_probability(np.linspace(0, 1, 11), 14, 8)
    assert (np.diff(curve) > 0).all()


def test_planted_near_duplicates_share_a_band_key_after_line_dedup():
    """The generator's planted pairs, after CCNet's line dedup: every pair at 0.8 exact Jaccard
    or above shares a band key (0.88 or more here: a miss has probability below 0.002 a pair),
    and no unrelated page shares one with any other page."""
    docs = after_line_dedup(generate(seed=4, groups_per_kind=1))
    truth = true_pairs(docs, 0.8, 5)
    assert len(truth) == 7 * (4 + 3)  # 4 copies and 3 template pairs per language
    sigs = signatures([doc["text"] for doc in docs], [doc["language"] for doc in docs], CONFIG)
    keys = band_keys(sigs, [doc["language"] for doc in docs], CONFIG)
    candidates = {
        tuple(sorted((docs[i]["url"], docs[j]["url"])))
        for i, j in combinations(range(len(docs)), 2)
        if np.isin(keys[i], keys[j]).any()
    }
    assert truth <= candidates
    unrelated = {doc["url"] for doc in docs if doc["kind"] == "unrelated"}
    assert not [pair for pair in candidates if unrelated & set(pair)]


@pytest.mark.parametrize(
    "values, message",
    [
        ({"ngram": 0}, "ngram must be >= 1"),
        ({"bands": 0}, "bands must be >= 1"),
        ({"rows": -1}, "rows must be >= 1"),
        ({"seed": -1}, "seed must be >= 0"),
        ({"threshold": 1.5}, r"threshold must be in \[0, 1\]"),
        ({"rounds": 0}, "rounds must be >= 1"),
    ],
)
def test_config_rejects_bad_values(values, message):
    with pytest.raises(ValueError, match=message):
        MinHashConfig(**values)


def test_config_flags():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser, MinHashConfig)
    args = parser.parse_args(
        ["--minhash-bands", "20", "--minhash-rows", "5", "--minhash-verify", "--minhash-ngram", "3"]
        + ["--minhash-rounds", "9"]
    )
    config = build_config(MinHashConfig, given(args))
    assert config == MinHashConfig(ngram=3, bands=20, rows=5, verify=True, rounds=9) and config.permutations == 100
    assert "--minhash-threshold" in parser.format_help() and "(default: 14)" in parser.format_help()
