"""numbax's runtime compiled at installation (``python -m numbax precompile``): a helper
the user's cache lacks is loaded from the installed runtime, read in place, and only
from one that is current and that no one else could have written."""

import os
import runpy
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from numbax.codegen import cache, installed_runtime
from numbax.numba_backend.caching import runtime_cache
from numbax.numba_backend.generated import define
from numbax.precompile import precompile
from tests.helpers.caches import hits

SCALE = "def impl(x):\n    return x * K + 1.0\n"


def written(source: str, scope: dict):
    return define(textwrap.dedent(source), scope, "installed runtime test")


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """An installed runtime holding ``SCALE`` (K = 3.0) for a float, and an empty user
    cache: what a new user of an installed numbax has."""
    monkeypatch.setenv("NUMBAX_CACHE_DIR", str(tmp_path / "compiled"))
    cache.forget_directories()
    assert runtime_cache.njit(written(SCALE, {"K": 3.0}))(2.0) == 7.0
    built = tmp_path / "compiled" / cache.version_dirname() / cache.RUNTIME_SUBDIR
    target = tmp_path / "site" / "runtime"
    assert installed_runtime.install(built, target) == 1
    monkeypatch.setenv(installed_runtime.INSTALLED_ENV, str(target))
    monkeypatch.setenv("NUMBAX_CACHE_DIR", str(tmp_path / "user"))
    cache.forget_directories()
    installed_runtime.usable_installed_runtime.cache_clear()
    yield target
    cache.forget_directories()
    installed_runtime.usable_installed_runtime.cache_clear()


def _user_entries(tmp_path: Path) -> list[str]:
    runtime = tmp_path / "user" / cache.version_dirname() / cache.RUNTIME_SUBDIR
    return sorted(p.name for p in runtime.glob("*.nbi")) if runtime.exists() else []


def test_a_helper_the_cache_lacks_is_loaded_from_the_installed_runtime(installed, tmp_path):
    loaded = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    assert loaded(2.0) == 7.0 and hits(loaded) == 1
    assert _user_entries(tmp_path) == []  # read in place, not copied
    other = runtime_cache.njit(written(SCALE, {"K": 5.0}))  # not installed: compiled
    assert other(2.0) == 11.0 and hits(other) == 0
    assert len(_user_entries(tmp_path)) == 1


def test_an_installed_runtime_of_another_numbax_is_not_used(installed):
    (installed / installed_runtime.STAMP_FILE).write_text("another numbax")
    installed_runtime.usable_installed_runtime.cache_clear()
    again = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    assert again(2.0) == 7.0 and hits(again) == 0


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_an_installed_runtime_others_may_write_is_not_used(installed):
    installed.chmod(0o775)
    installed_runtime.usable_installed_runtime.cache_clear()
    again = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    assert again(2.0) == 7.0 and hits(again) == 0


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_an_installed_file_others_may_write_is_not_read_nor_removed(installed):
    (index,) = installed.glob("*.nbi")
    index.chmod(0o666)
    again = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    assert again(2.0) == 7.0 and hits(again) == 0
    assert index.exists()  # not numbax's to heal


def test_a_damaged_installed_entry_is_compiled_instead_and_left_alone(installed):
    (data,) = installed.glob("*.nbc")
    data.write_bytes(data.read_bytes()[:-20])
    again = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    assert again(2.0) == 7.0 and hits(again) == 0
    assert data.exists()


def test_install_replaces_what_was_installed_readable_by_everyone(installed, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert installed_runtime.install(empty, installed) == 0
    assert sorted(p.name for p in installed.iterdir()) == [installed_runtime.STAMP_FILE]
    assert installed.stat().st_mode & 0o777 == 0o755
    assert (installed / installed_runtime.STAMP_FILE).stat().st_mode & 0o777 == 0o644
    assert not [p for p in installed.parent.iterdir() if p.name.startswith(".")]


PROGRAMS = """
import numpy as np
import numbax as nx

def shifted(x):
    return np.sum(x * 2.0 + 1.0)

nx.jit(nx.grad(shifted))(np.arange(3.0))
"""


@pytest.mark.jit
def test_precompile_installs_the_runtime_its_programs_compile(tmp_path, monkeypatch):
    (tmp_path / "tiny_programs.py").write_text(PROGRAMS)
    path = os.pathsep.join([str(tmp_path), *sys.path])
    monkeypatch.setenv("PYTHONPATH", path)
    target = tmp_path / "site" / "runtime"
    monkeypatch.setenv(installed_runtime.INSTALLED_ENV, str(target))
    installed_runtime.usable_installed_runtime.cache_clear()
    try:
        said = precompile(programs="tiny_programs")
        assert said.startswith("compiled ") and str(target) in said, said
        assert list(target.glob("*.nbi")) and list(target.glob("*.nbc"))
        assert precompile(programs="tiny_programs").endswith("is current")
    finally:
        installed_runtime.usable_installed_runtime.cache_clear()
    monkeypatch.setenv(installed_runtime.INSTALLED_ENV, "0")
    assert "turned off" in precompile(programs="tiny_programs")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_precompiled_programs_run(dtype):
    """What ``precompile`` runs, interpreted here (compiling it all takes a minute): a
    program that fails would leave the installed runtime without its helpers. Run
    under another name than numbax's, as ``python -m`` runs it: a user's code."""
    programs = runpy.run_module("numbax.precompile_programs", run_name="precompile_check")
    programs["_run"](dtype, jit=lambda function: function)
