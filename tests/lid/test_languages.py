import pytest

from lid.languages import apply_rules, is_traditional_chinese, languages_without_label, map_code, map_label
from toolkit.languages import ROMANIZED_CODES, XLMR_CODES, XLMR_LANGUAGES, parse_languages


def test_table_has_xlmr_100_languages_with_scripts():
    assert len(XLMR_CODES) == len(set(XLMR_CODES)) == 100
    assert {"en", "sw", "my_zaw", "zh_Hant", "hi_rom"} <= set(XLMR_CODES)
    assert ROMANIZED_CODES == ("bn_rom", "hi_rom", "ta_rom", "te_rom", "ur_rom")
    scripts = {lang.code: lang.script for lang in XLMR_LANGUAGES}
    assert (scripts["ru"], scripts["hi"], scripts["hi_rom"], scripts["zh_Hant"]) == ("Cyrl", "Deva", "Latn", "Hant")
    assert scripts["sr"] == "Cyrl|Latn"


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
        ("__label__srp_Latn", "sr"),  # Serbian is written in both scripts
        ("__label__arb_Latn", "arb_Latn"),  # romanized Arabic is not XLM-R's ar
        ("__label__zsm_Latn", "ms"),  # OpenLID's individual-language codes
        ("__label__ekk_Latn", "et"),
        ("__label__yor_Latn", "yor_Latn"),  # not an XLM-R language
        ("__label__hin", "hin"),  # three letters without a script: lid.176's kind of label, kept
    ],
)
def test_map_label(label, code):
    assert map_label(label) == code


@pytest.mark.parametrize(
    "code, language",
    [
        ("hin", "hi"),  # ISO 639-3
        ("als", "sq"),  # ISO 639-3's Tosk Albanian (lid.176's als label is Alemannic)
        ("eng_Latn", "en"),  # FLORES / SIB-200 folders
        ("zho_Hant", "zh_Hant"),
        ("sr-Latn", "sr"),  # BCP-47 as UDHR writes it
        ("zh-Hant", "zh_Hant"),
        ("pt-BR", "pt"),  # a region is not a language
        ("de-1996", "de"),
        ("uz-Cyrl", "uz-Cyrl"),  # XLM-R's Uzbek is Latin
        ("vi-Hani", "vi-Hani"),  # Vietnamese in Han characters is not XLM-R's vi
        ("cri", "cri"),
    ],
)
def test_map_code(code, language):
    assert map_code(code) == language


def test_twin_rule_takes_the_second_label_above_its_ratio():
    assert apply_rules(["id", "ms"], [0.55, 0.40], "") == ("ms", 0.40)  # 0.40 >= 0.4 * 0.55
    assert apply_rules(["id", "ms"], [0.80, 0.15], "") == ("id", 0.80)
    assert apply_rules(["id", "jv"], [0.50, 0.45], "") == ("id", 0.50)  # jv is not id's twin
    assert apply_rules(["ms", "id"], [0.50, 0.45], "") == ("ms", 0.50)  # one way only
    assert apply_rules(["nl", "af"], [0.60, 0.13], "") == ("af", 0.13)
    assert apply_rules(["nl"], [0.60], "") == ("nl", 0.60)


def test_traditional_chinese_is_told_from_simplified():
    assert is_traditional_chinese("我們今天回家，這裡的圖書館很大。")
    assert not is_traditional_chinese("我们今天回家，这里的图书馆很大。")
    assert not is_traditional_chinese("no Han characters")
    assert apply_rules(["zh", "ja"], [0.9, 0.05], "這裡的圖書館") == ("zh_Hant", 0.9)
    assert apply_rules(["zh", "ja"], [0.9, 0.05], "这里的图书馆") == ("zh", 0.9)


def test_languages_without_label():
    lid176_like = ["en", "zh", "my", "sw", "ceb"]
    # the rules tell zh_Hant from zh, Myanmar Tools my_zaw from my, CLD3 (lid.cld3_zawgyi) gives ha and xh; nothing gives hi_rom
    wanted = ["en", "ha", "zh_Hant", "xh", "my_zaw", "hi_rom"]
    assert languages_without_label(lid176_like, wanted, rules=True) == ("hi_rom",)
    assert languages_without_label(lid176_like, wanted, rules=False) == ("ha", "zh_Hant", "xh", "my_zaw", "hi_rom")
    assert languages_without_label(["en"], ["my_zaw"], rules=True) == ("my_zaw",)  # a model without my


def test_parse_languages():
    assert parse_languages("100") == XLMR_CODES
    assert parse_languages("en, fr,sw,en") == ("en", "fr", "sw")


def test_unknown_code_is_a_clear_error_listing_valid_codes():
    with pytest.raises(ValueError) as error:
        parse_languages("en,xx,klingon")
    message = str(error.value)
    assert "xx, klingon" in message and "valid XLM-R codes" in message and " sw " in message
