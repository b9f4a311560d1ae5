"""The neighbours model (lid.neighbours): languages outside XLM-R's 100 known as such, and text in a
script its label does not fit named by a model that knows the script."""

import hashlib
import pickle

import pytest

from ccnet_pipeline.samples.embedded import LANGUAGE_MIX, generate_reference_text
from filters.document import make_document
from lid.__main__ import main
from lid.model import LanguageFilter, LanguageIdentifier, LidConfig, score_bin
from lid.neighbours import (
    OUTSIDE_AT,
    SHIPPED_NEIGHBOURS,
    NeighbourModel,
    content,
    fold_model,
    fold_of,
    second_opinions,
)
from tests.lid.test_scripts import CHINESE, OL_CHIKI, TIFINAGH
from tests.support.helpers import TEXT
from toolkit.languages import XLMR_CODES, parse_languages

# Written for this test: the library sentence of tests.support.helpers.TEXT in languages outside
# the 100 that lid.176 stores under a neighbour, in written Cantonese, and in Breton, an XLM-R
# language the neighbours model has no label for (FLORES-200 lacks it).
OUTSIDE = {
    "ast_Latn": "La biblioteca del pueblu abre toles mañanes a les nueve y zarra tarde los xueves, cuando los "
    "voluntarios lleen cuentos a los neños y ayuden a los mayores a usar los ordenadores.",
    "fao_Latn": "Bókasavnið í bygdini letur upp klokkan níggju hvønn morgun og stongir seint hósdagar, tá ið "
    "sjálvboðin lesa søgur fyri børnunum og hjálpa teimum eldru at nýta teldurnar.",
}
# in Simplified characters, as UDHR's Cantonese is written (lid.176 knows Traditional-script Cantonese better)
CANTONESE = "我哋嘅图书馆每朝九点开门，逢星期四好夜先闩门。嗰阵时啲义工会同细路仔讲故事，又会教啲老人家点样用电脑，佢哋都好钟意嚟。"
BRETON = (
    "Al levraoueg a zigor bep mintin da nav eur hag a serr diwezhat d'ar Yaou, pa lenn an ausilhourien "
    "istorioù d'ar vugale hag e sikouront an dud kozh da implijout an urzhiataerioù. Ar brezhoneg a vez "
    "komzet e Breizh-Izel gant tost da zaou c'hant mil a dud. Skolioù Diwan a gelenn ar yezh d'ar vugale "
    "abaoe 1977, ha kalz a dud yaouank a zesk anezhi bremañ er skolioù-meur."
)


@pytest.fixture(scope="module")
def spaced(lid_model):
    return LanguageIdentifier(lid_model, "spaced")


def test_lid176_stores_these_languages_under_an_xlmr_neighbour(lid_model):
    alone = LanguageIdentifier(lid_model, "spaced", neighbour_model=None)
    assert [language for language, _ in alone.predict(list(OUTSIDE.values()))] == ["es", "is"]
    assert LanguageIdentifier(lid_model, "ccnet").predict([CANTONESE])[0][0] == "zh"


def test_written_cantonese_is_not_chinese_by_its_own_characters(lid_model):
    """lid.176 says zh; the spaced mode's rule (lid.languages.han_language) says yue, not selected."""
    alone = LanguageIdentifier(lid_model, "spaced", neighbour_model=None)
    assert alone.predict([CANTONESE, "圖書館每天早上九點開門，週末也開放給所有讀者。"]) == [
        ("yue", pytest.approx(alone.model.predict(CANTONESE, k=1)[1][0], abs=1e-6)),
        ("zh_Hant", pytest.approx(0.886, abs=0.001)),
    ]


def test_the_neighbours_model_knows_them_as_languages_outside_the_100(spaced):
    predicted = spaced.predict(list(OUTSIDE.values()) + [TEXT["es"], TEXT["is"]])
    assert [language for language, _ in predicted] == [*OUTSIDE, "es", "is"]
    assert all(score >= OUTSIDE_AT for _, score in predicted[: len(OUTSIDE)])


def test_a_language_the_neighbours_model_does_not_know_keeps_its_label(spaced):
    model = spaced.neighbours
    model.model  # noqa: B018 -- loads the labels
    assert "br" not in model._labels and "en" in model._labels
    # asked anyway, the model would call it Limburgish, sure of it: its opinion is not asked
    labels, probabilities = model.model.predict(content(BRETON), k=1)
    assert labels[0] == "__label__lim_Latn" and probabilities[0] > OUTSIDE_AT
    assert spaced.predict([BRETON])[0] == ("br", pytest.approx(0.957, abs=0.001))


def test_text_in_a_script_its_label_does_not_fit_is_named_among_that_scripts_languages(lid_model, spaced):
    alone = LanguageIdentifier(lid_model, "spaced", neighbour_model=None)
    assert LanguageIdentifier(lid_model, "ccnet").predict([CHINESE])[0][0] == "ja"  # lid.176's answer
    assert [language for language, _ in alone.predict([CHINESE, TIFINAGH, OL_CHIKI])] == [
        "und_Hani",  # no model for the script: undetermined, dropped as `script`
        "und_Tfng",
        "und_Olck",
    ]
    assert [language for language, _ in spaced.predict([CHINESE, TIFINAGH, OL_CHIKI])] == [
        "zh",
        "tzm_Tfng",  # FLORES-200's Tamazight, not selected
        "sat_Olck",
    ]


def test_the_filter_drops_text_no_model_names_for_its_script(lid_model):
    config = LidConfig(model_path=lid_model, mode="spaced", languages=parse_languages("100"), neighbour_model=None)
    stage = LanguageFilter(config)
    stage.setup()
    docs = [
        make_document(url="u", date_download=None, digest=str(i), title="t", raw_content=text, cc_segment="s")
        for i, text in enumerate([TIFINAGH, TEXT["en"]])
    ]
    (tifinagh, reason), (english, kept) = stage.apply_batch(docs)
    assert (tifinagh["language"], reason, kept) == ("und_Tfng", "script", None)
    assert LanguageFilter.counts(tifinagh, reason) == {
        "language/und_Tfng": 1,
        f"scores/script/und_Tfng/{score_bin(tifinagh['language_score'])}": 1,  # lid.176's score
    }


def test_second_opinions_without_a_model_check_the_script_alone():
    opinions = second_opinions([TEXT["en"], TIFINAGH], [("en", 0.9), ("en", 0.4)], None)
    assert opinions == [None, ("und_Tfng", 0.4)]


def test_the_ccnet_mode_has_no_neighbours_model(lid_model):
    assert LidConfig(model_path=lid_model, mode="ccnet").neighbour_model is None
    assert LidConfig(model_path=lid_model, mode="spaced").neighbour_model == SHIPPED_NEIGHBOURS
    assert LanguageIdentifier(lid_model, "ccnet").neighbours is None
    assert LanguageIdentifier(lid_model, "ccnet").predict([OUTSIDE["fao_Latn"]])[0][0] == "is"


def test_a_used_model_pickles_without_its_model(spaced):
    spaced.predict([OUTSIDE["ast_Latn"]])
    copy = pickle.loads(pickle.dumps(spaced.neighbours))
    assert copy._model is None and copy.outside([OUTSIDE["ast_Latn"]], ["es"])[0][0] == "ast_Latn"


def test_a_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="make lid-model"):
        NeighbourModel(str(tmp_path / "none.ftz")).model  # noqa: B018


@pytest.mark.slow
def test_training_is_reproducible_and_writes_a_model_per_fold(tmp_path, capsys):
    text = tmp_path / "text"
    generate_reference_text(str(text), lines=120, seed=3)
    flags = ["--text-dir", str(text), "--dim", "8", "--epochs", "2", "--cutoff", "2000", "--folds", "2"]
    digests = []
    for run in ("a", "b"):
        out = tmp_path / run / "neighbours.ftz"
        assert main(["train-neighbours", *flags, "--out", str(out)]) == 0
        files = [out, tmp_path / run / "neighbours.fold0.ftz", tmp_path / run / "neighbours.fold1.ftz"]
        digests.append([hashlib.sha256(path.read_bytes()).hexdigest() for path in files])
    assert digests[0] == digests[1]  # one thread, fixed seeds: byte for byte
    assert "trained on 384 documents in 16 languages" in capsys.readouterr().out
    assert fold_model(str(out), 1) == str(tmp_path / "b" / "neighbours.fold1.ftz")
    model = NeighbourModel(str(out))
    model.model  # noqa: B018
    assert model._labels == {code for code, *_ in LANGUAGE_MIX}  # the 16 languages of the sample's text
    assert {fold_of(line, 2) for line in (text / "en.txt").read_text().splitlines()} == {0, 1}


def test_every_outside_label_names_its_script():
    model = NeighbourModel(SHIPPED_NEIGHBOURS)
    model.model  # noqa: B018
    outside = model._labels - set(XLMR_CODES)
    assert len(model._labels) >= 190 and all(len(label.split("_")[-1]) == 4 for label in outside)
