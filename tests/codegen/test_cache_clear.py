"""``cache clear`` and ``cache info`` touch only numbax's own directories; a process goes on
computing right results while its cache is cleared, replaced by a file, blocked by a
directory where a module belongs, or cannot be written (a full disk), with one warning.
"""

import errno
import os
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import numbax as nx
from numbax.__main__ import main
from numbax.codegen import cache, trust
from numbax.codegen.cache_admin import cache_info, clear_cache
from numbax.codegen.load import load_module
from numbax.codegen.ownership import MARKER, mark
from numbax.codegen.trust import CacheWarning
from tests.helpers.caches import fresh_module

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def warnings_not_given_yet(monkeypatch):
    """Each test is a new event: what earlier tests were warned of once is forgotten."""
    monkeypatch.setattr(trust, "_warned", set())


def cache_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def tree(root: Path) -> dict[str, bytes | str]:
    """Every path under ``root``, with a file's content (a link's target)."""
    found = {}
    for path in root.rglob("*"):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[key] = path.read_bytes()
        else:
            found[key] = "dir"
    return found


def cubic(x):
    return np.sum(x * x * x)


def test_clear_removes_only_numbax_directories(cache_dir, tmp_path, capsys):
    x = np.array([1.0, 2.0])
    assert np.allclose(nx.jit(nx.grad(cubic))(x), 3 * x**2)  # a real cache
    versioned = cache_dir / cache.version_dirname()
    for folder in ("python-projects/src", "pypoetry/cache", "py311-other", "pip/http", "py39"):
        (cache_dir / folder).mkdir(parents=True)
        (cache_dir / folder / "data.txt").write_text(folder)
    (cache_dir / "py.txt").write_text("a plain file")
    (cache_dir / "pyproject.toml").write_text("[project]\n")
    marked_but_used = cache_dir / "py38"  # marked, and holding a file numbax never writes
    marked_but_used.mkdir()
    mark(marked_but_used)
    (marked_but_used / "results.csv").write_text("1,2\n")
    elsewhere = tmp_path / "elsewhere"  # numbax's layout, reached through a link
    elsewhere.mkdir()
    mark(elsewhere)
    (elsewhere / "numbax_generated_f_0.py").write_text("")
    (cache_dir / "py37").symlink_to(elsewhere)
    aside = cache_dir / ".untrusted-py311-0123abcd"  # moved aside by numbax
    aside.mkdir()
    mark(aside)
    (aside / "numbax_generated_g_1.py").write_text("x = 1\n")
    ours = (versioned.name, aside.name)
    others = {k: v for k, v in tree(cache_dir).items() if k.split("/")[0] not in ours}
    outside = tree(elsewhere)

    info = cache_info()
    assert info.directories == [aside, versioned]
    assert info.entries == 1 + sum(1 for p in versioned.glob("numbax_generated_*.py"))
    assert info.files == sum(1 for p in versioned.rglob("*") if p.is_file()) + 2
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert f"removed 2 directories from {cache_dir}: {info.entries} generated modules" in out
    assert f"{info.files} files" in out and str(versioned) in out and str(aside) in out
    assert "py38: it holds 'results.csv', which numbax does not write" in out
    assert not versioned.exists() and not aside.exists()
    assert tree(cache_dir) == others  # nothing else was touched
    assert tree(elsewhere) == outside
    assert np.allclose(nx.jit(nx.grad(cubic))(x), 3 * x**2)
    assert np.allclose(nx.grad(lambda x: np.sum(x * x))(x), 2 * x)  # the cache is made again
    assert cache_info().directories == [versioned]


def test_a_cache_made_before_markers_is_marked_at_its_next_use(cache_dir):
    versioned = cache_dir / cache.version_dirname()
    versioned.mkdir(parents=True, mode=0o700)
    (versioned / "numbax_generated_f_0.py").write_text("")
    assert cache_info().directories == []  # not known to be numbax's yet
    assert cache.generated_dir() == versioned
    assert (versioned / MARKER).is_file()
    assert clear_cache().directories == [versioned]
    assert not versioned.exists()


WORKER = """
import sys, warnings
import numpy as np
import numbax as nx
from numbax.codegen.trust import CacheWarning

def make(k):
    def f(x):
        return np.sum(np.sin(x) * x * k)
    return f

warnings.simplefilter("always")
x = np.linspace(0.1, 1.0, 4)
first = make(1.0)
same = (nx.jit(nx.grad(first)), nx.grad(first), nx.vmap(first))
with warnings.catch_warnings(record=True) as caught:
    for i in range(int(sys.argv[1])):
        k = float(i % 3 + 1)
        f = make(k)  # a new function object each time
        want = np.cos(x) * x + np.sin(x)
        assert np.allclose(nx.jit(nx.grad(f))(x), k * want)
        assert np.allclose(nx.grad(f)(x), k * want)
        assert np.allclose(nx.vmap(f)(x[:, None]), k * np.sin(x) * x)
        assert np.allclose(same[0](x), want)
        assert np.allclose(same[1](x), want)
        assert np.allclose(same[2](x[:, None]), np.sin(x) * x)
        assert np.allclose(same[0](x.astype(np.float32)), want, atol=1e-6)  # compiles
said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
print(*said, sep=chr(10))
print("warnings:", len(said))
"""


@pytest.mark.skipif(
    sys.platform == "win32", reason="Windows cannot rename a directory another process has open"
)
def test_clear_while_another_process_computes(cache_dir, tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "NUMBAX_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(REPO)}
    env["NUMBAX_COMPILE_LOG"] = "0"
    worker = subprocess.Popen(
        [sys.executable, str(script), "3"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    clears = 0
    while worker.poll() is None:  # between its calls and during its compiles
        clear_cache()
        clears += 1
        time.sleep(0.02)
    out = worker.stdout.read()
    assert worker.returncode == 0, out
    assert clears > 10
    warned = int(out.rsplit("warnings:", 1)[1])
    assert warned <= 1, out  # a write that lost the race: said once


def test_a_directory_where_a_module_belongs_is_replaced(cache_dir):
    name, text = fresh_module("a directory in its place")
    path = cache.generated_dir() / f"{name}.py"
    path.mkdir()
    (path / "inside").write_text("")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert load_module(name, text, {}).f(1) == 2
    assert len(cache_warnings(caught)) == 1
    assert "not a regular file" in cache_warnings(caught)[0]
    assert path.read_text() == text


def test_damaged_files_of_one_directory_are_one_warning(cache_dir):
    modules = [fresh_module(f"damaged {i}") for i in range(4)]
    for name, text in modules:
        load_module(name, text, {})
        (cache.generated_dir() / f"{name}.py").write_bytes(b"\xff garbage")
        sys.modules.pop(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, text in modules:
            assert load_module(name, text, {}).f(1) == 2
    assert len(cache_warnings(caught)) == 1
    for name, text in modules:
        assert (cache.generated_dir() / f"{name}.py").read_text() == text


def quartic(x):
    return np.sum(x * x * x * x)


def test_a_cache_root_turned_into_a_file_mid_run(cache_dir):
    x = np.array([1.0, 2.0])
    assert np.allclose(nx.grad(cubic)(x), 3 * x**2)
    assert cache.generated_dir().is_dir()  # the cache is in use
    shutil.rmtree(cache_dir)
    cache_dir.write_text("now a file")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert np.allclose(nx.grad(quartic)(x), 4 * x**3)
        assert np.allclose(nx.vmap(quartic)(x[:, None]), x**4)
        assert np.allclose(nx.jit(nx.grad(quartic))(x), 4 * x**3)
    (message,) = cache_warnings(caught)
    assert "for this process only" in message
    assert cache_dir.read_text() == "now a file"


def quintic(x):
    return np.sum(x * x * x * x * x)


def test_a_full_disk_runs_without_caching_with_one_warning(cache_dir, monkeypatch):
    replace = os.replace

    def disk_full(src, dst, *args, **kwargs):
        if str(dst).startswith(str(cache_dir)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", disk_full)
    x = np.array([1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert np.allclose(nx.grad(quintic)(x), 5 * x**4)
        assert np.allclose(nx.vmap(quintic)(x[:, None]), x**5)
        assert np.allclose(nx.jit(nx.grad(quintic))(x), 5 * x**4)
        assert np.allclose(nx.jit(nx.vmap(nx.grad(quintic)))(x[:, None]), 5 * x[:, None] ** 4)
    (message,) = cache_warnings(caught)
    assert "No space left on device" in message and "without caching" in message
    assert not list(cache_dir.rglob("numbax_generated_*.py"))  # nothing half-written
