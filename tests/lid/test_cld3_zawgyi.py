"""The second identifiers (CLD3 and Myanmar Tools, lid.cld3_zawgyi) for the XLM-R languages lid.176 has no label for."""

import pickle

import pytest
from mmfont.converter import uni512zg1

import lid.model
from lid.calibrate import build_documents, labelled_sentences, outcomes, predict
from lid.cld3_zawgyi import SecondIdentifier, is_oromo
from lid.model import SHIPPED_THRESHOLDS, LanguageIdentifier, read_thresholds
from tests.support.helpers import SHARED_DATA, TEXT
from toolkit.languages import XLMR_CODES

# Written for this test: a few everyday sentences in each language.
NEW = {
    "ha": "Ina kwana? Lafiya lau. Yaya aikin gona a wannan shekara? Mun gode wa Allah, ruwan sama ya yi kyau kuma "
    "amfanin gona ya yi yawa. Yara sun tafi makaranta da safe.",
    "so": "Waxaan jeclahay inaan wax barto. Magacaygu waa Axmed, waxaanan ku noolahay Muqdisho. Carruurtu waxay "
    "aadaan dugsiga subaxdii, waxayna ku soo noqdaan galabta.",
    "xh": "Molo, unjani? Ndiyaphila enkosi. Ndihlala eKapa kwaye ndisebenza esikolweni njengotitshala. Abantwana "
    "bafunda isiXhosa nesiNgesi yonke imihla.",
    "om": "Akkam jirtu? Ani nagaa dha. Maqaan koo Caaltuu jedhama. Barattoonni mana barumsaa ganama deemu, galgala "
    "immoo mana isaaniitti deebi'u. Bu'aan qonnaa bara kana gaarii dha, roobni ga'aan waan roobeef.",
}


def test_the_spaced_mode_identifies_the_languages_lid176_lacks(lid_model):
    spaced = LanguageIdentifier(lid_model, "spaced")
    assert [language for language, _ in spaced.predict(list(NEW.values()))] == list(NEW)
    assert all(score > 0.99 for _, score in spaced.predict(list(NEW.values())))
    # where lid.176 is sure, CLD3 is not asked: the answers stay lid.176's
    assert [language for language, _ in spaced.predict([TEXT["en"], TEXT["fr"], TEXT["de"]])] == ["en", "fr", "de"]


# Written for this test, in Unicode Burmese; mmfont's converter (Parabaik's rules) gives its Zawgyi.
BURMESE = "မင်္ဂလာပါ။ ကျွန်တော် ရန်ကုန်မြို့မှာ နေပါတယ်။ ဒီနေ့ ရာသီဥတု အရမ်းကောင်းပါတယ်။ ကလေးတွေ ကျောင်းကို သွားကြပါတယ်။"


def test_the_spaced_mode_tells_zawgyi_burmese_from_unicode(lid_model):
    zawgyi = uni512zg1(BURMESE)
    assert zawgyi != BURMESE
    spaced = LanguageIdentifier(lid_model, "spaced")
    assert [language for language, _ in spaced.predict([BURMESE, zawgyi, TEXT["en"]])] == ["my", "my_zaw", "en"]
    assert SecondIdentifier().is_zawgyi(zawgyi) and not SecondIdentifier().is_zawgyi(BURMESE)


def test_the_ccnet_mode_stays_ccnets(lid_model):
    ccnet = LanguageIdentifier(lid_model, "ccnet")
    assert not {language for language, _ in ccnet.predict(list(NEW.values()))} & set(NEW)
    assert [language for language, _ in ccnet.predict([uni512zg1(BURMESE)])] == ["my"]


def test_oromo_is_told_from_somali_by_its_apostrophes():
    assert is_oromo(NEW["om"]) and not is_oromo(NEW["so"])
    assert SecondIdentifier().identify(NEW["om"])[0] == "om"
    assert SecondIdentifier().identify(TEXT["en"]) is None  # only the languages it decides


def test_a_used_identifier_pickles_without_its_model(lid_model):
    spaced = LanguageIdentifier(lid_model, "spaced")
    spaced.predict([NEW["ha"]])
    spaced.predict([uni512zg1(BURMESE)])
    copy = pickle.loads(pickle.dumps(spaced.second))
    assert copy.identify(NEW["xh"])[0] == "xh" and copy.is_zawgyi(uni512zg1(BURMESE))


SIB_200 = SHARED_DATA / "eval" / "sib-200"


@pytest.mark.slow
@pytest.mark.skipif(not SIB_200.is_dir(), reason="../shared/data/eval/sib-200 not present")
def test_on_held_out_text_the_new_languages_are_kept_right_and_no_other_loses(lid_model, monkeypatch):
    """SIB-200's test split (calibration saw train and dev), documents of 5 sentences, the shipped thresholds."""
    documents = build_documents(labelled_sentences([str(SIB_200)], splits=["test"]), 5)
    thresholds = {**dict.fromkeys(XLMR_CODES, 0.5), **dict(read_thresholds(SHIPPED_THRESHOLDS))}
    after = outcomes(predict(LanguageIdentifier(lid_model, "spaced"), documents), thresholds, 0.5)
    monkeypatch.setattr(lid.model, "CONSULTED_BELOW", 0.0)  # lid.176 alone
    before = outcomes(predict(LanguageIdentifier(lid_model, "spaced"), documents), thresholds, 0.5)
    right = lambda table, language: table[language].kept_correct / table[language].documents
    assert {language: right(before, language) for language in NEW} == {"ha": 0, "so": 0, "xh": 0, "om": 0}
    assert {language: right(after, language) for language in NEW} == {"ha": 1, "so": 1, "xh": 0.975, "om": 0.95}
    assert after["om"].kept_wrong == 2  # Oromo documents with x's taken for Somali
    others = set(after) & set(XLMR_CODES) - set(NEW)
    assert all(after[language] == before[language] for language in others)


@pytest.mark.slow
@pytest.mark.skipif(not SIB_200.is_dir(), reason="../shared/data/eval/sib-200 not present")
def test_every_burmese_document_is_told_from_its_zawgyi_conversion(lid_model):
    """SIB-200's 1,004 Burmese sentences (every split), documents of 5, and each converted to
    Zawgyi: lid.176 says my of both; Myanmar Tools tells them apart."""
    documents = build_documents((s for s in labelled_sentences([str(SIB_200)]) if s[1] == "my"), 5)
    unicode_texts = [doc.text for doc in documents]
    zawgyi_texts = [uni512zg1(text) for text in unicode_texts]
    spaced = LanguageIdentifier(lid_model, "spaced")
    assert len(documents) == 200
    assert {language for language, _ in spaced.predict(unicode_texts)} == {"my"}
    zawgyi = spaced.predict(zawgyi_texts)
    assert {language for language, _ in zawgyi} == {"my_zaw"}
    assert (
        min(score for _, score in zawgyi) > 0.98
    )  # kept at the default threshold (no labelled Zawgyi to calibrate on)
