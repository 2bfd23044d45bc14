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
