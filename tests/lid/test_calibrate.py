import hashlib
import json
from pathlib import Path

import pytest

from lid.__main__ import main
from lid.calibrate import (
    CalibrationConfig,
    Prediction,
    build_documents,
    calibrate,
    labelled_sentences,
    labels_kept,
    outcomes,
    predict,
    predict_calibration,
    summarize,
)
from lid.model import SHIPPED_THRESHOLDS, LanguageIdentifier, read_thresholds, write_thresholds
from lid.neighbours import SHIPPED_NEIGHBOURS, LabelledDocument, fold_model
from tests.support.helpers import SHARED_DATA, TEXT
from toolkit.languages import XLMR_CODES


def predictions(language, scored):
    return [Prediction(truth, language, score) for score, truth in scored]


def test_calibration_picks_the_lowest_threshold_down_to_which_precision_stays_at_target():
    config = CalibrationConfig(target_precision=0.99, min_threshold=0.1, max_threshold=0.5, min_documents=2)
    calibrated = calibrate(
        # fr: precision 1 down to 0.31; the German document at 0.30 brings it to 3/4.
        predictions("fr", [(0.9, "fr"), (0.45, "fr"), (0.40, "fr"), (0.30, "de"), (0.20, "fr")])
        # de: never wrong, so down to min_threshold.
        + predictions("de", [(0.95, "de"), (0.15, "de")])
        # es: half wrong already at 0.5: kept at max_threshold, target not reached.
        + predictions("es", [(0.8, "es"), (0.7, "pt")])
        # it: one document, under min_documents; ceb is not an XLM-R language.
        + predictions("it", [(0.9, "it")])
        + predictions("ceb", [(0.9, "ceb"), (0.8, "ceb")]),
        config,
    )
    assert {language: result.threshold for language, result in calibrated.items()} == {
        "fr": 0.31,
        "de": 0.1,
        "es": 0.5,
    }
    assert calibrated["fr"].precision == 1.0 and calibrated["fr"].documents == 5 and calibrated["fr"].reached
    assert calibrated["es"].precision == 0.5 and not calibrated["es"].reached


def test_other_languages_weigh_as_configured():
    # 19 Swahili documents at 0.9 and one Kinyarwanda document (not an XLM-R language) at 0.3.
    scored = predictions("sw", [(0.9, "sw")] * 19 + [(0.3, "kin")])
    config = lambda weight: CalibrationConfig(other_languages_weight=weight, min_threshold=0.1)
    weighed = lambda weight: calibrate(scored, config(weight))["sw"].threshold
    assert weighed(0.1) == 0.1  # 19 / 19.1 = 0.995: the target holds all the way down
    assert weighed(1.0) == 0.31  # 19 / 20 = 0.95 at 0.30
    # A wrong XLM-R language always weighs 1.
    assert calibrate(predictions("sw", [(0.9, "sw")] * 19 + [(0.3, "so")]), config(0.1))["sw"].threshold == 0.31
    assert CalibrationConfig().other_languages_weight == 1.0  # the default: as in a uniform mix


def test_outcomes_count_kept_right_and_wrong_per_true_language():
    scored = [
        Prediction("fr", "fr", 0.4),  # kept at fr's 0.3
        Prediction("fr", "fr", 0.2),  # dropped
        Prediction("fr", "en", 0.9),  # kept, as the wrong language
        Prediction("ceb", "en", 0.9),  # another language kept as en
        Prediction("ceb", "ceb", 0.9),  # not selected
    ]
    by_language = outcomes(scored, {"fr": 0.3, "en": 0.5}, 0.5)
    assert by_language["fr"] == (3, 1, 1) and by_language["ceb"] == (2, 0, 1)
    summary = summarize(by_language)
    assert (summary.languages, summary.documents, summary.others, summary.others_kept) == (1, 3, 2, 0.5)
    assert summary.kept_correct == summary.kept_wrong == pytest.approx(1 / 3)


def test_documents_are_consecutive_sentences_of_one_source(tmp_path):
    (tmp_path / "en.txt").write_text("\n".join(f"e{i}" for i in range(11)) + "\n")
    (tmp_path / "zho_Hant").mkdir()
    (tmp_path / "zho_Hant" / "train.tsv").write_text("index_id\ttext\n" + "".join(f"{i}\tz{i}\n" for i in range(4)))
    (tmp_path / "zho_Hant" / "test.tsv").write_text("index_id\ttext\n1\tnot read\n")
    table = tmp_path / "udhr.tsv"
    table.write_text("bcp47\tparagraph\nsr-Latn\ts0\nsr-Latn\ts1\npt-BR\tp0\n")
    sentences = [*labelled_sentences([str(tmp_path)], splits=["train"])]
    sentences += labelled_sentences(tsv_files=[str(table)], language_column="bcp47", text_column="paragraph")
    assert build_documents(sentences, 2) == [
        LabelledDocument("en", "e0\ne1"),
        LabelledDocument("en", "e2\ne3"),
        LabelledDocument("en", "e4\ne5"),
        LabelledDocument("en", "e6\ne7"),
        LabelledDocument("en", "e8\ne9"),  # e10 alone is left out
        LabelledDocument("zh_Hant", "z0\nz1"),
        LabelledDocument("zh_Hant", "z2\nz3"),
        LabelledDocument("sr", "s0\ns1"),
    ]


def test_a_table_without_its_columns_is_a_clear_error(tmp_path):
    table = tmp_path / "t.tsv"
    table.write_text("lang\tsentence\nen\thello\n")
    with pytest.raises(ValueError, match="no column language, text"):
        list(labelled_sentences(tsv_files=[str(table)]))


def test_thresholds_file_round_trips_and_bad_files_are_clear_errors(tmp_path):
    path = tmp_path / "thresholds.csv"
    write_thresholds(str(path), {"sw": 0.12, "en": 0.5})
    assert path.read_text() == "language,threshold\nen,0.5\nsw,0.12\n"
    assert read_thresholds(str(path)) == (("en", 0.5), ("sw", 0.12))
    path.write_text("lang,value\nen,0.5\n")
    with pytest.raises(ValueError, match="header line 'language,threshold'"):
        read_thresholds(str(path))
    path.write_text("language,threshold\nen,half\n")
    with pytest.raises(ValueError, match="line 2: expected language,threshold"):
        read_thresholds(str(path))


def test_calibrate_and_evaluate_commands(lid_model, tmp_path, capsys):
    data = tmp_path / "text"
    data.mkdir()
    for language in ("en", "fr", "de"):
        (data / f"{language}.txt").write_text("\n".join([TEXT[language]] * 8) + "\n")
    out = tmp_path / "thresholds.csv"
    code = main(
        ["calibrate", "--text-dir", str(data), "--model", lid_model, "--out", str(out), "--min-documents", "2"]
        + ["--sentences-per-document", "2"]
    )
    printed = capsys.readouterr().out
    assert code == 0
    # Every document is right, so each language goes down to min_threshold.
    assert read_thresholds(str(out)) == (("de", 0.2), ("en", 0.2), ("fr", 0.2))
    assert "calibrated: kept with the correct language 100.0%, with a wrong one 0.0% (12 documents in 3" in printed
    details = json.loads((tmp_path / "thresholds.calibration.json").read_text())
    assert details["languages"]["en"]["threshold"] == 0.2 and details["data"]["documents"] == 12
    assert details["config"]["model_path"] == "lid.176.ftz" and len(details["model_sha256"]) == 64
    code = main(["evaluate", "--text-dir", str(data), "--lid-model", lid_model, "--lid-mode", "spaced"])
    assert code == 0 and "spaced mode: kept with the correct language 100.0%" in capsys.readouterr().out
    assert main(["calibrate", "--model", lid_model, "--out", str(out)]) == 2
    assert "give labelled text" in capsys.readouterr().err


def test_config_validation():
    with pytest.raises(ValueError, match="target_precision"):
        CalibrationConfig(target_precision=0)
    with pytest.raises(ValueError, match="min_threshold <= max_threshold"):
        CalibrationConfig(min_threshold=0.6, max_threshold=0.5)


SIB_200 = SHARED_DATA / "eval" / "sib-200"
# Where `make lid-model` writes the neighbours model and the models of its folds (not shipped:
# calibration reads each SIB-200 document with the fold model that did not see it).
FOLDS = Path(__file__).resolve().parents[2] / "out" / "lid" / "neighbours.ftz"


def built_folds() -> bool:
    """Whether `make lid-model` has built the shipped model's folds here (their digests are the record's)."""
    record = json.loads(Path(SHIPPED_NEIGHBOURS).with_suffix(".json").read_text())
    paths = [Path(fold_model(str(FOLDS), k)) for k in range(record["config"]["folds"])]
    return all(path.is_file() for path in paths) and all(
        hashlib.sha256(path.read_bytes()).hexdigest() == record["sha256"][path.name] for path in paths
    )


@pytest.mark.skipif(not SIB_200.is_dir(), reason="../shared/data/eval/sib-200 not present")
@pytest.mark.skipif(
    not FOLDS.is_file() or not built_folds(), reason="make lid-model builds the neighbours model's folds"
)
@pytest.mark.slow
def test_shipped_thresholds_are_what_calibration_computes(lid_model):
    documents = build_documents(labelled_sentences([str(SIB_200)], splits=["train", "dev"]), 5)
    config = CalibrationConfig(model_path=lid_model, neighbour_model=str(FOLDS), neighbour_folds=5)
    calibrated = calibrate(predict_calibration(config, documents), config)
    assert {language: result.threshold for language, result in calibrated.items()} == dict(
        read_thresholds(SHIPPED_THRESHOLDS)
    )


def test_the_shipped_neighbours_model_is_the_one_its_record_names():
    record = json.loads(Path(SHIPPED_NEIGHBOURS).with_suffix(".json").read_text())
    digest = hashlib.sha256(Path(SHIPPED_NEIGHBOURS).read_bytes()).hexdigest()
    assert record["sha256"]["neighbours.ftz"] == digest
    details = json.loads(Path(SHIPPED_THRESHOLDS).with_suffix(".calibration.json").read_text())
    assert details["neighbour_model_sha256"] == digest and details["config"]["neighbour_folds"] == 5
    assert details["config"]["other_languages_weight"] == 1.0 and details["config"]["min_threshold"] == 0.2


@pytest.mark.slow
@pytest.mark.skipif(not SIB_200.is_dir(), reason="../shared/data/eval/sib-200 not present")
def test_shipped_thresholds_meet_the_target_on_held_out_text(lid_model):
    """SIB-200's test split, all 205 languages (docs/language-id.md, "What sits under each label")."""
    documents = build_documents(labelled_sentences([str(SIB_200)], splits=["test"]), 5)
    held_out = predict(LanguageIdentifier(lid_model, "spaced"), documents)
    ccnet = predict(LanguageIdentifier(lid_model, "ccnet"), documents)
    one = dict.fromkeys(XLMR_CODES, 0.5)
    thresholds = {**one, **dict(read_thresholds(SHIPPED_THRESHOLDS))}
    before, after = summarize(outcomes(ccnet, one, 0.5)), summarize(outcomes(held_out, thresholds, 0.5))
    assert (after.languages, after.documents, after.others) == (91, 4040, 4160)
    assert round(before.kept_correct, 3) == 0.871 and round(after.kept_correct, 3) == 0.968
    assert after.kept_correct >= 0.95 and after.kept_wrong <= before.kept_wrong
    assert round(before.others_kept, 3) == 0.225 and round(after.others_kept, 3) == 0.011
    labels = labels_kept(held_out, thresholds, 0.5)
    assert {language for language, label in labels.items() if label.precision < 0.9} == {"hi", "zh_Hant"}
