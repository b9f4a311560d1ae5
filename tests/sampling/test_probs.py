import pytest

from sampling.probs import grouped_probs, language_probs, unimax_probs


def test_alpha_formula_on_known_sizes():
    probs = language_probs({"a": 100, "b": 1}, alpha=0.5)
    assert probs["a"] == pytest.approx(10 / 11) and probs["b"] == pytest.approx(1 / 11)


def test_alpha_limits():
    sizes = {"en": 900, "fr": 90, "sw": 10}
    assert language_probs(sizes, alpha=1) == pytest.approx({"en": 0.9, "fr": 0.09, "sw": 0.01})
    assert language_probs(sizes, alpha=0) == pytest.approx({"en": 1 / 3, "fr": 1 / 3, "sw": 1 / 3})


def test_xlmr_alpha_boosts_low_resource_languages():
    sizes = {"en": 900, "fr": 90, "sw": 10}
    probs = language_probs(sizes)  # alpha = 0.3
    assert sum(probs.values()) == pytest.approx(1)
    assert probs["sw"] > 0.01 * 5 and probs["en"] < 0.9
    assert probs["en"] > probs["fr"] > probs["sw"]


def test_empty_language_gets_nothing_and_bad_input_fails():
    assert language_probs({"en": 10, "xx": 0}, alpha=0)["xx"] == 0
    with pytest.raises(ValueError):
        language_probs({}, 0.3)
    with pytest.raises(ValueError):
        language_probs({"en": 1}, alpha=1.5)


def test_grouped_pool_is_sampled_as_one_language_then_proportionally():
    sizes = {"a": 1000, "b": 500, "c": 10, "d": 30}
    probs = grouped_probs(sizes, alpha=0.3, threshold=100)
    as_one = language_probs({"a": 1000, "b": 500, "pool": 40}, alpha=0.3)
    assert probs["a"] == pytest.approx(as_one["a"])
    assert probs["c"] + probs["d"] == pytest.approx(as_one["pool"])
    assert probs["d"] == pytest.approx(3 * probs["c"])


def test_unimax_on_known_sizes():
    probs = unimax_probs({"a": 1000, "b": 100, "c": 10}, budget=300, max_epochs=2)
    # c is capped at 2 epochs (20); b and a share the rest evenly (140 each).
    assert probs == pytest.approx({"a": 140 / 300, "b": 140 / 300, "c": 20 / 300})


def test_plot_command_writes_a_png(tmp_path, capsys):
    from sampling.cli import main
    from toolkit.corpus import CorpusManifest, Layout, ShardEntry

    corpus = tmp_path / "corpus"
    files = [
        ShardEntry("en/head/part-00000.parquet", "en", "head", 90, 9000),
        ShardEntry("en/tail/part-00000.parquet", "en", "tail", 10, 1000),
        ShardEntry("sw/all/part-00000.parquet", "sw", "all", 5, 100),
    ]
    CorpusManifest(files=files).write(Layout(str(corpus)))
    out = tmp_path / "shares.png"
    assert main(["plot", "--corpus", str(corpus), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("en") and "raw   0.9901" in printed[0]
    assert main(["plot", "--corpus", str(tmp_path / "none"), "--out", str(out)]) == 2
