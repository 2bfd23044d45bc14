"""float64 scalar kernels for ``elementary``: branch-free, so loops calling them vectorize.

Same structure as ``_kernels32`` (read its docstring for the conventions), with the
polynomials of higher degree that double precision needs. Coefficients are minimax
(Remez exchange, mpmath at 60 digits), rounded to float64. Errors are the maximum
measured in the tests against a long-double reference, in ulp.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from numbax.numba_backend.caching import runtime_cache
from numbax.numba_backend.math._intrinsics import (
    as_float64,
    as_int,
    copysign,
    fabs,
    fdiv,
    fma,
    rint,
    select,
)

D = np.float64
_kernel = runtime_cache.njit(error_model="numpy")
# The helpers of the kernels above: inlined by Numba (in Numba IR) into each caller, so
# a program compiles no function of their own (30 to 50 ms each on an empty cache) and
# LLVM inlines even those too big for its inliner.
_inlined_kernel = numba.njit(error_model="numpy", inline="always")

_ZERO = D(0.0)
_HALF = D(0.5)
_ONE = D(1.0)
_TWO = D(2.0)
_INF = D(np.inf)
_NAN = D(np.nan)
# 1.5 * 2**52: see _kernels32._SHIFT.
_SHIFT = D(6755399441055744.0)
_SHIFT_BITS = np.int64(0x4338000000000000)

_LOG2E = D(1.4426950408889634)
_LN2_HI = D(0.6931471805599453)  # float64(ln2): fma(k, -LN2_HI, x) is exact here
_LN2_LO = D(2.3190468138462996e-17)

# exp(r) = 1 + r + r^2 Q(r) and expm1(r) = r + r^2 Q(r): the same Q (it approximates
# (e^r - 1 - r) / r^2), |r| <= ln2/2, degree 10, error 2^-58.5 (times r^2 <= 0.12).
_EXP_Q = (
    D(0.5),
    D(0.1666666666666667),
    D(0.041666666666666685),
    D(0.008333333333326082),
    D(0.0013888888888874292),
    D(0.00019841269875003854),
    D(2.4801587347589403e-05),
    D(2.755725516825538e-06),
    D(2.7557252671452293e-07),
    D(2.5105313374336536e-08),
    D(2.0921670725676503e-09),
)
_Q0, _Q1, _Q2, _Q3, _Q4, _Q5, _Q6, _Q7, _Q8, _Q9, _Q10 = _EXP_Q

# 2^r = 1 + r R(r), |r| <= 1/2, degree 11, error 2^-55 (times r <= 1/2).
_E2 = (
    D(0.6931471805599453),
    D(0.24022650695910072),
    D(0.055504108664821625),
    D(0.009618129107628487),
    D(0.0013333558146406293),
    D(0.00015403530393354558),
    D(1.5252733841784012e-05),
    D(1.3215486823496907e-06),
    D(1.0178056971072335e-07),
    D(7.054891386594214e-09),
    D(4.4558386149468715e-10),
    D(2.5737933012659307e-11),
)
_E2_0, _E2_1, _E2_2, _E2_3, _E2_4, _E2_5, _E2_6, _E2_7, _E2_8, _E2_9, _E2_10, _E2_11 = _E2


@_inlined_kernel
def _scale(p, k):
    """p * 2**k for int k in [-2200, 2200], p in [0.5, 2]; see _kernels32._scale."""
    k1 = k >> 1
    k2 = k - k1
    return p * as_float64((k1 + 1023) << 52) * as_float64((k2 + 1023) << 52)


@_inlined_kernel
def _expm1_poly(r):
    """expm1(r) for |r| <= ln2/2 (Estrin's scheme: shorter dependency chains)."""
    r2 = r * r
    r4 = r2 * r2
    r8 = r4 * r4
    a = fma(_Q1, r, _Q0)
    b = fma(_Q3, r, _Q2)
    c = fma(_Q5, r, _Q4)
    d = fma(_Q7, r, _Q6)
    e = fma(_Q9, r, _Q8)
    ab = fma(b, r2, a)
    cd = fma(d, r2, c)
    ef = fma(_Q10, r2, e)
    q = fma(ef, r8, fma(cd, r4, ab))
    return fma(q, r2, r)


@_inlined_kernel
def _exp_core(x, xlo, kshift):
    """exp(x + xlo) * 2**kshift for x in [-760, 720] or NaN, |xlo| tiny.

    k = round(x / ln2), r = x - k ln2 (fma, Cody-Waite) + xlo, |r| <= ln2/2.
    """
    t = fma(x, _LOG2E, _SHIFT)
    kf = t - _SHIFT
    k = as_int(t) - _SHIFT_BITS
    r = fma(kf, -_LN2_HI, x)
    r = fma(kf, -_LN2_LO, r) + xlo
    return _scale(_expm1_poly(r) + _ONE, k + kshift)


@_kernel
def exp(x):
    """e**x; max error 0.97 ulp (inputs clamped to [-760, 720]: results 0, inf)."""
    x = select(x > D(720.0), D(720.0), x)
    x = select(x < D(-760.0), D(-760.0), x)
    return _exp_core(x, _ZERO, 0)


@_kernel
def exp2(x):
    """2**x: k = round(x), r = x - k exact, 2^r = 1 + r R(r); max error 1.4 ulp."""
    x = select(x > D(1100.0), D(1100.0), x)
    x = select(x < D(-1100.0), D(-1100.0), x)
    t = x + _SHIFT
    kf = t - _SHIFT
    k = as_int(t) - _SHIFT_BITS
    r = x - kf
    r2 = r * r
    r4 = r2 * r2
    r8 = r4 * r4
    a = fma(_E2_1, r, _E2_0)
    b = fma(_E2_3, r, _E2_2)
    c = fma(_E2_5, r, _E2_4)
    d = fma(_E2_7, r, _E2_6)
    e = fma(_E2_9, r, _E2_8)
    f = fma(_E2_11, r, _E2_10)
    q = fma(fma(f, r2, e), r8, fma(fma(d, r2, c), r4, fma(b, r2, a)))
    return _scale(fma(q, r, _ONE), k)


@_inlined_kernel
def _expm1_core(x):
    """expm1(x) for x in [-40, 720] or NaN; see _kernels32._expm1_core."""
    t = fma(x, _LOG2E, _SHIFT)
    kf = t - _SHIFT
    k = as_int(t) - _SHIFT_BITS
    r = fma(kf, -_LN2_HI, x)
    r = fma(kf, -_LN2_LO, r)
    p = _expm1_poly(r)
    kk = select(k > 1023, np.int64(1023), k)
    two_k = as_float64((kk + 1023) << 52)
    rest = as_float64((k - kk + 1023) << 52)
    return fma(p, two_k, two_k - _ONE) * rest


@_kernel
def expm1(x):
    """e**x - 1, accurate near 0; max error 1.9 ulp."""
    xc = select(x > D(720.0), D(720.0), x)
    xc = select(xc < D(-40.0), D(-40.0), xc)
    y = _expm1_core(xc)
    return select(fabs(x) < D(5.551115123125783e-17), x, y)  # |x| < 2^-54: x


@_kernel
def tanh(x):
    """tanh(x) = sign(x) e / (e + 2), e = expm1(2|x|) (see _kernels32.tanh); |x| is
    clamped to 22, where tanh rounds to 1. Max error 2.4 ulp."""
    ax = fabs(x)
    ax = select(ax > D(22.0), D(22.0), ax)
    e = _expm1_core(ax + ax)
    e = select(ax < D(2.7755575615628914e-17), ax + ax, e)
    return copysign(fdiv(e, e + _TWO), x)


@_kernel
def sigmoid(x):
    """1 / (1 + e) for x >= 0, e / (1 + e) for x < 0, e = e**-|x|; max error 2.2 ulp."""
    ax = fabs(x)
    ax = select(ax > D(760.0), D(760.0), ax)
    e = _exp_core(-ax, _ZERO, 0)
    num = select(x < _ZERO, e, _ONE)
    return fdiv(num, _ONE + e)


@_kernel
def sinh(x):
    """See _kernels32.sinh; the switch to e**|x| / 2 is at |x| > 22. Max error 2.3 ulp."""
    ax = fabs(x)
    small = select(ax > D(22.0), D(22.0), ax)
    e = _expm1_core(small)
    e = select(small < D(5.551115123125783e-17), small, e)
    y = _HALF * (e + fdiv(e, e + _ONE))
    big = _exp_core(select(ax > D(720.0), D(720.0), ax), _ZERO, -1)
    return copysign(select(ax > D(22.0), big, y), x)


@_kernel
def cosh(x):
    """cosh(x) = h + 1 / (4 h), h = e**|x| / 2; max error 1.5 ulp."""
    ax = fabs(x)
    ax = select(ax > D(720.0), D(720.0), ax)
    h = _exp_core(ax, _ZERO, -1)
    return h + fdiv(D(0.25), h)


# ---------------------------------------------------------------------------------------
# Logarithms: fdlibm's e_log.c scheme (see _kernels32), with R(z) = z P(z), P degree 6
# (minimax for (2 atanh(s) / s - 2) / z on z = s^2 <= 0.0295, error 2^-51.5, which
# enters the result multiplied by z s <= 0.005 s).
_LG1 = D(0.666666666666667)
_LG2 = D(0.39999999999897884)
_LG3 = D(0.2857142862665204)
_LG4 = D(0.22222211031689182)
_LG5 = D(0.18182896209952637)
_LG6 = D(0.15331497733511118)
_LG7 = D(0.14619096981435906)
# ln2 with 32 significant bits (k ln2_hi exact for |k| < 2^21) plus the rest.
_LOG_LN2_HI = D(0.6931471803691238)
_LOG_LN2_LO = D(1.9082149292705877e-10)
_LOG2E_LO = D(2.0355273740931033e-17)
_LOG10E = D(0.4342944819032518)
_LOG10E_LO = D(1.098319650216765e-17)
_LOG10_2_HI = D(0.3010299955494702)
_LOG10_2_LO = D(1.1451100898021838e-10)
_SQRT_HALF_BITS = np.int64(0x3FE6A09E667F3BCD)
_MIN_NORMAL = D(2.2250738585072014e-308)


@_inlined_kernel
def _log_reduce(x):
    """(k, f) with x = 2^k (1 + f), f in [sqrt(1/2) - 1, sqrt(2) - 1), for finite x > 0
    including subnormals (pre-scaled by 2^54)."""
    sub = x < _MIN_NORMAL
    xs = select(sub, x * D(1.8014398509481984e16), x)
    ix = as_int(xs)
    e = (ix - _SQRT_HALF_BITS) >> 52
    m = as_float64(ix - (e << 52))
    k = D(e) - select(sub, D(54.0), _ZERO)
    return k, m - _ONE


@_inlined_kernel
def _log_tail(f):
    """(f^2/2, s (f^2/2 + R)): log(1 + f) = f - (f^2/2 - s (f^2/2 + R))."""
    s = fdiv(f, _TWO + f)
    z = s * s
    w = z * z
    t1 = w * fma(w, fma(w, _LG6, _LG4), _LG2)
    t2 = z * fma(w, fma(w, fma(w, _LG7, _LG5), _LG3), _LG1)
    hfsq = _HALF * f * f
    return hfsq, s * (hfsq + (t1 + t2))


@_inlined_kernel
def _log_special(x, y):
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
    error 1.3 ulp."""
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
    """log(1 + x) = log(u) + c / u, u = 1 + x rounded, c its exact error (TwoSum); max
    error 0.8 ulp."""
    u = _ONE + x
    bb = u - _ONE
    c = (_ONE - (u - bb)) + (x - bb)
    k, f = _log_reduce(select(u > _ZERO, u, _ONE))
    hfsq, t = _log_tail(f)
    y = k * _LOG_LN2_HI - ((hfsq - (t + (k * _LOG_LN2_LO + fdiv(c, u)))) - f)
    ok = (x > D(-1.0)) & (x < _INF)
    other = select(x == D(-1.0), -_INF, select(x < D(-1.0), _NAN, x))
    y = select(ok, y, other)
    return select(fabs(x) < D(2.7755575615628914e-17), x, y)  # |x| < 2^-55: x


# ---------------------------------------------------------------------------------------
# sin and cos: as in _kernels32 (quadrant scheme), pi/2 = PIO2_1 + PIO2_2 + PIO2_3 as
# three float64 (159 bits), S and C degree 5 (errors 2^-54.8 and 2^-58.6). x - n PIO2_1
# is exact and n PIO2_3's error is n 2^-161, so the reduction keeps full relative
# accuracy for |x| <= REDUCE_MAX = 2^30 even for the float64 closest to a multiple of
# pi/2 (|r| ~ 2^-61); beyond it, libm.
_TWO_OVER_PI = D(0.6366197723675814)
_PIO2_1 = D(1.5707963267948966)
_PIO2_2 = D(6.123233995736766e-17)
_PIO2_3 = D(-1.4973849048591698e-33)
_S0 = D(-0.16666666666666666)
_S1 = D(0.008333333333330927)
_S2 = D(-0.00019841269836724896)
_S3 = D(2.755731608493974e-06)
_S4 = D(-2.5051128151935534e-08)
_S5 = D(1.5917861994092955e-10)
_C0 = D(0.041666666666666664)
_C1 = D(-0.0013888888888887382)
_C2 = D(2.480158729874445e-05)
_C3 = D(-2.7557317260634037e-07)
_C4 = D(2.0876143943723927e-09)
_C5 = D(-1.1382464276181854e-11)
REDUCE_MAX = D(1073741824.0)


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
    z2 = z * z
    s = fma(fma(fma(_S5, z, _S4), z2, fma(_S3, z, _S2)), z2, fma(_S1, z, _S0))
    s = fma(s, z * r, r)
    c = fma(fma(fma(_C5, z, _C4), z2, fma(_C3, z, _C2)), z2, fma(_C1, z, _C0))
    hz = _HALF * z
    w = _ONE - hz
    c = w + fma(c, z2, (_ONE - w) - hz)
    return s, c


@_kernel
def sin_reduced(x):
    """sin(x) for |x| <= REDUCE_MAX (or inf/nan); max error 1.3 ulp."""
    r, q = _reduce_pio2(x)
    s, c = _sin_cos_poly(r)
    y = select((q & 1) == 0, s, c)
    y = as_float64(as_int(y) ^ ((q & 2) << 62))
    return select(x == _ZERO, x, y)


@_kernel
def cos_reduced(x):
    """cos(x) for |x| <= REDUCE_MAX (or inf/nan); max error 1.4 ulp."""
    r, q = _reduce_pio2(x)
    s, c = _sin_cos_poly(r)
    y = select((q & 1) == 0, c, s)
    return as_float64(as_int(y) ^ (((q + 1) & 2) << 62))


@_kernel
def sin(x):
    """sin(x): the branch-free kernel, and libm beyond REDUCE_MAX (a branch)."""
    if fabs(x) > REDUCE_MAX:
        return math.sin(x)
    return sin_reduced(x)


@_kernel
def cos(x):
    """cos(x): the branch-free kernel, and libm beyond REDUCE_MAX (a branch)."""
    if fabs(x) > REDUCE_MAX:
        return math.cos(x)
    return cos_reduced(x)


# ---------------------------------------------------------------------------------------
# power. x**y = exp(y log|x|) needs log|x| to about 2^-63 relative (the result's error
# is |y log x| times it, up to 709 times), so log is computed as a double-double:
# s = f / (2 + f) as s_hi + s_lo, log(1 + f) = 2 s + (2/3) s^3 (1 + z P(z)), z = s^2,
# with 2 s and (2/3) s^3 in double-double and the rest (<= 1.8 % of the s^3 term) in
# double. P: minimax for (3 (atanh(s) / s - 1) / z - 1) / z, degree 7, error 2^-55.
_P = (
    D(0.6),
    D(0.4285714285714407),
    D(0.3333333333247226),
    D(0.2727272750555375),
    D(0.2307689219431975),
    D(0.20002219979326066),
    D(0.17559022282207767),
    D(0.17588114275045377),
)
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7 = _P
_TWO_THIRDS_HI = D(0.6666666666666666)
_TWO_THIRDS_LO = D(3.700743415417188e-17)


@_inlined_kernel
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@_inlined_kernel
def _log_dd(ax):
    """log(ax) as (hi, lo), relative error ~2^-68, for finite ax > 0."""
    k, f = _log_reduce(ax)
    u = _TWO + f
    u_lo = f - (u - _TWO)
    s_hi = fdiv(f, u)
    s_lo = fdiv(fma(-s_hi, u, f) - s_hi * u_lo, u)
    z = s_hi * s_hi
    z_lo = fma(s_hi, s_hi, -z) + _TWO * s_hi * s_lo
    a_hi = s_hi * z
    a_lo = fma(s_hi, z, -a_hi) + (s_hi * z_lo + s_lo * z)
    z2 = z * z
    z4 = z2 * z2
    p = fma(
        fma(fma(_P7, z, _P6), z2, fma(_P5, z, _P4)),
        z4,
        fma(fma(_P3, z, _P2), z2, fma(_P1, z, _P0)),
    )
    b_lo = fma(a_hi, z * p, a_lo)
    t_hi = _TWO_THIRDS_HI * a_hi
    t_lo = fma(_TWO_THIRDS_HI, a_hi, -t_hi) + (_TWO_THIRDS_LO * a_hi + _TWO_THIRDS_HI * b_lo)
    h, e1 = _two_sum(k * _LOG_LN2_HI, _TWO * s_hi)
    h, e2 = _two_sum(h, t_hi)
    lo = ((e1 + e2) + (_TWO * s_lo + t_lo)) + k * _LOG_LN2_LO
    hi = h + lo
    return hi, lo - (hi - h)


@_kernel
def power_special(x, y, r):
    """C99 / NumPy special cases of x**y, given r = |x|**y from the core."""
    yint = rint(y) == y  # +-inf count as (even) integers
    yodd = yint & (rint(_HALF * y) != _HALF * y)
    neg = as_int(x) < 0  # sign bit: -0.0 too
    r = select(neg & yodd, -r, r)
    r = select((x < _ZERO) & (x > -_INF) & (not yint), _NAN, r)
    r = select(y == _ZERO, _ONE, r)
    r = select(x == _ONE, _ONE, r)
    return select((x == D(-1.0)) & (fabs(y) == _INF), _ONE, r)


@_inlined_kernel
def power(x, y):
    """x**y = exp(y log|x|) with log|x| and the product in double-double, then the
    special cases. Max error 1.1 ulp."""
    ax = fabs(x)
    finite = (ax > _ZERO) & (ax < _INF)
    hi, lo = _log_dd(select(finite, ax, _ONE))
    hi = select(finite, hi, select(ax == _ZERO, -_INF, ax))  # log 0, log inf, nan
    lo = select(finite, lo, _ZERO)
    z = y * hi
    z_lo = fma(y, hi, -z) + y * lo
    big = not (fabs(z) < D(720.0))
    z_lo = select(big, _ZERO, z_lo)
    z = select(z > D(720.0), D(720.0), z)
    z = select(z < D(-760.0), D(-760.0), z)
    return power_special(x, y, _exp_core(z, z_lo, 0))
