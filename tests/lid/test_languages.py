import pytest

from lid.languages import ROMANIZED_CODES, XLMR_CODES, XLMR_LANGUAGES, map_label, parse_languages


def test_table_has_xlmr_100_languages_with_scripts():
    assert len(XLMR_CODES) == len(set(XLMR_CODES)) == 100
    assert {"en", "sw", "my_zaw", "zh_Hant", "hi_rom"} <= set(XLMR_CODES)
    assert ROMANIZED_CODES == ("bn_rom", "hi_rom", "ta_rom", "te_rom", "ur_rom")
    scripts = {lang.code: lang.script for lang in XLMR_LANGUAGES}
    assert (scripts["ru"], scripts["hi"], scripts["hi_rom"], scripts["zh_Hant"]) == ("Cyrl", "Deva", "Latn", "Hant")


@pytest.mark.parametrize(
    "label, code",
    [
        ("__label__fr", "fr"),  # lid.176: ISO 639-1 already
        ("__label__ceb", "ceb"),  # lid.176 language outside XLM-R stays as it is
        ("__label__als", "als"),  # lid.176's Alemannic, not Albanian
        ("__label__eng_Latn", "en"),  # GlotLID / OpenLID: ISO 639-3 + script
        ("__label__hin_Latn", "hi_rom"),
        ("__label__hin_Deva", "hi"),
        ("__label__urd_Latn", "ur_rom"),
        ("__label__zho_Hant", "zh_Hant"),
        ("__label__zho_Hans", "zh"),
        ("__label__cmn_Hani", "zh"),
        ("__label__arb_Arab", "ar"),
        ("__label__pes_Arab", "fa"),
        ("__label__swh_Latn", "sw"),
        ("__label__nob_Latn", "no"),
        ("__label__mya_Mymr", "my"),
        ("__label__jpn_Jpan", "ja"),
        ("__label__kor_Hang", "ko"),
        ("__label__srp_Latn", "sr"),  # known language, other script: the language's row
        ("__label__yor_Latn", "yor_Latn"),  # not an XLM-R language
    ],
)
def test_map_label(label, code):
    assert map_label(label) == code


def test_parse_languages():
    assert parse_languages("100") == XLMR_CODES
    assert parse_languages("en, fr,sw,en") == ("en", "fr", "sw")


def test_unknown_code_is_a_clear_error_listing_valid_codes():
    with pytest.raises(ValueError) as error:
        parse_languages("en,xx,klingon")
    message = str(error.value)
    assert "xx, klingon" in message and "valid XLM-R codes" in message and " sw " in message
