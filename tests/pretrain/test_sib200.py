"""python -m pretrain evaluate sib200 (make eval): fine-tune on the source language, zero-shot
accuracy and retrieval per language, on a SIB-200-shaped folder made here and on the real one."""

import random
from collections import Counter

import matplotlib.image
import pytest

from pretrain import plot
from pretrain.cli import main
from pretrain.sib200 import language_folders, parallel_texts
from tests.pretrain.conftest import WORDS
from tests.support.helpers import SHARED_DATA

SIB200 = SHARED_DATA / "eval" / "sib-200"


def sib_rows(count, seed):
    """Unique texts of one script's words, the category their script (learnable)."""
    rng, rows, seen = random.Random(seed), [], set()
    while len(rows) < count:
        script = rng.choice(list(WORDS))
        text = " ".join(rng.choices(WORDS[script], k=rng.randint(3, 7)))
        if text not in seen:
            seen.add(text)
            rows.append((str(seed * 1000 + len(rows)), script.lower(), text))
    return rows


def write_split(folder, split, rows):
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["index_id\tcategory\ttext", *("\t".join(row) for row in rows)]
    (folder / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def sib_dir(tmp_path_factory):
    """eng_Latn to train on; rus_Cyrl's test set is English's (same rows, same sentences)."""
    root = tmp_path_factory.mktemp("sib-200")
    for split, count, seed in (("train", 192, 1), ("dev", 40, 2), ("test", 60, 3)):
        write_split(root / "eng_Latn", split, sib_rows(count, seed))
    write_split(root / "rus_Cyrl", "test", sib_rows(60, 3))
    return root


def run_sib200(trained_run, sib_dir, out, *flags):
    argv = ["evaluate", "sib200", "--init", trained_run, "--sib-dir", str(sib_dir), "--out", str(out)]
    return main([*argv, "--languages", "en,ru,sw", "--epochs", "6", *flags])


@pytest.mark.slow
def test_fine_tunes_on_english_and_scores_every_language(trained_run, sib_dir, tmp_path, capsys, monkeypatch):
    figures = []
    drawn = plot.plot_scores
    monkeypatch.setattr(plot, "plot_scores", lambda *args, **options: figures.append(drawn(*args, **options)))
    out = tmp_path / "eval"
    assert run_sib200(trained_run, sib_dir, out) == 0
    printed = capsys.readouterr().out
    assert "SIB-200 has no folder for sw: left out" in printed
    assert "masked-LM head" not in printed  # the fine-tuned classifier has none, and needs none here
    table = printed.splitlines()[-5:-1]
    assert table[0].split() == ["language", "folder", "accuracy", "en->xx", "xx->en"]
    english, russian = (line.split() for line in table[1:3])
    assert english[:2] == ["en", "eng_Latn"] and english[3:] == ["-", "-"] and float(english[2]) >= 0.9
    assert russian == ["ru", "rus_Cyrl", english[2], "1.000", "1.000"]  # the same sentences
    commonest = Counter(row[1] for row in sib_rows(192, 1)).most_common(1)[0][0]
    majority = [row[1] for row in sib_rows(60, 3)].count(commonest) / 60
    assert table[3].startswith(
        f"zero-shot accuracy {english[2]} over 1 languages (in en: {english[2]}, majority class {majority:.3f}); "
        "retrieval at layer 1 en->xx 1.000 xx->en 1.000"
    )
    assert (out / "scores.csv").read_text().splitlines()[1:] == [f"en,{english[2]}0,60", f"ru,{english[2]}0,60"]
    assert (out / "retrieval.csv").read_text().splitlines() == [
        "language,folder,to_language,from_language,layer",
        "ru,rus_Cyrl,1.0000,1.0000,1",
    ]
    assert (out / "finetune" / "hf" / "config.json").exists()
    (axes,) = figures[0].axes  # scores.png: a bar per language against the majority class and chance
    assert axes.get_title().startswith(
        f"SIB-200 topic classification: {trained_run.split('/')[-2]}/run fine-tuned on eng_Latn\n"
    )
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("language", "accuracy")
    assert [(line.get_label(), line.get_ydata()[0]) for line in axes.get_lines()] == [
        (f"majority class (commonest training label): {majority:.3f}", majority),
        ("chance (1/3): 0.333", 1 / 3),
    ]
    assert [bar.get_height() for bar in axes.patches] == pytest.approx([float(english[2])] * 2, abs=5e-4)
    assert matplotlib.image.imread(out / "scores.png").shape[:2] == (600, 1200)

    assert run_sib200(trained_run, sib_dir, out) == 0  # again: the finished fine-tuning is resumed, not redone
    again = capsys.readouterr().out
    assert "resuming at step 72" in again and again.splitlines()[-5:] == printed.splitlines()[-5:]
    assert run_sib200(trained_run, sib_dir, out, "--lr", "1e-4") == 2
    assert "holds a fine-tuning of" in capsys.readouterr().err


def test_rows_that_are_not_parallel_are_an_error(trained_run, sib_dir, tmp_path, capsys):
    shuffled = tmp_path / "sib"
    for split in ("train", "dev", "test"):
        write_split(
            shuffled / "eng_Latn",
            split,
            [line.split("\t") for line in (sib_dir / "eng_Latn" / f"{split}.tsv").read_text().splitlines()[1:]],
        )
    write_split(shuffled / "ell_Grek", "test", list(reversed(sib_rows(60, 3))))
    argv = ["evaluate", "sib200", "--init", trained_run, "--sib-dir", str(shuffled), "--out", str(tmp_path / "o")]
    assert main([*argv, "--languages", "el", "--epochs", "1"]) == 2
    assert "ell_Grek/test.tsv: its index_id column is not" in capsys.readouterr().err
    assert main([*argv[:5], str(tmp_path), *argv[6:], "--languages", "el"]) == 2
    assert "eng_Latn/train.tsv is missing: is" in capsys.readouterr().err


@pytest.mark.skipif(not SIB200.is_dir(), reason="no ../shared/data/eval/sib-200")
def test_the_real_sib200_folders_of_the_default_languages():
    languages = ["en", "de", "fr", "es", "ru", "zh", "ar", "hi", "ja", "vi", "ur", "is", "xx"]
    found, missing = language_folders(str(SIB200), languages)
    assert found == {
        "en": "eng_Latn",
        "de": "deu_Latn",
        "fr": "fra_Latn",
        "es": "spa_Latn",
        "ru": "rus_Cyrl",
        "zh": "zho_Hans",
        "ar": "arb_Arab",
        "hi": "hin_Deva",
        "ja": "jpn_Jpan",
        "vi": "vie_Latn",
        "ur": "urd_Arab",
        "is": "isl_Latn",
    }
    assert missing == ["xx"]
    english_ids, english = parallel_texts(str(SIB200 / "eng_Latn" / "test.tsv"))
    german_ids, german = parallel_texts(str(SIB200 / "deu_Latn" / "test.tsv"))
    assert len(english) == 204 and english_ids == german_ids and english[0] != german[0]
