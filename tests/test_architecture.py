"""docs/architecture.md's table of which package may import which, against the imports of every
module of every package (those inside functions too); and inside each package, no import back up."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Dict, List, Set

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


def units(package: Path) -> Dict[str, Set[str]]:
    """The units of ``package`` (its modules, and each subpackage as one) and the units each
    imports: ``{"stats": {"steps"}, ...}``, named by their path inside the package."""

    def unit_of(dotted: str) -> str:
        first = dotted.split(".")[0]
        return first if (package / f"{first}.py").exists() or (package / first).is_dir() else "__init__"

    prefix = ".".join(package.relative_to(ROOT).parts)
    graph: Dict[str, Set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        unit = path.relative_to(package).parts[0].removesuffix(".py")
        found = graph.setdefault(unit, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith(prefix + "."):
                    found.add(unit_of(name[len(prefix) + 1 :]))
        found.discard(unit)
    return graph


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one unit (Tarjan's), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    found = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for other in sorted(graph.get(unit, ())):
            if other not in index:
                visit(other)
                low[unit] = min(low[unit], low[other])
            elif other in stack:
                low[unit] = min(low[unit], index[other])
        if low[unit] == index[unit]:
            component = []
            while not component or component[-1] != unit:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return found


def test_inside_each_package_no_module_imports_back_up():
    """Inside a package (and inside each of its subpackages), its modules and subpackages, a
    subpackage as one, import each other in no circle: each stands above what it imports."""
    packages = [path.parent for package in documented() for path in (ROOT / package).rglob("__init__.py")]
    found = {str(package.relative_to(ROOT)): circles(units(package)) for package in sorted(packages)}
    assert {package: circle for package, circle in found.items() if circle} == {}


def test_an_import_back_up_inside_a_package_fails(tmp_path, monkeypatch):
    package = tmp_path / "house"
    (package / "steps").mkdir(parents=True)
    for path, code in {
        "__init__.py": "",
        "stats.py": "from house.steps.read import READ\n",
        "steps/__init__.py": "",
        "steps/read.py": "READ = 'read'\n",
        "steps/commit.py": "from house.stats import count\n",
    }.items():
        (package / path).write_text(code, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert circles(units(package)) == [["stats", "steps"]]
