"""docs/architecture.md's table of which package may import which, against the imports of every
module of every package (those inside functions too)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, Set

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"


def documented() -> Dict[str, Set[str]]:
    """The table: the ```text block after "Which package may import which"."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("Which package may import which") :]
    block = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    table = {}
    for line in block.splitlines():
        package, _, rest = line.partition(" ")
        table[package] = set() if rest.strip().startswith("(") else set(rest.split())
    return table


def imported(package: str, packages: Set[str]) -> Set[str]:
    """The other packages of ``packages`` that the modules of ``package`` import."""
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found.update(name.split(".")[0] for name in names)
    return (found & packages) - {package}


def test_the_table_names_every_package():
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - {"tests"} | {"worker"}
    assert set(documented()) == packages


def test_each_package_imports_exactly_what_the_table_allows():
    table = documented()
    actual = {package: imported(package, set(table)) for package in table}
    assert actual == table
