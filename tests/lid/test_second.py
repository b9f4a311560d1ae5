"""The second identifier (CLD3, lid.second) for the XLM-R languages lid.176 has no label for."""

import pickle

import pytest

import lid.model
from lid.calibrate import build_documents, labelled_sentences, outcomes, predict
from lid.model import SHIPPED_THRESHOLDS, LanguageIdentifier, read_thresholds
from lid.second import SecondIdentifier, is_oromo
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


def test_the_ccnet_mode_stays_ccnets(lid_model):
    ccnet = LanguageIdentifier(lid_model, "ccnet")
    assert not {language for language, _ in ccnet.predict(list(NEW.values()))} & set(NEW)


def test_oromo_is_told_from_somali_by_its_apostrophes():
    assert is_oromo(NEW["om"]) and not is_oromo(NEW["so"])
    assert SecondIdentifier().identify(NEW["om"])[0] == "om"
    assert SecondIdentifier().identify(TEXT["en"]) is None  # only the languages it decides


def test_a_used_identifier_pickles_without_its_model(lid_model):
    spaced = LanguageIdentifier(lid_model, "spaced")
    spaced.predict([NEW["ha"]])
    copy = pickle.loads(pickle.dumps(spaced.second))
    assert copy.identify(NEW["xh"])[0] == "xh"


SIB_200 = SHARED_DATA / "eval" / "sib-200"


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
