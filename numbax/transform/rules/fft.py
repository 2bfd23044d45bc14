"""``numpy.fft``: every transform is linear, so its JVP is the transform of the tangent,
and its VJP the transpose, with JAX's convention for complex numbers (the transpose,
not the adjoint: no conjugate where the map is complex-linear).

The DFT matrix is symmetric, so the transpose of ``fft`` (``ifft``, ``fftn``...) is the
same transform of the cotangent, in the same normalization, cut or zero-padded back to
the input's shape (``nxrt.fft_resize``: ``n=``/``s=`` pad or cut the input). The real
transforms need more care (as JAX's ``jax/_src/lax/fft.py``):

* ``rfft`` is ``fft`` of a real input, keeping the first ``n // 2 + 1`` coefficients:
  its transpose pads the cotangent to ``n``, takes its ``fft`` and the real part (the
  transpose of reading a real number as a complex one);
* ``irfft`` reads each of its ``n // 2 + 1`` coefficients as two of the full spectrum
  (the coefficient and its conjugate twin) but the zero and Nyquist frequencies: its
  transpose is ``conj(w * rfft(g))`` in the dual normalization, ``w`` those weights
  (``nxrt.hermitian_weights``);
* ``hfft(a) = irfft(conj(a))`` and ``ihfft(a) = conj(rfft(a))`` in the swapped
  normalization follow, the transpose of ``conj`` being ``conj``;
* the n-dimensional forms are the one-dimensional ones along each axis in turn, the real
  step along the last.

``fftshift``/``ifftshift`` are each other's inverse permutation; ``fftfreq(n, d)`` is
``k / (n d)``, whose derivative in the spacing ``d`` is ``-ans / d``.

Batching runs the transform on the batch with its axes shifted past the batch axis.
Derivatives of derivatives stay FFTs: the helpers are linear and have their own rules
here. Under ``jit``, ``numpy.fft`` compiles through rocket-fft
(``numba_backend/runtime/fft.py``).
"""

import ast

import numpy as np

from numbax.runtime import nxrt
from numbax.transform.rules.batch_kinds import (
    BatchOp,
    Decline,
    _with_arguments,
    repeated,
    scan,
    shifted_axis,
)
from numbax.transform.rules.registry import (
    SELF_ADJOINT,
    checked_elsewhere,
    define,
    nondifferentiable,
)

# Checked by test_fft.py rather than from samples: complex results need a real function
# around them, and rocket-fft compiles slowly, so jit compiles one program for them all.
CHECKED = checked_elsewhere("tests/autodiff/test_fft.py: complex results, one jit program")


# -- batching rules --------------------------------------------------------------------
def _only_batched(op: BatchOp, param: str) -> None:
    others = [p for p in op.bound if p != param and op.is_batched(p)]
    if others:
        raise Decline(f"{op.name} with a batched {others[0]!r}")


def _constant_axes(op: BatchOp, param: str) -> object:
    """A constant argument, also when normalizing made its tuple a variable whose
    elements are constants (``axes=(0, 1)``)."""
    try:
        return op.constant(param)
    except Decline:
        elements = op.elements(param)
        if elements is None:
            raise
        try:
            return tuple(ast.literal_eval(source) for source, _ in elements)
        except (ValueError, SyntaxError):
            raise Decline(f"{op.name}: {param} is not a constant") from None


def _along_axis(op: BatchOp) -> tuple[str, int | None]:
    """A one-dimensional transform of each example: its axis shifted past the batch's."""
    if op.batched:
        _only_batched(op, "a")
    return scan("a", "axis")(op)


def _along_axes(param: str) -> object:
    """An n-dimensional transform (or shift) of each example along ``axes`` (None: the
    last ``len(s)`` axes, or all of them), shifted past the batch axis."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        rank = op.value(param).rank
        if not op.batched:
            return "", rank
        _only_batched(op, param)
        if rank is None:
            raise Decline(f"{op.name} of an argument whose rank is not known")
        axes = _constant_axes(op, "axes")
        if axes is None:
            s = _constant_axes(op, "s") if "s" in op.bound else None
            count = rank if s is None else len(s)
            axes = tuple(range(rank - count, rank))
        return _with_arguments(op, {"axes": repr(shifted_axis(axes, rank, op.name))}), rank

    return rule


def _resized(op: BatchOp) -> tuple[str, int | None]:
    """``fft_resize`` of the batch: the side the batch shares repeated over it."""
    rank = op.value("like").rank
    if not op.batched:
        return "", rank
    sources = {p: op.text(p) if op.is_batched(p) else repeated(op.text(p)) for p in op.bound}
    return f"nxrt.fft_resize({sources['value']}, {sources['like']})", rank


def _weighted(op: BatchOp) -> tuple[str, int | None]:
    """``hermitian_weights`` of the batch, along the example's axis shifted."""
    rank = op.value("value").rank
    if not op.batched:
        return "", rank
    if op.is_batched("axes") or rank is None:
        raise Decline(f"{op.name} along axes not known")
    axes = shifted_axis(_constant_axes(op, "axes"), rank, op.name)
    value, like = (
        op.text(p) if op.is_batched(p) else repeated(op.text(p)) for p in ("value", "like")
    )
    return f"nxrt.hermitian_weights({value}, {like}, {axes!r})", rank


def _length(op: BatchOp) -> tuple[str, int | None, bool]:
    """``fft_length`` is the same for every example: the example's axis, shifted."""
    if not op.batched:
        return "", 0
    _only_batched(op, "a")
    axis = shifted_axis(op.constant("axis"), op.rank("a"), op.name)
    return _with_arguments(op, {"axis": repr(axis)}), 0, False


def _shared(op: BatchOp) -> tuple[str, int | None]:
    if op.batched:
        raise Decline(f"{op.name} of a batched argument")
    return "", 0


def _frequencies(op: BatchOp) -> tuple[str, int | None]:
    """``fftfreq(n, d)`` of a batch of spacings: ``fftfreq(n)`` divided by each."""
    if not op.batched:
        return "", 1
    _only_batched(op, "d")
    unit = _with_arguments(op, {"d": "1.0"})
    return f"{unit} / {op.text('d')}[:, None]", 1


# -- the transforms ------------------------------------------------------------------------
DUAL = "nxrt.fft_dual_norm(norm)"
AXES = "nxrt.fft_axes(a, s, axes)"
ONE_D = "a, n=None, axis=-1, norm=None, out=None"
N_D = "a, s=None, axes=None, norm=None, out=None"
TWO_D = "a, s=None, axes=(-2, -1), norm=None, out=None"

# fmt: off
#      operation, parameters (NumPy's)
#      linear: the JVP, the transform of the tangent
#      vjp: its transpose
for fn, name in ((np.fft.fft, "fft"), (np.fft.ifft, "ifft")):
    define(fn, ONE_D,
           linear=f"np.fft.{name}(a, n, axis, norm)",
           vjp=f"nxrt.fft_resize(np.fft.{name}(g, None, axis, norm), a)",
           batch=_along_axis, samples=CHECKED)
for fn, name, signature in ((np.fft.fftn, "fftn", N_D), (np.fft.fft2, "fft2", TWO_D),
                            (np.fft.ifftn, "ifftn", N_D), (np.fft.ifft2, "ifft2", TWO_D)):
    inverse = "i" if name.startswith("i") else ""
    define(fn, signature,
           linear=f"np.fft.{name}(a, s, axes, norm)",
           vjp=f"nxrt.fft_resize(np.fft.{inverse}fftn(g, None, {AXES}, norm), a)",
           batch=_along_axes("a"), samples=CHECKED)
define(np.fft.rfft, ONE_D,
       linear="np.fft.rfft(a, n, axis, norm)",
       vjp="nxrt.fft_resize(np.fft.fft(g, nxrt.fft_length(a, n, axis), axis, norm), a)",
       batch=_along_axis, samples=CHECKED)
define(np.fft.irfft, ONE_D,
       linear="np.fft.irfft(a, n, axis, norm)",
       vjp=f"nxrt.fft_resize(np.conj(nxrt.hermitian_weights("
           f"np.fft.rfft(g, None, axis, {DUAL}), g, axis)), a)",
       batch=_along_axis, samples=CHECKED)
define(np.fft.hfft, ONE_D,
       linear="np.fft.hfft(a, n, axis, norm)",
       vjp="nxrt.fft_resize(nxrt.hermitian_weights("
           "np.fft.rfft(g, None, axis, norm), g, axis), a)",
       batch=_along_axis, samples=CHECKED)
define(np.fft.ihfft, ONE_D,
       linear="np.fft.ihfft(a, n, axis, norm)",
       vjp=f"nxrt.fft_resize(np.fft.fft(np.conj(g), nxrt.fft_length(a, n, axis), axis, "
           f"{DUAL}), a)",
       batch=_along_axis, samples=CHECKED)
for fn, name, signature in ((np.fft.rfftn, "rfftn", N_D), (np.fft.rfft2, "rfft2", TWO_D)):
    define(fn, signature,
           linear=f"np.fft.{name}(a, s, axes, norm)",
           vjp=f"nxrt.fft_resize(np.fft.fftn(g, nxrt.fft_shape(a, s, axes), {AXES}, norm), a)",
           batch=_along_axes("a"), samples=CHECKED)
define(np.fft.irfftn, N_D,
       linear="np.fft.irfftn(a, s, axes, norm)",
       vjp=f"nxrt.fft_resize(np.conj(nxrt.hermitian_weights("
           f"np.fft.rfftn(g, None, {AXES}, {DUAL}), g, {AXES})), a)",
       batch=_along_axes("a"), samples=CHECKED)
define(np.fft.irfft2, TWO_D,
       linear="np.fft.irfft2(a, s, axes, norm)",
       vjp=f"nxrt.fft_resize(np.conj(nxrt.hermitian_weights("
           f"np.fft.rfftn(g, None, {AXES}, {DUAL}), g, {AXES})), a)",
       batch=_along_axes("a"), samples=CHECKED)
define(np.fft.fftshift, "x, axes=None",
       linear="np.fft.fftshift(x, axes)",
       vjp="np.fft.ifftshift(g, axes)",
       batch=_along_axes("x"), samples=CHECKED)
define(np.fft.ifftshift, "x, axes=None",
       linear="np.fft.ifftshift(x, axes)",
       vjp="np.fft.fftshift(g, axes)",
       batch=_along_axes("x"), samples=CHECKED)
# k / (n d): only the spacing d has a derivative
for fn in (np.fft.fftfreq, np.fft.rfftfreq):
    define(fn, "n, d=1.0, device=None",
           jvp={"d": "-ans * dd / d"},
           vjp={"d": "nxrt.unbroadcast(-g * ans / d, d)"},
           batch=_frequencies, samples=CHECKED)

# -- the helpers of the transposes (numbax/runtime/fft.py), closed under differentiation
define(nxrt.fft_resize, "value, like",
       linear="nxrt.fft_resize(value, like)",      vjp="nxrt.fft_resize(g, value)",
       batch=_resized, samples=["value[3, 4], np.zeros((2, 6))", "value[3, 4], np.zeros((3, 4))"])
define(nxrt.hermitian_weights, "value, like, axes",
       linear="nxrt.hermitian_weights(value, like, axes)", vjp=SELF_ADJOINT,
       batch=_weighted, samples=["value[3, 4], np.zeros((3, 6)), 1",
                                 "value[3, 4], np.zeros((5, 7)), (0, -1)"])
# fmt: on
nondifferentiable([nxrt.fft_length], batch=_length)
nondifferentiable([nxrt.fft_dual_norm], batch=_shared)
nondifferentiable([nxrt.fft_axes, nxrt.fft_shape])
