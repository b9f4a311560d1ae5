"""The pictures of pretraining and evaluation (pretrain/plot.py), read from the matplotlib figures
the drawing functions return: size, titles, axis labels, baselines, every logged point."""

import math

import matplotlib.image
import matplotlib.text
from matplotlib.colors import to_hex

from pretrain.cli import main
from pretrain.plot import LOSS_DPI, SCORES_DPI, draw_curves, draw_scores, read_curves, read_record
from pretrain.run_record import TrainConfig


def texts_of(figure):
    return [text.get_text() for text in figure.findobj(matplotlib.text.Text)]


def line_labelled(axes, start):
    return next(line for line in axes.get_lines() if line.get_label().startswith(start))


def test_the_loss_curves_of_a_short_run_mark_every_logged_point_against_a_uniform_guess(trained_run, tmp_path):
    record = read_record(trained_run)  # 40 steps, logged every 5, held out every 20
    figure = draw_curves(read_curves(trained_run), record.train, record.model, "tmp/run")
    width, height = figure.get_size_inches() * LOSS_DPI
    assert width >= 1200 and height >= 500
    assert figure.get_suptitle() == "tmp/run: masked-LM loss over 40 steps (tiny preset, 2 layers x 128)"
    train_axes, eval_axes = figure.axes
    assert train_axes.get_title() == "training loss: 8 points\neach the mean over the 5 steps up to it"
    assert eval_axes.get_title() == "held-out loss per language: 2 points\nevery 20 steps and at the end"
    assert [axes.get_xlabel() for axes in figure.axes] == ["step", "step"]
    assert train_axes.get_ylabel() == "MLM loss (nats per masked token)"

    train = line_labelled(train_axes, "training loss")
    assert list(train.get_xdata()) == list(range(5, 41, 5)) and train.get_marker() == "o"
    mean = line_labelled(train_axes, "held-out loss, mean of 3 languages")
    assert list(mean.get_xdata()) == [20, 40] and mean.get_marker() == "s"
    languages = [line for line in eval_axes.get_lines() if not line.get_label().startswith("uniform")]
    assert sorted(line.get_label() for line in languages) == ["el", "en", "ru"]
    assert all(list(line.get_xdata()) == [20, 40] and line.get_marker() == "o" for line in languages)
    vocabulary = record.model.vocab_size
    for axes in figure.axes:  # the baseline: the loss of a uniform guess over the vocabulary
        uniform = line_labelled(axes, f"uniform guess over {vocabulary:,} pieces: ln V = ")
        assert list(uniform.get_ydata()) == [math.log(vocabulary)] * 2
    assert not any(text.startswith("only ") for text in texts_of(figure))

    png = tmp_path / "loss.png"
    assert main(["plot", trained_run, "--out", str(png)]) == 0
    assert matplotlib.image.imread(png).shape[:2] == (550, 1400)


def test_a_log_too_sparse_for_a_curve_says_how_to_log_more():
    curves = {"train": [(100, 9.0), (200, 8.0)], "eval/en": [(200, 8.5)]}
    figure = draw_curves(curves, TrainConfig(log_interval=100, eval_interval=0))
    assert figure.get_suptitle() == "run: masked-LM loss over 200 steps"
    assert "only 2 training points logged:\ntrain with --log-interval 6 for a curve" in texts_of(figure)
    assert figure.axes[1].get_title() == "held-out loss per language: 1 points"
    assert all(line.get_marker() != "None" for axes in figure.axes for line in axes.get_lines())


SCORES = [("en", 0.373, 204), ("de", 0.23, 204), ("es", 0.186, 204)]


def test_the_scores_chart_has_a_title_labels_and_the_baselines_to_beat():
    baselines = [("majority class", 0.25), ("chance (1/7)", 1 / 7)]
    figure = draw_scores(SCORES, title="SIB-200", baselines=baselines, highlight="en", xlabel="language")
    width, height = figure.get_size_inches() * SCORES_DPI
    assert width >= 1200 and height >= 600
    (axes,) = figure.axes
    assert (axes.get_title(), axes.get_xlabel(), axes.get_ylabel()) == ("SIB-200", "language", "accuracy")
    assert axes.get_ylim()[0] == 0 and axes.get_ylim()[1] >= 1
    assert [(line.get_label(), line.get_ydata()[0]) for line in axes.get_lines()] == [
        ("majority class: 0.250", 0.25),
        ("chance (1/7): 0.143", 1 / 7),
    ]
    assert [text.get_text() for text in axes.get_legend().get_texts()] == [
        "majority class: 0.250",
        "chance (1/7): 0.143",
        "en: the language fine-tuned on",
    ]
    bars = axes.patches
    assert [bar.get_height() for bar in bars] == [0.373, 0.23, 0.186]
    assert [to_hex(bar.get_facecolor()) for bar in bars] == [to_hex("tab:orange")] + [to_hex("tab:blue")] * 2
    assert {"0.37", "0.23", "0.19"} <= set(texts_of(figure))  # each bar's value

    plain = draw_scores(SCORES, metric="f1")
    assert plain.axes[0].get_title() == "f1 per test set (204 examples each), best first"
    assert not plain.axes[0].get_lines() and plain.axes[0].get_legend() is None
    wide = draw_scores([(f"l{i}", 0.5, 10) for i in range(100)])
    assert wide.get_size_inches()[0] * SCORES_DPI >= 3000  # room for 100 names
