"""Language ID in the mine job: per-language thresholds, what stats.json says of what was lost,
the report command, and the warning for languages a model cannot give."""

import json

import matplotlib.image
import matplotlib.text
import pytest

from ccnet_pipeline import report
from ccnet_pipeline.cli import main
from ccnet_pipeline.samples.embedded import SampleConfig, generate_sample
from ccnet_pipeline.stats import JobStats, LabelScores, MixedPageCounts, OutputCounts
from lid.model import SHIPPED_THRESHOLDS, read_thresholds
from tests.support.helpers import TEXT, page, write_wet_file
from toolkit import storage
from toolkit.corpus import Layout, ShardEntry

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
    assert header.split() == ["label", "documents", "kept", "below", "not", "sel.", "script", "dropped", "threshold"]
    top = max(
        language_id, key=lambda label: sum(language_id[label][o] for o in ("kept", "below_threshold", "not_selected"))
    )
    assert first.split()[0] == top
    assert f"{thresholds['en']:.2f}" in next(line for line in printed.splitlines() if line.startswith("en "))
    few = sum(
        1 for entry in language_id.values() if sum(entry[o] for o in ("kept", "below_threshold", "not_selected")) < 20
    )
    assert (
        few
        and printed.splitlines()[-2]
        == f"{few} label(s) with fewer than 20 documents: in the table, no panel in the PNG"
    )
    height, width, _ = matplotlib.image.imread(out / "lid_report.png").shape
    assert width == 1440 and height >= 400  # 11-point titles at 100 dpi stay legible


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
    mine(
        tmp_path / "wet",
        tmp_path / "out2",
        "--langs",
        "en,ha,zh_Hant,hi_rom",
        "--lid-mode",
        "spaced",
        "--min-len",
        "10",
    )
    # the spaced mode tells zh_Hant from zh and asks CLD3 for ha; nothing on PyPI gives hi_rom
    assert "warning: neither the LID model lid.176.ftz nor CLD3 has a label for hi_rom: " in capfd.readouterr().err


def histograms(kept=(), below=(), not_selected=()):
    """A stats.json language_id entry (``LabelScores``): documents per score bin, each outcome given as (bin, count)."""
    entry = {"kept": 0, "below_threshold": 0, "not_selected": 0, "histograms": {}}
    for outcome, pairs in (("kept", kept), ("below_threshold", below), ("not_selected", not_selected)):
        counts = [0] * 20
        for index, count in pairs:
            counts[index] += count
        entry[outcome], entry["histograms"][outcome] = sum(counts), counts
    return LabelScores(**entry)


def test_stats_json_reads_back_typed_also_one_written_before_mixed_pages(tmp_path):
    counters = {"read/documents": 3, "lid/scores/kept/en/19": 2, "lid/scores/below_threshold/en/3": 1}
    stats = JobStats.from_counters(counters, [ShardEntry("en/all/part-00000.parquet", "en", "all", 2, 40)])
    assert (stats.language_id["en"].kept, stats.language_id["en"].documents) == (2, 3)
    assert stats.output == {"en": {"all": OutputCounts(2, 40)}}
    path = str(tmp_path / "stats.json")
    storage.write_json(path, stats.to_json())
    assert JobStats.read(path) == stats
    older = stats.to_json()
    del older["mixed_pages"]
    storage.write_json(path, older)
    assert JobStats.read(path).mixed_pages == MixedPageCounts(0, 0, 0)


def texts_of(figure):
    return [text.get_text() for text in figure.findobj(matplotlib.text.Text)]


def test_the_figure_has_a_log_panel_per_label_with_enough_documents_and_names_the_rest():
    stats = {
        "language_id": {
            "en": histograms(kept=[(19, 1200), (15, 30)], below=[(3, 2)]),  # counts over three decades
            "it": histograms(below=[(8, 1)], not_selected=[(19, 279)]),
            "is": histograms(kept=[(19, 18)], below=[(5, 2)]),  # 20 documents: just enough
            "ne": histograms(below=[(4, 3)]),
            "bn": histograms(below=[(5, 1)]),
        }
    }
    rows = report.report_rows(stats["language_id"], {"en": 0.41, "is": 0.5})
    assert report.MIN_DOCUMENTS == 20
    figure = report.draw(rows)
    panels = [axis for axis in figure.axes if axis.get_title()]
    assert [axis.get_title().split(":")[0] for axis in panels] == ["en", "it", "is"]
    assert panels[0].get_title() == "en: 1232 docs, 1230 kept, 0% dropped"
    assert panels[1].get_title() == "it: 280 docs, not selected"
    assert all(axis.get_yscale() == "log" for axis in panels)
    assert panels[0].get_ylim()[0] < 1 < 1000 < panels[0].get_ylim()[1]  # one document shows, so does the top bin
    assert [line.get_xdata()[0] for line in panels[0].get_lines()] == [0.41]  # the threshold
    assert not panels[1].get_lines()  # a label not selected has none
    width, height = figure.get_size_inches() * report.DPI
    assert width == 1440 and height >= 400  # one line of panels
    assert figure.get_suptitle().startswith("Language ID: documents per score bin")
    assert "at least 20 documents (3 of 5 labels)" in figure.get_suptitle()
    texts = texts_of(figure)
    assert "documents (log scale)" in texts and any(text.startswith("language ID score") for text in texts)
    assert any("No panel for 2 label(s) (4 documents, 0 kept)" in text and "ne 3/0, bn 1/0" in text for text in texts)
    assert {"below threshold (dropped)", "not selected (dropped)", "kept", "the label's threshold"} <= set(texts)

    assert [axis.get_title().split(":")[0] for axis in report.draw(rows, min_documents=1).axes if axis.get_title()] == [
        "en",
        "it",
        "is",
        "ne",
        "bn",
    ]
    nothing = report.draw(rows, min_documents=5000)
    assert not [axis for axis in nothing.axes if axis.get_title()]
    assert any(text.startswith("No panel for 5 label(s)") for text in texts_of(nothing))


def test_a_page_in_three_languages_becomes_three_rows_never_one(tmp_path, capsys):
    """--mixed-pages split: each language's lines a row of its own, under its language, with the page's url."""
    import pyarrow.parquet as pq

    three = "\n".join(
        [TEXT["en"], TEXT["en"] + " Thanks.", TEXT["de"], TEXT["de"] + " Danke.", TEXT["ru"], TEXT["ru"] + "!"]
    )
    pages = [
        page(0, three),
        page(1, TEXT["fr"] + "\n" + TEXT["fr"] + " Merci."),
        page(2, TEXT["es"] + "\n" + TEXT["es"] + "!"),
    ]
    write_wet_file(tmp_path / "wet" / "seg-0.warc.wet.gz", pages)
    flags = ["--langs", "100", "--lid-mode", "spaced", "--min-len", "10", "--keep-dropped"]
    whole = mine(tmp_path / "wet", tmp_path / "whole", *flags)
    assert sum(whole["identified_languages"].values()) == 3  # as CCNet: the page stored whole, under one label
    capsys.readouterr()
    stats = mine(tmp_path / "wet", tmp_path / "split", *flags, "--mixed-pages", "split", "--near-dedup", "minhash")
    assert "1 pages in several languages split into 3 rows, one per language" in capsys.readouterr().out
    assert stats["mixed_pages"] == {"split": 1, "parts": 3, "dropped": 0}
    assert stats["documents_read"] == 3 and stats["counters"]["dedup/lines_in"] == 10  # the page counted once
    rows = {
        language: pq.read_table(tmp_path / "split" / language / "all").to_pylist()
        for language in ("en", "de", "ru", "fr", "es")
    }
    for language in ("en", "de", "ru"):
        (row,) = rows[language]
        assert row["url"] == "https://example0.org/page/0" and row["raw_content"].startswith(TEXT[language])
        assert row["nlines"] == 2 and row["original_nlines"] == 6
    assert [row["line_ids"] for row in rows["en"] + rows["de"] + rows["ru"]] == [[0, 1], [2, 3], [4, 5]]
    assert len(rows["fr"]) == len(rows["es"]) == 1  # pages in one language go on whole
    assert "several languages" not in report.report(Layout(str(tmp_path / "whole")), str(tmp_path / "w.png"))
    assert "3 parts" in report.report(Layout(str(tmp_path / "split")), str(tmp_path / "s.png"))

    dropped = mine(tmp_path / "wet", tmp_path / "drop", *flags, "--mixed-pages", "drop")
    assert dropped["mixed_pages"] == {"split": 0, "parts": 0, "dropped": 1} and dropped["dropped"]["mixed"] == 1
    (kept,) = pq.read_table(tmp_path / "drop" / "quarantine" / "dropped" / "mixed").to_pylist()
    assert kept["raw_content"] == three and sum(dropped["identified_languages"].values()) == 2
