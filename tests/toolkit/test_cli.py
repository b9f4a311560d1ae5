"""toolkit.cli: flags from config dataclasses, configs from layers, one error path."""

import argparse
from dataclasses import asdict, dataclass, field
from typing import Dict, Optional, Tuple

import pytest

from toolkit.cli import (
    ConfigError,
    add_config_arguments,
    build_config,
    flag,
    from_dict,
    given,
    nearest_flag,
    parse_size,
    run_cli,
)


def _positive(text: str) -> Tuple[str, ...]:
    values = tuple(text.split("+"))
    if "bad" in values:
        raise ValueError("no bad items")
    return values


@dataclass(frozen=True)
class Inner:
    rate: float = 0.25  # how fast
    names: Tuple[str, ...] = field(
        default=("a", "b"), metadata=flag("--inner-names", parse=_positive)
    )  # items, joined by +

    def __post_init__(self):
        if not 0 <= self.rate <= 1:
            raise ValueError(f"rate must be in [0, 1], got {self.rate}")


@dataclass(frozen=True)
class Outer:
    path: str = field(metadata=flag("--out"))  # where it goes
    size: int = field(default=3, metadata=flag("--size", "--old-size"))  # how many
    sizes: Tuple[int, ...] = (1, 2)  # a comma list of counts
    verbose: bool = False  # say more
    limit: Optional[float] = None  # at most this
    inner: Inner = field(default_factory=Inner)  # nested
    hidden: str = field(default="x", metadata=flag(cli=False))  # set by the program


def parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--other")
    add_config_arguments(parser, Outer)
    return parser


def test_flags_help_and_defaults_come_from_the_dataclass():
    text = parser().format_help()
    assert "--out PATH" in text and "where it goes" in text
    assert "how many (default: 3)" in text and "--old-size" in text and "--inner-names" in text
    assert "--hidden" not in text and "(default: 0.25)" in text


def test_only_the_flags_given_override_the_defaults():
    args = parser().parse_args(
        [
            "--out",
            "o",
            "--old-size",
            "5",
            "--sizes",
            "4,5",
            "--verbose",
            "--rate",
            "0.5",
            "--inner-names",
            "x+y",
            "--other",
            "z",
        ]
    )
    config = build_config(Outer, given(args))
    assert asdict(config) == {
        "path": "o",
        "size": 5,
        "sizes": (4, 5),
        "verbose": True,
        "limit": None,
        "inner": {"rate": 0.5, "names": ("x", "y")},
        "hidden": "x",
    }
    assert build_config(Outer, given(parser().parse_args(["--out", "o"]))) == Outer("o")
    layered = build_config(Outer, {"path": "p", "inner": {"rate": 0.1}}, given(parser().parse_args(["--out", "o"])))
    assert (layered.path, layered.inner.rate) == ("o", 0.1)  # later layers win, nested dicts merge


def test_unknown_keys_and_bad_values_name_the_field():
    with pytest.raises(ConfigError, match=r"^inner\.speed: unknown config field \(known: rate, names\)$"):
        from_dict(Outer, {"path": "p", "inner": {"speed": 1}})
    with pytest.raises(ConfigError, match=r"^inner: rate must be in \[0, 1\], got 2$"):
        from_dict(Outer, {"path": "p", "inner": {"rate": 2}})
    with pytest.raises(ConfigError, match=r"^inner\.names: no bad items$"):
        build_config(Outer, given(parser().parse_args(["--out", "o", "--inner-names", "a+bad"])))
    with pytest.raises(ConfigError, match="Outer: .*path"):
        from_dict(Outer, {})
    assert from_dict(Outer, {"path": "p", "sizes": [7]}).sizes == (7,)  # lists from JSON become tuples


@dataclass(frozen=True)
class Catalogue:
    by_name: Dict[str, Dict[str, Inner]]  # dataclasses as the values of dicts, two deep
    counts: Dict[str, int] = field(default_factory=dict)


def test_dataclasses_in_dicts_are_read_back_and_their_errors_name_the_path():
    data = {"by_name": {"x": {"fast": {"rate": 0.5, "names": ["c"]}}}, "counts": {"n": 3}}
    assert from_dict(Catalogue, data) == Catalogue({"x": {"fast": Inner(0.5, ("c",))}}, {"n": 3})
    assert from_dict(Catalogue, asdict(from_dict(Catalogue, data))) == from_dict(Catalogue, data)
    with pytest.raises(ConfigError, match=r"^by_name\.x\.fast: rate must be in \[0, 1\], got 3$"):
        from_dict(Catalogue, {"by_name": {"x": {"fast": {"rate": 3}}}})


def test_run_cli_prints_one_line_and_returns_2(capsys):
    def fail(args):
        build_config(Outer, {"path": "p", "inner": {"rate": 5}})

    assert run_cli(fail, parser(), ["--out", "o"]) == 2
    assert capsys.readouterr().err == "error: inner: rate must be in [0, 1], got 5\n"

    def missing(args):
        open("/nonexistent/file")

    assert run_cli(missing, parser(), ["--out", "o"]) == 2
    assert capsys.readouterr().err == "error: No such file or directory: /nonexistent/file\n"
    assert run_cli(lambda args: None, parser(), ["--out", "o"]) == 0


def test_sizes_in_decimal_and_binary_units():
    sizes = ["512MiB", "512M", "2GB", "1.5G", "10KB", "3k", "1TiB", "100B", "4096"]
    assert [parse_size(text) for text in sizes] == [
        512 * 2**20,
        512 * 2**20,
        2 * 10**9,
        3 * 2**29,
        10_000,
        3072,
        2**40,
        100,
        4096,
    ]
    for bad in ["", "MB", "12i", "-3", "2 GBs", "x"]:
        with pytest.raises(ValueError, match="not a size"):
            parse_size(bad)


def test_nearest_flag_prefers_a_dash_for_an_underscore_then_the_closest_spelling():
    flags = ["--min-len", "--max-len", "--lang-threshold", "--direct_num_workers", "--experiments"]
    assert nearest_flag("--min_len", flags) == "--min-len"
    assert nearest_flag("--MIN-LEN", flags) == "--min-len" and nearest_flag("-min-len", flags) == "--min-len"
    assert nearest_flag("--direct-num-workers=2", flags) == "--direct_num_workers"
    assert nearest_flag("--lang-treshold", flags) == "--lang-threshold"
    assert nearest_flag("--experiment", flags) == "--experiments"
    assert nearest_flag("--zzz", flags) is None
    assert nearest_flag("--a_b", ["--a-b", "--a_b_"]) == "--a-b"  # the exact match but for _ and - wins
