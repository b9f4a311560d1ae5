"""The stage contract (filters/stage.py) on plain documents, without Beam."""

import pickle

from filters.dedup import DuplicateLineRemoval, MinLength
from filters.document import make_document
from filters.perplexity import PerplexityScorer
from filters.quality import QualityConfig, QualityFilter
from filters.stage import apply_stages, reason_stages
from lid.model import LanguageFilter, LidConfig
from tests.support.helpers import TEXT


def doc(text):
    return make_document(
        url="https://a.org/x", date_download="d", digest="x", title="t", raw_content=text, cc_segment="s"
    )


def test_stages_run_in_order_until_one_drops(lid_model):
    stages = [
        DuplicateLineRemoval(frozenset({1})),
        MinLength(20),
        QualityFilter(QualityConfig()),
        LanguageFilter(LidConfig(model_path=lid_model, languages=("fr",))),
    ]
    for stage in stages:
        stage.setup()
    kept, stage, reason = apply_stages(stages, doc(f"{TEXT['fr']}\nmenu\n{TEXT['fr']}"))
    assert (stage, reason) == (None, None)
    assert kept["nlines"] == 2 and kept["line_ids"] == [0, 2] and kept["language"] == "fr"
    assert kept["terminal_punct_frac"] == 1.0
    dropped, stage, reason = apply_stages(stages, doc(f"{TEXT['de']}\nmenu"))
    assert (stage.name, reason, dropped["language"]) == ("lid", "not_selected", "de")
    assert apply_stages(stages, doc("short\nmenu"))[1:] == (stages[1], "too_short")


def test_reasons_name_their_stage(lid_model):
    stages = [MinLength(1), QualityFilter(QualityConfig()), LanguageFilter(LidConfig(model_path=lid_model))]
    reasons = reason_stages(stages)
    assert reasons["too_short"] == "dedup" and reasons["below_threshold"] == "lid"
    assert reasons["quality_short_line_frac"] == "quality"


def test_stages_with_models_pickle_without_them(lid_model, lm_dir):
    """Beam ships stages to workers pickled; a loaded model does not travel, setup() loads it."""
    english = {**doc(TEXT["en"]), "language": "en"}
    for stage in (LanguageFilter(LidConfig(model_path=lid_model)), PerplexityScorer(str(lm_dir))):
        stage.setup()
        copy = pickle.loads(pickle.dumps(stage))
        copy.setup()
        assert copy.apply(english) == stage.apply(english)
    assert copy.apply(english)[0]["perplexity"] > 0


def test_a_batch_gives_each_documents_own_result_in_input_order(lid_model, lm_dir):
    """One fastText call for many pages, and scoring grouped by language, change no result."""
    texts = [TEXT["fr"], TEXT["en"], "1234 5678 ###", TEXT["de"], TEXT["en"] + "\nmore words here", ""]
    languages = ["en", "sw", "en", None, "en", "en"]
    pages = [{**doc(text), "language": language} for text, language in zip(texts, languages)]
    stages = (
        LanguageFilter(LidConfig(model_path=lid_model, languages=("fr", "en"))),
        PerplexityScorer(str(lm_dir)),
        QualityFilter(QualityConfig(min_terminal_punct_frac=0.5)),
    )
    for stage in stages:
        stage.setup()
        one_by_one = [stage.apply(page) for page in pages]
        assert stage.apply_batch(pages) == one_by_one, stage.name
        assert stage.apply_batch([]) == []
    scored = [result["perplexity"] for result, _ in stages[1].apply_batch(pages)]
    assert scored[1] is None and scored[3] is None and scored[0] != scored[2] != scored[4]
