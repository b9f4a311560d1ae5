import csv
import hashlib
import json
import sys
import unicodedata
from collections import Counter, defaultdict

import numpy as np
import pytest

from filters.normalize import (
    dedup_keys,
    dedup_keys_strict,
    normalize_for_dedup,
    normalize_for_dedup_strict,
    normalize_for_lm,
    normalize_lines_for_lm,
)
from tests.support.helpers import SHARED_DATA

# Literal outputs of CCNet's own code (cc_net/text_normalizer.py at facebookresearch/cc_net bda555b),
# computed outside the project: normalize_for_dedup must give exactly these.
CCNET_DEDUP = {
    "E?": "e?",
    "a\tb": "ab",
    "a  b": "a  b",
    "a\xa0b": "a\xa0b",
    "a～": "a",
    "a►b": "ab",
    "Hello, World!": "hello, world!",
    "  Price: 12,99 €  ": "price: 00,00 €",
    "東京は２０２０年に…": "東京は0000年に",
    "Привет,   МИР!!": "привет,   мир!!",
    "مرحبا، ٣ أيام": "مرحبا، 0 أيام",
    "\u200bzero\u200dwidth\ttab": "\u200bzero\u200dwidthtab",
    "«Quoted» ¿question?": "quoted ¿question?",
    "a | b © c": "a | b © c",
    "": "",
    "１２３": "000",
    "\x01 a\x02": " a",
    "İstanbul": "i̇stanbul",
    "ΣΟΦΟΣ": "σοφος",
    "x\x85y": "xy",
    "\x1cab\x1d": "ab",
}


@pytest.mark.parametrize("line", list(CCNET_DEDUP))
def test_normalize_for_dedup_is_ccnets(line):
    assert normalize_for_dedup(line) == CCNET_DEDUP[line]


def _digest(outputs):
    return hashlib.sha256(json.dumps(outputs, ensure_ascii=True).encode()).hexdigest()[:16]


# sha256 (first 16 hex digits) of the JSON list of CCNet's normalize_for_dedup outputs for every
# code point of each Unicode plane, inside a line ("Ab<c>9") and at both ends ("<c>x <c>").
CCNET_DEDUP_PLANE_DIGESTS = {
    0: "f9c96ea691d4ce51",
    1: "b51dc3948a656a10",
    2: "3231a3bfbfbdf47f",
    3: "c5fde48cb7af2c60",
    4: "81f1e916ec8e08e7",
    5: "f3765936e89ab4df",
    6: "bf187fc66638ec27",
    7: "63b627f7cdef79d6",
    8: "e2338bba79d66182",
    9: "466b79698a9373b6",
    10: "301cd89f6156c81e",
    11: "28867a139d7cb771",
    12: "0d40aac51bbf65b0",
    13: "b50d54ae73f89e7b",
    14: "ec13bcaeb6d6da20",
    15: "09238c7db37f8f14",
    16: "16999432e4744fb7",
}


@pytest.mark.slow
def test_normalize_for_dedup_equals_ccnet_on_every_code_point():
    for plane, expected in CCNET_DEDUP_PLANE_DIGESTS.items():
        chars = [chr(c) for c in range(plane << 16, (plane + 1) << 16)]
        outputs = [normalize_for_dedup(f"Ab{c}9") for c in chars] + [normalize_for_dedup(f"{c}x {c}") for c in chars]
        assert _digest(outputs) == expected, f"plane {plane}"


# The same digest of CCNet's outputs over real text: every line of ../shared/data/reference-text/<lang>.txt,
# and the UDHR paragraphs of ../shared/data/lid-dev/udhr_paragraphs.tsv grouped by their main script.
CCNET_REFERENCE_TEXT_DIGESTS = {
    "ar": "3a4965f900bf3c80",
    "bg": "af866fcf10ae962a",
    "ca": "ed34560e7baa8065",
    "cs": "19eac8795500b746",
    "da": "21066661e61d99e4",
    "de": "c3dd37a952ec5152",
    "el": "bd7ccda6c99fff4a",
    "en": "0959164e36bc1d9d",
    "eo": "41d6fa85039eeb74",
    "es": "a5d0fb394c91e6db",
    "eu": "b9fb9ea82ed9b190",
    "fa": "0c0aca4c2869967c",
    "fi": "985ff9e865f7c4f5",
    "fr": "233b55557168ac5c",
    "he": "5fac91542179b845",
    "hi": "334f0f0c72e43703",
    "hu": "9dc8220cc4f4b3f6",
    "id": "e0c967324ee60828",
    "it": "8865ead69a23f0b4",
    "ja": "b122426b2f0e29a3",
    "ko": "6eb734bd644a3633",
    "lt": "7fc619d2335b589a",
    "mk": "6b4f012690ec1508",
    "mr": "90b3950576f7bd14",
    "nl": "016ee535be89f211",
    "pl": "f03d3294a67d6a1b",
    "pt": "f893312b0af4309a",
    "ro": "7345198f4dd37dd5",
    "ru": "a7993bd51162b7c5",
    "sv": "3734e1e84aa4839a",
    "tl": "98bca048bc7df36e",
    "tr": "c11ba4fd493c04ff",
    "uk": "60a1935c5d85faed",
    "ur": "4447dd65d4b686e2",
    "vi": "2f2557b7b39c1ac6",
    "zh": "4f3115864a8537c6",
}
CCNET_UDHR_SCRIPT_DIGESTS = {
    "ADLAM": "d061439a30561234",
    "ARABIC": "c00618f5c5aeb614",
    "ARMENIAN": "34e6ad76933c616b",
    "BENGALI": "604610fab3504cc0",
    "CANADIAN": "3249a5a1bf824c5f",
    "CHAKMA": "f540e6de45ee2c00",
    "CHEROKEE": "e5d065c739814e4a",
    "CJK": "7ae61afd7b2e71f9",
    "CYRILLIC": "4af089188afc5ae0",
    "DEVANAGARI": "8ea205ce33a11a6c",
    "ETHIOPIC": "aa2b9a64954c73cf",
    "GEORGIAN": "9a587022ec0c1452",
    "GRANTHA": "6ec2ace6eec6ddc7",
    "GREEK": "86eda9bbcdc5422e",
    "GUJARATI": "0064c7597a95c443",
    "GURMUKHI": "d51ac1be2eb3217b",
    "HANGUL": "9ce161e6057a59ef",
    "HEBREW": "1a32243e77c9dcbe",
    "HIRAGANA": "03e784b9052f5a3a",
    "JAVANESE": "d5d4de0546cc7386",
    "KANNADA": "4bc970e8a48a93f1",
    "KHMER": "08bcd6e305f2b0d8",
    "LAO": "0805fb9f8cd7da94",
    "LATIN": "87d82a6d7bbbfcfa",
    "MALAYALAM": "fbb3d48e2f504474",
    "MONGOLIAN": "18742515b6d92243",
    "MYANMAR": "32ac1b1f57d02602",
    "NONE": "235523a4aa3e7009",
    "SINHALA": "21eb3b49ebd9d764",
    "SYRIAC": "345ba4fdd5ad72fc",
    "TAGALOG": "eafd08688be1113c",
    "TAI": "440840144079a2e5",
    "TAMIL": "7479aeeab1e43645",
    "TELUGU": "c51452be0d26b438",
    "THAANA": "5ef82bf803ae03d1",
    "THAI": "e410ee144c6f8d94",
    "TIBETAN": "231c8503cfc7907f",
    "TIFINAGH": "228266688f445f46",
    "VAI": "f233722defabd492",
    "YI": "d04275f1a9f8bb5b",
}


def script_of(text):
    """The most frequent script (first word of the Unicode name) among the letters of ``text``."""
    counts = Counter(unicodedata.name(c, "?").split(" ")[0] for c in text if c.isalpha())
    return counts.most_common(1)[0][0] if counts else "NONE"


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "reference-text").is_dir(), reason="../shared/data/reference-text absent")
def test_normalize_for_dedup_equals_ccnet_on_reference_text():
    for language, expected in CCNET_REFERENCE_TEXT_DIGESTS.items():
        lines = (SHARED_DATA / "reference-text" / f"{language}.txt").read_text(encoding="utf-8").split("\n")
        assert _digest([normalize_for_dedup(line) for line in lines]) == expected, language


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "lid-dev").is_dir(), reason="../shared/data/lid-dev absent")
def test_normalize_for_dedup_equals_ccnet_on_udhr_in_40_scripts():
    with open(SHARED_DATA / "lid-dev" / "udhr_paragraphs.tsv", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    assert len(rows) == 30788
    groups = defaultdict(list)
    for row in rows:
        groups[script_of(row[4])].append(normalize_for_dedup(row[4]))
    assert {script: _digest(lines) for script, lines in sorted(groups.items())} == CCNET_UDHR_SCRIPT_DIGESTS
    assert len(CCNET_UDHR_SCRIPT_DIGESTS) == 40


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
def test_normalize_for_dedup_strict(line, expected):
    assert normalize_for_dedup_strict(line) == expected


# CCNet's normalize() of whole multi-line texts, from its code: the newlines go (non-printing).
CCNET_LM_TEXTS = {
    "Line one.\nLine two — ２ «ok»": 'line one.line two  -  0 "ok"',
    "  Ça coûte 3€ — vraiment ?  \n\tSecond line\n": "ca coute 0€  -  vraiment ?  second line",
    "한국\nΟΔΟΣ": "한국οδος",
    "a\r\nb": "ab",
}


@pytest.mark.parametrize("text", list(CCNET_LM_TEXTS))
def test_normalize_for_lm_of_a_whole_text_is_ccnets(text):
    assert normalize_for_lm(text) == CCNET_LM_TEXTS[text]


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
    from ccnet_pipeline.samples.embedded import SampleConfig, generate_pages
    from tests.support.helpers import TEXT

    pages = [
        p.text for segment in generate_pages(SampleConfig(segments=1, docs_per_segment=300, seed=2)) for p in segment
    ]
    edge = "  Ça — va?\t\n\x01 ＡＢＣ１２３ …  \n\n한국어 텍스트\nΟΔΟΣ ΣΟΦΟΣ\n\U0001d7d8 digit \u200b"
    for text in pages + list(TEXT.values()) + [edge, "", "plain ascii\nLINES"]:
        assert normalize_lines_for_lm(text) == [normalize_for_lm(line) for line in text.split("\n")]


def test_dedup_keys_equal_line_by_line_normalization():
    from ccnet_pipeline.samples.embedded import SampleConfig, generate_pages
    from tests.support.helpers import TEXT

    pages = [
        p.text for segment in generate_pages(SampleConfig(segments=1, docs_per_segment=300, seed=2)) for p in segment
    ]
    # white space and controls at line ends, final sigma across lines, dotted capital I, CRLF
    edge = "  Ça — va?\t\n\x01 ＡＢＣ１２３ …  \n\nΟΔΟΣ\nΣΟΦΟΣ \x0b\nİstanbul\r\n\x1c a \x1f b\n\U0001d7d8 \u200b\n"
    every_code_point = "\n".join(f"Ab{chr(c)}9 {chr(c)}" for c in range(0, sys.maxunicode + 1, 7) if c != 10)
    for text in pages + list(TEXT.values()) + [edge, "", "plain ascii\nLINES", every_code_point]:
        lines = text.split("\n")
        assert dedup_keys(text) == [normalize_for_dedup(line) for line in lines]
        assert dedup_keys_strict(text) == [normalize_for_dedup_strict(line) for line in lines]


def test_strict_lookup_array_is_the_strict_table():
    from filters import normalize

    expected = normalize._lookup_array(normalize._strict_dedup_table())
    expected[ord("\n")] = ord("\n")
    assert np.array_equal(normalize._dedup_lookup(True), expected)


def test_strict_key_codes_of_several_texts():
    from filters.normalize import strict_key_codes

    codes, offsets = strict_key_codes(["A, b!", "", "X\tY 12", "İx"])  # "İ" lowercases to two code points
    assert codes.tobytes().decode("utf-32-le") == "a b\n\nx\ty 00\ni\u0307x\n"
    assert offsets.tolist() == [0, 4, 5, 12, 16]
    assert strict_key_codes([])[1].tolist() == [0]
