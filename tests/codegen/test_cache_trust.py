"""The cache is a trust boundary: nothing numbax did not write is executed or loaded, damaged
entries are rebuilt, and an unusable cache directory falls back to a private one.

Each attack plants a payload that would create a marker file if it ever ran, and asserts the
marker never appears and the result is still right.
"""

import importlib.util
import marshal
import os
import pickle
import stat
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import numbax as nx
from numbax.codegen import cache, trust
from numbax.codegen.load import load_module
from numbax.codegen.trust import CacheWarning
from numbax.numba_backend import cpu
from tests.helpers.caches import fresh_module, misses

jit_module = importlib.import_module("numbax.api.jit")  # the module, not the function

OTHER_USER = 65534  # nobody


@pytest.fixture(autouse=True)
def warnings_not_given_yet(monkeypatch):
    """Each test is a new event: what earlier tests were warned of once is not
    remembered (a process warns once per directory and kind of failure)."""
    monkeypatch.setattr(trust, "_warned", set())


def give_away(path: Path) -> None:
    """Make ``path`` another user's, as an attacker's file would be (needs root)."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(path, OTHER_USER, OTHER_USER, follow_symlinks=False)


def marker_payload(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').close()\n"


class Payload:
    """A pickle that creates ``marker`` when it is loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (marker_payload(self.marker),))


def file_of(name: str) -> Path:
    return cache.generated_dir() / f"{name}.py"


def reload(name: str, text: str):
    """Load ``name`` as a new process would: not yet in ``sys.modules``."""
    sys.modules.pop(name, None)
    return load_module(name, text, {})


# -- generated modules ------------------------------------------------------------------


def test_a_planted_pyc_is_never_executed(cache_dir, tmp_path):
    name, text = fresh_module("planted pyc")
    assert load_module(name, text, {}).f(1) == 2
    path = file_of(name)
    marker = tmp_path / "pwned"
    # A .pyc with the source's mtime and size: CPython's import system would trust it.
    planted = compile(marker_payload(marker) + "def f(x):\n    return 666\n", str(path), "exec")
    info = path.stat()
    pyc = Path(importlib.util.cache_from_source(str(path)))
    pyc.parent.mkdir(exist_ok=True)
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += int(info.st_mtime).to_bytes(4, "little") + info.st_size.to_bytes(4, "little")
    pyc.write_bytes(header + marshal.dumps(planted))
    assert reload(name, text).f(1) == 2
    assert not marker.exists()


def test_a_module_file_with_other_text_is_rewritten_not_executed(cache_dir, tmp_path):
    name, text = fresh_module("other text")
    marker = tmp_path / "pwned"
    path = file_of(name)
    path.write_text(marker_payload(marker) + "def f(x):\n    return 666\n")
    with pytest.warns(CacheWarning, match="not what numbax generated"):
        assert load_module(name, text, {}).f(1) == 2
    assert not marker.exists()
    assert path.read_text() == text


def test_garbage_module_file_heals(cache_dir):
    name, text = fresh_module("garbage")
    load_module(name, text, {})
    path = file_of(name)
    path.write_bytes(os.urandom(200) + b"\xff\xfe")
    with pytest.warns(CacheWarning, match=str(path)):
        assert reload(name, text).f(1) == 2
    assert path.read_text() == text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert reload(name, text).f(1) == 2  # healed: no second warning


def test_a_module_file_of_another_user_is_replaced(cache_dir):
    name, text = fresh_module("foreign owner")
    load_module(name, text, {})
    path = file_of(name)
    give_away(path)
    with pytest.warns(CacheWarning, match="belongs to user id"):
        reload(name, text)
    assert path.stat().st_uid == os.getuid()


def test_a_symlinked_module_file_is_not_followed(cache_dir, tmp_path):
    name, text = fresh_module("symlink")
    outside = tmp_path / "outside.py"
    outside.write_text(text)
    path = file_of(name)
    path.symlink_to(outside)
    with pytest.warns(CacheWarning, match="symbolic link"):
        assert load_module(name, text, {}).f(1) == 2
    assert not path.is_symlink()


@pytest.mark.parametrize("spoil", ["group-writable", "foreign", "symlink"])
def test_an_untrusted_cache_directory_is_moved_aside_unread(cache_dir, tmp_path, spoil):
    name, text = fresh_module(f"untrusted dir {spoil}")
    versioned = cache_dir / cache.version_dirname()
    marker = tmp_path / "pwned"
    planted_dir = tmp_path / "elsewhere" if spoil == "symlink" else versioned
    planted_dir.mkdir(parents=True, exist_ok=True)
    (planted_dir / f"{name}.py").write_text(marker_payload(marker) + "def f(x):\n    return 0\n")
    if spoil == "group-writable":
        versioned.chmod(0o775)
    elif spoil == "foreign":
        give_away(versioned)
    else:
        cache_dir.mkdir(exist_ok=True)
        versioned.symlink_to(planted_dir)
    with pytest.warns(CacheWarning, match="moved to"):
        assert load_module(name, text, {}).f(1) == 2
    assert not marker.exists()
    assert stat.S_IMODE(versioned.lstat().st_mode) == 0o700 and not versioned.is_symlink()
    assert any(p.name.startswith(".untrusted-") for p in cache_dir.iterdir())


# -- unusable locations ---------------------------------------------------------------------


def fallback_case(tmp_path, where: str) -> Path:
    if where == "under a regular file":
        blocker = tmp_path / "file"
        blocker.write_text("")
        return blocker / "cache"
    if where == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes read-only directories")
        root = tmp_path / "ro"
        root.mkdir(mode=0o500)
        return root
    parent = tmp_path / "foreign-parent"  # a root-owned parent seen by another user
    parent.mkdir()
    give_away(parent)
    parent.chmod(0o755)
    root = parent / "cache"
    root.mkdir()
    give_away(root)
    return root


@pytest.mark.parametrize("where", ["under a regular file", "read-only", "foreign root"])
def test_an_unusable_cache_falls_back_to_a_private_temporary_one(tmp_path, monkeypatch, where):
    root = fallback_case(tmp_path, where)
    monkeypatch.setenv("NUMBAX_CACHE_DIR", str(root))
    with pytest.warns(CacheWarning, match="for this process only"):
        directory = cache.generated_dir()
    assert not directory.is_relative_to(root)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    name, text = fresh_module(f"fallback {where}")
    assert load_module(name, text, {}).f(1) == 2


def test_grad_works_from_a_cache_that_cannot_be_created(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBAX_CACHE_DIR", str(blocker / "cache"))

    def fallback_cube(x):
        return x * x * x

    with pytest.warns(CacheWarning):
        assert nx.grad(fallback_cube)(2.0) == pytest.approx(12.0)


# -- Numba's index and data files -------------------------------------------------------


def scaled(x, k):
    return x * k + 1.0


def compiled_scaled(k: int):
    """A jit specialization unique to ``k`` (its own module and Numba entry), called."""
    f = nx.jit(scaled, static_argnums=1)
    assert f(np.float64(2.0), k) == 2.0 * k + 1.0
    compiled = f.specialize({"k": k})
    return f, compiled.dispatcher


def numba_files(dispatcher) -> tuple[Path, Path]:
    """The index and the (one) data file of ``dispatcher``'s entry."""
    index = Path(dispatcher._cache._cache_file._index_path)
    (data,) = index.parent.glob(index.name[: -len(".nbi")] + ".*.nbc")
    return index, data


def reloaded(k: int):
    """What a new process gets for ``scaled(·, k)``: loaded from disk or compiled again
    (new ``jit`` objects of one function share what it compiled in this process, and
    specializations of one module share its dispatcher, which a new process has not:
    forgotten here)."""
    with jit_module._compilations_lock:
        jit_module._compilations.clear()
    with cpu._dispatchers_lock:
        cpu._dispatchers.clear()
    return compiled_scaled(k)[1]


@pytest.fixture(scope="module")
def warm_entries(tmp_path_factory):
    """Two compiled entries in one cache (shared: compiling is the slow part)."""
    root = tmp_path_factory.mktemp("numba-cache")
    previous = os.environ.get("NUMBAX_CACHE_DIR")
    os.environ["NUMBAX_CACHE_DIR"] = str(root)
    try:
        yield {k: compiled_scaled(k)[1] for k in (101, 102)}
    finally:
        os.environ["NUMBAX_CACHE_DIR"] = previous


def test_a_warm_entry_loads_without_compiling(warm_entries):
    assert misses(warm_entries[101]) == 1
    assert misses(reloaded(101)) == 0


@pytest.mark.parametrize("which", ["index", "data"])
def test_a_planted_pickle_is_never_loaded(warm_entries, tmp_path, which):
    marker = tmp_path / "pwned"
    index, data = numba_files(warm_entries[101])
    target = index if which == "index" else data
    target.write_bytes(pickle.dumps(Payload(marker)))
    with pytest.warns(CacheWarning, match=target.name):
        again = reloaded(101)
    assert not marker.exists()
    assert misses(again) == 1  # compiled again, and saved: the next load is warm
    assert misses(reloaded(101)) == 0


def test_another_functions_machine_code_is_not_loaded(warm_entries):
    _, data = numba_files(warm_entries[101])
    _, other = numba_files(warm_entries[102])
    data.write_bytes(other.read_bytes())
    with pytest.warns(CacheWarning, match="belongs to another entry"):
        again = reloaded(101)  # the call checks the result: 2 * 101 + 1
    assert misses(again) == 1


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_damaged_numba_files_heal(warm_entries, damage):
    for target in numba_files(warm_entries[102]):
        blob = target.read_bytes()
        spoiled = {"truncated": blob[: len(blob) // 2], "garbage": os.urandom(len(blob))}
        target.write_bytes(spoiled.get(damage, b""))
        trust._warned.clear()  # a second event
        with pytest.warns(CacheWarning, match=target.name):
            assert misses(reloaded(102)) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert misses(reloaded(102)) == 0


@pytest.mark.parametrize("spoil", ["foreign", "group-writable", "symlink"])
def test_untrusted_numba_files_are_not_read(warm_entries, tmp_path, spoil):
    index, _ = numba_files(warm_entries[101])
    if spoil == "foreign":
        give_away(index)
    elif spoil == "group-writable":
        index.chmod(0o666)
    else:
        copy = tmp_path / index.name
        copy.write_bytes(index.read_bytes())
        index.unlink()
        index.symlink_to(copy)
    with pytest.warns(CacheWarning, match=index.name):
        assert misses(reloaded(101)) == 1


def test_a_group_writable_numba_directory_is_replaced(warm_entries):
    index, _ = numba_files(warm_entries[102])
    index.parent.chmod(0o777)
    with pytest.warns(CacheWarning, match="moved to"):
        assert misses(reloaded(102)) == 1
    assert stat.S_IMODE(index.parent.stat().st_mode) == 0o700
