"""numbax's runtime helpers are compiled once and loaded by later processes, from the
trusted cache, under a key that covers everything their machine code depends on.

A new dispatcher of the same function stands for a new process here (it has compiled
nothing); one test runs two real processes.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core import types
from numba.core.caching import NullCache
from numba.extending import overload

from numbax.codegen import cache
from numbax.codegen.trust import CacheWarning
from numbax.numba_backend.caching import (
    disk_cache,
    runtime_cache,
)
from numbax.numba_backend.generated import define
from numbax.numba_backend.loops import new_arrays
from numbax.numba_backend.loops.elementwise import _disk_cache
from numbax.numba_backend.runtime.elementwise import _xlogy_kernel
from tests.helpers.caches import hits, misses


def written(source: str, scope: dict | None = None, name: str = "impl"):
    """A function numbax writes at run time, as ``generated.define`` makes them."""
    return define(textwrap.dedent(source), scope or {}, "runtime cache test", name)


SCALE = "def impl(x):\n    return x * K + 1.0\n"


def test_a_helper_compiled_once_is_loaded_by_a_later_dispatcher(cache_dir):
    first = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    assert first(2.0) == 7.0 and misses(first) == 1
    again = runtime_cache.njit(written(SCALE, {"K": 3.0}))  # same text, same globals
    assert again(2.0) == 7.0
    assert (hits(again), misses(again)) == (1, 0)
    assert list((cache_dir / cache.version_dirname() / cache.RUNTIME_SUBDIR).glob("*.nbi"))


def test_an_entry_keeps_no_type_annotation(cache_dir):
    """Numba would write the function's source with every variable's type into the
    entry; a loaded function shows a line saying why there is none."""
    first = runtime_cache.njit(written(SCALE, {"K": 2.0}))
    assert first(1.0) == 3.0
    (compiled,) = first.overloads.values()
    assert compiled.type_annotation != disk_cache.ANNOTATION_NOT_KEPT  # kept in memory
    again = runtime_cache.njit(written(SCALE, {"K": 2.0}))
    assert again(1.0) == 3.0 and hits(again) == 1
    (loaded,) = again.overloads.values()
    assert loaded.type_annotation == disk_cache.ANNOTATION_NOT_KEPT


def test_the_same_text_reading_other_globals_is_another_entry(cache_dir):
    """Numba keys an entry by bytecode only: the globals must be in numbax's key, or
    the second helper would run the first one's machine code."""
    assert runtime_cache.njit(written(SCALE, {"K": 3.0}))(2.0) == 7.0
    other = runtime_cache.njit(written(SCALE, {"K": 5.0}))
    assert other(2.0) == 11.0
    assert hits(other) == 0


def test_the_same_code_closing_over_other_values_is_another_entry(cache_dir):
    make = written(
        """
        def make(k):
            def impl(x):
                return x * k
            return impl
        """,
        name="make",
    )
    assert runtime_cache.njit(make(2.0))(3.0) == 6.0
    three = runtime_cache.njit(make(3.0))
    assert three(3.0) == 9.0 and hits(three) == 0
    assert runtime_cache.njit(make(2.0))(3.0) == 6.0


def test_the_numba_options_are_part_of_the_entry(cache_dir):
    source = "def impl(x):\n    return x / 0.0\n"
    assert np.isinf(runtime_cache.njit(error_model="numpy")(written(source))(1.0))
    raising = runtime_cache.njit(error_model="python")(written(source))
    with pytest.raises(ZeroDivisionError):
        raising(1.0)


def test_options_a_helper_inherits_from_its_caller_are_part_of_its_key(cache_dir):
    """Numba compiles a helper with its caller's error model when the helper sets none:
    machine code that raises ZeroDivisionError must not serve a caller that wants inf."""
    source = "def impl(x):\n    return x * K\n"

    def caller(options: dict):
        helper = runtime_cache.njit(written(source, {"K": 2.0}))
        runner = numba.njit(**options)(lambda x: helper(x))
        assert runner(1.5) == 3.0
        return helper

    assert misses(caller({"error_model": "numpy"})) == 1
    assert hits(caller({})) == 0
    assert hits(caller({})) == 1


def test_callers_that_pass_a_helper_the_same_options_share_its_entry(cache_dir):
    """Keyed by the values a helper inherits, not by whether its caller set them: an
    overload's implementation calling a helper has ``forceinline=False`` set, a generated
    function has it unset, and Python calling it directly has no caller at all; the
    machine code is the same (it was compiled once for each)."""
    source = "def impl(x):\n    return x * K\n"
    direct = runtime_cache.njit(written(source, {"K": 2.0}))
    assert direct(1.5) == 3.0 and misses(direct) == 1

    def caller(options: dict):
        helper = runtime_cache.njit(written(source, {"K": 2.0}))
        runner = numba.njit(**options)(lambda x: helper(x))
        assert runner(1.5) == 3.0
        return helper

    through_a_function = caller({})
    assert (hits(through_a_function), misses(through_a_function)) == (1, 0)
    assert hits(caller({"forceinline": False})) == 1


def test_a_helper_calling_an_intrinsic_is_cached(cache_dir):
    """An intrinsic compiles to what its definition's code says: described by that
    definition, so a helper written at run time that calls one is cached (it was
    compiled in every process)."""
    source = "def impl(n):\n    return zeros((n, 2), np.float64)\n"
    scope = {"zeros": new_arrays.zeros, "np": np}
    first = runtime_cache.njit(written(source, scope))
    assert first(3).shape == (3, 2) and misses(first) == 1
    again = runtime_cache.njit(written(source, scope))
    assert again(3).shape == (3, 2)
    assert (hits(again), misses(again)) == (1, 0)


INF_MINUS_INF = "def impl(x):\n    return x - x\n"  # NaN for inf; 0.0 under fast-math


def test_a_helper_never_takes_its_first_callers_fastmath(cache_dir):
    """Numba keeps one compiled version per signature, made for whichever caller came
    first: a helper that took a ``fastmath`` caller's flags would serve every later caller
    with them (``runtime_cache.NEVER_INHERITED``)."""
    helper = runtime_cache.njit(written(INF_MINUS_INF))
    fast = numba.njit(fastmath=True)(lambda x: helper(x))
    plain = numba.njit(lambda x: helper(x))
    assert np.isnan(fast(np.inf))
    assert np.isnan(plain(np.inf))


def test_an_overload_never_takes_its_first_callers_fastmath(cache_dir):
    def inf_minus_inf(x):
        return x - x

    @overload(inf_minus_inf)
    def _inf_minus_inf(x):
        return written(INF_MINUS_INF)

    fast = numba.njit(fastmath=True)(lambda x: inf_minus_inf(x))
    plain = numba.njit(lambda x: inf_minus_inf(x))
    assert np.isnan(fast(np.inf))
    assert np.isnan(plain(np.inf))


def test_numbas_own_implementations_are_kept(cache_dir):
    """What Numba compiles for ``np.empty`` inside a helper is saved as well."""
    source = "def impl(n):\n    return np.empty(n).size\n"
    assert runtime_cache.njit(written(source, {"np": np}))(3) == 3
    runtime = cache_dir / cache.version_dirname() / cache.RUNTIME_SUBDIR
    assert any(p.name.startswith("ol_np_empty") for p in runtime.glob("*.nbi"))


def test_what_cannot_be_described_is_not_cached(cache_dir):
    def users_function(x):
        return x + 1.0

    assert isinstance(runtime_cache.njit(users_function)._cache, NullCache)
    reads_an_object = written("def impl(x):\n    return x + OBJ.y\n", {"OBJ": object()})
    assert isinstance(runtime_cache.njit(reads_an_object)._cache, NullCache)


def test_a_signature_a_new_process_cannot_rebuild_is_not_saved(cache_dir):
    record = numba.typeof(np.rec.array([(1.0,)], dtype=[("a", "f8")])[0])
    assert runtime_cache._portable(types.float64[:, ::1])
    assert runtime_cache._portable(types.Omitted(None))
    assert runtime_cache._portable(record)

    class MadeAtRunTime(types.Opaque):
        pass

    assert not runtime_cache._portable(MadeAtRunTime("made"))


def test_entries_of_another_numbax_source_are_stale(cache_dir, monkeypatch):
    assert runtime_cache.njit(written(SCALE, {"K": 3.0}))(2.0) == 7.0
    monkeypatch.setattr(runtime_cache, "_stamp", lambda: "another numbax")
    again = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    assert again(2.0) == 7.0 and hits(again) == 0


def test_a_planted_pickle_is_never_loaded(cache_dir, tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').close()",))

    first = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    first(2.0)
    index = Path(first._cache._cache_file._index_path)
    (data,) = index.parent.glob(index.name[: -len(".nbi")] + ".*.nbc")
    data.write_bytes(pickle.dumps(Payload()))
    again = runtime_cache.njit(written(SCALE, {"K": 3.0}))
    with pytest.warns(CacheWarning, match=data.name):
        assert again(2.0) == 7.0
    assert not marker.exists()
    assert misses(again) == 1


def test_descriptions_name_values_by_what_they_are():
    assert runtime_cache.describe((1, 2.0, "a")) == runtime_cache.describe((1, 2.0, "a"))
    assert runtime_cache.describe(np.arange(3)) != runtime_cache.describe(np.arange(1, 4))
    assert runtime_cache.describe(types.float64[:]) != runtime_cache.describe(types.float32[:])
    assert runtime_cache.describe(np.sin) == "builtin:numpy.sin"
    with pytest.raises(runtime_cache._Undescribed):
        runtime_cache.describe(lambda x: x)


PROGRAM = """
import json, sys
import numpy as np
from numba.core import event
import numbax as nx

compiled = []

class Count(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        module = getattr(ev.data["dispatcher"].py_func, "__module__", "") or ""
        if module.startswith("numbax.numba_backend"):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

def f(x):
    return np.sum(np.sin(x) * x, axis=0)

with event.install_listener("numba:compile", Count()):
    value = nx.jit(f)(np.linspace(0.0, 1.0, 12).reshape(3, 4))
print(json.dumps({"value": value.tolist(), "helpers": compiled}))
"""


@pytest.mark.jit
def test_a_new_process_compiles_only_the_program_not_numbaxs_helpers(tmp_path):
    """The second process finds no generated module (that part of the cache was cleared)
    and compiles the program again, but none of the helpers it calls."""
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    root = tmp_path / "cache"
    env = {**os.environ, "NUMBAX_CACHE_DIR": str(root)}

    def run() -> dict:
        done = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    first = run()
    versioned = root / cache.version_dirname()
    for entry in versioned.iterdir():
        if entry.name != cache.RUNTIME_SUBDIR:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    second = run()
    x = np.linspace(0.0, 1.0, 12).reshape(3, 4)
    assert np.allclose(first["value"], np.sum(np.sin(x) * x, axis=0))
    assert second["value"] == first["value"]
    assert first["helpers"], "the first process compiles numbax's helpers"
    assert second["helpers"] == []


def test_numbax_own_elementwise_kernels_are_keyed_by_numbax_source():
    """A package kernel's machine code holds what it calls from other files: it goes to
    the runtime cache (keyed by all of numbax's source), not Numba's (keyed by its file)."""
    cache_of_kernel = _disk_cache(_xlogy_kernel, numba.njit(_xlogy_kernel))
    assert isinstance(cache_of_kernel, runtime_cache.RuntimeCache)


TWO_OPERATIONS = """
import json, sys
import numba, numpy as np
from numbax.numba_backend.math import elementary

x = np.array([0.5, 1.0, 2.0])
names = {}
for name in sys.argv[1:]:
    op = getattr(elementary, name)
    program = numba.njit(lambda v: op(v))
    assert np.allclose(program(x), getattr(np, name)(x)), name
    library = next(iter(program.overloads.values())).library
    names[name] = [f.name for f in library._final_module.functions if "array_impl" in f.name]
print(json.dumps(names))
"""


@pytest.mark.jit
def test_a_loaded_callee_never_shares_a_name_with_one_compiled_here(tmp_path):
    """Numba numbers functions per process: the second process compiles log's
    implementation as the first compiled exp's, by the same qualified name, and then
    loads exp's from the cache. Were their symbols equal, LLVM would keep one of the two
    (``symbol_names``), and a program would call the other's code."""
    script = tmp_path / "two_operations.py"
    script.write_text(TWO_OPERATIONS)
    env = {**os.environ, "NUMBAX_CACHE_DIR": str(tmp_path / "cache")}

    def run(*names: str) -> dict:
        done = subprocess.run(
            [sys.executable, str(script), *names], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    first = run("exp")
    second = run("log", "exp")
    assert first["exp"] == second["exp"], "exp's implementation is loaded from the cache"
    assert not set(second["log"]) & set(second["exp"])
