"""``check_grads``: JAX's check of a function's derivatives against finite differences.

Whoever writes a ``custom_jvp`` or ``custom_vjp`` rule, or a function whose derivative
they doubt, wants the check JAX ships as ``jax.test_util.check_grads`` with the same
name, signature and meaning: forward mode's JVP along a random direction against a
central difference, reverse mode's VJP against that same difference through the inner
product ``<vjp(ct), t> == <ct, jvp(t)>``, and each again on the derivative itself up to
``order``. An error names the mode and order that failed and the largest difference,
as an ``AssertionError`` (what test runners report).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax import tree_util
from numbax.api.autodiff import jvp, vjp
from numbax.codegen.cache import cache_key
from numbax.codegen.load import load_module, module_name

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

EPS = 1e-4
"""The step of the central differences (JAX's)."""

_TOLERANCE = {
    np.dtype(np.float32): 2e-2,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 2e-2,
    np.dtype(np.complex128): 1e-5,
}
"""Default relative and absolute tolerance by dtype (JAX's for gradients): a difference
with step 1e-4 is good to about 1e-8 in float64, and to 1e-3 in float32."""


def check_grads(
    f: Callable,
    args: Sequence[Any],
    order: int,
    modes: Sequence[str] = ("fwd", "rev"),
    atol: float | None = None,
    rtol: float | None = None,
    eps: float | None = None,
) -> None:
    """Check ``f``'s derivatives at ``args`` (a tuple of arrays or pytrees of them)
    against central differences, up to ``order``, in forward (``"fwd"``) and reverse
    (``"rev"``) mode. Raises ``AssertionError`` naming what differs.

    ``atol``/``rtol`` default to 1e-5 for float64 and 2e-2 for float32 values; ``eps``
    (the difference's step) to 1e-4, as in JAX."""
    args = tuple(args)
    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"check_grads: modes are 'fwd' and 'rev', got {sorted(unknown)}")
    step = EPS if eps is None else eps

    def check(f: Callable, args: tuple, order: int, name: str) -> None:
        if "fwd" in modes:
            forward = f"JVP of {name}" if name else "JVP"
            check_jvp(f, functools.partial(jvp, f), args, atol, rtol, step, forward)
            if order > 1:
                check(_pushed_forward(f, len(args)), (*args, *args), order - 1, forward)
        if "rev" in modes:
            reverse = f"VJP of {name}" if name else "VJP"
            check_vjp(f, functools.partial(vjp, f), args, atol, rtol, step, reverse)
            if order > 1:
                check(_pulled_back(f, len(args)), args, order - 1, reverse)

    check(f, args, order, "")


def _pushed_forward(f: Callable, arity: int) -> Callable:
    """``(*primals, *tangents) -> nx.jvp(f, primals, tangents)``, for ``f`` of ``arity``
    arguments (see :func:`_made`)."""
    primals = ", ".join(f"x{i}" for i in range(arity))
    tangents = ", ".join(f"t{i}" for i in range(arity))
    body = f"return jvp(f, ({primals},), ({tangents},))"
    return _made("pushed_forward", f"{primals}, {tangents}", body, f)


def _pulled_back(f: Callable, arity: int) -> Callable:
    """``(*primals) -> pullback(out)`` where ``out, pullback = nx.vjp(f, *primals)``, for
    ``f`` of ``arity`` arguments (see :func:`_made`)."""
    primals = ", ".join(f"x{i}" for i in range(arity))
    body = f"out, pullback = vjp(f, {primals})\n        return pullback(out)"
    return _made("pulled_back", primals, body, f)


def _made(name: str, parameters: str, body: str, f: Callable) -> Callable:
    """A function ``name(parameters)`` running ``body`` with ``f`` its closure value, with
    source the transformations read (they take ``nx.jvp`` and ``nx.vjp`` with each
    argument named: tuple displays, not ``*args``), made by a generated factory."""
    text = (
        f"def {name}_of(f):\n    def {name}({parameters}):\n        {body}\n\n    return {name}\n"
    )
    namespace = {"jvp": jvp, "vjp": vjp}
    module = load_module(module_name(name, cache_key(text)), text, namespace)
    return getattr(module, f"{name}_of")(f)


def check_jvp(
    f: Callable,
    f_jvp: Callable,
    args: tuple,
    atol: float | None = None,
    rtol: float | None = None,
    eps: float = EPS,
    err_msg: str = "",
) -> None:
    """``f_jvp(args, tangents)`` (``functools.partial(nx.jvp, f)``) against ``f`` and a
    central difference along random tangents."""
    rng = np.random.default_rng(0)
    tangents = _random_like(args, rng)
    value, tangent_out = f_jvp(args, tangents)
    _assert_close(value, f(*args), atol, rtol, f"{err_msg or 'JVP'}: primal value")
    expected = numerical_jvp(f, args, tangents, eps)
    _assert_close(tangent_out, expected, atol, rtol, f"{err_msg or 'JVP'}: tangent")


def check_vjp(
    f: Callable,
    f_vjp: Callable,
    args: tuple,
    atol: float | None = None,
    rtol: float | None = None,
    eps: float = EPS,
    err_msg: str = "",
) -> None:
    """``f_vjp(*args)`` (``functools.partial(nx.vjp, f)``) against ``f``, and its pullback
    of a random cotangent against a central difference along random tangents, through
    the inner products ``<pullback(ct), t>`` and ``<ct, jvp(t)>``."""
    rng = np.random.default_rng(1)
    value, pullback = f_vjp(*args)
    _assert_close(value, f(*args), atol, rtol, f"{err_msg or 'VJP'}: primal value")
    tangents = _random_like(args, rng)
    tangent_out = numerical_jvp(f, args, tangents, eps)
    cotangent = _random_like(value, rng)
    pulled = _conjugate(pullback(_conjugate(cotangent)))
    got, want = _inner(tangents, pulled), _inner(tangent_out, cotangent)
    _assert_close(got, want, atol, rtol, f"{err_msg or 'VJP'}: <pullback(ct), t> vs <ct, jvp(t)>")


def numerical_jvp(f: Callable, args: tuple, tangents: tuple, eps: float = EPS) -> Any:
    """``(f(args + eps t) - f(args - eps t)) / 2 eps``, leaf by leaf of the result."""
    plus = f(*_moved(args, tangents, eps))
    minus = f(*_moved(args, tangents, -eps))
    return tree_util.tree_map(lambda a, b: (np.asarray(a) - np.asarray(b)) / (2 * eps), plus, minus)


def _moved(args: tuple, tangents: tuple, step: float) -> tuple:
    return tree_util.tree_map(lambda x, t: np.asarray(x) + step * t, args, tangents)


def _random_like(tree: Any, rng: np.random.Generator) -> Any:
    """Random values of each leaf's shape and dtype (standard normal)."""

    def like(leaf: Any) -> Any:
        leaf = np.asarray(leaf)
        if not np.issubdtype(leaf.dtype, np.inexact):
            raise TypeError(
                f"check_grads differentiates every argument, and one holds {leaf.dtype} "
                "values: pass only float or complex arrays, and bind the others "
                "(functools.partial or a closure)"
            )
        values = rng.standard_normal(leaf.shape)
        if np.issubdtype(leaf.dtype, np.complexfloating):
            values = values + 1j * rng.standard_normal(leaf.shape)
        return np.asarray(values, dtype=leaf.dtype)

    return tree_util.tree_map(like, tree)


def _conjugate(tree: Any) -> Any:
    return tree_util.tree_map(np.conj, tree)


def _inner(a: Any, b: Any) -> Any:
    """The real inner product of two pytrees of one structure."""
    products = tree_util.tree_map(lambda x, y: np.real(np.vdot(x, y)), a, b)
    return sum(tree_util.tree_leaves(products), 0.0)


def _assert_close(got: Any, want: Any, atol: float | None, rtol: float | None, what: str) -> None:
    got_leaves, got_structure = tree_util.tree_flatten(got)
    want_leaves, want_structure = tree_util.tree_flatten(want)
    if got_structure != want_structure:
        raise AssertionError(f"{what}: structure {got_structure} where {want_structure} expected")
    for index, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        default = _TOLERANCE.get(np.result_type(g.dtype, w.dtype), 1e-5)
        where = f"{what} (leaf {index})" if len(got_leaves) > 1 else what
        np.testing.assert_allclose(
            g,
            w,
            rtol=default if rtol is None else rtol,
            atol=default if atol is None else atol,
            err_msg=where,
        )
