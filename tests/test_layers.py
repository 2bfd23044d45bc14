"""The package's shape: layers import one way, and imports sit at the top of modules.

The contracts themselves are in setup.cfg (``[importlinter]``); ``make lint`` runs them
too. An import inside a function is allowed only for an optional dependency or a load
that is deliberately lazy, each listed here with its reason.
"""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "numbax"

# module (relative to numbax/) -> modules it may import inside a function, and why.
DEFERRED_IMPORTS: dict[str, dict[str, str]] = {
    "api/show.py": {"IPython.display": "optional: only inside a Jupyter notebook"},
    "distributed/__init__.py": {
        "tqdm.auto": "optional; in Jupyter without ipywidgets, importing it warns: at a bar"
    },
    "numba_backend/cuda/target.py": {
        "numba": "numba.cuda: the optional `cuda` extra (or the simulator), at the first GPU use",
        "numba.cuda.extending": "numba-cuda's overloads, registered only when it is installed",
        "numba.cuda": "libdevice's functions, for numba-cuda's overloads (as above)",
    },
    "numba_backend/caching/startup.py": {
        "rocket_fft": "optional (the `fft` extra), imported with scipy.fft held back"
    },
    "transform/source.py": {
        "_pytest.assertion.rewrite": "optional: reading a test module pytest rewrote"
    },
}


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")  # the `test` extra
    result = subprocess.run(
        [str(lint_imports), "--config", str(PACKAGE.parent / "setup.cfg")],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def _deferred_imports(path: Path) -> set[str]:
    """Modules imported inside a function of ``path``'s module."""
    found = set()
    for fn in ast.walk(ast.parse(path.read_text())):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.add("." * node.level + (node.module or ""))
    return found


def test_imports_inside_functions_are_listed_with_a_reason() -> None:
    unlisted = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        allowed = DEFERRED_IMPORTS.get(module, {})
        extra = sorted(_deferred_imports(path) - set(allowed))
        if extra:
            unlisted[module] = extra
    assert not unlisted, (
        "imports inside functions (move them to the top, or list them in "
        f"DEFERRED_IMPORTS with why they must wait): {unlisted}"
    )


def test_import_numbax_loads_no_backend_and_every_public_name_resolves() -> None:
    """``import numbax`` is lazy (numbax/__init__.py): Numba, the transformations and the
    runtime load when a public name is first used, and every name in ``__all__`` does."""
    probe = (
        "import sys, numbax\n"
        "loaded = [m for m in ('numba', 'numbax.api', 'numbax.transform') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "missing = [n for n in numbax.__all__ if getattr(numbax, n, None) is None]\n"
        "assert not missing, missing\n"
        "from numbax import grad, random\n"
        "assert grad is numbax.grad and random is numbax.random\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


MOST_LINES = 850
"""About 800 lines: past that a module holds more than one job (``docs/developer/layout.md``)."""

MOST_MODULES = 20
"""A folder holding more modules than this wants sub-folders by purpose."""


def test_modules_and_folders_stay_small() -> None:
    long = {
        path.relative_to(PACKAGE).as_posix(): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MOST_LINES
    }
    crowded = {
        folder.relative_to(PACKAGE.parent).as_posix(): n
        for folder in [PACKAGE, *PACKAGE.rglob("*/")]
        if (n := len(list(folder.glob("*.py")))) > MOST_MODULES
    }
    assert not long, f"modules over {MOST_LINES} lines (split them by job): {long}"
    assert not crowded, f"folders over {MOST_MODULES} modules (split them by purpose): {crowded}"
