"""Command lines made from config dataclasses, and the one error path of every entry point.

Each field of a config (nested configs included) becomes a flag: ``--field-name`` unless the
field's metadata names it (``flag(...)``), its help the field's own comment in the source, its
default the dataclass's (so each default lives in one place). ``build_config`` layers a preset,
a saved config and the flags given, rejects unknown keys, and turns a config error into a
``ConfigError`` that names the field (``lid.threshold: ...``), not the flag.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import inspect
import io
import re
import sys
import textwrap
import tokenize
import typing
from functools import cache
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence

MISSING = dataclasses.MISSING


class ConfigError(ValueError):
    """A config that cannot be built; the message starts with the field's dotted name."""


class UsageError(ValueError):
    """A problem with what the user asked for: printed as one line, no traceback (``run_cli``)."""


def flag(
    name: Optional[str] = None,
    *aliases: str,
    choices: Optional[Sequence] = None,
    parse: Optional[Callable] = None,
    repeat: bool = False,
    cli: bool = True,
) -> Dict[str, Any]:
    """Field metadata for the command line: the flag's name and aliases, its choices, a parser
    of the text given (e.g. of a comma list), ``repeat`` for a tuple given one flag per item,
    or ``cli=False`` for a field set another way."""
    return {"flag": name, "aliases": aliases, "choices": choices, "parse": parse, "repeat": repeat, "cli": cli}


@cache
def field_comments(cls: type) -> Dict[str, str]:
    """The ``# comment`` of each field in the source of the class and of the dataclasses it
    derives from (on any line of the field's statement; the class's own comment wins)."""
    comments: Dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            comments.update(_own_field_comments(klass))
    return comments


def _own_field_comments(cls: type) -> Dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    (definition,) = ast.parse(source).body
    lines = {}
    for node in definition.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            for line in range(node.lineno, node.end_lineno + 1):
                lines[line] = node.target.id
    comments: Dict[str, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.start[0] in lines:
            comments.setdefault(lines[token.start[0]], token.string.lstrip("# ").strip())
    return comments


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from ``512MiB``, ``2GB``, ``1.5G`` or ``1000000``: KB, MB, GB and TB are powers of
    1000; KiB, MiB, GiB, TiB and the bare K, M, G, T are powers of 1024."""
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"not a size: {text!r} (e.g. 512MiB, 2GB, 1000000)")
    number, unit, suffix = match.groups()
    if not unit and suffix.lower() == "i":
        raise ValueError(f"not a size: {text!r} (e.g. 512MiB, 2GB, 1000000)")
    exponent = "kmgt".index(unit.lower()) + 1 if unit else 0
    base = 1000 if suffix.lower() == "b" else 1024
    return int(float(number) * base**exponent)


def _hints(cls: type) -> Dict[str, Any]:
    return typing.get_type_hints(cls)


def _base_type(hint):
    """int, float, str, bool or a dataclass, from an annotation (Optional[...] unwrapped);
    a tuple annotation gives ``tuple``."""
    origin = typing.get_origin(hint)
    if origin is typing.Union:
        (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        origin = typing.get_origin(hint)
    if origin in (tuple, list):
        return tuple
    return hint


def _default(field: dataclasses.Field):
    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return field.default_factory()
    return MISSING


CONFIG = "config."  # the prefix of the config flags' destinations in ``args``


def add_config_arguments(parser: argparse.ArgumentParser, cls: type, prefix: str = CONFIG) -> None:
    """One flag per field of ``cls`` (recursively); values land in ``args`` under
    ``config.<dotted field path>``, and only when given."""
    hints, comments = _hints(cls), field_comments(cls)
    for field in dataclasses.fields(cls):
        meta = {**flag(), **field.metadata}
        if not meta["cli"]:
            continue
        kind, path = _base_type(hints[field.name]), prefix + field.name
        if dataclasses.is_dataclass(kind):
            add_config_arguments(parser, kind, path + ".")
            continue
        default = _default(field)
        shown = (
            (f"all {len(default)}" if len(default) > 8 else ",".join(map(str, default)))
            if isinstance(default, tuple)
            else default
        )
        unset = default in (MISSING, None, False) or shown in ("", ())  # an empty default says nothing
        help_text = comments.get(field.name, "") + ("" if unset else f" (default: {shown})")
        names = [meta["flag"] or "--" + field.name.replace("_", "-"), *meta["aliases"]]
        options: Dict[str, Any] = {"dest": path, "default": argparse.SUPPRESS, "help": help_text.replace("%", "%%")}
        if default is MISSING:
            options.update(required=True, default=None)
        if kind is bool:
            options["action"] = "store_false" if default is True else "store_true"
        elif meta["repeat"]:
            options.update(action="append", metavar=field.name.upper())
        else:  # a field's own parser runs when the config is built, so that its error names the field
            options["type"] = str if meta["parse"] else _comma_list(hints[field.name]) if kind is tuple else kind
            options["choices"] = meta["choices"]
            options["metavar"] = None if meta["choices"] else field.name.upper()
        parser.add_argument(*names, **options)


def _comma_list(hint) -> Callable[[str], tuple]:
    """A parser of a comma list into a tuple of the annotation's item type."""
    item_types = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    (inner,) = item_types if typing.get_origin(hint) is typing.Union else [hint]
    item = next((arg for arg in typing.get_args(inner) if arg is not Ellipsis), str)

    def parse(text: str) -> tuple:
        return tuple(item(part.strip()) for part in text.split(",") if part.strip())

    return parse


def given(args: argparse.Namespace, prefix: str = CONFIG) -> Dict[str, Any]:
    """The config values given on the command line (under ``prefix``), as nested dicts by
    dotted field path."""
    values: Dict[str, Any] = {}
    for path, value in vars(args).items():
        if not path.startswith(prefix) or value is None:
            continue
        node = values
        *parents, name = path[len(prefix) :].split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[name] = value
    return values


def merge(*layers: Mapping[str, Any]) -> Dict[str, Any]:
    """Later layers override earlier ones, nested dicts merged key by key."""
    merged: Dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
                merged[key] = merge(merged[key], value)
            else:
                merged[key] = value
    return merged


def build_config(cls: type, *layers: Mapping[str, Any]):
    """``cls`` from the merged ``layers`` (defaults, preset, saved config, flags)."""
    return from_dict(cls, merge(*layers))


def _holds_dataclass(hint) -> bool:
    """Whether ``hint`` is a dataclass or a ``Dict`` whose values hold one."""
    kind = _base_type(hint)
    if typing.get_origin(kind) is dict and typing.get_args(kind):
        return _holds_dataclass(typing.get_args(kind)[1])
    return dataclasses.is_dataclass(kind)


def _read_back(hint, value, path: str):
    """``value`` as ``hint`` says: a dataclass from its dict, a dict of them value by value,
    a list as a tuple where a tuple is meant; anything else as it is."""
    kind = _base_type(hint)
    if value is None:
        return value
    if dataclasses.is_dataclass(kind):
        return from_dict(kind, value, path)
    if _holds_dataclass(kind) and isinstance(value, Mapping):
        item = typing.get_args(kind)[1]
        return {key: _read_back(item, item_value, f"{path}{key}.") for key, item_value in value.items()}
    if kind is tuple and isinstance(value, list):
        return tuple(value)
    return value


def from_dict(cls: type, data: Mapping[str, Any], path: str = ""):
    """``cls`` from a dict such as ``dataclasses.asdict`` writes: nested configs from nested
    dicts (also as the values of a ``Dict``), lists as tuples; an unknown key or a value the
    config rejects is a ``ConfigError`` naming the field."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path.rstrip('.') or cls.__name__}: expected a mapping, got {data!r}")
    hints = _hints(cls)
    known = {field.name: field for field in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{path}{unknown[0]}: unknown config field (known: {', '.join(known)})")
    values = {}
    for name, field in known.items():  # a nested config not given at all: its defaults
        kind = _base_type(hints[name])
        if name not in data and dataclasses.is_dataclass(kind) and _default(field) is MISSING:
            values[name] = from_dict(kind, {}, f"{path}{name}.")
    for name, value in data.items():
        parse = known[name].metadata.get("parse")
        if parse and isinstance(value, str):
            try:
                value = parse(value)
            except ValueError as error:
                raise ConfigError(f"{path}{name}: {error}") from None
        values[name] = _read_back(hints[name], value, f"{path}{name}.")
    try:
        return cls(**values)
    except ConfigError:
        raise
    except (TypeError, ValueError, FileNotFoundError) as error:
        where = path.rstrip(".") or cls.__name__
        raise ConfigError(f"{where}: {error}") from None


def nearest_flag(name: str, flags: Iterable[str]) -> Optional[str]:
    """The flag of ``flags`` a mistyped ``name`` most likely meant, for a "did you mean" hint:
    first one that differs only in ``_`` for ``-``, letter case or leading dashes
    (``--min_len`` -> ``--min-len``; of two such, the earlier in ``flags``), else the closest
    spelling (difflib), else None."""

    def key(flag_name: str) -> str:
        return flag_name.lstrip("-").replace("_", "-").lower()

    by_key: Dict[str, str] = {}
    for candidate in flags:
        by_key.setdefault(key(candidate), candidate)
    wanted = key(name.split("=", 1)[0])
    if wanted in by_key:
        return by_key[wanted]
    close = difflib.get_close_matches(wanted, list(by_key), n=1, cutoff=0.6)
    return by_key[close[0]] if close else None


def run_cli(
    main: Callable[[argparse.Namespace], Optional[int]],
    parser: argparse.ArgumentParser,
    argv: Optional[List[str]] = None,
    known_only: bool = False,
) -> int:
    """Parse ``argv`` and call ``main(args)`` (``main(args, rest)`` with ``known_only``): a
    config error, a missing file or another problem with what was asked for is one line on
    stderr and exit code 2, never a traceback."""
    try:
        if known_only:
            args, rest = parser.parse_known_args(argv)
            code = main(args, rest)
        else:
            code = main(parser.parse_args(argv))
        return 0 if code is None else code
    except (ValueError, OSError) as error:
        message = (
            str(error)
            if not isinstance(error, OSError) or not error.strerror
            else f"{error.strerror}: {error.filename}"
        )
        print(f"error: {message}", file=sys.stderr)
        return 2
