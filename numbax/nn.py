"""Neural-network activations with ``jax.nn``'s names, values and derivative conventions.

Each function is plain NumPy that numbax reads like a user's own helper function: a
call from a function under ``grad``, ``vmap`` or ``jit`` is transformed (or compiled)
with the caller, so no function here needs a rule of its own. Where an activation has
a kink, the derivative there is JAX's: the branch is chosen by ``np.where`` on the same
comparison JAX's ``custom_jvp`` uses (``relu'(0) = 0``, ``leaky_relu'(0) = 1``,
``relu6'(0) = relu6'(6) = 0``). Reductions (``softmax``, ``log_softmax``, ``logsumexp``)
shift by the maximum for stability; the shift cancels in the derivative, as JAX's
``stop_gradient`` on it does.

Under ``jit``, ``axis`` and ``keepdims`` must be constants of the caller (or static
arguments), as for NumPy's own reductions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "celu",
    "elu",
    "gelu",
    "hard_tanh",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "soft_sign",
    "softmax",
    "softplus",
    "standardize",
    "swish",
    "tanh",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = 0.7978845608028654  # sqrt(2 / pi), gelu's tanh approximation


def relu(x: Any) -> Any:
    """``max(x, 0)``; its derivative at 0 is 0, as JAX's."""
    return np.where(x > 0, x, 0.0 * x)


def relu6(x: Any) -> Any:
    """``min(max(x, 0), 6)``; its derivative at 0 and at 6 is 0, as JAX's."""
    return np.where(x > 0, np.where(x < 6, x, 6.0 + 0.0 * x), 0.0 * x)


def sigmoid(x: Any) -> Any:
    """The logistic function ``1 / (1 + exp(-x))``, written with ``tanh`` so that no
    argument overflows."""
    return 0.5 * np.tanh(0.5 * x) + 0.5


def silu(x: Any) -> Any:
    """``x * sigmoid(x)`` (also called ``swish``)."""
    return x * (0.5 * np.tanh(0.5 * x) + 0.5)


swish = silu


def softplus(x: Any) -> Any:
    """``log(1 + exp(x))``, stable for large ``x``."""
    return np.logaddexp(x, 0.0)


def log_sigmoid(x: Any) -> Any:
    """``log(sigmoid(x))`` = ``-softplus(-x)``, stable for large ``|x|``."""
    return -np.logaddexp(-x, 0.0)


def soft_sign(x: Any) -> Any:
    """``x / (|x| + 1)``."""
    return x / (np.abs(x) + 1.0)


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    safe = np.where(x > 0, 0.0 * x, x)  # no overflow in the branch not taken
    return np.where(x > 0, x, alpha * np.expm1(safe))


def celu(x: Any, alpha: Any = 1.0) -> Any:
    """``x`` where positive, ``alpha * (exp(x / alpha) - 1)`` elsewhere."""
    safe = np.where(x > 0, 0.0 * x, x)
    return np.where(x > 0, x, alpha * np.expm1(safe / alpha))


def selu(x: Any) -> Any:
    """Scaled ELU with the self-normalizing constants of Klambauer et al. (2017)."""
    safe = np.where(x > 0, 0.0 * x, x)
    return _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(safe))


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """``x`` where ``x >= 0``, ``negative_slope * x`` elsewhere (derivative 1 at 0, as
    JAX's)."""
    return np.where(x >= 0, x, negative_slope * x)


def hard_tanh(x: Any) -> Any:
    """``x`` clipped to ``[-1, 1]``; its derivative is 1 on ``[-1, 1]`` (bounds included,
    as JAX's) and 0 outside."""
    return np.where(x > 1, 1.0 + 0.0 * x, np.where(x < -1, -1.0 + 0.0 * x, x))


def tanh(x: Any) -> Any:
    """The hyperbolic tangent (``np.tanh``)."""
    return np.tanh(x)


def gelu(x: Any, approximate: bool = True) -> Any:
    """The Gaussian error linear unit ``x * Phi(x)``. ``approximate=True`` (JAX's
    default) is the tanh approximation ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``;
    ``approximate=False`` the exact form ``x/2 (1 + erf(x / sqrt(2)))``, computed here
    as ``x * ndtr(x)`` from ``erfc`` so that it stays accurate for large negative ``x``.
    """
    if approximate:
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1.0 + np.tanh(inner))
    return x * _normal_cdf(x)


def _normal_cdf(x: Any) -> Any:
    """The standard normal CDF, ``erfc(-x / sqrt(2)) / 2``, in plain NumPy.

    NumPy has no ``erf``: this is W. J. Cody's rational Chebyshev approximation of
    ``erfc`` (Math. Comp. 23, 1969) in three ranges of ``|x|``, accurate to about 1e-15
    relative; being NumPy arithmetic, numbax differentiates it like any code. Its
    derivative agrees with the exact density to the approximation's accuracy."""
    z = np.abs(x) * 0.7071067811865476  # |x| / sqrt(2)
    small = z < 0.5
    zs = np.where(small, z, 0.0 * z)
    zz = zs * zs
    erf_small = (
        zs
        * ((((0.1857777061846032 * zz + 3.161123743870566) * zz + 113.864154151050156) * zz
              + 377.485237685302021) * zz + 3209.37758913846947)
        / ((((zz + 23.6012909523441209) * zz + 244.024637934444173) * zz
            + 1282.61652607737228) * zz + 2844.23683343917062)
    )  # fmt: skip
    zm = np.where(small | (z >= 4.0), 1.0 + 0.0 * z, z)
    erfc_mid = (
        np.exp(-zm * zm)
        * ((((((((2.15311535474403846e-8 * zm + 0.564188496988670089) * zm + 8.88314979438837594)
                * zm + 66.1191906371416295) * zm + 298.635138197400131) * zm
              + 881.952221241769090) * zm + 1712.04761263407058) * zm + 2051.07837782607147) * zm
            + 1230.33935479799725)
        / ((((((((zm + 15.7449261107098347) * zm + 117.693950891312499) * zm
                + 537.181101862009858) * zm + 1621.38957456669019) * zm
              + 3290.79923573345963) * zm + 4362.61909014324716) * zm + 3439.36767414372164) * zm
           + 1230.33935480374942)
    )  # fmt: skip
    large = z >= 4.0
    zl = np.where(large, z, 4.0 + 0.0 * z)
    w = 1.0 / (zl * zl)
    erfc_large = (
        np.exp(-zl * zl) / zl
        * (0.5641895835477563 - w * (((((0.0163153871373020978 * w + 0.305326634961232344) * w
            + 0.360344899949804439) * w + 0.125781726111229246) * w + 0.0160837851487422766) * w
            + 6.58749161529837803e-4)
           / (((((w + 2.56852019228982242) * w + 1.87295284992346725) * w
              + 0.527905102951428412) * w + 0.0605183413124413191) * w + 0.00233520497626869185))
    )  # fmt: skip
    erfc_abs = np.where(small, 1.0 - erf_small, np.where(large, erfc_large, erfc_mid))
    return np.where(x < 0, 0.5 * erfc_abs, 1.0 - 0.5 * erfc_abs)


def logsumexp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(a), axis))``, shifted by the maximum so that nothing overflows
    (``jax.nn.logsumexp``; an all ``-inf`` slice gives ``-inf``)."""
    peak = np.max(a, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    total = np.sum(np.exp(a - shift), axis=axis, keepdims=keepdims)
    kept = np.max(a, axis=axis, keepdims=keepdims)  # the shift in the result's shape
    return np.log(total) + np.where(np.isfinite(kept), kept, 0.0)


def softmax(x: Any, axis: Any = -1) -> Any:
    """``exp(x) / sum(exp(x), axis)``, shifted by the maximum along ``axis``."""
    unnormalized = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return unnormalized / np.sum(unnormalized, axis=axis, keepdims=True)


def log_softmax(x: Any, axis: Any = -1) -> Any:
    """``x - logsumexp(x, axis)``, shifted by the maximum along ``axis``."""
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def standardize(x: Any, axis: Any = -1, epsilon: Any = 1e-5) -> Any:
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis`` (JAX's, which also
    takes a given mean and variance: compute those yourself and write the line)."""
    mean = np.mean(x, axis=axis, keepdims=True)
    variance = np.mean(x * x, axis=axis, keepdims=True) - mean * mean
    return (x - mean) / np.sqrt(variance + epsilon)


def one_hot(x: Any, num_classes: int, dtype: Any = np.float64) -> Any:
    """One-hot encoding of the integers ``x`` along a new last axis of length
    ``num_classes`` (entries out of range encode as all zeros, as in JAX); constant to
    derivatives."""
    return (np.expand_dims(x, -1) == np.arange(num_classes)).astype(dtype)
