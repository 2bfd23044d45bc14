"""Large callees are linked after their caller is optimized, small ones before
(``numba_backend/caching/linking.py``), while numbax compiles; the user's own Numba code is
linked as Numba links it."""

from __future__ import annotations

import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba.extending import overload

import numbax as nx
from numbax.numba_backend.caching import linking


def _large_callee():
    """A function whose module is large: many loops LLVM unrolls and vectorizes."""
    lines = ["def large(a):", "    out = np.empty_like(a)"]
    for k in range(12):
        lines += [
            "    for i in range(a.size):",
            f"        out[i] = np.sin(a[i] * {k + 1}.0) + np.cos(out[i - 1] if i else a[0])",
        ]
    lines.append("    return out")
    namespace = {"np": np}
    exec("\n".join(lines) + "\n", namespace)  # noqa: S102
    return numba.njit(namespace["large"])


@numba.njit
def small(x):
    return 2.0 * x + 1.0


def _caller(large):
    @numba.njit
    def caller(a):
        return large(a).sum() + small(a[0])

    return caller


def _defined(library) -> list[str]:
    return [f.name for f in library._final_module.functions if not f.is_declaration]


def test_large_callees_are_linked_after_optimization():
    large = _large_callee()
    caller = _caller(large)
    a = np.linspace(0.1, 1.0, 9)
    with linking.linking_large_callees_late():
        result = caller(a)
    assert result == pytest.approx(large.py_func(a).sum() + small.py_func(a[0]))
    library = caller.overloads[caller.signatures[0]].library
    (large_library,) = [lib for lib in library._linking_libraries if linking._is_large(lib)]
    assert not linking._is_large(small.overloads[small.signatures[0]].library)
    # the large callee's code is in the caller's module (machine code stays self-contained,
    # as the disk cache needs), as a function of its own that the caller calls
    large_names = set(_defined(large_library)) & set(_defined(library))
    assert any("large" in name for name in large_names)
    entry = caller.overloads[caller.signatures[0]].fndesc.llvm_func_name
    calls = str(library._final_module.get_function(entry))
    assert any(f"@{name}" in calls or f'@"{name}"' in calls for name in large_names)
    # the small one was linked before: inlined, as Numba would
    small_library = small.overloads[small.signatures[0]].library
    assert not any(name in calls for name in _defined(small_library) if "small" in name)


def test_outside_numbax_compiles_numba_links_as_usual(monkeypatch):
    def refuse(library):
        raise AssertionError("consulted outside numbax's compiles")

    monkeypatch.setattr(linking, "_is_large", refuse)
    caller = _caller(_large_callee())
    assert np.isfinite(caller(np.linspace(0.1, 1.0, 5)))


def test_generated_code_compiles_inside_the_block(monkeypatch):
    consulted = []
    real = linking._is_large
    monkeypatch.setattr(linking, "_is_large", lambda lib: consulted.append(lib) or real(lib))

    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.0, 1.0, 7)
    assert nx.jit(f, cache=False)(x) == pytest.approx(np.sum(np.sin(x) * x))
    assert consulted  # its helpers (the reduction, the sine kernel) sized up


def _doubled_in_python(x):
    """Called back through the interpreter: Numba's lifted code refers to the callable
    through its function's environment."""


@overload(_doubled_in_python, jit_options={"cache": False})
def _doubled_in_python_impl(x):
    def impl(x):
        with numba.objmode(y="float64"):
            y = float(x) * 2.0
        return y

    return impl


def _adds_doubled():
    @numba.njit
    def caller(a):
        return a[0] + _doubled_in_python(a[1])

    return caller


def test_an_overloads_implementation_stays_llvm_ir_until_an_address_is_asked():
    caller = _adds_doubled()
    with linking.linking_large_callees_late():
        assert caller(np.array([1.0, 3.0])) == 7.0
    library = caller.overloads[caller.signatures[0]].library
    assert library not in linking._without_machine_code  # Python calls it
    implementations = [lib for lib in library._linking_libraries if "impl" in lib.name]
    assert implementations
    assert all(lib in linking._without_machine_code for lib in implementations)
    assert not any(name.startswith("cfunc.") for lib in implementations for name in _defined(lib))
    # the environment of the implementation (the callable its lifted block calls) was
    # set once its caller's module defined it
    assert not [n for n in linking._pending_environments if "doubled" in n]
    # and an address asked for is there, emitted then
    implementation = implementations[0]
    entry = [n for n in _defined(implementation) if "impl" in n][0]
    assert implementation.get_pointer_to_function(entry) != 0
    assert implementation not in linking._without_machine_code


def test_a_library_left_as_llvm_ir_is_cached_as_llvm_ir():
    """The runtime cache saves an implementation as the IR its callers link, and a later
    process loads it as IR: machine code only if an address is asked for. (Integers: an
    implementation of its own, which the test above did not ask an address of.)"""
    caller = _adds_doubled()
    with linking.linking_large_callees_late():
        assert caller(np.array([1, 3])) == 7.0
    library = caller.overloads[caller.signatures[0]].library
    (implementation,) = [lib for lib in library._linking_libraries if "impl" in lib.name]
    state = implementation.serialize_using_object_code()
    assert state[1] == linking._IR_ONLY
    assert implementation in linking._without_machine_code
    loaded = implementation.codegen.unserialize_library(state)
    assert loaded in linking._without_machine_code
    assert set(_defined(loaded)) == set(_defined(implementation))
    entry = [n for n in _defined(loaded) if "impl" in n][0]
    assert loaded.get_pointer_to_function(entry) != 0


RECURSIVE_PROGRAM = """
import numpy as np
import numbax as nx


def doubled(x, n):
    if n == 0:
        return x
    return doubled(np.sin(x) * 2.0, n - 1)


def sum_doubled(x):
    return np.sum(doubled(x, 2))


print(list(nx.jit(nx.grad(sum_doubled))(np.array([1.0, 0.5]))))
"""


def test_a_recursive_function_compiles_in_a_fresh_process(tmp_path):
    """Numba links a recursive call through a pointer it fills in as the module enters
    the execution engine; resolving it crashed the process (a segmentation fault) when a
    callee linked into that module was still LLVM IR: such callees now get their machine
    code first. A fresh process and cache: what earlier compiles left does not hide it."""
    script = tmp_path / "recursive_program.py"
    script.write_text(RECURSIVE_PROGRAM)
    env = {**os.environ, "NUMBAX_CACHE_DIR": str(tmp_path / "cache"), "NUMBAX_COMPILE_LOG": "0"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    got = np.array(eval(done.stdout))  # noqa: S307 (a list of floats this test printed)
    x = np.array([1.0, 0.5])
    y = np.sin(x) * 2.0
    want = 4.0 * np.cos(y) * np.cos(x)  # d/dx of sum(2 sin(2 sin x))
    np.testing.assert_allclose(got, want, rtol=1e-12)


@numba.njit
def _users_own(x):
    return 3.0 * x


def test_numbax_functions_get_no_c_wrapper_and_the_users_keep_theirs():
    """numbax's generated functions and kernels are never first-class function values:
    no C entry point is emitted for them. A user's ``numba.njit`` function compiled inside
    numbax's compile keeps its own, and works as a function value afterwards."""

    def f(x):
        return _users_own(np.sum(np.sin(x)))

    jitted = nx.jit(f, cache=False)
    x = np.linspace(0.0, 1.0, 5)
    assert jitted(x) == pytest.approx(3.0 * np.sum(np.sin(x)))
    dispatcher = jitted._latest.dispatcher
    (compiled,) = dispatcher.overloads.values()
    assert compiled.entry_point is not None  # the Python entry point stays
    assert not any(name.startswith("cfunc.") for name in _defined(compiled.library))

    users = _users_own.overloads[_users_own.signatures[0]]
    assert any(name.startswith("cfunc.") for name in _defined(users.library))

    as_value = numba.types.FunctionType(numba.float64(numba.float64))

    @numba.njit(numba.float64(as_value, numba.float64))
    def apply(g, y):
        return g(y)

    assert apply(_users_own, 2.0) == 6.0  # through its C entry point


def _optimization_levels(monkeypatch) -> list[int]:
    """The level of every pass pipeline LLVM builds from now on."""
    levels: list[int] = []
    real = linking._numba_pass_builder

    def recording(codegen_, **kwargs):
        levels.append(int(kwargs.get("opt", numba.core.config.OPT)))
        return real(codegen_, **kwargs)

    monkeypatch.setattr(linking, "_numba_pass_builder", recording)
    return levels


def _sum_of_sines():
    @numba.njit
    def sum_of_sines(a):
        return np.sin(a).sum() + a[0]

    return sum_of_sines


def test_a_large_function_is_optimized_at_o2(monkeypatch):
    levels = _optimization_levels(monkeypatch)
    monkeypatch.setattr(linking, "LARGE_FUNCTION_BITCODE", 0)  # everything is large
    function = _sum_of_sines()
    a = np.linspace(0.1, 1.0, 9)
    with linking.linking_large_callees_late():
        assert function(a) == pytest.approx(np.sin(a).sum() + a[0])
    library = function.overloads[function.signatures[0]].library
    assert library in linking._large_functions
    assert levels and max(levels) == linking.MODERATE_OPT


def test_a_small_function_keeps_o3(monkeypatch):
    levels = _optimization_levels(monkeypatch)
    function = _sum_of_sines()
    a = np.linspace(0.1, 1.0, 9)
    with linking.linking_large_callees_late():
        assert function(a) == pytest.approx(np.sin(a).sum() + a[0])
    assert function.overloads[function.signatures[0]].library not in linking._large_functions
    assert max(levels) == numba.core.config.OPT == 3


def test_a_function_marked_moderate_is_optimized_at_o2(monkeypatch):
    """An elementwise loop's driver is marked so (``elementwise.py``)."""
    levels = _optimization_levels(monkeypatch)

    def scaled_total(a):  # nothing it calls is compiled apart
        total = 0.0
        for i in range(a.shape[0]):
            total += 2.0 * a[i]
        return total

    function = numba.njit(linking.optimized_moderately(scaled_total))
    a = np.linspace(0.1, 1.0, 9)
    with linking.linking_large_callees_late():
        assert function(a) == pytest.approx(2.0 * a.sum())
    assert function.overloads[function.signatures[0]].library in linking._large_functions
    assert levels and max(levels) == linking.MODERATE_OPT


def test_outside_numbax_compiles_every_function_keeps_numbas_level(monkeypatch):
    levels = _optimization_levels(monkeypatch)
    monkeypatch.setattr(linking, "LARGE_FUNCTION_BITCODE", 0)
    function = _sum_of_sines()
    function(np.ones(3))
    assert levels and min(levels) == 0 and max(levels) == numba.core.config.OPT
