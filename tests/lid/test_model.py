import pytest

from filters.document import make_document
from lid.cld3_zawgyi import COVERED as SECOND_COVERED
from lid.languages import languages_without_label
from lid.model import SHIPPED_THRESHOLDS, LanguageFilter, LanguageIdentifier, LidConfig, read_thresholds
from tests.support.helpers import TEXT, write_fasttext_model


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
            "__label__zsm_Latn": ["saya", "boleh"],  # OpenLID's Standard Malay
            "__label__arb_Latn": ["ana", "3ayez"],  # romanized Arabic: not XLM-R's ar
            "__label__hau_Latn": ["ina", "kwana"],
        },
    )
    identifier = LanguageIdentifier(str(model))
    results = identifier.predict(
        ["the big house", "main ghar ja raha", "我們 回家", "ile nla", "saya boleh", "ana 3ayez"]
    )
    assert [code for code, _ in results] == ["en", "hi_rom", "zh_Hant", "yor_Latn", "ms", "arb_Latn"]
    assert all(score > 0.99 for _, score in results)
    assert identifier.languages() == ["en", "hi_rom", "zh_Hant", "yor_Latn", "ms", "arb_Latn", "ha"]
    # Unlike lid.176, this one has Hausa; it has no Arabic or Xhosa (which CLD3 gives in the spaced mode).
    assert languages_without_label(identifier.languages(), ("ha", "ar", "xh", "en"), rules=False) == ("ar", "xh")
    assert languages_without_label(identifier.languages(), ("ha", "ar", "xh", "en"), rules=True) == ("ar",)


def test_missing_and_corrupt_models_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="LID model file not found"):
        LanguageIdentifier(str(tmp_path / "nope.ftz")).model  # noqa: B018 -- checked when a job is built
    LidConfig(model_path=str(tmp_path / "nope.ftz"))  # a saved config names another machine's file
    corrupt = tmp_path / "corrupt.bin"
    corrupt.write_bytes(b"not a fasttext model")
    with pytest.raises(ValueError, match="cannot load fastText LID model"):
        LanguageIdentifier(str(corrupt)).model


def test_config_validation(lid_model):
    with pytest.raises(ValueError, match="threshold"):
        LidConfig(model_path=lid_model, threshold=1.5)
    with pytest.raises(ValueError, match="LID mode"):
        LidConfig(model_path=lid_model, mode="spaces")
    with pytest.raises(ValueError, match="got 1.5 for sw"):
        LidConfig(model_path=lid_model, mode="spaced", thresholds=(("sw", 1.5),))


def test_spaced_mode_applies_the_twin_rule_and_ccnet_mode_does_not(tmp_path):
    """A model whose scores the test sets: the words of each label point along its own axis."""
    model = write_fasttext_model(
        tmp_path / "twins.bin",
        {"__label__id": ["saya", "akan"], "__label__ms": ["awak", "boleh"], "__label__en": ["the"]},
    )
    # 10 id words and 9 ms words: p(ms) / p(id) = exp(-10/19) = 0.59, over the 0.4 of the rule.
    close = " ".join(["saya"] * 10 + ["awak"] * 9)
    clear = " ".join(["saya"] * 10 + ["awak"] * 2)  # exp(-80/12): far under it
    spaced = LanguageIdentifier(str(model), "spaced").predict([close, clear])
    assert [language for language, _ in spaced] == ["ms", "id"]
    assert [language for language, _ in LanguageIdentifier(str(model), "ccnet").predict([close, clear])] == ["id", "id"]


def filter_results(config, texts):
    stage = LanguageFilter(config)
    stage.setup()
    docs = [
        make_document(
            url=f"https://a.org/{i}", date_download="d", digest="x", title="t", raw_content=text, cc_segment="s"
        )
        for i, text in enumerate(texts)
    ]
    return [(doc["language"], reason) for doc, reason in stage.apply_batch(docs)]


def test_per_language_thresholds_change_exactly_their_languages_decisions(lid_model, tmp_path):
    texts = [TEXT["en"], TEXT["fr"], TEXT["de"], TEXT["ru"]]  # lid.176 scores each over 0.9, under 0.9999
    thresholds = tmp_path / "thresholds.csv"
    thresholds.write_text("language,threshold\nen,0.5\nfr,1.0\nru,0.2\n")
    languages = ("en", "fr", "de")
    one = LidConfig(model_path=lid_model, mode="spaced", threshold=0.9999, languages=languages)
    own = LidConfig(
        model_path=lid_model,
        mode="spaced",
        threshold=0.9999,
        languages=languages,
        thresholds=read_thresholds(str(thresholds)),
    )
    assert filter_results(one, texts) == [
        ("en", "below_threshold"),
        ("fr", "below_threshold"),
        ("de", "below_threshold"),
        ("ru", "below_threshold"),
    ]
    assert filter_results(own, texts) == [
        ("en", None),  # its own 0.5
        ("fr", "below_threshold"),  # its own 1.0
        ("de", "below_threshold"),  # not in the file: --lang-threshold
        ("ru", "below_threshold"),  # in the file but not selected: --lang-threshold
    ]
    lenient = LidConfig(
        model_path=lid_model, mode="spaced", threshold=0.0, languages=languages, thresholds=own.thresholds
    )
    assert filter_results(lenient, texts) == [
        ("en", None),
        ("fr", "below_threshold"),
        ("de", None),
        ("ru", "not_selected"),
    ]


def test_ccnet_mode_ignores_the_per_language_file(lid_model, caplog):
    thresholds = (("en", 0.1), ("fr", 1.0))
    with caplog.at_level("WARNING"):
        config = LidConfig(
            model_path=lid_model, mode="ccnet", threshold=0.5, languages=("en", "fr"), thresholds=thresholds
        )
    assert "per-language thresholds are ignored" in caplog.text and config.thresholds == ()
    assert filter_results(config, [TEXT["en"], TEXT["fr"]]) == [("en", None), ("fr", None)]


def test_the_shipped_thresholds_cover_lid176s_xlmr_languages_and_cld3s(lid_model):
    thresholds = dict(read_thresholds(SHIPPED_THRESHOLDS))
    assert len(thresholds) >= 80 and all(0.1 <= value <= 0.5 for value in thresholds.values())
    assert set(thresholds) <= set(LanguageIdentifier(lid_model).languages()) | {"zh_Hant", *SECOND_COVERED}
    assert set(SECOND_COVERED) <= set(thresholds)
    # Languages lid.176 is rarely confident on get a lower threshold than CCNet's 0.5.
    assert all(thresholds[language] < 0.5 for language in ("su", "jv", "uz", "gd", "mg"))
