import pytest

from filters.document import make_document
from filters.quality import QualityConfig, quality_drop_reason, quality_signals


def doc(text, original_nlines=None):
    d = make_document(url="u", date_download="d", digest="x", title="t", raw_content=text, cc_segment="s")
    return {**d, "original_nlines": original_nlines or d["nlines"]}


def test_signals_on_known_text():
    text = "\n".join(
        [
            "This is a complete sentence that ends properly.",  # 47 chars, terminal
            "Menu",  # short
            "Prices: 12 € / 15 €",  # short, many non-letters
            "他说：“我们明天去。”",  # terminal inside closing quote
        ]
    )
    signals = quality_signals(doc(text, original_nlines=8))
    assert signals["duplicate_line_frac"] == 0.5  # 4 of 8 lines were removed by dedup
    assert signals["mean_line_length"] == pytest.approx((47 + 4 + 19 + 11) / 4)
    assert signals["terminal_punct_frac"] == 0.5
    assert signals["short_line_frac"] == 0.75
    non_space = sum(not c.isspace() for c in text)
    letters = sum(c.isalpha() for c in text)
    assert signals["non_alpha_frac"] == pytest.approx((non_space - letters) / non_space)


def test_empty_document_signals_are_zero():
    assert set(quality_signals(doc("")).values()) == {0.0}


def test_filters_are_off_by_default():
    signals = quality_signals(doc("x\ny\nz", original_nlines=30))
    assert quality_drop_reason(signals, QualityConfig()) is None


@pytest.mark.parametrize(
    "config, reason",
    [
        (QualityConfig(max_duplicate_line_frac=0.5), "quality_duplicate_line_frac"),
        (QualityConfig(min_mean_line_length=5), "quality_mean_line_length"),
        (QualityConfig(min_terminal_punct_frac=0.5), "quality_terminal_punct_frac"),
        (QualityConfig(max_non_alpha_frac=0.1), "quality_non_alpha_frac"),
        (QualityConfig(max_short_line_frac=0.5), "quality_short_line_frac"),
        (QualityConfig(max_duplicate_line_frac=0.95, max_short_line_frac=1.0), None),
    ],
)
def test_each_filter_names_its_reason(config, reason):
    signals = quality_signals(doc("a1\nb2\nc3", original_nlines=30))
    assert quality_drop_reason(signals, config) == reason


def test_thresholds_are_validated():
    with pytest.raises(ValueError, match="max_non_alpha_frac"):
        QualityConfig(max_non_alpha_frac=1.5)
