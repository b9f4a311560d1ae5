"""The shares picture (sampling/plot.py), read from the figure it returns."""

import matplotlib.image

from sampling.plot import draw_shares, plot_shares


def test_the_shares_chart_is_readable_and_has_the_uniform_share_to_compare_with(tmp_path):
    sizes, probs = {"sw": 10, "en": 9000, "fr": 990}, {"en": 0.5, "fr": 0.3, "sw": 0.2}
    figure = draw_shares(sizes, probs, "alpha = 0.3")
    (axes,) = figure.axes
    assert axes.get_title() == "Each language's raw share of the corpus and its sampling probability (alpha = 0.3)"
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("language, largest first", "share (log scale)")
    assert axes.get_yscale() == "log"
    assert [label.get_text() for label in axes.get_xticklabels()] == ["en", "fr", "sw"]
    assert [bar.get_height() for bar in axes.patches] == [0.9, 0.099, 0.001, 0.5, 0.3, 0.2]
    (uniform,) = axes.get_lines()
    assert uniform.get_label() == "uniform: 1/3" and uniform.get_ydata()[0] == 1 / 3
    assert plot_shares(sizes, probs, str(tmp_path / "shares.png")).get_size_inches()[0] >= 12
    assert matplotlib.image.imread(tmp_path / "shares.png").shape[:2] == (600, 1200)
