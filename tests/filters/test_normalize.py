import unicodedata

import pytest

from filters.normalize import normalize_for_dedup, normalize_for_lm, normalize_lines_for_lm


@pytest.mark.parametrize(
    "line, expected",
    [
        ("Hello, World!", "hello world"),
        ("  Price: 12,99 €  ", "price 0000 €"),
        ("Ça coûte 3€ — vraiment?", "ça coûte 0€ vraiment"),
        ("東京は２０２０年に…", "東京は0000年に"),  # full-width digits are digits too
        ("Привет,   МИР!!", "привет мир"),
        ("مرحبا، ٣ أيام", "مرحبا 0 أيام"),  # Arabic comma and Arabic-Indic digit
        ("\u200bzero\u200dwidth\ttab", "zerowidth tab"),  # format characters go, tab is space
        ("«Quoted» ¿question?", "quoted question"),
        ("a | b © c", "a | b © c"),  # symbols (Sm, So) are not punctuation
        ("", ""),
    ],
)
def test_normalize_for_dedup(line, expected):
    assert normalize_for_dedup(line) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        ("Hello, World!", "hello, world!"),  # ASCII punctuation stays (CCNet punct=1)
        ("  Ça coûte 3€ — vraiment ?  ", "ca coute 0€  -  vraiment ?"),  # accents go, — maps to " - "
        ("東京は２０２０年に「行く」。", '東京は0000年に"行く".'),  # CJK punctuation mapped to ASCII
        ("«Guillemets» et “quotes” …", '"guillemets" et "quotes" ...'),
        ("Ελληνικά άλφα", "ελληνικα αλφα"),
        ("Tab\there\x01", "tabhere"),  # non-printing characters removed
        ("   ", ""),
    ],
)
def test_normalize_for_lm_as_ccnet(line, expected):
    assert normalize_for_lm(line) == expected


def test_normalize_for_lm_leaves_hangul_decomposed_as_ccnet():
    # CCNet strips accents via NFD and never recomposes: Hangul syllables become jamo.
    assert normalize_for_lm("한국") == unicodedata.normalize("NFD", "한국") != "한국"


def test_vectorized_lm_normalization_equals_line_by_line():
    from ccnet_pipeline.sample import SampleConfig, generate_pages
    from tests.conftest import TEXT

    pages = [p.text for segment in generate_pages(SampleConfig(segments=1, docs_per_segment=300, seed=2)) for p in segment]
    edge = "  Ça — va?\t\n\x01 ＡＢＣ１２３ …  \n\n한국어 텍스트\nΟΔΟΣ ΣΟΦΟΣ\n\U0001d7d8 digit \u200b"
    for text in pages + list(TEXT.values()) + [edge, "", "plain ascii\nLINES"]:
        assert normalize_lines_for_lm(text) == [normalize_for_lm(line) for line in text.split("\n")]
