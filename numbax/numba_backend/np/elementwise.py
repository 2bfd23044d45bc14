"""Elementwise NumPy functions that Numba compiles with other semantics: ``np.sinc``,
``np.angle`` and ``np.clip``, done as NumPy does.

Numba's ``np.sinc`` and ``np.angle`` of a float32 scalar give float64; its ``np.clip``
takes no scalar, no bounds of more dims than ``a``, keeps ``a``'s dtype (NumPy promotes)
and ignores NaN bounds; NumPy 2's ``min=``/``max=`` it does not know. Functions NumPy
defines as ufuncs are not here: the elementwise loops (``loops/elementwise.py``) and the
scalar kernels (``math/``) compile those.

How a call reaches them and compiles: the package's docstring (``np/__init__.py``).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from numbax.numba_backend.np._typing import (
    _fail,
    _family_code,
    _inexact,
    _is_none,
    _is_scalar,
    _npt,
    _promote,
    _real,
    _scalar_type,
)
from numbax.numba_backend.np.weak import weak_target
from numbax.numba_backend.redirects import redirect

__all__ = ["angle", "clip", "sinc"]


@redirect(np.sinc)
def sinc(x: Any) -> Any:
    """``np.sinc(x)``; under jit float32 scalars stay float32 (Numba's give float64)."""
    return np.sinc(x)


@redirect(np.angle)
def angle(z: Any, deg: bool = False) -> Any:
    """``np.angle(z, deg)``; under jit float32 scalars stay float32."""
    return np.angle(z, deg=deg)


@redirect(np.clip)
def clip(
    a: Any,
    a_min: Any = np._NoValue,
    a_max: Any = np._NoValue,
    out: Any = None,
    *,
    min: Any = np._NoValue,
    max: Any = np._NoValue,
) -> Any:
    """``np.clip``, also of scalars and with NumPy 2's ``min=``/``max=`` under jit."""
    return np.clip(a, a_min, a_max, out=out, min=min, max=max)


_code = _family_code()


@register_jitable
def _sinc1(v, pi, tiny):
    """NumPy's formula: ``sin(y) / y`` with ``y = pi * x``, ``x = 0`` replaced by 1e-20."""
    y = pi * (tiny if v == 0 else v)
    return np.sin(y) / y


@overload(sinc)
def _sinc_jit(x):
    dt = _inexact(_scalar_type("sinc", x))
    cast = _npt(dt)
    pi, tiny = cast(np.pi), cast(1e-20)
    if not isinstance(x, types.Array):
        return lambda x: _sinc1(cast(x), pi, tiny)

    def impl(x):
        src = x.ravel()
        out = np.empty(src.size, cast)
        for i in range(src.size):
            out[i] = _sinc1(cast(src[i]), pi, tiny)
        return out.reshape(x.shape)

    return impl


@overload(angle)
def _angle_jit(z, deg=False):
    dt = _scalar_type("angle", z)
    real = _real(_inexact(dt))
    cast = _npt(real)
    zero, degrees = cast(0), cast(180 / np.pi)
    if isinstance(dt, types.Complex):

        @register_jitable
        def one(v):
            return np.arctan2(v.imag, v.real)

    else:

        @register_jitable
        def one(v):
            return np.arctan2(zero, cast(v))

    if not isinstance(z, types.Array):

        def scalar(z, deg=False):
            r = one(z)
            return r * degrees if deg else r

        return scalar

    def impl(z, deg=False):
        src = z.ravel()
        out = np.empty(src.size, cast)
        for i in range(src.size):
            out[i] = one(src[i])
        if deg:
            out *= degrees
        return out.reshape(z.shape)

    return impl


def _bound_type(bound: Any, a: Any) -> types.Type:
    """A scalar bound next to array ``a`` adapts to it, as a Python scalar does in NumPy 2
    (``weak.py``): a bound written as a keyword is not wrapped by the code generator."""
    if isinstance(a, types.Array) and _is_scalar(bound):
        return weak_target(types.unliteral(bound), a) or types.unliteral(bound)
    return _scalar_type("clip", bound)


@overload(clip)
def _clip_jit(a, a_min=None, a_max=None, out=None, min=None, max=None):
    if not _is_none(a_min) and not _is_none(min):
        raise _fail("clip", "pass a_min or min, not both")
    if not _is_none(a_max) and not _is_none(max):
        raise _fail("clip", "pass a_max or max, not both")
    bounds = [
        (expr, ty)
        for expr, ty in (("a_min", a_min), ("min", min), ("a_max", a_max), ("max", max))
        if not _is_none(ty)
    ]
    lo = next((e for e, _ in bounds if e in ("a_min", "min")), None)
    hi = next((e for e, _ in bounds if e in ("a_max", "max")), None)
    result = _promote(_scalar_type("clip", a), *(_bound_type(t, a) for _, t in bounds))
    code = _code("def impl(a, a_min=None, a_max=None, out=None, min=None, max=None):")
    code.names["T"] = _npt(result)
    steps = ([f"v = np.maximum(v, {lo})"] if lo else []) + (
        [f"v = np.minimum(v, {hi})"] if hi else []
    )
    if builtins.all(_is_scalar(t) for _, t in bounds):
        # Scalar bounds: one pass, NaN propagating as in np.minimum(np.maximum(a, lo), hi).
        code(*(f"{e} = T({e})" for e, _ in bounds))
        if not isinstance(a, types.Array):
            if not _is_none(out):
                raise _fail("clip", "out= needs an array a")
            code("v = T(a)", *steps, "return v")
            return code.compile("clip")
        code("src = a.ravel()", "r = np.empty(src.size, T)", "for i in range(src.size):")
        code("    v = T(src[i])", *("    " + step for step in steps), "    r[i] = v")
        code("r = r.reshape(a.shape)")
    else:
        # Array bounds broadcast with a, as the ufuncs do.
        code("v = a", *steps, "r = np.asarray(v).astype(T)")
    if _is_none(out):
        code("return r")
    else:
        code("out[...] = r", "return out")
    return code.compile("clip")
