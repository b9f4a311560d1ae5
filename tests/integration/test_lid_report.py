"""Language ID in the mine job: per-language thresholds, what stats.json says of what was lost,
the report command, and the warning for languages a model cannot give."""

import json

import pytest

from ccnet_pipeline.cli import main
from ccnet_pipeline.sample import SampleConfig, generate_sample
from lid.model import SHIPPED_THRESHOLDS, read_thresholds
from tests.helpers import TEXT, page, write_wet_file

LANGS = "en,de,fr,es,ru,zh,ar,hi,ja,vi,ur,is"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    generate_sample(str(root), SampleConfig(segments=2, docs_per_segment=200, sites=60, seed=3))
    return root


def mine(inputs, output, *extra):
    assert main(["mine", "--input", str(inputs / "*.warc.wet.gz"), "--output", str(output), *extra]) == 0
    return json.loads((output / "stats.json").read_text())


def test_report_on_the_embedded_sample_with_the_shipped_thresholds(sample, tmp_path, capsys):
    out = tmp_path / "corpus"
    stats = mine(sample, out, "--langs", LANGS, "--lid-mode", "spaced", "--lang-thresholds", SHIPPED_THRESHOLDS)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [tuple(pair) for pair in manifest["config"]["lid"]["thresholds"]] == list(
        read_thresholds(SHIPPED_THRESHOLDS)
    )

    language_id = stats["language_id"]
    for language, buckets in stats["output"].items():  # what was kept is what was written
        assert language_id[language]["kept"] == sum(bucket["documents"] for bucket in buckets.values())
    for label, entry in language_id.items():
        for outcome in ("kept", "below_threshold", "not_selected"):
            assert sum(entry["histograms"][outcome]) == entry[outcome], (label, outcome)
    dropped = sum(entry["below_threshold"] for entry in language_id.values())
    assert dropped == stats["dropped"]["below_threshold"] > 0
    assert sum(entry["not_selected"] for entry in language_id.values()) == stats["dropped"]["not_selected"]
    # A kept document's score is at least its language's threshold: no kept count under it.
    thresholds = dict(read_thresholds(SHIPPED_THRESHOLDS))
    for language in LANGS.split(","):
        first_bin = int(thresholds[language] * 20)
        assert sum(language_id[language]["histograms"]["kept"][:first_bin]) == 0, language

    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    header, first, *_ = printed.splitlines()
    assert header.split() == ["label", "documents", "kept", "below", "not", "sel.", "dropped", "threshold"]
    top = max(
        language_id, key=lambda label: sum(language_id[label][o] for o in ("kept", "below_threshold", "not_selected"))
    )
    assert first.split()[0] == top
    assert f"{thresholds['en']:.2f}" in next(line for line in printed.splitlines() if line.startswith("en "))
    assert (out / "lid_report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ccnet_mode_decides_as_without_the_file(sample, tmp_path):
    with_file = mine(sample, tmp_path / "a", "--langs", LANGS, "--lang-thresholds", SHIPPED_THRESHOLDS)
    without = mine(sample, tmp_path / "b", "--langs", LANGS)
    assert with_file["language_id"] == without["language_id"] and with_file["output"] == without["output"]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["config"]["lid"]["thresholds"] == []


def test_languages_the_model_has_no_label_for_are_warned_about(tmp_path, capfd):
    write_wet_file(tmp_path / "wet" / "seg-0.warc.wet.gz", [page(0, TEXT["en"] + "\n" + TEXT["fr"])])
    mine(tmp_path / "wet", tmp_path / "out", "--langs", "en,ha,xh,zh_Hant", "--min-len", "10")
    err = capfd.readouterr().err
    assert "warning: the LID model lid.176.ftz has no label for ha, xh, zh_Hant:" in err
    mine(tmp_path / "wet", tmp_path / "out2", "--langs", "en,ha,zh_Hant", "--lid-mode", "spaced", "--min-len", "10")
    assert "has no label for ha: " in capfd.readouterr().err  # the spaced mode tells zh_Hant from zh
