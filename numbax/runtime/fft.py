"""Helpers of the FFT's derivatives (``transform/rules/fft.py``).

Every ``numpy.fft`` transform is linear, so its JVP is the transform of the tangent and
its VJP its transpose, which is again an FFT: the DFT matrix is symmetric. What is left
around it is bookkeeping, done here:

* ``fft_resize``: the transpose of the zero-padding or cutting that ``n=``/``s=`` do
  (cut or pad back), and of the real-to-complex step of ``rfft`` (the real part);
* ``hermitian_weights``: ``irfft`` reads each of the ``n // 2 + 1`` coefficients it gets
  as two of the full spectrum (itself and its conjugate twin), except the zero
  frequency and, for an even ``n``, the Nyquist one: its transpose weighs them so;
* ``fft_length``, ``fft_axes``, ``fft_shape``: the lengths and axes NumPy defaults to
  (``n=None``: the input's length), which the transposes need spelled out;
* ``fft_dual_norm``: the transpose of a transform scaled by ``1/n`` is a transform in the
  other direction scaled by ``1/n`` too, so ``"backward"`` and ``"forward"`` swap.

All are linear in their first argument (or have no derivative); their rules are with
the FFT's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax.runtime.registry import helper


@helper
def fft_resize(value: Any, like: Any) -> np.ndarray:
    """``value`` cut or zero-padded, axis by axis, to ``like``'s shape (the same rank),
    in like's dtype when that is real or complex (the real part for a real ``like``)."""
    value = np.asarray(value)
    shape = np.shape(like)
    if value.ndim != len(shape):
        raise ValueError(f"fft_resize: rank {value.ndim} to a shape of rank {len(shape)}")
    if value.shape != shape:
        resized = np.zeros(shape, value.dtype)
        common = tuple(slice(0, min(a, b)) for a, b in zip(value.shape, shape, strict=True))
        resized[common] = value[common]
        value = resized
    dtype = np.result_type(like)
    if dtype.kind in "fc" and value.dtype != dtype:
        value = (value.real if dtype.kind == "f" else value).astype(dtype)
    return value


@helper
def hermitian_weights(value: Any, like: Any, axes: Any) -> np.ndarray:
    """``value``, the real FFT along the last of ``axes`` (an axis or a tuple) of an
    array shaped like ``like``, with each coefficient that stands for two of the full
    spectrum doubled: all but the zero frequency and, for an even length, the last."""
    value = np.asarray(value)
    axis = axes[-1] if isinstance(axes, (tuple, list)) else axes
    n = np.shape(like)[axis]
    m = value.shape[axis]
    weights = np.full(m, 2, value.real.dtype)
    weights[0] = 1
    if n % 2 == 0 and m > 1:
        weights[-1] = 1
    shape = [1] * value.ndim
    shape[axis] = m
    return value * weights.reshape(shape)


@helper
def fft_length(a: Any, n: int | None, axis: int) -> int:
    """The length of a one-dimensional transform of ``a`` along ``axis``: ``n``, or
    ``a``'s own length there."""
    return np.shape(a)[axis] if n is None else n


@helper
def fft_axes(a: Any, s: Any, axes: Any) -> tuple[int, ...]:
    """The axes an n-dimensional transform of ``a`` runs along: ``axes``, else the last
    ``len(s)`` axes, else all of them (NumPy's defaults)."""
    if axes is not None:
        return tuple(axes)
    ndim = np.ndim(a)
    count = ndim if s is None else len(s)
    return tuple(range(ndim - count, ndim))


@helper
def fft_shape(a: Any, s: Any, axes: Any) -> tuple[int, ...]:
    """The lengths of an n-dimensional transform of ``a``: ``s``, else a's lengths along
    the axes it runs along."""
    if s is not None:
        return tuple(s)
    shape = np.shape(a)
    return tuple(shape[axis] for axis in fft_axes(a, s, axes))


@helper
def fft_dual_norm(norm: str | None) -> str:
    """The normalization of a transform's transpose: ``"backward"`` (None) and
    ``"forward"`` swap, ``"ortho"`` stays."""
    if norm is None or norm == "backward":
        return "forward"
    if norm == "forward":
        return "backward"
    return norm
