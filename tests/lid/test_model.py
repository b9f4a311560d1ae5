import pytest

from lid.model import LanguageIdentifier, LidConfig
from tests.conftest import TEXT, write_fasttext_model


def test_real_lid176_identifies_documents(lid_model):
    identifier = LanguageIdentifier(lid_model)
    languages = list(TEXT)
    results = identifier.predict([TEXT[lang] + "\n" + TEXT[lang] for lang in languages])
    assert [code for code, _ in results] == languages
    scores = dict(zip(languages, (score for _, score in results)))
    assert all(0.9 < scores[lang] <= 1.0 for lang in ("en", "fr", "de", "ru", "es")), scores


def test_empty_text_has_no_language(lid_model):
    assert LanguageIdentifier(lid_model).predict(["", " \n "]) == [(None, 0.0), (None, 0.0)]


def test_any_model_path_is_accepted(lid_model, tmp_path):
    copy = tmp_path / "my-lid-model.bin"
    copy.write_bytes(open(lid_model, "rb").read())
    assert LanguageIdentifier(str(copy)).predict([TEXT["de"]])[0][0] == "de"


def test_script_labelled_model_maps_to_xlmr_codes(tmp_path):
    """A GlotLID/OpenLID-style model (labels xxx_Scrp) gives XLM-R codes."""
    model = write_fasttext_model(tmp_path / "glot-style.bin", {
        "__label__eng_Latn": "the house is big".split(),
        "__label__hin_Latn": "main ghar ja raha hoon".split(),
        "__label__zho_Hant": "我們 今天 回家".split(),
        "__label__yor_Latn": "ile nla ni".split(),
    })
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


def test_threshold_validation(lid_model):
    with pytest.raises(ValueError, match="threshold"):
        LidConfig(model_path=lid_model, threshold=1.5)
