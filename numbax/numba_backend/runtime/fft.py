"""``numpy.fft`` under ``jit``, and the Numba versions of the FFT's derivative helpers
(``numbax/runtime/fft.py``).

Numba has no FFT. rocket-fft (the ``fft`` extra) registers Numba implementations of
``numpy.fft`` that call pocketfft's successor ducc0, the library behind ``scipy.fft``;
importing it here registers them before anything compiles. Without it, each
``numpy.fft`` function gets an implementation whose typing fails with what to install,
so ``jit`` of an FFT says so at the user's call instead of Numba's "unknown function".
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import errors
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.caching.startup import import_rocket_fft
from numbax.numba_backend.runtime.common import _define, _fail, _is_none
from numbax.runtime.fft import (
    fft_axes,
    fft_dual_norm,
    fft_length,
    fft_resize,
    fft_shape,
    hermitian_weights,
)

rocket_fft = import_rocket_fft()  # importing registers numpy.fft's Numba versions

MISSING = (
    "numbax: numpy.fft.{} under nx.jit needs rocket-fft (Numba has no FFT): "
    "pip install 'numbax[fft]' (or pip install rocket-fft)"
)

FUNCTIONS = (
    "fft ifft rfft irfft hfft ihfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn "
    "fftshift ifftshift fftfreq rfftfreq"
).split()


def _missing(name: str) -> None:
    @overload(getattr(np.fft, name))
    def _refuse(*args, **kwargs):
        raise errors.NumbaTypeError(MISSING.format(name))


if rocket_fft is None:
    for _name in FUNCTIONS:
        _missing(_name)


def _ndim(name: str, ty: types.Type) -> int:
    if not isinstance(ty, types.Array):
        raise _fail(name, f"expected an array, got {ty}")
    return ty.ndim


def _sequence_length(name: str, ty: types.Type) -> int:
    if not isinstance(ty, types.BaseTuple):
        raise _fail(name, f"expected a tuple of ints (under jit, not a list), got {ty}")
    return len(ty)


@overload(fft_resize)
def _fft_resize_jit(value, like):
    ndim = _ndim("fft_resize", value)
    if _ndim("fft_resize", like) != ndim:
        raise _fail("fft_resize", f"rank {ndim} to rank {like.ndim}")
    source, target = value.dtype, like.dtype
    if not isinstance(target, types.Float | types.Complex):
        target = source
    real = isinstance(source, types.Complex) and isinstance(target, types.Float)
    common = ", ".join(f":min(value.shape[{k}], like.shape[{k}])" for k in range(ndim))
    cast = "out.real.astype(target)" if real else "out.astype(target)"
    lines = [
        "def impl(value, like):",
        "    out = np.zeros(like.shape, source)",
        f"    out[{common},] = value[{common},]",
        f"    return {cast}" if source != target else "    return out",
    ]
    scope = {"source": as_dtype(source), "target": as_dtype(target)}
    return _define("\n".join(lines) + "\n", "impl", scope)


@overload(hermitian_weights)
def _hermitian_weights_jit(value, like, axes):
    ndim = _ndim("hermitian_weights", value)
    axis = "axes" if isinstance(axes, types.Integer) else "axes[-1]"
    if axis != "axes":
        _sequence_length("hermitian_weights", axes)
    real = value.dtype.underlying_float if isinstance(value.dtype, types.Complex) else value.dtype
    lines = [
        "def impl(value, like, axes):",
        f"    axis = {axis} % {ndim}",
        "    even = like.shape[axis] % 2 == 0",
        "    out = value * two",
    ]
    for k in range(ndim):
        first = ", ".join("0" if j == k else ":" for j in range(ndim))
        last = ", ".join("-1" if j == k else ":" for j in range(ndim))
        lines += [
            f"    if axis == {k}:",
            f"        out[{first},] = value[{first},]",
            f"        if even and value.shape[{k}] > 1:",
            f"            out[{last},] = value[{last},]",
        ]
    lines.append("    return out")
    return _define("\n".join(lines) + "\n", "impl", {"two": as_dtype(real).type(2)})


@overload(fft_length)
def _fft_length_jit(a, n, axis):
    ndim = _ndim("fft_length", a)
    if _is_none(n):
        return lambda a, n, axis: a.shape[axis % ndim]
    return lambda a, n, axis: n


def _axes_source(name: str, a: types.Type, s: types.Type, axes: types.Type) -> str:
    """Source of the tuple ``fft_axes(a, s, axes)`` gives (NumPy's default axes are
    known when compiling, from the ranks)."""
    ndim = _ndim(name, a)
    if not _is_none(axes):
        count = _sequence_length(name, axes)
        items = [f"axes[{k}]" for k in range(count)]
    else:
        count = ndim if _is_none(s) else _sequence_length(name, s)
        items = [str(k) for k in range(ndim - count, ndim)]
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


@overload(fft_axes)
def _fft_axes_jit(a, s, axes):
    source = f"def impl(a, s, axes):\n    return {_axes_source('fft_axes', a, s, axes)}\n"
    return _define(source, "impl", {})


@overload(fft_shape)
def _fft_shape_jit(a, s, axes):
    if not _is_none(s):
        _sequence_length("fft_shape", s)
        return lambda a, s, axes: s
    ndim = _ndim("fft_shape", a)
    count = ndim if _is_none(axes) else _sequence_length("fft_shape", axes)
    items = [f"a.shape[chosen[{k}] % {ndim}]" for k in range(count)]
    lines = [
        "def impl(a, s, axes):",
        f"    chosen = {_axes_source('fft_shape', a, s, axes)}",
        f"    return ({', '.join(items)}{',' if count == 1 else ''})",
    ]
    return _define("\n".join(lines) + "\n", "impl", {})


register_jitable(fft_dual_norm)
