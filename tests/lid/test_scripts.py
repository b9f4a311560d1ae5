"""Scripts (lid.scripts): which scripts a text's letters are in, and whether a label fits them."""

import pytest

from lid.scripts import (
    FIT_SHARE,
    LANGUAGE_SCRIPTS,
    SCRIPTS,
    fits,
    letter_bytes,
    main_script,
    other_script_bytes,
    unknown_language,
)
from tests.support.helpers import TEXT
from toolkit.languages import XLMR_CODES

TIFINAGH = "ⴰⵎⴰⵣⵉⵖ ⵉⵍⵍⴰ ⴳ ⵜⵎⴰⵣⵉⵔⵜ ⵏ ⵍⵎⵖⵔⵉⴱ"  # Tamazight (written for this test)
OL_CHIKI = "ᱥᱟᱱᱛᱟᱲᱤ ᱯᱟᱹᱨᱥᱤ"  # Santali
# Han without a kana: Chinese, which lid.176 calls ja at 0.81 (a paragraph of a Chinese engineering
# paper, html.rhhz.net, among ../shared's CommonCrawl pages).
CHINESE = "1) 转子温度场受转子匝间短路的程度和短路位置影响。短路程度越严重，短路位置越靠近大齿，温度不平衡现象越严重。"
JAPANESE = "図書館は毎朝九時に開き、木曜日は遅くまで開いています。"


def test_letters_are_counted_in_utf8_bytes_per_script():
    counts = letter_bytes("Abc, 123! Дом 日本")
    by_script = {script: int(counts[i]) for i, script in enumerate(SCRIPTS) if counts[i]}
    # digits, spaces and punctuation count for no script; Cyrillic letters are 2 bytes, Han 3
    assert by_script == {"Latn": 3, "Cyrl": 6, "Hani": 6}
    assert main_script(counts) == "Latn" or main_script(counts) == "Cyrl"  # a tie of 6 and 6: either
    assert main_script(letter_bytes("12 345 !?")) is None


def test_a_label_fits_only_text_in_its_languages_scripts():
    assert fits("en", letter_bytes(TEXT["en"])) and fits("ru", letter_bytes(TEXT["ru"]))
    assert not fits("en", letter_bytes(TIFINAGH)) and not fits("ru", letter_bytes(OL_CHIKI))
    assert not fits("es", letter_bytes(TEXT["ru"]))
    assert fits("sr", letter_bytes("Добар дан")) and fits("sr", letter_bytes("Dobar dan"))  # both scripts
    # the label's scripts must hold at least FIT_SHARE of the letters' bytes
    assert FIT_SHARE == 0.5
    assert fits("ru", letter_bytes("Привет, hello"))  # 12 Cyrillic bytes against 5 Latin
    assert not fits("ru", letter_bytes("Да, the village library opens every morning"))
    assert not fits("en", letter_bytes("1234 ..."))  # no letters: no language
    assert fits("ceb", letter_bytes(TIFINAGH))  # a label outside XLM-R: not this table's


def test_han_without_kana_is_never_japanese():
    assert fits("ja", letter_bytes(JAPANESE)) and fits("zh", letter_bytes(JAPANESE))
    assert not fits("ja", letter_bytes(CHINESE)) and fits("zh", letter_bytes(CHINESE))
    assert fits("zh_Hant", letter_bytes("圖書館每天早上九點開門")) and not fits("ko", letter_bytes(CHINESE))
    assert fits("ko", letter_bytes("도서관은 매일 아침 아홉 시에 문을 엽니다"))


def test_every_xlmr_language_has_scripts():
    assert set(LANGUAGE_SCRIPTS) == set(XLMR_CODES)
    assert all(LANGUAGE_SCRIPTS[code] for code in XLMR_CODES)
    assert {SCRIPTS[i] for i in LANGUAGE_SCRIPTS["ja"]} == {"Hani", "Hira", "Kana"}
    assert {SCRIPTS[i] for i in LANGUAGE_SCRIPTS["my_zaw"]} == {"Mymr"}


def test_text_in_an_unknown_script_gets_the_undetermined_label_of_its_script():
    assert unknown_language(letter_bytes(TIFINAGH)) == "und_Tfng"
    assert unknown_language(letter_bytes(OL_CHIKI)) == "und_Olck"
    assert unknown_language(letter_bytes("12 34")) == "und_Zyyy"


@pytest.mark.parametrize(
    "text, other",
    [
        (TEXT["en"] + " " + TEXT["fr"], 0),
        (JAPANESE, 0),  # Han and kana are one script, as Japanese writes them
        ("Дом " + TEXT["en"], 6),
        (TEXT["ru"] + " " + JAPANESE, None),  # the smaller of the two scripts
    ],
)
def test_other_script_bytes_are_those_outside_the_main_script(text, other):
    counts = letter_bytes(text)
    expected = other if other is not None else len("".join(c for c in JAPANESE if c.isalpha()).encode())
    assert other_script_bytes(counts) == expected


def test_the_docs_table_of_scripts_is_the_language_tables():
    """docs/language-id.md, "Scripts": each row's ISO 15924 codes and XLM-R languages (a row of as
    many scripts as languages pairs them in order; otherwise each language has all the row's scripts)."""
    from pathlib import Path

    from toolkit.languages import XLMR_LANGUAGES

    page = (Path(__file__).resolve().parents[2] / "docs" / "language-id.md").read_text()
    section = page.split("## Scripts", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    documented = {}
    for cell, _, languages in rows[1:]:  # the first row is the header
        codes, languages = cell.replace(",", " ").split(), languages.replace(",", " ").split()
        pairs = (
            zip(languages, codes)
            if len(codes) == len(languages) > 1
            else ((lang, "|".join(codes)) for lang in languages)
        )
        documented.update(pairs)
    assert documented == {language.code: language.script for language in XLMR_LANGUAGES}
