"""Every Python example of the README and the documentation's pages runs, and says what
it really prints.

The examples are a program read in order (``quickstart.py``), the README's first, then
each page's in the order of :data:`PAGES`: the test writes them, one after the other,
into that file and runs it. A line of an example whose
comment starts with a value (``f(x)  # array([0.25, 0.19])``, ``g(2.0)  # 1.0 (...)``)
is checked against that value. A listing of generated code is checked against what
``nx.source`` gives for the last ``nx.show(...)`` its page names before it: each of
its statements is there, in the same order (line numbers, which depend on where the
example sits in its file, are not compared, and ``...`` stands for what a listing
leaves out).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    *(ROOT / "docs" / name for name in ["guide.md", "export.md", "cache.md"]),
    *(ROOT / "docs" / name for name in ["developer/architecture.md", "limitations.md"]),
    *(ROOT / "docs" / "developer" / name for name in ["layout.md", "testing.md"]),
]
"""The pages whose examples make the program, in its order."""

pytestmark = pytest.mark.jit


@dataclass(frozen=True)
class Block:
    """A fenced Python block: its page, its first line's number there and its text."""

    page: str
    line: int
    text: str
    before: str  # the page's text between the previous block and this one

    @property
    def where(self) -> str:
        return f"{self.page}, line {self.line}"

    @property
    def is_listing(self) -> bool:
        """Generated code (what ``nx.show`` prints), not an example to run."""
        first = self.text.lstrip().splitlines()[0]
        return "nxrt." in self.text or bool(re.match(r"# [\w ]+ of \w+ \(", first))


def _blocks() -> list[Block]:
    blocks = []
    for path in PAGES:
        page = path.relative_to(ROOT).as_posix()
        lines = path.read_text().splitlines()
        inside, start, prose_start = False, 0, 0
        for number, line in enumerate(lines, 1):
            if not inside and line.startswith("```python"):
                inside, start = True, number
            elif inside and line.startswith("```"):
                inside = False
                text = "\n".join(lines[start : number - 1])
                before = "\n".join(lines[prose_start : start - 1])
                blocks.append(Block(page, start + 1, text, before))
                prose_start = number
    return blocks


BLOCKS = _blocks()
EXAMPLES = [b for b in BLOCKS if not b.is_listing]
LISTINGS = [b for b in BLOCKS if b.is_listing]


def _value_in(comment: str) -> Any:
    """The value a comment starts with (``array([1., 2.])``, ``1.0``, ``(2.25, 1.0)``),
    or None where it starts with words."""
    names = {"array": np.array, "nan": np.nan, "inf": np.inf, "__builtins__": {}}
    for end in range(len(comment), 0, -1):
        head = comment[:end].strip()
        if not head or head.endswith(",") or head[0].isalpha() and not head.startswith("array"):
            continue
        try:
            ast.parse(head, mode="eval")
            return eval(head, names)  # noqa: S307 -- the pages' own literals
        except Exception:
            continue
    return None


def _checked(statement: ast.stmt, block: Block) -> str | None:
    """``_readme_check(expr, expected, where)`` for an expression statement whose
    trailing comment starts with a value (``where``: its page and line)."""
    if not isinstance(statement, ast.Expr) or statement.end_lineno != statement.lineno:
        return None
    line = block.text.splitlines()[statement.lineno - 1]
    code, _, comment = line.partition("  #")
    if not comment:
        return None
    expected = _value_in(comment)
    if expected is None:
        return None
    where = f"{block.page}, line {block.line + statement.lineno - 1}"
    return f"_readme_check({code.strip()}, {comment.strip()!r}, {where!r})"


def _program(examples: list[Block]) -> tuple[str, dict[int, int]]:
    """The examples as one file, and where each of its lines is (page and line)."""
    out, where = [], {}
    for block in examples:
        lines = block.text.splitlines()
        replaced = {}
        for statement in ast.parse(block.text).body:
            check = _checked(statement, block)
            if check is not None:
                replaced[statement.lineno - 1] = check
        for k, line in enumerate(lines):
            out.append(replaced.get(k, line))
            where[len(out)] = f"{block.page}, line {block.line + k}"
        out.append("")
    return "\n".join(out) + "\n", where


def _check(value: Any, comment: str, where: str) -> None:
    expected = _value_in(comment)
    try:
        np.testing.assert_allclose(
            np.asarray(value, dtype=float), np.asarray(expected, dtype=float), rtol=1e-6
        )
    except AssertionError as error:
        raise AssertionError(f"{where}: got {value!r}, says {comment}") from error


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The pages' examples run as one module, ``quickstart.py``."""
    folder = tmp_path_factory.mktemp("readme")
    text, where = _program(EXAMPLES)
    path = folder / "quickstart.py"
    path.write_text("from tests.test_readme_examples import _check as _readme_check\n" + text)
    spec = importlib.util.spec_from_file_location("quickstart", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["quickstart"] = module
    here = os.getcwd()
    os.chdir(folder)  # the examples write files (nx.export)
    try:
        spec.loader.exec_module(module)
    except AssertionError:
        raise
    except Exception as error:
        tb = error.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(path):
                line = where.get(tb.tb_lineno - 1)
            tb = tb.tb_next
        raise AssertionError(f"the example at {line} fails: {error!r}") from error
    finally:
        os.chdir(here)
        sys.modules.pop("quickstart", None)
    return module


def test_the_readme_has_examples_and_listings() -> None:
    assert len(EXAMPLES) >= 5 and len(LISTINGS) >= 5


def test_every_example_runs_and_prints_what_it_says(quickstart: Any) -> None:
    assert quickstart is not None


def _shown_expression(block: Block) -> str:
    """The last ``nx.show(...)`` a page names before a listing (in prose or code)."""
    text = re.sub(r"\s+", " ", block.before.replace("`", " "))
    starts = [m.end() for m in re.finditer(r"nx\.show\(", text)]
    if not starts:
        for earlier in reversed(BLOCKS[: BLOCKS.index(block)]):
            if "nx.show(" in earlier.text:
                text = re.sub(r"\s+", " ", earlier.text)
                starts = [m.end() for m in re.finditer(r"nx\.show\(", text)]
                break
    assert starts, f"{block.where}: no nx.show(...) names this listing"
    start, depth = starts[-1], 1
    for end in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            return text[start:end]
    raise AssertionError(f"{block.where}: unbalanced nx.show(")


def _statements(text: str) -> list[str]:
    """A listing's lines joined into statements, without line numbers or what the
    listing leaves out."""
    out, pending, depth = [], "", 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line == "..." or line.startswith("# generated by numbax"):
            continue
        if re.match(r"# [\w ]+ of \w+ \(", line):
            continue  # the header names the file the example was written in
        pending = f"{pending} {line}".strip() if pending else line
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        if depth <= 0:
            out.append(re.sub(r"line ?\d+", "line", re.sub(r"\s+", " ", pending)))
            pending, depth = "", 0
    return out


@pytest.mark.parametrize(
    "block", LISTINGS, ids=[f"{Path(b.page).stem}-line{b.line}" for b in LISTINGS]
)
def test_every_listing_is_what_numbax_generates(quickstart: Any, block: Block) -> None:
    import numbax as nx

    expression = _shown_expression(block)
    transformed = eval(expression, vars(quickstart))  # noqa: S307 -- the pages' text
    generated = _statements(nx.source(transformed))
    position = 0
    for statement in _statements(block.text):
        try:
            position = generated.index(statement, position) + 1
        except ValueError:
            raise AssertionError(
                f"{block.where} (nx.show({expression})): {statement!r} is not "
                "in the generated code, or not in this order:\n" + "\n".join(generated)
            ) from None
