import pytest

from lid.model import LanguageIdentifier, LidConfig
from tests.helpers import TEXT, write_fasttext_model


def test_real_lid176_identifies_documents(lid_model):
    identifier = LanguageIdentifier(lid_model)
    languages = list(TEXT)
    results = identifier.predict([TEXT[lang] + "\n" + TEXT[lang] for lang in languages])
    assert [code for code, _ in results] == languages
    scores = dict(zip(languages, (score for _, score in results)))
    assert all(0.9 < scores[lang] <= 1.0 for lang in ("en", "fr", "de", "ru", "es")), scores


def test_empty_text_has_no_language(lid_model):
    assert LanguageIdentifier(lid_model, "spaced").predict(["", " \n "]) == [(None, 0.0), (None, 0.0)]
    # CCNet's Classifier skips only empty text; white space is predicted (lid.176: en, 0.12).
    assert LanguageIdentifier(lid_model, "ccnet").predict(["", " \n "]) == [(None, 0.0), ("en", 0.12)]


# What CCNet's own Classifier (cc_net/split_by_lang.py at bda555b, top=1, threshold 0) says of
# these with lid.176.ftz: newlines deleted, so "Log in" follows "Loading..." with no space,
# and the probability rounded to 2 decimals ("Redirecting...": 0.4962 becomes 0.5).
CCNET_LID = {
    "Redirecting...\nLog in": ("en", 0.5),
    "Loading...\nLog in": ("ru", 0.36),
    "Page not found\n404 Not Found": ("da", 0.22),
    "The village library opens every morning.\nIt closes late on Thursdays.": ("en", 0.97),
    "Die Dorfbibliothek öffnet jeden Morgen.\nSie schließt donnerstags spät.": ("de", 0.99),
}


def test_ccnet_mode_gives_ccnets_labels_and_rounded_scores(lid_model):
    assert LanguageIdentifier(lid_model, "ccnet").predict(list(CCNET_LID)) == list(CCNET_LID.values())


def test_spaced_mode_reads_newlines_as_spaces_and_keeps_the_exact_score(lid_model):
    results = LanguageIdentifier(lid_model, "spaced").predict(["Redirecting...\nLog in", "Loading...\nLog in"])
    assert [code for code, _ in results] == ["en", "en"]
    assert results[0][1] == pytest.approx(0.7841613, abs=1e-6) and results[1][1] == pytest.approx(0.8335301, abs=1e-6)


def test_any_model_path_is_accepted(lid_model, tmp_path):
    copy = tmp_path / "my-lid-model.bin"
    copy.write_bytes(open(lid_model, "rb").read())
    assert LanguageIdentifier(str(copy)).predict([TEXT["de"]])[0][0] == "de"


def test_script_labelled_model_maps_to_xlmr_codes(tmp_path):
    """A GlotLID/OpenLID-style model (labels xxx_Scrp) gives XLM-R codes."""
    model = write_fasttext_model(
        tmp_path / "glot-style.bin",
        {
            "__label__eng_Latn": ["the", "house", "is", "big"],
            "__label__hin_Latn": ["main", "ghar", "ja", "raha", "hoon"],
            "__label__zho_Hant": ["我們", "今天", "回家"],
            "__label__yor_Latn": ["ile", "nla", "ni"],
        },
    )
    results = LanguageIdentifier(str(model)).predict(["the big house", "main ghar ja raha", "我們 回家", "ile nla"])
    assert [code for code, _ in results] == ["en", "hi_rom", "zh_Hant", "yor_Latn"]
    assert all(score > 0.99 for _, score in results)


def test_missing_and_corrupt_models_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="LID model file not found"):
        LidConfig(model_path=str(tmp_path / "nope.ftz"))
    corrupt = tmp_path / "corrupt.bin"
    corrupt.write_bytes(b"not a fasttext model")
    with pytest.raises(ValueError, match="cannot load fastText LID model"):
        LanguageIdentifier(str(corrupt)).model


def test_config_validation(lid_model):
    with pytest.raises(ValueError, match="threshold"):
        LidConfig(model_path=lid_model, threshold=1.5)
    with pytest.raises(ValueError, match="LID mode"):
        LidConfig(model_path=lid_model, mode="spaces")
