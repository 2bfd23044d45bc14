"""The AD runtime helpers agree with NumPy, interpreted and compiled by Numba.

Every case calls the helper from plain Python and from one shared ``numba.njit`` wrapper
per helper (Numba compiles it once per argument types), and compares both results with a
NumPy reference expression: values, shapes, array dtypes, and for scalars the dtype Numba
typed the result with (boxing turns a float32 scalar into a Python float, so the value
alone cannot tell).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import pytest
from numba import types
from numba.np.numpy_support import as_dtype

import numbax.numba_backend.registered  # noqa: F401  (registers the helpers' Numba versions)
from numbax.runtime import nxrt as ad
from numbax.runtime.seeds import grad_dtype_check

Pair = collections.namedtuple("Pair", "a b")

# ---------------------------------------------------------------------------------------
# One njit wrapper per helper.
# ---------------------------------------------------------------------------------------


@numba.njit
def _zeros_like(x):
    return ad.zeros_like(x)


@numba.njit
def _ones_like(x):
    return ad.ones_like(x)


@numba.njit
def _grad_seed(out):
    return ad.grad_seed(out)


@numba.njit
def _unbroadcast(value, like):
    return ad.unbroadcast(value, like)


@numba.njit
def _broadcast_like(value, like):
    return ad.broadcast_like(value, like)


@numba.njit
def _index_add(base, index, value):
    return ad.index_add(base, index, value)


@numba.njit
def _tree_add(a, b):
    return ad.tree_add(a, b)


@numba.njit
def _owned(x):
    return ad.owned(x)


@numba.njit
def _ravel(x):
    return ad.ravel(x)


@numba.njit
def _holomorphic_seed(out):
    return ad.holomorphic_seed(out)


@numba.njit
def _jac_size(x):
    return ad.jac_size(x)


@numba.njit
def _jac_basis(x, k):
    return ad.jac_basis(x, k)


@numba.njit
def _jac_buffer(out, x):
    return ad.jac_buffer(out, x)


@numba.njit
def _jac_unflatten(jac, out, x):
    return ad.jac_unflatten(jac, out, x)


COMPILED = {
    "zeros_like": _zeros_like,
    "ones_like": _ones_like,
    "grad_seed": _grad_seed,
    "holomorphic_seed": _holomorphic_seed,
    "unbroadcast": _unbroadcast,
    "broadcast_like": _broadcast_like,
    "index_add": _index_add,
    "tree_add": _tree_add,
    "owned": _owned,
    "ravel": _ravel,
    "jac_size": _jac_size,
    "jac_basis": _jac_basis,
    "jac_buffer": _jac_buffer,
    "jac_unflatten": _jac_unflatten,
}

# ---------------------------------------------------------------------------------------
# Inputs (made afresh for every call: some helpers write in place).
# ---------------------------------------------------------------------------------------


def _f64(*shape: int) -> np.ndarray:
    return (np.arange(np.prod(shape, dtype=int)) * 0.5 - 1.0).reshape(shape)


def _f32(*shape: int) -> np.ndarray:
    return _f64(*shape).astype(np.float32)


VALUES: dict[str, Callable[[], Any]] = {
    "pyfloat": lambda: 1.5,
    "pyint": lambda: 3,
    "pybool": lambda: True,
    "pycomplex": lambda: 1.0 + 2.0j,
    "f32scalar": lambda: np.float32(2.5),
    "0d": lambda: np.array(2.5),
    "1d-f64": lambda: _f64(5),
    "2d-f32": lambda: _f32(3, 4),
    "2d-int": lambda: np.arange(6).reshape(2, 3),
    "3d-c128": lambda: _f64(2, 3, 2) * (1 - 0.5j),
    "transposed-f64": lambda: _f64(4, 3).T,
    "strided-f32": lambda: _f32(6, 5)[::2, ::-2],
    "tuple": lambda: (1.5, _f32(2, 3), (np.float32(2.0), None)),
    "namedtuple": lambda: Pair(_f64(2), 3),
}

# ---------------------------------------------------------------------------------------
# Comparison.
# ---------------------------------------------------------------------------------------


def _close(got: Any, want: Any, dtype: np.dtype) -> None:
    if dtype.kind in "fc":
        rtol = 1e-5 if dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(got, want)


def _check(got: Any, want: Any, typed: types.Type | None = None) -> None:
    """``got`` equals ``want``: structure, shapes, dtypes, values. ``typed`` is the Numba
    type of a compiled result, which gives the dtype of scalars."""
    if want is None:
        assert got is None
    elif isinstance(want, tuple):
        assert type(got) is type(want) and len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _check(g, w, typed.types[i] if typed is not None else None)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"expected an array, got {got!r}"
        assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
        _close(got, want, want.dtype)
    else:
        assert not isinstance(got, np.ndarray), f"expected a scalar, got {got!r}"
        dtype = as_dtype(typed) if typed is not None else np.result_type(got)
        assert dtype == np.result_type(want), (got, dtype, want)
        _close(got, want, dtype)


def _both(name: str, make_args: Callable[[], tuple]) -> tuple[Any, Any, types.Type]:
    """The helper's result interpreted, compiled, and the compiled result's Numba type."""
    interpreted = getattr(ad, name)(*make_args())
    args = make_args()
    wrapper = COMPILED[name]
    compiled = wrapper(*args)
    signature = tuple(wrapper.typeof_pyval(a) for a in args)
    return interpreted, compiled, wrapper.overloads[signature].signature.return_type


def _run(name: str, make_args: Callable[[], tuple], reference: Callable[..., Any]) -> tuple:
    interpreted, compiled, typed = _both(name, make_args)
    want = reference(*make_args())
    _check(interpreted, want)
    _check(compiled, want, typed)
    return interpreted, compiled


def _cases(name: str, cases: dict[str, tuple]) -> list:
    return [pytest.param(name, *case, id=f"{name}-{key}") for key, case in cases.items()]


# ---------------------------------------------------------------------------------------
# zeros_like, ones_like, owned, ravel, jac_size.
# ---------------------------------------------------------------------------------------


def _tree(leaf: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def walk(x: Any) -> Any:
        if x is None:
            return None
        if isinstance(x, tuple):
            return type(x)(*map(walk, x)) if hasattr(x, "_fields") else tuple(map(walk, x))
        return leaf(x)

    return walk


def _numpy_like(func: Callable[[Any], np.ndarray]) -> Callable[[Any], Any]:
    """``func`` (np.zeros_like, ...) with a NumPy scalar, not a 0-d array, for a scalar."""
    return lambda x: func(x) if isinstance(x, np.ndarray) else func(x)[()]


LEAFWISE = {
    "zeros_like": _tree(_numpy_like(np.zeros_like)),
    "ones_like": _tree(_numpy_like(np.ones_like)),
    "owned": _tree(lambda x: np.array(x) if isinstance(x, np.ndarray) else x),
}

LEAFWISE_CASES = [
    pytest.param(name, key, id=f"{name}-{key}") for name in LEAFWISE for key in VALUES
]


def _leaves(x: Any) -> list:
    if isinstance(x, tuple):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


@pytest.mark.parametrize(("name", "key"), LEAFWISE_CASES)
def test_leafwise(name: str, key: str) -> None:
    interpreted, compiled = _run(name, lambda: (VALUES[key](),), LEAFWISE[name])
    for result in (interpreted, compiled):
        for leaf in _leaves(result):
            if isinstance(leaf, np.ndarray):
                assert leaf.flags.c_contiguous and leaf.flags.writeable


@pytest.mark.parametrize(
    "key", [pytest.param(k, id=f"owned-copies-{k}") for k in ("transposed-f64", "tuple")]
)
def test_owned_copies(key: str) -> None:
    x = VALUES[key]()
    for func in (ad.owned, _owned):
        for leaf, new in zip(_leaves(x), _leaves(func(x)), strict=True):
            if isinstance(leaf, np.ndarray):
                assert not np.shares_memory(leaf, new)


FLAT_KEYS = ["pyfloat", "pyint", "pybool", "f32scalar", "0d", "1d-f64", "2d-f32"]
FLAT_KEYS += ["transposed-f64", "strided-f32", "3d-c128"]


@pytest.mark.parametrize("key", [pytest.param(k, id=f"ravel-{k}") for k in FLAT_KEYS])
def test_ravel(key: str) -> None:
    _run("ravel", lambda: (VALUES[key](),), np.ravel)


@pytest.mark.parametrize("key", [pytest.param(k, id=f"size-{k}") for k in FLAT_KEYS])
def test_jac_size(key: str) -> None:
    interpreted, compiled, typed = _both("jac_size", lambda: (VALUES[key](),))
    assert interpreted == compiled == np.size(VALUES[key]())
    assert type(interpreted) is int and isinstance(typed, types.Integer)


# ---------------------------------------------------------------------------------------
# grad_seed, grad_dtype_check.
# ---------------------------------------------------------------------------------------

SEEDS = {key: VALUES[key] for key in ["pyfloat", "f32scalar", "0d"]}
SEEDS["0d-f32"] = lambda: np.array(1.5, np.float32)
HOLOMORPHIC_SEEDS = {"pycomplex": VALUES["pycomplex"], "0d-c64": lambda: np.array(1j, np.complex64)}


@pytest.mark.parametrize("key", [pytest.param(k, id=f"grad_seed-{k}") for k in SEEDS])
def test_grad_seed(key: str) -> None:
    _run("grad_seed", lambda: (SEEDS[key](),), _numpy_like(np.ones_like))


@pytest.mark.parametrize(
    "key", [pytest.param(k, id=f"holomorphic_seed-{k}") for k in HOLOMORPHIC_SEEDS]
)
def test_holomorphic_seed(key: str) -> None:
    _run("holomorphic_seed", lambda: (HOLOMORPHIC_SEEDS[key](),), _numpy_like(np.ones_like))


@pytest.mark.parametrize(
    ("helper", "value", "message"),
    [
        ("grad_seed", 1j, "grad requires real-valued outputs"),
        ("grad_seed", np.array(1j, np.complex64), "grad requires real-valued outputs"),
        ("grad_seed", 3, "real-valued outputs .* but got int64. .* integer outputs"),
        ("grad_seed", np.bool_(True), "real-valued outputs .* but got bool"),
        ("grad_seed", np.array(2, np.int32), "real-valued outputs .* but got int32"),
        ("holomorphic_seed", 1.0, "holomorphic=True requires outputs with complex dtype"),
        ("holomorphic_seed", np.array(1.0), "holomorphic=True requires outputs with complex"),
    ],
)
def test_seeds_check_the_output_dtype(helper: str, value: Any, message: str) -> None:
    """A complex output seeded as a real one would silently give its real part's gradient,
    an integer or boolean one zeros."""
    for func in (getattr(ad, helper), COMPILED[helper]):
        with pytest.raises(TypeError, match=message):
            func(value)


@pytest.mark.parametrize(
    ("shape", "text"),
    [
        pytest.param((3,), "(3,)", id="grad_seed-error-1d"),
        pytest.param((2, 3), "(2, 3)", id="grad_seed-error-2d"),
    ],
)
def test_grad_seed_rejects_arrays(shape: tuple[int, ...], text: str) -> None:
    with pytest.raises(TypeError) as info:
        ad.grad_seed(np.ones(shape, np.float32))
    assert str(info.value) == f"grad requires a scalar output, got an array of shape {text}"
    with pytest.raises(TypeError) as info:
        _grad_seed(np.ones(shape, np.float32))
    expected = f"grad requires a scalar output, got an array of {len(shape)} dimension(s)"
    assert str(info.value) == expected


def test_grad_seed_rejects_tuples() -> None:
    for func in (ad.grad_seed, _grad_seed):
        with pytest.raises(TypeError, match="grad requires a scalar output"):
            func((1.0, 2.0))


@pytest.mark.parametrize(
    ("value", "name"),
    [
        pytest.param(np.arange(3), "int64", id="grad_dtype_check-int64-array"),
        pytest.param(np.int32(3), "int32", id="grad_dtype_check-int32-scalar"),
        pytest.param(True, "bool", id="grad_dtype_check-pybool"),
        pytest.param((1.0, [np.ones(2, np.uint8)]), "uint8", id="grad_dtype_check-pytree"),
    ],
)
def test_grad_dtype_check_rejects(value: Any, name: str) -> None:
    message = (
        "grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
        f"np.inexact), but got {name}. If you want to use Boolean- or integer-valued inputs, "
        "use vjp or set allow_int to True."
    )
    with pytest.raises(TypeError) as info:
        grad_dtype_check(value, 0)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(1.5, id="grad_dtype_check-pyfloat"),
        pytest.param(np.ones(2, np.float32), id="grad_dtype_check-f32-array"),
        pytest.param(np.complex64(1), id="grad_dtype_check-c64-scalar"),
        pytest.param((1.0, {"w": np.ones(2)}), id="grad_dtype_check-pytree"),
    ],
)
def test_grad_dtype_check_accepts(value: Any) -> None:
    assert grad_dtype_check(value, 1) is None


# ---------------------------------------------------------------------------------------
# unbroadcast, broadcast_like.
# ---------------------------------------------------------------------------------------


def _unbroadcast_ref(value: Any, like: Any) -> Any:
    """Sum ``broadcast_to(value, broadcast shape)`` down to like's shape, with loops."""
    like_dtype = np.result_type(like)
    dtype = like_dtype if like_dtype.kind in "fc" else np.result_type(value)
    full = np.broadcast_shapes(np.shape(value), np.shape(like))
    spread = np.broadcast_to(np.asarray(value, np.complex128), full)
    out = np.zeros(np.shape(like), np.complex128)
    lead = len(full) - np.ndim(like)
    for index in np.ndindex(full):
        target = tuple(
            0 if n == 1 else i for i, n in zip(index[lead:], np.shape(like), strict=True)
        )
        out[target] += spread[index]
    if dtype.kind != "c":
        out = out.real
    out = out.astype(dtype)
    return out if isinstance(like, np.ndarray) else out[()]


UNBROADCAST = {
    "same-shape": (lambda: _f64(3, 4), lambda: _f64(3, 4)),
    "same-shape-transposed": (lambda: _f64(4, 3).T, lambda: _f64(3, 4)),
    "leading-axis": (lambda: _f64(3, 4), lambda: _f64(4)),
    "size1-axis": (lambda: _f64(3, 4), lambda: _f64(3, 1)),
    "both-f32-like": (lambda: _f64(2, 3, 4), lambda: _f32(1, 4)),
    "f32-same-shape-f64-like": (lambda: _f32(3, 4), lambda: _f64(3, 4)),
    "transposed-value": (lambda: _f64(4, 3).T, lambda: _f64(3, 1)),
    "strided-value": (lambda: _f32(6, 5)[::2, ::-2], lambda: _f32(1, 3)),
    "scalar-up": (lambda: 2.0, lambda: _f64(3)),
    "f32-scalar-up": (lambda: np.float32(2.0), lambda: _f32(2, 2)),
    "array-up": (lambda: _f64(4), lambda: _f64(3, 4)),
    "mixed": (lambda: _f64(1, 4), lambda: _f64(3, 1)),
    "to-pyfloat": (lambda: _f32(3, 4), lambda: 1.0),
    "to-f32scalar": (lambda: _f64(3, 4), lambda: np.float32(1)),
    "to-0d": (lambda: _f64(3, 4), lambda: np.array(1.0)),
    "0d-to-0d": (lambda: np.array(2.0), lambda: np.array(1.0)),
    "0d-f64-to-0d-f32": (lambda: np.array(2.0), lambda: np.array(1.0, np.float32)),
    "pyfloat-to-pyfloat": (lambda: 2.5, lambda: 1.0),
    "pyfloat-to-0d-f32": (lambda: 2.5, lambda: np.array(1.0, np.float32)),
    "complex-to-real": (lambda: _f64(3) * (1 + 2j), lambda: _f32(3)),
    "complex-to-real-scalar": (lambda: _f64(2, 3) * (1 + 2j), lambda: 1.0),
    "real-to-complex": (lambda: _f64(2, 3), lambda: _f64(3) * 1j),
    "int-like-keeps-float": (lambda: _f64(3, 4), lambda: np.arange(4)),
    "int-value-to-float": (lambda: np.arange(12).reshape(3, 4), lambda: _f32(3, 1)),
}


@pytest.mark.parametrize(("name", "value", "like"), _cases("unbroadcast", UNBROADCAST))
def test_unbroadcast(name: str, value: Callable, like: Callable) -> None:
    _run(name, lambda: (value(), like()), _unbroadcast_ref)


def test_unbroadcast_returns_value_itself() -> None:
    for shape, layout in (((3, 4), "C"), ((0,), "C"), ((4, 3), "T")):
        value = np.ones(shape) if layout == "C" else np.ones(shape).T
        like = np.zeros(value.shape)
        assert ad.unbroadcast(value, like) is value
        result = _unbroadcast(value, like)
        assert result.ctypes.data == value.ctypes.data and result.strides == value.strides
    for value, like in ((np.float32(2), np.float32(1)), (2.0, 1.0), (np.array(2.0), np.ones(()))):
        assert ad.unbroadcast(value, like) is value


def test_unbroadcast_incompatible() -> None:
    for func in (ad.unbroadcast, _unbroadcast):
        with pytest.raises(ValueError):
            func(np.ones(3), np.ones(4))


BROADCAST_LIKE = {
    "scalar-up": (lambda: 2.0, lambda: _f32(3)),
    "f32-scalar-up": (lambda: np.float32(2.0), lambda: _f64(2, 2)),
    "0d-up": (lambda: np.array(2.0, np.float32), lambda: _f64(2, 3)),
    "leading-axis": (lambda: _f64(4), lambda: _f32(3, 4)),
    "size1-axis": (lambda: _f32(3, 1), lambda: _f64(3, 4)),
    "strided": (lambda: _f32(6, 5)[:1, ::-2], lambda: _f64(2, 3)),
    "same-shape": (lambda: _f64(4, 3).T, lambda: _f64(3, 4)),
    "like-scalar": (lambda: 2.5, lambda: np.float32(1)),
    "scalar-to-0d": (lambda: 2.5, lambda: np.array(1.0)),
}


def _broadcast_like_ref(value: Any, like: Any) -> Any:
    if not isinstance(like, np.ndarray) or np.shape(value) == like.shape:
        return value
    return np.broadcast_to(value, like.shape).copy()


@pytest.mark.parametrize(("name", "value", "like"), _cases("broadcast_like", BROADCAST_LIKE))
def test_broadcast_like(name: str, value: Callable, like: Callable) -> None:
    interpreted, compiled = _run(name, lambda: (value(), like()), _broadcast_like_ref)
    if np.shape(value()) != np.shape(like()):
        for result in (interpreted, compiled):
            assert result.flags.writeable and result.flags.c_contiguous


def test_broadcast_like_same_shape_is_value() -> None:
    value = _f64(4, 3).T
    assert ad.broadcast_like(value, np.ones((3, 4))) is value
    assert _broadcast_like(value, np.ones((3, 4))).ctypes.data == value.ctypes.data


# ---------------------------------------------------------------------------------------
# index_add.
# ---------------------------------------------------------------------------------------

_REPEATS = np.array([0, 2, 2, -1, 0, 2])

INDEX_ADD = {
    "int": (lambda: _f64(6), lambda: 2, lambda: 1.5),
    "negative-int": (lambda: _f64(6), lambda: -1, lambda: 1.5),
    "int-row": (lambda: _f64(3, 4), lambda: 1, lambda: _f64(4)),
    "slice-step": (lambda: _f64(7), lambda: slice(1, None, 2), lambda: _f64(3)),
    "slice-negative-step": (lambda: _f32(7), lambda: slice(None, None, -2), lambda: 0.5),
    "slice-empty": (lambda: _f64(4), lambda: slice(3, 1), lambda: 1.0),
    "none": (lambda: _f64(3), lambda: None, lambda: _f64(1, 3)),
    "ellipsis-0d": (lambda: np.array(1.0), lambda: Ellipsis, lambda: 2.0),
    "tuple-basic": (
        lambda: _f64(4, 5, 3),
        lambda: (1, slice(None, None, -2), None),
        lambda: _f64(3, 1, 1),
    ),
    "tuple-empty-0d": (lambda: np.array(1.0), lambda: (), lambda: 2.0),
    "array-repeats": (lambda: _f64(5), lambda: _REPEATS.copy(), lambda: _f64(6)),
    "array-repeats-f32": (lambda: _f32(5), lambda: _REPEATS.copy(), lambda: 1.0),
    "array-2d-repeats": (
        lambda: _f64(5),
        lambda: np.array([[0, 1], [1, -4]]),
        lambda: _f64(2, 2),
    ),
    "array-rows": (lambda: _f64(4, 3), lambda: _REPEATS.copy(), lambda: _f64(3)),
    "array-then-slice": (
        lambda: _f64(4, 5),
        lambda: (_REPEATS.copy(), slice(1, 4)),
        lambda: _f64(6, 3),
    ),
    "slice-then-array": (
        lambda: _f64(4, 5),
        lambda: (slice(None), _REPEATS.copy()),
        lambda: _f64(6),
    ),
    "array-none-int": (
        lambda: _f64(4, 5, 3),
        lambda: (_REPEATS.copy(), None, 0),
        lambda: _f64(6, 1, 3),
    ),
    "int-slice-array": (
        lambda: _f64(4, 5, 3),
        lambda: (1, slice(None), _REPEATS[:4] % 3),
        lambda: _f64(4, 5),
    ),
    "ellipsis-array": (
        lambda: _f64(2, 3, 4),
        lambda: (Ellipsis, _REPEATS[:4] % 4),
        lambda: 1.0,
    ),
    "transposed-base": (
        lambda: _f64(5, 4).T,
        lambda: (slice(None), _REPEATS.copy()),
        lambda: _f32(4, 1),
    ),
}


@pytest.mark.parametrize(("name", "base", "index", "value"), _cases("index_add", INDEX_ADD))
def test_index_add(name: str, base: Callable, index: Callable, value: Callable) -> None:
    def reference(b: np.ndarray, i: Any, v: Any) -> np.ndarray:
        np.add.at(b, i, v)
        return b

    _run(name, lambda: (base(), index(), value()), reference)
    for func in (ad.index_add, _index_add):  # in place, returning the base
        b = base()
        result = func(b, index(), value())
        assert result.ctypes.data == b.ctypes.data and result.strides == b.strides
        assert np.array_equal(b, reference(base(), index(), value()))


def test_index_add_out_of_bounds() -> None:
    for func in (ad.index_add, _index_add):
        with pytest.raises(IndexError):
            func(np.zeros(3), np.array([0, 3]), 1.0)


# ---------------------------------------------------------------------------------------
# tree_add.
# ---------------------------------------------------------------------------------------

TREE_ADD = {
    "pyfloat": (lambda: 1.5, lambda: 2.0),
    "f32scalar": (lambda: np.float32(1.5), lambda: np.float32(2.0)),
    "0d": (lambda: np.array(1.5), lambda: np.array(2.0)),
    "f32-arrays": (lambda: _f32(3, 4), lambda: _f32(4, 3).T),
    "array-scalar": (lambda: _f64(3), lambda: np.float64(2.0)),
    "tuple": (
        lambda: (1.5, _f32(2, 3), (np.float32(2.0), None)),
        lambda: (0.5, _f32(2, 3), (np.float32(1.0), None)),
    ),
    "namedtuple": (lambda: Pair(_f64(2), 3), lambda: Pair(_f64(2), 4)),
}


def _tree_add_ref(a: Any, b: Any) -> Any:
    if a is None:
        return None
    if isinstance(a, tuple):
        items = [_tree_add_ref(x, y) for x, y in zip(a, b, strict=True)]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    return a + b


@pytest.mark.parametrize(("name", "a", "b"), _cases("tree_add", TREE_ADD))
def test_tree_add(name: str, a: Callable, b: Callable) -> None:
    _run(name, lambda: (a(), b()), _tree_add_ref)


# ---------------------------------------------------------------------------------------
# jac_basis, jac_buffer, jac_unflatten, on single leaves (pytrees:
# tests/autodiff/test_pytree_jacobians.py).
# ---------------------------------------------------------------------------------------

BASIS = {
    "pyfloat": (lambda: 1.5, 0),
    "f32scalar": (lambda: np.float32(2.5), 0),
    "0d": (lambda: np.array(2.5, np.float32), 0),
    "1d-f64": (lambda: _f64(5), 3),
    "2d-f32": (lambda: _f32(3, 4), 6),
    "transposed": (lambda: _f64(4, 3).T, 1),
    "strided": (lambda: _f32(6, 5)[::2, ::-2], 4),
    "complex": (lambda: _f64(2, 2) * 1j, 3),
}


def _basis_ref(x: Any, k: int) -> Any:
    if not isinstance(x, np.ndarray):
        return np.ones((), np.result_type(x))[()]
    out = np.zeros(x.size, x.dtype)
    out[k] = 1
    return out.reshape(x.shape)


@pytest.mark.parametrize(("name", "x", "k"), _cases("jac_basis", BASIS))
def test_basis(name: str, x: Callable, k: int) -> None:
    _run(name, lambda: (x(), k), _basis_ref)


JAC_BUFFER = {
    "f32-f32": (lambda: _f32(2, 3), lambda: _f32(4), np.float32),
    "f32-f64": (lambda: _f32(2), lambda: _f64(3), np.float64),
    "int-int": (lambda: np.arange(3), lambda: np.arange(2), np.float64),
    "int-f32scalar": (lambda: np.arange(3), lambda: np.float32(1), np.float64),
    "bool-f32": (lambda: np.array([True, False]), lambda: _f32(3), np.float32),
    "pyfloat-f32": (lambda: 1.0, lambda: _f32(3), np.float64),
    "f32scalar-f32scalar": (lambda: np.float32(1), lambda: np.float32(1), np.float32),
    "c64-f32": (lambda: np.ones(2, np.complex64), lambda: np.array(1.0, np.float32), np.complex64),
    "0d-transposed": (lambda: np.array(1.0), lambda: _f64(4, 3).T, np.float64),
}


@pytest.mark.parametrize(("name", "out", "x", "dtype"), _cases("jac_buffer", JAC_BUFFER))
def test_jac_buffer(name: str, out: Callable, x: Callable, dtype: Any) -> None:
    interpreted, compiled, _ = _both(name, lambda: (out(), x()))
    shape = (np.size(out()), np.size(x()))
    for result in (interpreted, compiled):
        assert result.shape == shape and result.dtype == dtype
        assert result.flags.c_contiguous and result.flags.writeable


JAC_UNFLATTEN = {
    "arrays": (lambda: _f64(6, 4), lambda: _f64(2, 3), lambda: _f64(4)),
    "scalar-out": (lambda: _f32(1, 6), lambda: 1.0, lambda: _f32(2, 3)),
    "scalar-x": (lambda: _f64(6, 1), lambda: _f64(3, 2), lambda: np.float32(1)),
    "scalars": (lambda: _f32(1, 1) + 3, lambda: 1.0, lambda: np.float32(1)),
    "0d-out-scalar-x": (lambda: _f64(1, 1) + 3, lambda: np.array(1.0), lambda: 2.0),
    "0d-out-array-x": (lambda: _f64(1, 3), lambda: np.array(1.0), lambda: _f64(3)),
}


def _jac_unflatten_ref(jac: np.ndarray, out: Any, x: Any) -> Any:
    if not isinstance(out, np.ndarray) and not isinstance(x, np.ndarray):
        return jac[0, 0]
    return jac.reshape(np.shape(out) + np.shape(x))


@pytest.mark.parametrize(("name", "jac", "out", "x"), _cases("jac_unflatten", JAC_UNFLATTEN))
def test_jac_unflatten(name: str, jac: Callable, out: Callable, x: Callable) -> None:
    _run(name, lambda: (jac(), out(), x()), _jac_unflatten_ref)
