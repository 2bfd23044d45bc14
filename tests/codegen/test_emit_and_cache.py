"""Emitting readable source, and writing/loading it safely from the private cache."""

import os
import stat
import sys

import gast
import numpy as np
import pytest

from numbax.codegen import cache
from numbax.codegen.emit import emit_function
from numbax.codegen.fingerprint import fingerprint
from numbax.codegen.load import load_module, module_name
from numbax.transform.source import read_function


def branches(x, n):
    y = x + 1
    if n > 2:
        y = y * 2
    elif n > 1:
        y = y * 3
    else:
        y = y - 1
    for i in range(n):
        y = y + i
    return y


def test_emitted_source_has_line_comments_and_runs():
    src = read_function(branches)
    emitted = emit_function(src.tree, describe_line=src.line, header="test of branches")
    text = emitted.text
    assert text.startswith("# test of branches\ndef branches(x, n):\n")
    first = src.firstlineno
    assert f"    # line {first + 1}: y = x + 1\n    y = x + 1\n" in text
    assert "    elif n > 1:\n" in text
    assert f"# line {first + 8}: for i in range(n):" in text
    namespace = {}
    exec(compile(text, "<emitted>", "exec"), namespace)
    for n in range(4):
        assert namespace["branches"](1.0, n) == branches(1.0, n)


def test_line_map_points_generated_lines_at_user_lines():
    src = read_function(branches)
    emitted = emit_function(src.tree, describe_line=src.line)
    lines = emitted.text.splitlines()
    for number, line in enumerate(lines, start=1):
        if line.strip() == "y = y * 3":
            assert emitted.user_line(number) == src.firstlineno + 5


def test_cache_root_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBAX_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_root() == tmp_path / "mine"
    monkeypatch.delenv("NUMBAX_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "numbax"


def test_generated_dir_is_private(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBAX_CACHE_DIR", str(tmp_path / "c"))
    directory = cache.generated_dir()
    mode = stat.S_IMODE(directory.stat().st_mode)
    assert mode & (stat.S_IWGRP | stat.S_IWOTH) == 0


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "mod.py"
    cache.write_atomic(target, b"x = 1\n")

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        cache.write_atomic(target, b"x = 2\n")
    assert target.read_text() == "x = 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["mod.py"]


def test_unchanged_file_keeps_its_modification_time(tmp_path):
    target = tmp_path / "mod.py"
    cache.store_source(target, "x = 1\n")
    before = target.stat().st_mtime_ns
    cache.store_source(target, "x = 1\n")
    assert target.stat().st_mtime_ns == before


def test_cache_key_changes_with_any_part():
    assert cache.cache_key("a", 1) == cache.cache_key("a", 1)
    assert cache.cache_key("a", 1) != cache.cache_key("a", 2)


def test_loaded_module_is_importable_by_name_with_bound_globals():
    import inspect

    name = module_name("f", cache.cache_key("test_loaded_module"))
    module = load_module(name, "def f(x):\n    return x + offset\n", {"offset": 10})
    assert sys.modules[name] is module
    assert module.f(1) == 11
    assert inspect.getsource(module.f) == "def f(x):\n    return x + offset\n"
    assert isinstance(gast.parse(inspect.getsource(module.f)), gast.Module)


def test_arrays_in_a_bound_tuple_are_keyed_by_content():
    # a large array's repr elides its middle: two tuples of them must still differ
    a, b = np.zeros(5000), np.zeros(5000)
    b[2500] = 1.0
    assert repr((a,)) == repr((b,))
    assert fingerprint({"ws": (a, 1.0)}) != fingerprint({"ws": (b, 1.0)})
    assert fingerprint({"ws": [a]}) == fingerprint({"ws": [a.copy()]})
