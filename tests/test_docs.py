"""The documentation's API reference covers every public name (the site itself is built
by ``make docs``, which CI runs with warnings as errors)."""

from __future__ import annotations

import re
import types
from pathlib import Path

import numbax

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _documented(page: str) -> set[str]:
    """The last part of each object a page renders (``::: numbax.api.jit.jit``: jit)."""
    text = (DOCS / "api" / page).read_text()
    return {m.rsplit(".", 1)[-1] for m in re.findall(r"^::: ([\w.]+)", text, re.MULTILINE)}


def test_every_public_name_of_numbax_is_in_the_api_reference() -> None:
    documented = _documented("numbax.md")
    pages = {p.stem for p in (DOCS / "api").glob("*.md")}
    missing = []
    for name in numbax.__all__:
        if name.startswith("__"):
            continue
        if isinstance(getattr(numbax, name), types.ModuleType):
            if name not in pages:
                missing.append(f"numbax.{name} (a page docs/api/{name}.md)")
        elif name not in documented:
            missing.append(f"numbax.{name} (a '::: <module>.{name}' line in docs/api/numbax.md)")
    assert not missing, f"undocumented public names: {missing}"


def test_every_page_is_in_the_navigation() -> None:
    config = (DOCS.parent / "mkdocs.yml").read_text()
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert {p for p in pages if p not in config} == set()


# A path into numbax's package or tests, as the user-facing pages must not name them.
_PACKAGE_PATH = re.compile(
    r"`(?:numbax/)?(?:numba_backend|transform|codegen|api|runtime|tests)/[\w/.]*`"
    r"|`(?:numbax/)?[\w/]+\.py`"
)
# Files the reader writes or opens: the examples' own scripts, the fuzzer's findings, a
# folder of the cache.
_THE_READERS = {"`quickstart.py`", "`grad_loss.py`", "`step.py`", "`fit.py`"}
_THE_READERS |= {"`tests/fuzz/found/`", "`runtime/`"}


def test_user_pages_do_not_send_the_reader_into_the_package() -> None:
    """The README and the guide pages explain what numbax does, not where its code is
    (that is ``docs/developer/``'s job): a path there goes stale with every move."""
    pages = [DOCS.parent / "README.md", *DOCS.glob("*.md")]
    found = {
        page.name: hits
        for page in pages
        if (hits := set(_PACKAGE_PATH.findall(page.read_text())) - _THE_READERS)
    }
    assert not found, f"package paths on user-facing pages: {found}"
