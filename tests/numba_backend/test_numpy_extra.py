"""NumPy functions that automatic differentiation emits compile under ``nx.jit`` and agree
with NumPy: values, dtype and shape, for float64 and float32 (float32 must stay float32).

Some of these Numba supports as NumPy does; the others numbax redirects to its own
versions, one module per family in ``numba_backend/np/`` (``FAMILIES``). Each case is one
call, written as source over the inputs below, and its test id is that call, so a failure
names the function and the signature that broke.

Compiling is what costs (Numba takes 0.2 to a few seconds per function and signature), so
consecutive calls of a group of ``GROUPS`` are compiled together (``UNIT`` at most), as one
generated function that returns a tuple of ``np.asarray(call)``, once per dtype
(pytest-xdist's workers share the compiled code, see ``UNIT``); each case's test compares
its own entry. ``np.asarray`` keeps a scalar's dtype inside the tuple (Numba boxes a
float32 scalar as a Python float); ``test_scalar_results_keep_float32`` checks that
scalars returned directly keep it too.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

try:
    import fcntl
except ImportError:  # not POSIX: workers may compile a unit twice
    fcntl = None

import numbax as nx
from numbax.codegen.cache import cache_root
from numbax.numba_backend import registered as runtime
from numbax.numba_backend.np import elementwise, norms, products, shapes
from numbax.numba_backend.redirects import replacements
from numbax.runtime import nxrt

_RNG = np.random.default_rng(7)
_SPD = _RNG.normal(size=(4, 4))
_SPD = _SPD @ _SPD.T + 4 * np.eye(4)
INPUTS = {
    "v": _RNG.uniform(-1.5, 1.5, 5),  # vectors
    "w": _RNG.uniform(-1.5, 1.5, 5),
    "u": _RNG.uniform(-0.9, 0.9, 5),  # in (-1, 1)
    "p": _RNG.uniform(0.1, 3.0, 5),  # positive
    "g": _RNG.uniform(1.1, 3.0, 5),  # above 1
    "nan": np.array([np.nan, 1.0, -2.0, np.inf, -np.inf, 0.5]),
    "nan2": np.array([0.0, np.nan, -3.0, 1.0, np.nan, -np.inf]),
    "m": _RNG.normal(size=(3, 4)),  # matrices
    "m2": _RNG.normal(size=(3, 4)),
    "mT": _RNG.normal(size=(4, 3)),
    "m1": _RNG.normal(size=(3, 1)),
    "r1": _RNG.normal(size=(1, 4)),
    "v3": _RNG.normal(size=3),
    "v4": _RNG.normal(size=4),
    "s": _SPD,  # symmetric positive definite
    "ss": np.stack([_SPD, _SPD + np.eye(4), 2 * _SPD]),  # a stack of them
    "b": _RNG.normal(size=(2, 3, 4)),  # stacks of matrices
    "bT": _RNG.normal(size=(2, 4, 3)),
    "b1": _RNG.normal(size=(1, 4, 3)),
    "t": _RNG.normal(size=(2, 3, 3)),
    "x": np.float64(0.3),  # scalars (NumPy scalars of the dtype)
    "y": np.float64(-0.4),
    "c": _RNG.normal(size=5) + 1j * _RNG.normal(size=5),  # complex of the dtype
}

# The costliest to compile first (see UNIT).
GROUPS = {
    "norm": [
        "np.linalg.norm(v)",
        "np.linalg.norm(m)",
        "np.linalg.norm(v, keepdims=True)",
        "np.linalg.norm(m, axis=0)",
        "np.linalg.norm(m, axis=-1, keepdims=True)",
        "np.linalg.norm(v, ord=1)",
        "np.linalg.norm(v, ord=2)",
        "np.linalg.norm(v, ord=np.inf)",
        "np.linalg.norm(v, ord=-np.inf)",
        "np.linalg.norm(v, ord=0)",
        "np.linalg.norm(v, ord=3)",
        "np.linalg.norm(c)",
        "np.linalg.norm(m, ord='fro')",
        "np.linalg.norm(m, ord=1)",
        "np.linalg.norm(m, ord=-1)",
    ],
    "concatenate stack": [
        "np.concatenate((m, m2))",
        "np.concatenate((m, m2), axis=1)",
        "np.concatenate((m, m2), axis=None)",
        "np.concatenate([m, m2])",
        "np.concatenate([m, m2], axis=1)",
        "np.concatenate([m, m2], axis=None)",
        "np.stack((m, m2))",
        "np.stack((m, m2), axis=1)",
        "np.stack([m, m2])",
        "np.hstack((m, m2))",
        "np.hstack((v, w))",
        "np.vstack((m, m2))",
        "np.vstack((v, w))",
    ],
    "flip roll tile repeat diag": [
        "np.flip(m)",
        "np.flip(m, 0)",
        "np.flip(b, (0, 2))",
        "np.roll(m, 2)",
        "np.roll(m, 1, axis=0)",
        "np.tile(m, 2)",
        "np.tile(v, (2, 1))",
        "np.repeat(m, 2)",
        "np.repeat(m, 2, axis=0)",
        "np.repeat(m, 3, axis=-1)",
        "np.diag(v)",
        "np.diag(m)",
        "np.triu(m)",
        "np.tril(m, k=-1)",
    ],
    "einsum": [
        "np.einsum('ij,jk->ik', m, mT)",
        "np.einsum('ij,j->i', m, v4)",
        "np.einsum('i,i->', v, w)",
        "np.einsum('ij->ji', m)",
        "np.einsum('ii->', s)",
        "np.einsum('ii->i', s)",
        "np.einsum('ij->i', m)",
        "np.einsum('bij,bjk->bik', b, bT)",
        "np.einsum('ij,ij->', m, m2)",
        "np.einsum('i,j->ij', v, w)",
        "np.einsum('ij,jk', m, mT)",
        "np.einsum('ij,jk,kl->il', m, mT, m)",
        "np.einsum('ij,ij->ij', m, r1)",
        "np.einsum('ij,jk->ik', m1, r1)",
    ],
    "trace linalg": [
        "np.trace(s)",
        "np.trace(m, 1)",
        "np.trace(m, offset=-1)",
        "np.trace(t)",
        "np.linalg.inv(s)",
        "np.linalg.det(s)",
        "np.linalg.det(ss)",
        "np.linalg.slogdet(s)[0]",
        "np.linalg.slogdet(s)[1]",
        "np.linalg.solve(s, v4)",
        "np.linalg.cholesky(s)",
    ],
    "reshape transpose": [
        "np.reshape(m, (4, 3))",
        "np.reshape(m, -1)",
        "np.ravel(m)",
        "np.ravel(m.T)",
        "np.transpose(m)",
        "np.transpose(b, (1, 0, 2))",
        "np.swapaxes(b, 0, 2)",
        "np.moveaxis(b, 0, -1)",
        "np.broadcast_to(v, (2, 5))",
        "m.reshape(4, 3)",
        "m.transpose()",
        "b.transpose(2, 0, 1)",
        "m.ravel()",
        "m.flatten()",
        "m.T",
    ],
    "vdot inner outer tensordot": [
        "np.vdot(v, w)",
        "np.vdot(m, m2)",
        "np.vdot(c, c * 2)",
        "np.inner(v, w)",
        "np.inner(m, m2)",
        "np.inner(b, v4)",
        "np.inner(v, 2.0)",
        "np.outer(v, w)",
        "np.tensordot(m, m2)",
        "np.tensordot(m, mT, 1)",
        "np.tensordot(v, w, axes=0)",
        "np.tensordot(m, m2, axes=((1,), (1,)))",
        "np.tensordot(m, mT, axes=(1, 0))",
    ],
    "dot matmul": [
        "np.dot(v, w)",
        "np.dot(m, v4)",
        "np.dot(v3, m)",
        "np.dot(m, mT)",
        "np.dot(m.T, m2)",
        "np.dot(v, 2.0)",
        "np.dot(b, mT)",
        "m.dot(mT)",
        "np.matmul(m, mT)",
        "np.matmul(m, v4)",
        "np.matmul(v3, m)",
        "np.matmul(v, w)",
        "np.matmul(b, bT)",
        "np.matmul(b, mT)",
        "np.matmul(b, b1)",
        "np.matmul(b, v4)",
        "m @ mT",
        "m @ v4",
    ],
    "sinc angle clip": [
        "np.sinc(v)",
        "np.sinc(v * 0)",
        "np.sinc(m)",
        "np.sinc(x)",
        "np.angle(v)",
        "np.angle(v, deg=True)",
        "np.angle(c)",
        "np.angle(y)",
        "np.angle(y, deg=True)",
        "np.clip(v, u, w)",
        "np.clip(nan, -0.5, 0.5)",
        "np.clip(v, None, 0.5)",
        "np.clip(v, -0.5, None)",
        "np.clip(v, a_min=-0.5, a_max=0.5)",
        "np.clip(v, min=-0.5, max=0.5)",
        "np.clip(v4, m, 1.0)",
        "np.clip(x, -0.2, 0.2)",
        "np.clip(x, y, x)",
    ],
    "expand_dims squeeze atleast": [
        "np.expand_dims(m, 0)",
        "np.expand_dims(m, axis=-1)",
        "np.expand_dims(m, (0, 2))",
        "np.expand_dims(m, (-1, 0))",
        "np.expand_dims(x, 0)",
        "np.squeeze(m1, 1)",
        "np.squeeze(m1, axis=-1)",
        "np.squeeze(m1, axis=(1,))",
        "np.squeeze(r1, (0,))",
        "np.reshape(m.T, -1)",
        "m.T.reshape(2, 6)",
        "np.reshape(m[:, ::2], (6,))",
        "m.reshape((4, 3))",
        "np.atleast_1d(x)",
        "np.atleast_1d(v)",
        "np.atleast_2d(x)",
        "np.atleast_2d(v)",
        "np.atleast_2d(m)",
    ],
    "ufuncs": [
        "np.cbrt(v)",
        "np.square(v)",
        "np.reciprocal(p)",
        "np.tan(v)",
        "np.arcsin(u)",
        "np.arccos(u)",
        "np.arctan(v)",
        "np.arctan2(v, w)",
        "np.hypot(v, w)",
        "np.arcsinh(v)",
        "np.arccosh(g)",
        "np.arctanh(u)",
        "np.sign(nan)",
        "np.maximum(nan, nan2)",
        "np.minimum(nan, nan2)",
        "np.fmax(nan, nan2)",
        "np.fmin(nan, nan2)",
        "np.maximum(v, 0.0)",
        "np.where(v > 0, v, w)",
        "np.logaddexp(v, w)",
        "np.logaddexp2(v, w)",
        "np.deg2rad(v)",
        "np.rad2deg(v)",
        "np.real(v)",
        "np.imag(v)",
        "np.conj(v)",
        "np.abs(v)",
        "np.sqrt(p)",
        "np.real(c)",
        "np.imag(c)",
        "np.conj(c)",
        "np.abs(c)",
    ],
    "ufuncs of scalars": [
        "np.cbrt(x)",
        "np.square(x)",
        "np.reciprocal(x)",
        "np.tan(x)",
        "np.arcsin(x)",
        "np.arccos(x)",
        "np.arctan(x)",
        "np.arctan2(x, y)",
        "np.hypot(x, y)",
        "np.arcsinh(x)",
        "np.arccosh(x + 2)",
        "np.arctanh(x)",
        "np.sign(y)",
        "np.maximum(x, y)",
        "np.minimum(x, y)",
        "np.fmax(x, y)",
        "np.fmin(x, y)",
        "np.logaddexp(x, y)",
        "np.logaddexp2(x, y)",
        "np.deg2rad(x)",
        "np.rad2deg(x)",
        "np.real(x)",
        "np.imag(x)",
        "np.conj(x)",
        "np.abs(y)",
        "np.sqrt(x)",
    ],
}
# Calls that fail for reasons outside the families' modules (each compiled alone), and why.
KNOWN_FAILURES = {
    "np.where(v > 0, v, 0.0)": "fuse.py turns np.where into `v if c else 0.0` in a fused "
    "kernel, where the literal is not wrapped in nxrt.weak: float32 becomes float64",
    "m1.squeeze(1)": "Numba has no ndarray.squeeze, and 'squeeze' is not in "
    "runtime.ARRAY_METHODS (so not rewritten to nxrt.squeeze)",
    "m.swapaxes(0, 1)": "Numba has no ndarray.swapaxes, and 'swapaxes' is not in "
    "runtime.ARRAY_METHODS",
    "b @ bT": "`@` is left to Numba, whose matmul operator takes 1-d and 2-d operands only",
}
_COMPLEX = {np.float64: np.complex128, np.float32: np.complex64}


def _inputs(names: list[str], dtype: type) -> list:
    out = []
    for name in names:
        value = INPUTS[name]
        if np.iscomplexobj(value):
            out.append(value.astype(_COMPLEX[dtype]))
        elif np.ndim(value) == 0:
            out.append(dtype(value))
        else:
            out.append(value.astype(dtype))
    return out


def _uses(calls: list[str]) -> list[str]:
    """The inputs these calls read, in the order of INPUTS."""
    words = {w for call in calls for w in re.findall(r"\b[a-zA-Z_][a-zA-Z0-9_]*\b", call)}
    return [name for name in INPUTS if name in words]


def _source_dir() -> Path:
    """Where the units' source goes: numbax's cache directory, one per test session and
    shared by pytest-xdist's workers (see conftest.py)."""
    directory = cache_root() / "test_numpy_extra"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@functools.cache
def _group_function(label: str, calls: tuple[str, ...]):
    """A function returning ``(np.asarray(call), ...)``, written to a file: numbax reads
    the source of what it compiles."""
    params = _uses(list(calls))
    name = "group_" + "".join(c if c.isalnum() else "_" for c in label)
    body = "".join(f"        np.asarray({call}),\n" for call in calls)
    source = (
        f"import numpy as np\n\n\ndef {name}({', '.join(params)}):\n    return (\n{body}    )\n"
    )
    # Written once: a unit another worker compiled already then loads from Numba's disk
    # cache, which keys on the source file and its time stamp.
    directory = _source_dir()
    path = directory / f"{name}.py"
    if not path.exists():
        with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False) as f:
            f.write(source)
        try:
            os.link(f.name, path)  # atomic, and fails if another worker wrote it first
        except FileExistsError:
            pass
        finally:
            os.unlink(f.name)
    spec = importlib.util.spec_from_file_location(f"_numpy_extra_cases_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, name), params


@functools.cache
def _results(label: str, calls: tuple[str, ...], dtype: type):
    """(NumPy's results, jit's results or the exception compiling raised)."""
    fun, params = _group_function(label, calls)
    args = _inputs(params, dtype)
    with np.errstate(all="ignore"), _compiling(fun.__name__, dtype):
        expected = fun(*args)
        try:
            got = nx.jit(fun)(*args)
        except Exception as err:  # every case of the group reports it
            got = err
    return expected, got


@contextlib.contextmanager
def _compiling(name: str, dtype: type):
    """While one pytest-xdist worker compiles a unit, another that needs it waits, then
    loads it from Numba's disk cache instead of compiling it too."""
    if fcntl is None:
        yield
        return
    with open(_source_dir() / f"{name}-{np.dtype(dtype).name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _compare(call: str, expected, got, dtype: type) -> None:
    expected, got = np.asarray(expected), np.asarray(got)
    assert got.dtype == expected.dtype, f"{call}: dtype {got.dtype}, NumPy's {expected.dtype}"
    assert got.shape == expected.shape, f"{call}: shape {got.shape}, NumPy's {expected.shape}"
    single = np.dtype(dtype) == np.float32
    tol = 2e-5 if single else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=call)


CASES = [(label, call) for label, calls in GROUPS.items() for call in calls]
UNIT = 8
"""Calls compiled together, at most: a few spread Numba's per-function cost. pytest-xdist
hands each worker runs of consecutive tests, so a unit may have tests on both workers:
one compiles it while the other waits (``_compiling``); small units keep waits short,
and so does the order of ``GROUPS`` (the costliest first: the last runs handed out are
short ones, to either worker, so the units there should compile fast)."""


@pytest.mark.parametrize("call", list(KNOWN_FAILURES))
def test_known_failure(call):
    try:
        expected, got = _results(call, (call,), np.float32)
        if isinstance(got, Exception):
            raise got
        _compare(call, expected[0], got[0], np.float32)
    except Exception:
        pytest.xfail(KNOWN_FAILURES[call])


FAMILIES = (elementwise, norms, products, shapes)
"""The modules of numbax's versions of NumPy functions, one per family."""


@pytest.mark.parametrize("family", FAMILIES, ids=lambda module: module.__name__)
def test_every_function_of_a_family_is_redirected(family):
    redirected = {n for n, f in replacements().items() if f.__module__ == family.__name__}
    assert set(family.__all__) == redirected
    for name in redirected:
        assert getattr(nxrt, name) is getattr(family, name)
        namespace = np.linalg if name in ("norm", "det", "slogdet") else np
        assert runtime.replacement_for(getattr(namespace, name)) == name


def test_scalar_results_keep_float32():
    def f(x, m):
        return np.linalg.norm(x) + np.trace(m) + np.linalg.det(m) + np.sinc(x[0])

    x, m = INPUTS["v"].astype(np.float32), INPUTS["s"].astype(np.float32)
    got, expected = nx.jit(f)(x, m), f(x, m)
    assert type(got) is type(expected) is np.float32
    np.testing.assert_allclose(got, expected, rtol=2e-5)


def test_matrix_norms_by_svd():
    """Orders 2, -2 and 'nuc' (float32 only: Numba's SVD takes seconds to compile)."""

    def f(m):
        return np.linalg.norm(m, 2) + np.linalg.norm(m, ord=-2) + np.linalg.norm(m, "nuc")

    m = INPUTS["m"].astype(np.float32)
    got, expected = nx.jit(f)(m), f(m)
    assert type(got) is type(expected) is np.float32
    np.testing.assert_allclose(got, expected, rtol=2e-5)


def test_python_scalar_bounds_keep_float32():
    def f(x, lo):
        return np.clip(x, lo, 1.0) + np.clip(x, a_min=lo, a_max=1.0)

    x = INPUTS["v"].astype(np.float32)
    got, expected = nx.jit(f)(x, -0.5), f(x, -0.5)
    assert got.dtype == expected.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=2e-5)


def test_errors_match_numpy():
    def f(m, which):
        if which == 0:
            return np.squeeze(m, 0).sum()
        if which == 1:
            return np.tensordot(m, m, 1).sum()
        return np.flip(m, 2).sum()

    jitted, m = nx.jit(f), INPUTS["m1"]
    with pytest.raises(ValueError, match="size not equal to one"):
        jitted(m, 0)
    with pytest.raises(ValueError, match="shape-mismatch"):
        jitted(m, 1)
    with pytest.raises(np.exceptions.AxisError):
        jitted(m, 2)


def test_squeeze_without_axis_does_not_compile():
    def f(x):
        return np.squeeze(x)

    with pytest.raises(Exception) as info:
        nx.jit(f)(INPUTS["m1"])
    assert "pass axis=" in str(info.value.__cause__)  # Numba's error, which says why


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(("label", "call"), CASES, ids=[call for _, call in CASES])
def test_matches_numpy(label, call, dtype):
    index = GROUPS[label].index(call)
    start = index - index % UNIT
    calls = tuple(GROUPS[label][start : start + UNIT])
    expected, got = _results(f"{label} {start}", calls, dtype)
    if isinstance(got, Exception):
        raise got
    _compare(call, expected[index - start], got[index - start], dtype)


def _matmul_operator(a, b):
    return a @ b


@pytest.mark.parametrize(
    ("a_dtype", "b_dtype", "b_shape"),
    [
        (np.float64, np.float32, (4,)),
        (np.float32, np.float64, (4, 2)),
        (np.int64, np.float32, (4,)),
    ],
)
def test_the_matmul_operator_promotes_two_dtypes_as_numpy_does(a_dtype, b_dtype, b_shape):
    a = np.arange(12).reshape(3, 4).astype(a_dtype)
    b = np.linspace(-1.0, 1.0, int(np.prod(b_shape))).reshape(b_shape).astype(b_dtype)
    got = nx.jit(_matmul_operator)(a, b)
    expected = a @ b
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)
