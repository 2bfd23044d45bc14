"""Checking derivatives against central finite differences, in float64.

``check_jacobians(f, *args)`` compares numbax's ``jacfwd`` and ``jacrev`` of ``f`` (each
differentiable argument in turn) with a central-difference Jacobian, interpreted and
then under ``nx.jit`` (all the arguments in one compile per mode); a failure names the
function, the argument, the mode and the largest error, so it points at the rule that
broke.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import numbax as nx

EPS = 1e-6


def numeric_jacobian(f: Callable, args: Sequence[Any], argnum: int, eps: float = EPS) -> np.ndarray:
    """d f(*args) / d args[argnum], shape f.shape + x.shape, by central differences."""
    args = list(args)
    x = np.asarray(args[argnum], dtype=np.float64)
    out = np.asarray(f(*args))
    jac = np.zeros(out.shape + x.shape)
    flat = jac.reshape(out.size, x.size)
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        plus = list(args)
        minus = list(args)
        plus[argnum] = _like(x + step, args[argnum])
        minus[argnum] = _like(x - step, args[argnum])
        diff = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * eps)
        flat[:, k] = diff.ravel()
    return jac


def _like(value: np.ndarray, original: Any) -> Any:
    return float(value) if isinstance(original, float) else value


def _compare(label: str, got: Any, want: np.ndarray, rtol: float, atol: float) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, f"{label}: shape {got.shape}, expected {want.shape}"
    err = np.max(np.abs(got - want), initial=0.0)
    np.testing.assert_allclose(
        got, want, rtol=rtol, atol=atol, err_msg=f"{label}: max abs error {err:.3g}"
    )


def check_jacobians(
    f: Callable,
    *args: Any,
    argnums: Sequence[int] | None = None,
    name: str | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    jit: bool = True,
    interpreted: bool = True,
) -> None:
    """jacfwd and jacrev of ``f`` w.r.t. each of ``argnums`` (default: every float
    argument) agree with finite differences, interpreted (``interpreted``: a test that
    checks them interpreted already passes False) and (``jit``) compiled.

    Interpreted, each argument is differentiated on its own; under ``jit`` each mode is
    compiled once for all of them (``argnums=(0, 1)``), as compiling is most of the
    check's time: the compiled code holds the same rules, and a failure still names the
    argument."""
    name = name or getattr(f, "__name__", repr(f))
    if argnums is None:
        argnums = [i for i, a in enumerate(args) if np.result_type(a).kind == "f"]
    argnums = list(argnums)
    wants, places = {}, {}
    for i in argnums:
        wants[i] = numeric_jacobian(f, args, i)
        places[i] = f"{name} w.r.t. argument {i} at {_describe(args)}"
        for mode, transform in MODES if interpreted else ():
            got = transform(f, argnums=i)(*args)
            _compare(f"{mode} of {places[i]}, interpreted", got, wants[i], rtol, atol)
    if not jit or not argnums:
        return
    together = argnums[0] if len(argnums) == 1 else tuple(argnums)
    for mode, transform in MODES:
        compiled = nx.jit(transform(f, argnums=together))(*args)
        each = [compiled] if len(argnums) == 1 else list(compiled)
        for i, got in zip(argnums, each, strict=True):
            _compare(f"{mode} of {places[i]}, under jit", got, wants[i], rtol, atol)


MODES = (("jacfwd", nx.jacfwd), ("jacrev", nx.jacrev))


def _describe(args: Sequence[Any]) -> str:
    parts = []
    for a in args:
        if isinstance(a, np.ndarray):
            parts.append(f"array{a.shape}")
        else:
            parts.append(repr(a))
    return "(" + ", ".join(parts) + ")"
