"""The README and the docs/ pages: every code block is run or checked, so that no example rots.

A block is classified by an HTML comment on the last non-blank line before its fence
(docs/README.md, "How these pages are tested", says the same for writers):

``<!-- docs-test: run [needs=NAME,...] [slow] -->``
    executed. The default of ```python blocks (they need no comment). Python runs in-process,
    shell (```bash, ```sh) with bash -euo pipefail, SQL with DuckDB; all in a temporary folder
    of the page's own, where ``.venv`` links to the environment running the tests and
    ``../shared`` to the shared data. A page's blocks run in page order and share one Python
    namespace, as a reader would run them: a block may use what the earlier ones made (but a
    slow one's). ``needs`` names what the test puts into ``out/`` first, built here with tiny
    settings (``Fixtures``): ``corpus``, ``lm``, ``tokenizer``, ``data``, ``run``; ``shared``:
    skipped when ../shared/data is absent. ``slow`` marks a block that runs a whole job
    (``make test-fast`` leaves it out).
    In Python, ``EXPRESSION  # -> EXPECTED`` asserts the value: a literal compares item by item,
    floats to the decimals shown and ``...`` standing for any items or value; anything else
    is matched against the value's repr, ``...`` matching any text.
``<!-- docs-test: check -->``
    shell, too slow or needing what a test has not (hours of training, a cluster, the network):
    each command is checked, not run. ``python -m PKG ...`` (also after ``torchrun``) parses with
    PKG's own argparse parser; the flags the mine job passes on to Beam with Beam's; other
    modules' flags must appear in their ``--help``. ``make TARGET VAR=...`` passes ``make -n``
    and each VAR is one the Makefile uses. Every repository path a command names exists.
``<!-- docs-test: output -->``
    text: what the page's previous run block printed (its stdout), doctest-style: ``...``
    matches any text, runs of white space are equal.
``<!-- docs-test: tree -->``
    text: a listing of the repository; each line's first path exists, each ``name.py`` (or
    ``Dockerfile``) its description names is in that folder.
``<!-- docs-test: skip REASON -->``
    text only (a diagram, output of a command too slow to run here), never code.

A code block with no (valid) classification fails ``test_every_block_is_run_or_checked``, and
so does a docs-test comment that stands before no code block.
Besides the blocks: relative links and their #anchors resolve, and each repository path named in
backticks (``filters/dedup.py``) exists.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import decimal
import doctest
import glob
import importlib
import io
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tokenize
from functools import cache
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

PYTHON = {"python", "py"}
SHELL = {"bash", "sh", "shell"}
TEXT = {"", "text"}
KINDS = {"run", "check", "output", "tree", "skip"}
ALLOWED = {  # block language -> the kinds it may have (the first is its default, "" for none)
    **dict.fromkeys(PYTHON, ("run",)),
    **dict.fromkeys(SHELL, ("", "run", "check")),
    "sql": ("", "run"),
    **dict.fromkeys(TEXT, ("", "output", "tree", "skip")),
}
FIXTURES = ("corpus", "lm", "tokenizer", "data", "run")
# Top-level entries of the repository: a path starting with one of them names a tracked file.
REPO_ENTRIES = (
    "bench",
    "ccnet_pipeline",
    "docs",
    "filters",
    "lid",
    "pretrain",
    "sampling",
    "tests",
    "tokenizer",
    "toolkit",
    "worker",
    "Makefile",
    "pyproject.toml",
    "README.md",
)

MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)[^`]*$")


@dataclasses.dataclass
class Block:
    page: Path
    line: int  # 1-based line of the first code line in the page
    lang: str
    code: str  # dedented to the fence
    marker: Optional[str]  # the docs-test comment's body, None without one
    index: int = 0  # position among the page's blocks
    kind: str = ""  # run, check, output, tree, skip; "" when the block is not (validly) classified
    options: Dict[str, Any] = dataclasses.field(default_factory=dict)
    problem: str = ""  # what is wrong with its classification

    def __post_init__(self):
        try:
            self.kind, self.options = self.classify()
        except ValueError as error:
            self.problem = str(error)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def classify(self) -> Tuple[str, Dict[str, Any]]:
        """(kind, options), or raises ValueError saying what is wrong with the classification."""
        allowed = ALLOWED.get(self.lang)
        if allowed is None:
            raise ValueError(
                f"```{self.lang} blocks are neither run nor checked: use ```python, ```bash, ```sql or ```text"
            )
        if self.marker is None:
            if not allowed[0]:
                raise ValueError(f"```{self.lang or 'text'} block without <!-- docs-test: {'|'.join(allowed[1:])} -->")
            return allowed[0], {"needs": (), "slow": False}
        kind, _, rest = self.marker.partition(" ")
        if kind not in KINDS:
            raise ValueError(f"unknown docs-test kind {kind!r} (known: {', '.join(sorted(KINDS))})")
        if kind not in allowed:
            raise ValueError(
                f"a ```{self.lang or 'text'} block cannot be {kind!r} (only {', '.join(a for a in allowed if a)})"
            )
        if kind == "skip":
            if not rest.strip():
                raise ValueError("docs-test: skip needs a reason")
            return kind, {"reason": rest.strip()}
        options: Dict[str, Any] = {"needs": (), "slow": False}
        for word in rest.split():
            if kind == "run" and word.startswith("needs="):
                options["needs"] = tuple(n for n in word[len("needs=") :].split(",") if n)
                unknown = set(options["needs"]) - set(FIXTURES) - {"shared"}
                if unknown:
                    raise ValueError(f"unknown needs {sorted(unknown)} (known: {', '.join(FIXTURES)}, shared)")
            elif kind == "run" and word == "slow":
                options["slow"] = True
            else:
                raise ValueError(f"docs-test: {kind} takes no option {word!r}")
        return kind, options


def code_blocks(page: Path) -> List[Block]:
    """The fenced code blocks of a Markdown page, each with the docs-test comment before it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: List[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, lang = len(match["indent"]), match["fence"], match["lang"].lower()
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(previous)
        end = i + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence[0] * len(fence)) and not lines[end].strip().strip(fence[0])
        ):
            end += 1
        code = "\n".join(line[indent:] if not line[:indent].strip() else line.lstrip() for line in lines[i + 1 : end])
        blocks.append(Block(page, i + 2, lang, code + "\n", marker["body"] if marker else None, len(blocks)))
        i = end + 1
    return blocks


ALL_BLOCKS = [block for page in PAGES for block in code_blocks(page)]


def stray_markers(page: Path) -> List[str]:
    """The docs-test comments whose next non-blank line opens no code block."""
    lines = page.read_text(encoding="utf-8").splitlines()
    stray = []
    for i, line in enumerate(lines):
        if MARKER.match(line):
            following = next((rest for rest in lines[i + 1 :] if rest.strip()), "")
            if not FENCE.match(following):
                stray.append(f"{page.relative_to(ROOT)}:{i + 1}: a docs-test comment before no code block")
    return stray


def test_every_block_is_run_or_checked():
    assert PAGES[1:], "no docs/*.md pages"
    problems = [f"{block.where}: {block.problem}" for block in ALL_BLOCKS if block.problem]
    problems += [stray for page in PAGES for stray in stray_markers(page)]
    assert not problems, "\n".join(problems)


def test_a_block_that_is_neither_run_nor_checked_fails(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\nmake corpus\n```\n\n<!-- docs-test: skip slow -->\n```python\nx = 1\n```\n"
        "<!-- docs-test: skip a diagram -->\n```\nA -> B\n```\n"
    )
    first, second, third = code_blocks(page)
    assert not stray_markers(page)
    assert "without <!-- docs-test: run|check -->" in first.problem
    assert "cannot be 'skip'" in second.problem
    assert (third.kind, third.options, third.problem) == ("skip", {"reason": "a diagram"}, "")


# ---------------------------------------------------------------------------------------------
# Links and paths named in the prose


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set:
    text = re.sub(r"(?ms)^\s*(```|~~~).*?^\s*\1", "", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6}\s+(.+?)\s*#*$", text)}


def prose(page: Path) -> str:
    """The page without its code blocks and HTML comments."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"(?ms)^\s*(```|~~~).*?^\s*\1[^\n]*$", "", text)
    return re.sub(r"(?s)<!--.*?-->", "", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def repo_path(token: str) -> Optional[str]:
    """``token`` as a path in the repository when it names one (``lid/languages.py``,
    ``$PWD/worker/boot.py``), else None."""
    token = token.strip("'\"`,;:()").removeprefix("$PWD/").removeprefix("./")
    if "/" not in token and token not in REPO_ENTRIES:
        return None
    if not re.fullmatch(r"[\w.*/-]+", token) or token.split("/")[0] not in REPO_ENTRIES:
        return None
    return token


def missing_paths(tokens) -> List[str]:
    missing = []
    for token in tokens:
        path = repo_path(token)
        if path and not glob.glob(str(ROOT / path)):
            missing.append(path)
    return missing


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_in_backticks_exist(page):
    missing = missing_paths(re.findall(r"`([^`\s]+)`", prose(page)))
    assert not missing, f"{page.name} names files the repository lacks: {', '.join(missing)}"


# ---------------------------------------------------------------------------------------------
# Running the blocks


@dataclasses.dataclass
class PageRun:
    """One page's blocks run in order in one folder, sharing a Python namespace."""

    page: Path
    work: Path
    namespace: Dict[str, Any] = dataclasses.field(default_factory=dict)
    stdout: Dict[int, str] = dataclasses.field(default_factory=dict)  # block index -> what it printed
    failed: Dict[int, str] = dataclasses.field(default_factory=dict)  # block index -> its error
    skipped: set = dataclasses.field(default_factory=set)  # block indexes skipped (../shared absent)


class Fixtures:
    """What ``needs=`` names, built once per session with tiny settings, copied into a page's out/."""

    def __init__(self, root: Path):
        self.root = root
        self.built: Dict[str, Path] = {}

    def get(self, name: str) -> Path:
        if name not in self.built:
            getattr(self, "_" + name)(self.root / name)
            self.built[name] = self.root / name
        return self.built[name]

    def _corpus(self, out: Path) -> None:
        """Four languages in three buckets, as the mine job writes a corpus (real sentences)."""
        from filters.document import make_document
        from tests.support.helpers import TEXT, letters, write_corpus

        rng = random.Random(0)
        shards = {}
        for language, count in {"en": 40, "fr": 20, "de": 12, "sw": 6}.items():
            for rank, bucket in enumerate(("head", "middle", "tail")):
                docs = []
                for i in range(count):
                    lines = [f"{TEXT[language]} ({letters(i)} {bucket} {letters(j)})" for j in range(rng.randint(2, 5))]
                    doc = make_document(
                        url=f"https://{language}.example.org/{bucket}/{i}",
                        date_download="2019-02-16T04:15:08Z",
                        digest=f"sha1:{language}{bucket}{i}",
                        title=f"Page {i}",
                        raw_content="\n".join(lines),
                        cc_segment="CC-SAMPLE-00000",
                    )
                    scores = {"language_score": 0.95, "perplexity": 100.0 * (rank + 1), "bucket": bucket}
                    docs.append({**doc, "language": language, **scores})
                shards[f"{language}/{bucket}/part-00000.parquet"] = docs
        write_corpus(out, shards)

    def _lm(self, out: Path) -> None:
        """An English SentencePiece + KenLM pair from the embedded sample's reference text."""
        from ccnet_pipeline.samples.embedded import generate_reference_text
        from filters.train_lm import TrainLmConfig, train_language_model

        text = self.root / "reference-text"
        generate_reference_text(str(text), lines=1500, seed=5)
        train_language_model(TrainLmConfig("en", (str(text / "en.txt"),), str(out)))

    def _tokenizer(self, out: Path) -> None:
        from tokenizer.__main__ import main

        assert main(["train", "--corpus", str(self.get("corpus")), "--out", str(out), "--vocab-size", "1000"]) == 0

    def _data(self, out: Path) -> None:
        from tokenizer.__main__ import main

        corpus, tok = str(self.get("corpus")), str(self.get("tokenizer"))
        assert (
            main(["pack", "--corpus", corpus, "--tokenizer", tok, "--out", str(out), "--tokens-per-sample", "64"]) == 0
        )

    def _run(self, out: Path) -> None:
        from pretrain.cli import main

        data = str(self.get("data"))
        steps = ["--max-steps", "4", "--total-steps", "4", "--warmup-steps", "1", "--batch-size", "4"]
        intervals = ["--eval-blocks", "2", "--log-interval", "2", "--eval-interval", "4", "--save-interval", "4"]
        assert main(["train", "--config", "tiny", "--data", data, "--out", str(out), *steps, *intervals]) == 0


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory) -> Fixtures:
    return Fixtures(tmp_path_factory.mktemp("docs-fixtures"))


_RUNS: Dict[Path, PageRun] = {}


@pytest.fixture
def page_run(request, tmp_path_factory) -> PageRun:
    page = request.node.callspec.params["block"].page
    if page not in _RUNS:
        root = tmp_path_factory.mktemp(page.stem.lower())
        work = root / "work"  # ../shared from here is the shared data, as beside a checkout
        work.mkdir()
        (work / ".venv").symlink_to(sys.prefix)  # the environment running the tests: make test's .venv
        if SHARED.is_dir():
            (root / "shared").symlink_to(SHARED)
        _RUNS[page] = PageRun(page, work)
    return _RUNS[page]


def _producer(block: Block) -> Optional[Block]:
    """The run block before ``block`` on its page: what an output block shows."""
    earlier = [b for b in ALL_BLOCKS if b.page == block.page and b.index < block.index and b.kind == "run"]
    return earlier[-1] if earlier else None


def _param(block: Block):
    source = _producer(block) if block.kind == "output" else block
    slow = source is not None and source.options.get("slow", False)
    return pytest.param(block, id=block.where, marks=[pytest.mark.slow] if slow else [])


CHECKED = [_param(block) for block in ALL_BLOCKS if block.kind != "skip"]


@pytest.mark.parametrize("block", CHECKED)
def test_block(block: Block, page_run: PageRun, fixtures: Fixtures, monkeypatch):
    assert not block.problem, f"{block.where}: {block.problem}"
    if block.kind == "check":
        check_shell(block)
    elif block.kind == "tree":
        check_tree(block)
    elif block.kind == "output":
        producer = _producer(block)
        assert producer is not None, f"{block.where}: an output block follows no run block"
        run_block(producer, page_run, fixtures, monkeypatch)
        check_output(block, page_run.stdout[producer.index])
    else:
        run_block(block, page_run, fixtures, monkeypatch)


def run_block(block: Block, state: PageRun, fixtures: Fixtures, monkeypatch) -> None:
    """Run ``block`` in its page's folder, once, after the page's earlier run blocks: it may use
    what they made, except what slow ones made (unless it is slow too): ``-m "not slow"`` runs
    no whole job. An earlier block skipped for lack of ../shared does not stop it."""
    for earlier in ALL_BLOCKS:
        if earlier.page != block.page or earlier.index >= block.index or earlier.kind != "run":
            continue
        if earlier.index in state.stdout or earlier.index in state.skipped:
            continue
        if earlier.options["slow"] and not block.options["slow"]:
            continue
        if earlier.index in state.failed:
            pytest.fail(f"{block.where} runs after {earlier.where}, which failed: {state.failed[earlier.index]}")
        with contextlib.suppress(pytest.skip.Exception):
            run_block(earlier, state, fixtures, monkeypatch)
    if block.index in state.stdout:
        return
    if "shared" in block.options["needs"] and not SHARED.joinpath("data").is_dir():
        state.skipped.add(block.index)
        pytest.skip("../shared/data is absent")
    for name in block.options["needs"]:
        if name != "shared" and not (state.work / "out" / name).exists():
            shutil.copytree(fixtures.get(name), state.work / "out" / name)
    monkeypatch.chdir(state.work)
    try:
        if block.lang in PYTHON:
            state.stdout[block.index] = run_python(block, state.namespace)
        elif block.lang == "sql":
            state.stdout[block.index] = run_sql(block)
        else:
            state.stdout[block.index] = run_shell(block, state.work)
    except Exception as error:
        state.failed[block.index] = f"{type(error).__name__}: {str(error)[:200]}"
        raise


# ---------------------------------------------------------------------------------------------
# Python blocks


def expectations(block: Block) -> Dict[int, str]:
    """Page line -> EXPECTED of each ``# -> EXPECTED`` comment."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(block.code).readline):
        if token.type == tokenize.COMMENT and token.string.startswith("# ->"):
            found[block.line + token.start[0] - 1] = token.string[len("# ->") :].strip()
    return found


def run_python(block: Block, namespace: Dict[str, Any]) -> str:
    """Run the block statement by statement (its tracebacks name the page's lines); check each
    ``# ->``; return what it printed."""
    filename = str(block.page)
    tree = ast.parse(block.code, filename)
    ast.increment_lineno(tree, block.line - 1)
    expected = expectations(block)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for statement in tree.body:
            wanted = [
                expected.pop(line) for line in range(statement.lineno, statement.end_lineno + 1) if line in expected
            ]
            if not wanted:
                exec(compile(ast.Module([statement], type_ignores=[]), filename, "exec"), namespace)
                continue
            assert isinstance(statement, ast.Expr), (
                f"{block.page.name}:{statement.lineno}: '# ->' after a statement, not an expression"
            )
            value = eval(compile(ast.Expression(statement.value), filename, "eval"), namespace)
            check_value(value, wanted[0], f"{block.page.name}:{statement.lineno}")
    assert not expected, f"'# ->' inside a compound statement, never checked: lines {sorted(expected)}"
    return printed.getvalue()


def plain(value: Any) -> Any:
    """Python values of numpy arrays and scalars, torch tensors, named tuples."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def matches(actual: Any, expected: Any) -> bool:
    """``actual`` is what the literal ``expected`` shows: floats to the decimals written,
    ``...`` for any value, or any run of items in a list."""
    if expected is Ellipsis:
        return True
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        exponent = decimal.Decimal(repr(expected)).as_tuple().exponent
        return abs(actual - expected) <= 0.5 * 10.0**exponent + 1e-12
    if isinstance(expected, (list, tuple)):
        return isinstance(actual, (list, tuple)) and _match_items(list(actual), list(expected))
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and set(actual) == set(expected)
            and all(matches(actual[key], expected[key]) for key in expected)
        )
    if isinstance(expected, str):
        return isinstance(actual, str) and actual == expected  # str enums (BadKind) too
    if isinstance(expected, bool) or expected is None:
        return actual is expected
    if isinstance(expected, int):
        return not isinstance(actual, bool) and actual == expected
    return actual == expected


def _match_items(actual: List, expected: List) -> bool:
    if not expected:
        return not actual
    if expected[0] is Ellipsis:
        return any(_match_items(actual[start:], expected[1:]) for start in range(len(actual) + 1))
    return bool(actual) and matches(actual[0], expected[0]) and _match_items(actual[1:], expected[1:])


def check_value(value: Any, text: str, where: str) -> None:
    try:
        expected = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        assert doctest.OutputChecker().check_output(text, repr(value), doctest.ELLIPSIS), (
            f"{where}: got {value!r}, the page says {text}"
        )
        return
    assert matches(plain(value), expected), f"{where}: got {value!r}, the page says {text}"


@pytest.mark.parametrize(
    "value, text, equal",
    [
        ({"en": 0.5680390670499288, "fr": 0.2846939286069704}, "{'en': 0.57, 'fr': 0.28}", True),
        ({"en": 0.5680390670499288, "fr": 0.2846939286069704}, "{'en': 0.56, 'fr': 0.28}", False),
        ({"en": 0.57}, "{'en': 0.57, 'fr': 0.28}", False),
        ([0, 35378, 8999, 2], "[0, ..., 2]", True),
        ([0, 35378, 8999, 3], "[0, ..., 2]", False),
        ([("de", 0.9185)], "[('de', 0.92)]", True),
        ({"language": "fr", "url": "https://x"}, "{'language': 'fr', 'url': ...}", True),
        (None, "None", True),
        (0, "None", False),
        (True, "1", False),
        ("torch.Size([1, 12, 128])", "'torch.Size([1, ..., 128])'", False),
        (range(3), "range(0, ...)", True),
        (range(3), "range(1, ...)", False),
    ],
)
def test_expected_values_are_compared_as_written(value, text, equal):
    if equal:
        check_value(value, text, "here")
    else:
        with pytest.raises(AssertionError):
            check_value(value, text, "here")


# ---------------------------------------------------------------------------------------------
# Shell and SQL blocks that run


def run_shell(block: Block, work: Path) -> str:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)  # this checkout's packages
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": path}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{block.where} failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return done.stdout


def run_sql(block: Block) -> str:
    import duckdb

    connection = duckdb.connect()
    printed = []
    for statement in (s for s in block.code.split(";") if s.strip()):
        rows = connection.sql(statement).fetchall()
        assert rows, f"{block.where}: the query returned no rows: {statement.strip()}"
        printed.extend(str(row) for row in rows)
    return "\n".join(printed) + "\n"


def check_output(block: Block, got: str) -> None:
    checker, flags = doctest.OutputChecker(), doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    if not checker.check_output(block.code, got, flags):
        difference = checker.output_difference(doctest.Example("", block.code), got, flags)
        pytest.fail(f"{block.where}: the page shows other output than the command prints.\n{difference}")


# ---------------------------------------------------------------------------------------------
# Shell blocks that are checked


def commands(block: Block) -> Iterator[Tuple[int, List[str]]]:
    """(page line, argv) of each simple command: continuation lines joined, comments dropped,
    split at ; && || | &."""
    logical, start = "", None
    for offset, line in enumerate(block.code.splitlines()):
        start = block.line + offset if start is None else start
        if line.rstrip().endswith("\\"):
            logical += line.rstrip()[:-1] + " "
            continue
        logical += line
        lexer = shlex.shlex(logical, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split, lexer.commenters = True, "#"
        argv: List[str] = []
        for token in [*lexer, ";"]:
            if token in (";", "&&", "||", "|", "&"):
                if argv:
                    yield start, argv
                argv = []
            else:
                argv.append(token)
        logical, start = "", None


def check_shell(block: Block) -> None:
    problems = []
    for line, argv in commands(block):
        while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
            argv = argv[1:]  # VAR=value before a command
        try:
            check_command(argv)
            missing = missing_paths([*argv, *(arg.split("=", 1)[1] for arg in argv if "=" in arg)])
            assert not missing, f"no such file in the repository: {', '.join(missing)}"
        except AssertionError as error:
            problems.append(f"{block.page.name}:{line}: {shlex.join(argv)}\n    {error}")
    assert not problems, "\n".join(problems)


def check_command(argv: List[str]) -> None:
    program = argv[0]
    if program == "make":
        check_make(argv[1:])
    elif program in ("python", "python3", ".venv/bin/python"):
        check_python(argv[1:])
    elif program in ("torchrun", ".venv/bin/torchrun"):
        assert Path(sys.prefix, "bin", "torchrun").exists(), "no torchrun in this environment"
        assert "-m" in argv, "torchrun without -m MODULE"
        check_python(argv[argv.index("-m") :])
    elif program == "docker":
        assert argv[1:2] in (["build"], ["run"]), "only docker build and docker run are checked"
        if "-f" in argv:
            assert (ROOT / argv[argv.index("-f") + 1]).is_file(), f"no {argv[argv.index('-f') + 1]}"
    elif program == "git":
        assert argv[1:2] == ["clone"], "only git clone (the network: not run here)"
    else:
        raise AssertionError(f"the test does not know how to check {program!r}: run the block, or teach check_command")


@cache
def makefile_variables() -> frozenset:
    text = (ROOT / "Makefile").read_text()
    return frozenset(re.findall(r"(?m)^([A-Z_][A-Z0-9_]*)\s*[:?+]?=", text)) | frozenset(
        re.findall(r"\$\(([A-Z_][A-Z0-9_]*)\)", text)
    )


def check_make(args: List[str]) -> None:
    unknown = [a.split("=")[0] for a in args if "=" in a and a.split("=")[0] not in makefile_variables()]
    assert not unknown, f"the Makefile uses no variable {', '.join(unknown)}"
    done = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"make -n {' '.join(args)} failed: {done.stderr.strip()[-500:]}"


# python -m MODULE: the module whose main() builds the parser and hands it to run_cli
CLIS = {
    "ccnet_pipeline": "ccnet_pipeline.cli",
    "lid": "lid.__main__",
    "filters.train_lm": "filters.train_lm",
    "sampling": "sampling.cli",
    "tokenizer": "tokenizer.__main__",
    "pretrain": "pretrain.cli",
    "engines": "engines.__main__",
}
BEAM_JOBS = {("ccnet_pipeline", "mine"), ("ccnet_pipeline", "import-ccnet")}  # unknown flags go to Beam


@cache
def project_parser(module: str) -> Tuple[argparse.ArgumentParser, bool]:
    """The real parser of ``python -m module``: its main() run with run_cli replaced."""
    cli = importlib.import_module(CLIS[module])
    built = {}

    def capture(main, parser, argv=None, known_only=False):
        built.update(parser=parser, known_only=known_only)
        return 0

    with mock.patch.object(cli, "run_cli", capture):
        cli.main([])
    return built["parser"], built["known_only"]


@cache
def beam_parser() -> argparse.ArgumentParser:
    """Every flag Beam's PipelineOptions know, as Beam builds its parser."""
    from apache_beam.options import pipeline_options

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    parser = pipeline_options._BeamArgumentParser(allow_abbrev=False)
    for cls in {str(c): c for c in subclasses(pipeline_options.PipelineOptions)}.values():
        cls._add_argparse_args(parser)
    return parser


def parse(parser: argparse.ArgumentParser, args: List[str], known: bool):
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            return parser.parse_known_args(args) if known else (parser.parse_args(args), [])
    except SystemExit as exit:
        if exit.code:
            raise AssertionError(errors.getvalue().strip().splitlines()[-1]) from None
        return None, []  # --help


def check_python(argv: List[str]) -> None:
    if argv[0] != "-m":
        script = ROOT / argv[0].removeprefix("$PWD/")
        assert script.is_file(), f"no script {argv[0]}"
        check_help([sys.executable, str(script)], argv[1:])
        return
    module, args = argv[1], argv[2:]
    if module not in CLIS:
        check_help([sys.executable, "-m", module], args)
        return
    parser, known_only = project_parser(module)
    _, rest = parse(parser, args, known_only)
    if rest and (module, args[0]) in BEAM_JOBS:
        _, rest = parse(beam_parser(), rest, known=True)
    assert not rest, f"unrecognized arguments: {' '.join(rest)}"


@cache
def help_text(command: Tuple[str, ...]) -> str:
    done = subprocess.run([*command, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(command)} --help failed: {done.stderr[-500:]}"
    return done.stdout


def check_help(command: List[str], args: List[str]) -> None:
    text = help_text(tuple(command))
    unknown = [a.split("=")[0] for a in args if a.startswith("--") and a.split("=")[0] not in text]
    assert not unknown, f"{' '.join(command[1:])} --help names no {', '.join(unknown)}"


def test_a_checked_command_with_a_wrong_flag_fails():
    good = ".venv/bin/python -m ccnet_pipeline mine --input 'x/*.gz' --output out/c --langs 100 --direct_num_workers=2"
    for line in (good, "make corpus LANGS=en,fr", ".venv/bin/python -m pretrain train --data d --out r --max-steps 3"):
        check_command(shlex.split(line))
    for line in (
        good.replace("--langs", "--lang"),
        good + " --direct_num_worker=2",
        "make corpus LANG=en",
        "make corpusses",
        ".venv/bin/python -m pretrain train --data d --out r --max-steps N",
        ".venv/bin/python -m lid calibrate --out t.csv --target-precison 0.9",
    ):
        with pytest.raises(AssertionError):
            check_command(shlex.split(line))


def subcommand_flags(module: str, command: str) -> List[str]:
    """The ``--flags`` of ``python -m module command``, from its real parser."""
    parser, _ = project_parser(module)
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    actions = commands.choices[command]._actions
    return [name for action in actions for name in action.option_strings if name.startswith("--") and name != "--help"]


def test_every_option_of_the_mine_job_is_documented():
    page = (ROOT / "docs" / "corpus-job.md").read_text(encoding="utf-8")
    missing = [flag for flag in subcommand_flags("ccnet_pipeline", "mine") if not re.search(rf"`{flag}\b", page)]
    assert not missing, f"docs/corpus-job.md does not name these options of mine: {', '.join(missing)}"


def check_tree(block: Block) -> None:
    problems = []
    folder = None
    for line in block.code.splitlines():
        words = line.split()
        if not words:
            continue
        if not line[0].isspace():
            folder = words[0]
            if not (ROOT / folder).exists():
                problems.append(f"no {folder}")
                continue
            words = words[1:]
        for name in re.findall(r"\b([\w]+\.py|Dockerfile)\b", " ".join(words)):
            if folder and not list((ROOT / folder).rglob(name)):
                problems.append(f"no {name} in {folder}")
    assert not problems, f"{block.where}: " + "; ".join(problems)
