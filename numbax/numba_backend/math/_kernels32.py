"""float32 scalar kernels for ``elementary``: branch-free, so loops calling them vectorize.

Every kernel takes and returns float32 and computes in float32 (16 lanes per AVX-512
register, 8 per AVX2 one) except ``power``, which goes through float64 for accuracy.
Constants are explicit ``np.float32``: in Numba, float32 op Python float is float64,
which would silently halve the SIMD width.

Conventions: special inputs (NaN, +-inf, 0, -0, subnormals, over/underflow) are
handled with ``select`` on the final value or by clamping the input (a clamp written
with ``select`` lets NaN through), never with branches. Errors quoted are the maximum
measured over dense grids and random bit patterns against the exact result, in ulp
(0.5 is correctly rounded); tests/numba_backend/test_elementary.py checks them.

Polynomial coefficients are minimax (Remez exchange, computed with mpmath at 60
digits) for the stated function and interval, rounded to float32; "error" next to a
polynomial is its approximation error after rounding the coefficients.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from numbax.numba_backend.caching import runtime_cache
from numbax.numba_backend.math import _kernels64 as _k64
from numbax.numba_backend.math._intrinsics import (
    as_float32,
    as_int,
    copysign,
    fabs,
    fdiv,
    fma,
    select,
)

F = np.float32
_kernel = runtime_cache.njit(error_model="numpy")
# The helpers of the kernels above: inlined by Numba (in Numba IR) into each caller, so
# a program compiles no function of their own (30 to 50 ms each on an empty cache) and
# LLVM inlines even those too big for its inliner.
_inlined_kernel = numba.njit(error_model="numpy", inline="always")

_ZERO = F(0.0)
_HALF = F(0.5)
_ONE = F(1.0)
_TWO = F(2.0)
_INF = F(np.inf)
_NAN = F(np.nan)
# 1.5 * 2**23: adding it rounds |v| < 2**22 to an integer, which ends up in the low
# mantissa bits (two's complement), so ``as_int(v + SHIFT) - as_int(SHIFT)`` is round(v).
_SHIFT = F(12582912.0)
_SHIFT_BITS = np.int32(0x4B400000)

# ln2 = LN2_HI + LN2_LO with LN2_HI = float32(ln2): fma(k, -LN2_HI, x) is exact for
# the k, x pairs the exp reductions produce (the result fits 24 bits).
_LOG2E = F(1.442695)
_LN2_HI = F(0.6931472)
_LN2_LO = F(-1.9046542e-09)

# exp(r) = 1 + r + r^2 P(r), |r| <= ln2/2, P degree 4; error 2^-27 relative.
_EXP_P0 = F(0.5)
_EXP_P1 = F(0.16666576)
_EXP_P2 = F(0.041666374)
_EXP_P3 = F(0.008363235)
_EXP_P4 = F(0.0013941218)

# expm1(r) = r + r^2 Q(r), |r| <= ln2/2, Q degree 5 (expm1 needs relative accuracy
# near 0, so one degree more than exp); error 2^-27.8.
_EXPM1_Q0 = F(0.5)
_EXPM1_Q1 = F(0.16666667)
_EXPM1_Q2 = F(0.041666463)
_EXPM1_Q3 = F(0.008333286)
_EXPM1_Q4 = F(0.0013933732)
_EXPM1_Q5 = F(0.00019907707)

# 2^r = 1 + r Q(r), |r| <= 1/2, Q degree 5; error 2^-26.
_EXP2_Q0 = F(0.6931472)
_EXP2_Q1 = F(0.2402265)
_EXP2_Q2 = F(0.05550357)
_EXP2_Q3 = F(0.00961803)
_EXP2_Q4 = F(0.0013390982)
_EXP2_Q5 = F(0.00015469868)


@_inlined_kernel
def _scale(p, k):
    """p * 2**k for int k in [-300, 300], p in [0.5, 2]: two exact power-of-two factors
    (each a normal float32), so the single final rounding handles overflow to inf and
    gradual underflow into the subnormals correctly."""
    k1 = k >> 1
    k2 = k - k1
    return p * as_float32((k1 + 127) << 23) * as_float32((k2 + 127) << 23)


@_inlined_kernel
def _exp_core(x, kshift):
    """exp(x) * 2**kshift, for x in [-110, 100] or NaN.

    Reduction: k = round(x / ln2), r = x - k ln2 (two fma, Cody-Waite), |r| <= ln2/2.
    """
    t = fma(x, _LOG2E, _SHIFT)
    kf = t - _SHIFT
    k = as_int(t) - _SHIFT_BITS
    r = fma(kf, -_LN2_HI, x)
    r = fma(kf, -_LN2_LO, r)
    q = fma(_EXP_P4, r, _EXP_P3)
    q = fma(q, r, _EXP_P2)
    q = fma(q, r, _EXP_P1)
    q = fma(q, r, _EXP_P0)
    p = fma(q, r * r, r) + _ONE
    return _scale(p, k + kshift)


@_kernel
def exp(x):
    """e**x; max error 0.99 ulp. Inputs are clamped to [-110, 100] (results 0, inf)."""
    x = select(x > F(100.0), F(100.0), x)
    x = select(x < F(-110.0), F(-110.0), x)
    return _exp_core(x, 0)


@_kernel
def exp2(x):
    """2**x: k = round(x), r = x - k exact, 2^r = 1 + r Q(r); max error 0.8 ulp."""
    x = select(x > F(200.0), F(200.0), x)
    x = select(x < F(-200.0), F(-200.0), x)
    t = x + _SHIFT
    kf = t - _SHIFT
    k = as_int(t) - _SHIFT_BITS
    r = x - kf
    q = fma(_EXP2_Q5, r, _EXP2_Q4)
    q = fma(q, r, _EXP2_Q3)
    q = fma(q, r, _EXP2_Q2)
    q = fma(q, r, _EXP2_Q1)
    q = fma(q, r, _EXP2_Q0)
    return _scale(fma(q, r, _ONE), k)


@_inlined_kernel
def _expm1_core(x):
    """expm1(x) for x in [-30, 100] or NaN (no signed-zero fix-up).

    Same reduction as exp; expm1(x) = 2^k expm1(r) + (2^k - 1) = fma(p, t, t - 1) with
    t = 2^k (t - 1 exact for -24 <= k <= 24; outside, the -1 or the p t term is below
    half an ulp). For k > 127 (x > 88.4) 2^k is not a float32: use t = 2^127 and scale
    the result by 2^(k - 127), which only matters above 2^127 where the -1 is lost anyway.
    """
    t = fma(x, _LOG2E, _SHIFT)
    kf = t - _SHIFT
    k = as_int(t) - _SHIFT_BITS
    r = fma(kf, -_LN2_HI, x)
    r = fma(kf, -_LN2_LO, r)
    q = fma(_EXPM1_Q5, r, _EXPM1_Q4)
    q = fma(q, r, _EXPM1_Q3)
    q = fma(q, r, _EXPM1_Q2)
    q = fma(q, r, _EXPM1_Q1)
    q = fma(q, r, _EXPM1_Q0)
    p = fma(q, r * r, r)
    kk = select(k > 127, np.int64(127), k)
    two_k = as_float32((kk + 127) << 23)
    rest = as_float32((k - kk + 127) << 23)
    return fma(p, two_k, two_k - _ONE) * rest


@_kernel
def expm1(x):
    """e**x - 1, accurate near 0; max error 1.3 ulp."""
    xc = select(x > F(100.0), F(100.0), x)
    xc = select(xc < F(-30.0), F(-30.0), xc)
    y = _expm1_core(xc)
    # |x| < 2^-25: expm1(x) = x to within half an ulp; also keeps -0.0 and subnormals.
    return select(fabs(x) < F(2.9802322e-08), x, y)


@_kernel
def tanh(x):
    """tanh(x) = sign(x) e / (e + 2), e = expm1(2|x|): no cancellation for any x, and
    relative error of e passes through damped by 2 / (e + 2) <= 1. |x| is clamped to 10,
    where tanh rounds to 1. Max error 2.2 ulp."""
    ax = fabs(x)
    ax = select(ax > F(10.0), F(10.0), ax)
    e = _expm1_core(ax + ax)
    e = select(ax < F(1.4901161e-08), ax + ax, e)
    return copysign(fdiv(e, e + _TWO), x)


@_kernel
def sigmoid(x):
    """1 / (1 + e**-x) as 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, e = e**-|x|,
    so nothing overflows and small results keep full relative accuracy. Max error 2.3 ulp."""
    ax = fabs(x)
    ax = select(ax > F(110.0), F(110.0), ax)
    e = _exp_core(-ax, 0)
    num = select(x < _ZERO, e, _ONE)
    return fdiv(num, _ONE + e)


@_kernel
def sinh(x):
    """sinh(x) = sign(x) (e + e / (e + 1)) / 2 with e = expm1(|x|) (no cancellation),
    and e**|x| / 2 (computed as one exp with the halving in the exponent, so it does
    not overflow early) for |x| > 10. Max error 1.9 ulp."""
    ax = fabs(x)
    small = select(ax > F(10.0), F(10.0), ax)
    e = _expm1_core(small)
    e = select(small < F(2.9802322e-08), small, e)
    y = _HALF * (e + fdiv(e, e + _ONE))
    big = _exp_core(select(ax > F(100.0), F(100.0), ax), -1)
    return copysign(select(ax > F(10.0), big, y), x)


@_kernel
def cosh(x):
    """cosh(x) = h + 1 / (4 h) with h = e**|x| / 2 (halving folded into the exponent so
    it does not overflow early). Max error 1.4 ulp."""
    ax = fabs(x)
    ax = select(ax > F(100.0), F(100.0), ax)
    h = _exp_core(ax, -1)
    return h + fdiv(F(0.25), h)


# ---------------------------------------------------------------------------------------
# Logarithms (fdlibm's e_logf.c scheme). x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1
# (exact), s = f / (2 + f), log(1 + f) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R(s^2))
# with R(z) = z P(z), |s| <= 0.1716, P degree 3 (minimax for (2 atanh(s) / s - 2) / z,
# error 2^-25.4, which enters the result multiplied by z s <= 0.005 s).
_LG1 = F(0.6666667)
_LG2 = F(0.40000123)
_LG3 = F(0.285507)
_LG4 = F(0.23333418)
# ln2 with 16 significant bits (k ln2_hi is exact for |k| < 256) plus the rest.
_LOG_LN2_HI = F(0.69314575)
_LOG_LN2_LO = F(1.4286068e-06)
_LOG10_2_HI = F(0.3010254)
_LOG10_2_LO = F(4.605039e-06)
_LOG2E_LO = F(1.925963e-08)
_LOG10E = F(0.4342945)
_LOG10E_LO = F(-1.010305e-08)
_SQRT_HALF_BITS = np.int32(0x3F3504F3)
_MIN_NORMAL = F(1.1754944e-38)


@_inlined_kernel
def _log_reduce(x):
    """(k, f) with x = 2^k (1 + f), f in [sqrt(1/2) - 1, sqrt(2) - 1), for finite x > 0
    including subnormals (pre-scaled by 2^23)."""
    sub = x < _MIN_NORMAL
    xs = select(sub, x * F(8388608.0), x)
    ix = as_int(xs)
    e = (ix - _SQRT_HALF_BITS) >> 23
    m = as_float32(ix - (e << 23))
    k = F(np.int32(e)) - select(sub, F(23.0), _ZERO)
    return k, m - _ONE


@_inlined_kernel
def _log_tail(f):
    """(f^2/2, s (f^2/2 + R)) so that log(1 + f) = f - (f^2/2 - s (f^2/2 + R))."""
    s = fdiv(f, _TWO + f)
    z = s * s
    w = z * z
    r = z * fma(w, _LG3, _LG1) + w * fma(w, _LG4, _LG2)
    hfsq = _HALF * f * f
    return hfsq, s * (hfsq + r)


@_inlined_kernel
def _log_special(x, y):
    """y for 0 < x < inf; log's value at 0 (-inf), < 0 (nan), inf and nan otherwise."""
    ok = (x > _ZERO) & (x < _INF)
    other = select(x == _ZERO, -_INF, select(x < _ZERO, _NAN, x))
    return select(ok, y, other)


@_kernel
def log(x):
    """Natural logarithm; max error 0.8 ulp."""
    k, f = _log_reduce(x)
    hfsq, t = _log_tail(f)
    y = k * _LOG_LN2_HI - ((hfsq - (t + k * _LOG_LN2_LO)) - f)
    return _log_special(x, y)


@_kernel
def log2(x):
    """log2(x) = k + log(1 + f) log2(e), the product with a two-part log2(e); max
    error 1.4 ulp."""
    k, f = _log_reduce(x)
    hfsq, t = _log_tail(f)
    lg = f - (hfsq - t)
    y = k + fma(lg, _LOG2E, lg * _LOG2E_LO)
    return _log_special(x, y)


@_kernel
def log10(x):
    """log10(x) = k log10(2) + log(1 + f) log10(e), both constants in two parts; max
    error 1.5 ulp."""
    k, f = _log_reduce(x)
    hfsq, t = _log_tail(f)
    lg = f - (hfsq - t)
    y = k * _LOG10_2_HI + fma(lg, _LOG10E, fma(k, _LOG10_2_LO, lg * _LOG10E_LO))
    return _log_special(x, y)


@_kernel
def log1p(x):
    """log(1 + x), accurate near 0: u = 1 + x rounded, c = (1 + x) - u exactly (TwoSum),
    log1p(x) = log(u) + c / u, the correction folded into the log sum. Max error 0.8 ulp."""
    u = _ONE + x
    bb = u - _ONE
    c = (_ONE - (u - bb)) + (x - bb)
    k, f = _log_reduce(select(u > _ZERO, u, _ONE))
    hfsq, t = _log_tail(f)
    y = k * _LOG_LN2_HI - ((hfsq - (t + (k * _LOG_LN2_LO + fdiv(c, u)))) - f)
    ok = (x > F(-1.0)) & (x < _INF)
    other = select(x == F(-1.0), -_INF, select(x < F(-1.0), _NAN, x))
    y = select(ok, y, other)
    # |x| < 2^-26: log1p(x) = x within half an ulp; keeps -0.0 and subnormals exact.
    return select(fabs(x) < F(1.4901161e-08), x, y)


# ---------------------------------------------------------------------------------------
# sin and cos (fdlibm's quadrant scheme): n = round(x 2/pi), r = x - n pi/2 in
# [-pi/4, pi/4] with pi/2 = PIO2_1 + PIO2_2 + PIO2_3 (float32 each, fma: x - n PIO2_1 is
# exact), then sin r or cos r by quadrant n mod 4, sign from bit 1 of n (or of n + 1).
# sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2), S and C degree 3 (minimax on
# [0, (pi/4)^2], errors 2^-27.6 and 2^-29.6, times r^2 <= 0.62). The reduction keeps
# full relative accuracy while n PIO2_3's error, n 2^-74, stays far below the smallest
# |r| a float32 can produce: REDUCE_MAX = 2^20 (checked against the floats nearest to
# k pi / 2). Beyond that the array path recomputes with libm, the scalar path branches.
_TWO_OVER_PI = F(0.63661975)
_PIO2_1 = F(1.5707964)
_PIO2_2 = F(-4.371139e-08)
_PIO2_3 = F(-1.7151245e-15)
_S0 = F(-0.16666667)
_S1 = F(0.008333332)
_S2 = F(-0.00019840083)
_S3 = F(2.7249391e-06)
_C0 = F(0.041666668)
_C1 = F(-0.0013888888)
_C2 = F(2.4800596e-05)
_C3 = F(-2.7300504e-07)
REDUCE_MAX = F(1048576.0)


@_inlined_kernel
def _reduce_pio2(x):
    """(r, q): x = q pi/2 + r, |r| <= pi/4, q's low bits (two's complement) in an int."""
    t = fma(x, _TWO_OVER_PI, _SHIFT)
    n = t - _SHIFT
    r = fma(n, -_PIO2_1, x)
    r = fma(n, -_PIO2_2, r)
    r = fma(n, -_PIO2_3, r)
    return r, as_int(t)


@_inlined_kernel
def _sin_cos_poly(r):
    """(sin r, cos r) for |r| <= pi/4; cos with fdlibm's compensated 1 - r^2/2."""
    z = r * r
    s = fma(fma(fma(_S3, z, _S2), z, _S1), z, _S0)
    s = fma(s, z * r, r)
    c = fma(fma(fma(_C3, z, _C2), z, _C1), z, _C0)
    hz = _HALF * z
    w = _ONE - hz
    c = w + fma(c, z * z, (_ONE - w) - hz)
    return s, c


@_kernel
def sin_reduced(x):
    """sin(x) for |x| <= REDUCE_MAX (or inf/nan); max error 1.4 ulp."""
    r, q = _reduce_pio2(x)
    s, c = _sin_cos_poly(r)
    y = select((q & 1) == 0, s, c)
    y = as_float32(as_int(y) ^ ((q & 2) << 30))
    # sin(+-0) = +-0 (the polynomial would turn -0.0 into +0.0).
    return select(x == _ZERO, x, y)


@_kernel
def cos_reduced(x):
    """cos(x) for |x| <= REDUCE_MAX (or inf/nan); max error 1.4 ulp."""
    r, q = _reduce_pio2(x)
    s, c = _sin_cos_poly(r)
    y = select((q & 1) == 0, c, s)
    return as_float32(as_int(y) ^ (((q + 1) & 2) << 30))


@_kernel
def sin(x):
    """sin(x): the branch-free kernel, and libm beyond REDUCE_MAX (a branch)."""
    if fabs(x) > REDUCE_MAX:
        return F(math.sin(x))
    return sin_reduced(x)


@_kernel
def cos(x):
    """cos(x): the branch-free kernel, and libm beyond REDUCE_MAX (a branch)."""
    if fabs(x) > REDUCE_MAX:
        return F(math.cos(x))
    return cos_reduced(x)


# ---------------------------------------------------------------------------------------
@_inlined_kernel
def power(x, y):
    """x**y as exp2(y log2|x|) in float64 (the float64 kernels, ~1 ulp each: the
    product's error, |y log2 x| 2^-52 <= 2^-44 for any finite float32 result, is far
    below a float32 ulp), rounded once to float32, then C99/NumPy special cases.
    Max error 0.5 ulp (correctly rounded but for double-rounding ties)."""
    xd = np.float64(x)
    yd = np.float64(y)
    r = _k64.exp2(yd * _k64.log2(fabs(xd)))
    return F(_k64.power_special(xd, yd, r))
