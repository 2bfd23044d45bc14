"""Numba versions of the adjoints of broadcasting (``numbax/runtime/broadcasting.py``):
loops generated per argument types (ranks, which axes are reduced), since Numba has no
sum over axes known only at run time.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.np import reductions
from numbax.numba_backend.np._typing import _keepdims, _wants_literal
from numbax.numba_backend.runtime.common import (
    _always,
    _axis_items,
    _code,
    _define,
    _dtype_of,
    _emit_flags,
    _fail,
    _is_scalar,
    _np,
    _subscript,
    _tuple,
)
from numbax.runtime.broadcasting import broadcast_like, broadcast_reduced, reshape_like, unbroadcast


@overload(unbroadcast)
def _unbroadcast_jit(value, like):
    vdtype = _dtype_of("unbroadcast", value)
    ldtype = _dtype_of("unbroadcast", like)
    target = ldtype if isinstance(ldtype, types.Float | types.Complex) else vdtype
    real = isinstance(vdtype, types.Complex) and not isinstance(target, types.Complex)
    cast = as_dtype(target).type
    part = ".real" if real else ""
    if not isinstance(like, types.Array) or like.ndim == 0:
        # Everything is summed into one element.
        if _is_scalar(value):
            total = "value"
            if vdtype == target and _is_scalar(like):
                return lambda value, like: value
        elif value.ndim == 0 and vdtype == target and not _is_scalar(like):
            return lambda value, like: value
        else:
            total = "reductions.sum(value)"
        if _is_scalar(like):
            result = f"cast({total}{part})"
        else:
            result = f"np.full((), cast({total}{part}), cast)"
        source = f"def impl(value, like):\n    return {result}\n"
        return _define(source, "impl", {"cast": cast, "reductions": reductions})

    lnd = like.ndim
    vnd = value.ndim if isinstance(value, types.Array) else 0
    n = max(lnd, vnd)
    lines = ["def impl(value, like):"]
    if isinstance(value, types.Array) and vnd == lnd and vdtype == target:
        lines.append("    if value.shape == like.shape:")
        lines.append("        return value")
    # Axis k of the broadcast shape is axis k - (n - ndim) of each operand, if any.
    loops, lidx, vidx = [], [], []
    for k in range(n):
        kl, kv = k - (n - lnd), k - (n - vnd)
        lv = f"like.shape[{kl}]" if kl >= 0 else "1"
        vv = f"value.shape[{kv}]" if kv >= 0 else "1"
        lines.append(f"    t{k} = _bdim({vv}, {lv})")
        if kl >= 0:
            lines.append(f"    fl{k} = 1 if {lv} != 1 else 0")
            lidx.append(f"i{k} * fl{k}")
        if kv >= 0:
            lines.append(f"    fv{k} = 1 if {vv} != 1 else 0")
            vidx.append(f"i{k} * fv{k}")
        loops.append(f"for i{k} in range(t{k}):")
    # Accumulate in the wider of the two dtypes (as NumPy sums first, then casts).
    vreal = vdtype.underlying_float if real else vdtype
    acc = as_dtype(vreal) if isinstance(vreal, types.Float | types.Complex) else None
    acc = np.result_type(acc, as_dtype(target)).type if acc is not None else cast
    lines.append("    out = new_arrays.zeros(like.shape, acc)")
    for depth, loop in enumerate(loops):
        lines.append("    " * (depth + 1) + loop)
    item = f"value[{_subscript(vidx)}]" if isinstance(value, types.Array) else "value"
    lines.append("    " * (n + 1) + f"out[{_subscript(lidx)}] += {item}{part}")
    lines.append("    return out" if acc is cast else "    return out.astype(cast)")
    return _define("\n".join(lines) + "\n", "impl", {"cast": cast, "acc": acc})


@overload(broadcast_like)
def _broadcast_like_jit(value, like):
    if not isinstance(like, types.Array):
        return lambda value, like: value
    if _is_scalar(value):
        if like.ndim == 0:
            return lambda value, like: value
        dtype = types.unliteral(value)
        return lambda value, like: np.full(like.shape, value, dtype)
    if not isinstance(value, types.Array):
        raise _fail("broadcast_like", f"expected an array or a number, got {value}")
    if value.ndim > like.ndim:

        def impl(value, like):
            if _always():
                raise ValueError("input operand has more dimensions than allowed")
            return value.copy()

        return impl
    if value.ndim == like.ndim:

        def impl(value, like):
            if value.shape == like.shape:
                return value
            return np.broadcast_to(value, like.shape).copy()

        return impl
    return lambda value, like: np.broadcast_to(value, like.shape).copy()


@overload(broadcast_reduced, prefer_literal=True)
def _broadcast_reduced_jit(value, a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda value, a, axis=None, keepdims=False: numba.literally(keepdims)
    keep = _keepdims("broadcast_reduced", keepdims)
    header = "def impl(value, a, axis=None, keepdims=False):"
    dtype = _dtype_of("broadcast_reduced", value)
    if not isinstance(a, types.Array):
        if isinstance(value, types.Array):
            return lambda value, a, axis=None, keepdims=False: value[()]
        return lambda value, a, axis=None, keepdims=False: value
    n = a.ndim
    code = _code(header, {}, T=_np(dtype).type)
    if _is_scalar(value) or (isinstance(value, types.Array) and value.ndim == 0):
        item = "value" if _is_scalar(value) else "value[()]"
        code(f"return np.full(a.shape, {item}, T)")
        return code.compile("broadcast_reduced")
    items = _axis_items("broadcast_reduced", axis, n)
    count = n if items is None else len(items)
    vnd = value.ndim
    if vnd != (n if keep else n - count):
        raise _fail("broadcast_reduced", f"a value of {vnd} dims for {n} dims less {count}")
    if keep:
        code("v = value")
    else:
        _emit_flags(code, items, n)
        code("j = 0")
        for d in range(n):
            code(f"s{d} = 1", f"if not red[{d}]:", f"    s{d} = value.shape[j]", "    j += 1")
        code(f"v = np.ascontiguousarray(value).reshape({_tuple(f's{d}' for d in range(n))})")
    code("out = new_arrays.empty(a.shape, T)")
    for d in range(n):
        code(f"f{d} = 0 if v.shape[{d}] == 1 else 1")
    for d in range(n):
        code(f"for i{d} in range(a.shape[{d}]):")
        code.depth += 1
    source = _subscript([f"i{d} * f{d}" for d in range(n)])
    code(f"out[{_subscript([f'i{d}' for d in range(n)])}] = v[{source}]")
    code.depth = 1
    code("return out")
    return code.compile("broadcast_reduced")


@overload(reshape_like)
def _reshape_like_jit(value, like):
    if isinstance(like, types.Array):
        if isinstance(value, types.Array):
            return lambda value, like: np.ascontiguousarray(value).reshape(like.shape)
        dtype = types.unliteral(value)
        return lambda value, like: np.full(like.shape, value, dtype)
    if isinstance(value, types.Array):
        return lambda value, like: np.ravel(value)[0]
    return lambda value, like: value
