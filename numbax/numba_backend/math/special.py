"""SciPy's special functions as scalar float64 kernels that Numba compiles (Numba
compiles no ``scipy.special``): each matches SciPy to about 1e-13 relative, with SciPy's
values at 0, infinities, nan, poles and the edges of the domain.

Where SciPy's implementation is Cephes (Moshier's library), the same method and
coefficients are used: ``i0e``/``i1e`` (Chebyshev expansions on [0, 8] and [8, inf)),
``ndtri`` (rational approximations in y - 1/2 and in sqrt(-2 log y)), ``psi`` (the
recurrence to [1, 2], a rational approximation there, the asymptotic series above 10)
and the Hurwitz zeta function behind ``polygamma`` (Euler-Maclaurin summation).
Others are written from their definitions with the library functions Numba has
(``math.erf``, ``math.erfc``, ``math.lgamma``, ``math.gamma``): ``erfinv`` starts
from ``ndtri`` and takes Newton steps on ``erf`` (or on ``erfc`` near +-1, where ``1 - y``
is exact); ``betaln`` of a large argument uses Stirling's series for the difference of
two log-gammas, which would otherwise cancel.

The kernels are plain functions of Python floats (``register_jitable``), so they run
interpreted too; ``runtime/special.py`` applies them elementwise under ``jit``.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

EULER = 0.5772156649015329
SQRT1_2 = math.sqrt(0.5)
SQRT2 = math.sqrt(2.0)
SQRT_2PI = math.sqrt(2 * math.pi)
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
MACHEP = 2.0**-53

# -- Chebyshev series (Cephes' chbevl) and the Bessel functions of orders 0 and 1 ------

# exp(-x) I0(x) on [0, 8], in (x / 2 - 2)
I0_SMALL = np.array(
    [-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16]
    + [1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14]
    + [-4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11]
    + [9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9]
    + [-1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7]
    + [1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5]
    + [-5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4]
    + [1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2]
    + [-2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2]
    + [1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1]
)
# exp(-x) sqrt(x) I0(x) on [8, inf), in (32 / x - 2)
I0_LARGE = np.array(
    [-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17]
    + [3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16]
    + [1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15]
    + [-4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13]
    + [7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11]
    + [-3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10]
    + [3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7]
    + [2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3]
    + [8.04490411014108831608e-1]
)
# exp(-x) I1(x) / x on [0, 8]
I1_SMALL = np.array(
    [2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16]
    + [-1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14]
    + [3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11]
    + [-6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9]
    + [9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7]
    + [-8.56872026469545474066e-7, 3.47025130813767847674e-6, -1.32731636560394358279e-5]
    + [4.78156510755005422638e-5, -1.61760815825896745588e-4, 5.12285956168575772895e-4]
    + [-1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2]
    + [2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1]
    + [-1.76416518357834055153e-1, 2.52587186443633654823e-1]
)
# exp(-x) sqrt(x) I1(x) on [8, inf)
I1_LARGE = np.array(
    [7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17]
    + [-3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16]
    + [-1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14]
    + [4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13]
    + [-7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11]
    + [3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10]
    + [-3.83538038596423702205e-9, -2.63146884688951950684e-8, -2.51223623787020892529e-7]
    + [-3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3]
    + [7.78576235018280120474e-1]
)


@register_jitable
def chebyshev(x, coefficients):
    """Clenshaw's sum of a Chebyshev series in the Cephes convention (half the first
    term; ``x`` already mapped to [-2, 2])."""
    b0 = coefficients[0]
    b1 = 0.0
    b2 = 0.0
    for k in range(1, len(coefficients)):
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + coefficients[k]
    return 0.5 * (b0 - b2)


@register_jitable
def i0e(x):
    """exp(-|x|) I0(x)."""
    z = abs(x)
    if z <= 8.0:
        return chebyshev(z / 2.0 - 2.0, I0_SMALL)
    return chebyshev(32.0 / z - 2.0, I0_LARGE) / math.sqrt(z)


@register_jitable
def i1e(x):
    """exp(-|x|) I1(x)."""
    z = abs(x)
    if z <= 8.0:
        z = chebyshev(z / 2.0 - 2.0, I1_SMALL) * z
    else:
        z = chebyshev(32.0 / z - 2.0, I1_LARGE) / math.sqrt(z)
    return -z if x < 0.0 else z


@register_jitable
def i0(x):
    """I0(x); nan at +-inf, as SciPy (Cephes multiplies inf by 0 there)."""
    z = abs(x)
    if z <= 8.0:
        return math.exp(z) * chebyshev(z / 2.0 - 2.0, I0_SMALL)
    return math.exp(z) * chebyshev(32.0 / z - 2.0, I0_LARGE) / math.sqrt(z)


@register_jitable
def i1(x):
    """I1(x)."""
    z = abs(x)
    if z <= 8.0:
        z = chebyshev(z / 2.0 - 2.0, I1_SMALL) * z * math.exp(z)
    else:
        z = math.exp(z) * chebyshev(32.0 / z - 2.0, I1_LARGE) / math.sqrt(z)
    return -z if x < 0.0 else z


# -- the error function and the normal distribution ----------------------------------


@register_jitable
def erf(x):
    """The error function (the C library's)."""
    return math.erf(x)


@register_jitable
def erfc(x):
    """1 - erf(x), without cancellation (the C library's)."""
    return math.erfc(x)


# ndtri: y - 1/2 for |y - 1/2| <= 3/8, then sqrt(-2 log y) in [2, 8) and [8, 64)
NDTRI_P0 = np.array(
    [-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1]
    + [1.39312609387279679503e1, -1.23916583867381258016e0]
)
NDTRI_Q0 = np.array(
    [1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1]
    + [-2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1]
    + [1.59056225126211695515e1, -1.18331621121330003142e0]
)
NDTRI_P1 = np.array(
    [4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1]
    + [4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0]
    + [-1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4]
)
NDTRI_Q1 = np.array(
    [1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1]
    + [1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1]
    + [-3.80806407691578277194e-2, -9.33259480895457427372e-4]
)
NDTRI_P2 = np.array(
    [3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0]
    + [1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2]
    + [3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9]
)
NDTRI_Q2 = np.array(
    [1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0]
    + [2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4]
    + [2.89247864745380683936e-6, 6.79019408009981274425e-9]
)
EXP_MINUS_2 = 0.1353352832366127


@register_jitable
def polynomial(x, coefficients):
    """Horner's evaluation, the highest power's coefficient first."""
    total = coefficients[0]
    for k in range(1, len(coefficients)):
        total = total * x + coefficients[k]
    return total


@register_jitable
def ndtri(y):
    """The x at which the standard normal distribution function is y."""
    if math.isnan(y) or y < 0.0 or y > 1.0:
        return math.nan
    if y == 0.0:
        return -math.inf
    if y == 1.0:
        return math.inf
    lower = True
    if y > 1.0 - EXP_MINUS_2:
        y = 1.0 - y
        lower = False
    if y > EXP_MINUS_2:
        y = y - 0.5
        y2 = y * y
        x = y + y * (y2 * polynomial(y2, NDTRI_P0) / polynomial(y2, NDTRI_Q0))
        return x * SQRT_2PI
    x = math.sqrt(-2.0 * math.log(y))
    x0 = x - math.log(x) / x
    z = 1.0 / x
    if x < 8.0:
        x1 = z * polynomial(z, NDTRI_P1) / polynomial(z, NDTRI_Q1)
    else:
        x1 = z * polynomial(z, NDTRI_P2) / polynomial(z, NDTRI_Q2)
    x = x0 - x1
    return -x if lower else x


@register_jitable
def ndtr(x):
    """The standard normal distribution function, from erf near 0 and erfc beyond."""
    t = x * SQRT1_2
    z = abs(t)
    if z < SQRT1_2:
        return 0.5 + 0.5 * math.erf(t)
    y = 0.5 * math.erfc(z)
    return 1.0 - y if t > 0 else y


@register_jitable
def log_ndtr(x):
    """log(ndtr(x)): log1p of the upper tail above -1, the log of the lower tail down
    to -20, and below that the asymptotic series of the tail."""
    if math.isnan(x):
        return x
    if x > -1.0:
        return math.log1p(-0.5 * math.erfc(x * SQRT1_2))
    if x > -20.0:
        return math.log(0.5 * math.erfc(-x * SQRT1_2))
    log_lhs = -0.5 * x * x - math.log(-x) - LOG_SQRT_2PI
    total, last, numerator, factor, sign, i = 1.0, 0.0, 1.0, 1.0, 1.0, 0
    step = 1.0 / (x * x)
    while abs(last - total) > MACHEP:
        i += 1
        last = total
        sign = -sign
        factor *= step
        numerator *= 2 * i - 1
        total += sign * numerator * factor
    return log_lhs + math.log(total)


@register_jitable
def erfinv(y):
    """The inverse of erf: ndtri's estimate, then Newton's steps on erf (on erfc near
    +-1, where 1 - |y| is exact)."""
    if math.isnan(y) or y < -1.0 or y > 1.0:
        return math.nan
    a = abs(y)
    if a == 1.0:
        return math.copysign(math.inf, y)
    if a == 0.0:
        return y
    tail = 1.0 - a  # exact for a >= 1/2
    x = -ndtri(0.5 * tail) * SQRT1_2
    for _ in range(3):
        residual = math.erf(x) - a if a < 0.5 else tail - math.erfc(x)
        step = residual / (TWO_OVER_SQRT_PI * math.exp(-x * x))
        x -= step
        if abs(step) <= 1e-17 * abs(x):
            break
    return math.copysign(x, y)


# -- gamma and its relatives -----------------------------------------------------------

# psi on [1, 2]: (x - root) (Y + P(x - 1) / Q(x - 1)), the root split in three parts
PSI_P = np.array(
    [-0.0020713321167745952, -0.045251321448739056, -0.28919126444774784]
    + [-0.65031853770896507, -0.32555031186804491, 0.25479851061131551]
)
PSI_Q = np.array(
    [-0.55789841321675513e-6, 0.0021284987017821144, 0.054151797245674225]
    + [0.43593529692665969, 1.4606242909763515, 2.0767117023730469, 1.0]
)
PSI_Y = 0.99558162689208984375  # a float32 constant, exactly
PSI_ROOT1 = 1569415565.0 / 1073741824.0
PSI_ROOT2 = (381566830.0 / 1073741824.0) / 1073741824.0
PSI_ROOT3 = 0.9016312093258695918615325266959189453125e-19
# psi's asymptotic series: the Bernoulli numbers' terms, in 1 / x^2
PSI_ASYMPTOTIC = np.array(
    [8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3]
    + [-4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3]
    + [8.33333333333333333333e-2]
)


@register_jitable
def psi(x):
    """The digamma function, the derivative of log(gamma(x)); poles at 0, -1, -2, ..."""
    if math.isnan(x) or x == math.inf:
        return x
    if x == -math.inf:
        return math.nan
    if x == 0.0:
        return math.copysign(math.inf, -x)
    y = 0.0
    if x < 0.0:
        r = x - math.trunc(x)
        if r == 0.0:
            return math.nan
        y = -math.pi / math.tan(math.pi * r)  # the reflection psi(1 - x) - pi cot(pi x)
        x = 1.0 - x
    if x <= 10.0 and x == math.floor(x):
        for i in range(1, int(x)):
            y += 1.0 / i
        return y - EULER
    if x < 1.0:
        y -= 1.0 / x
        x += 1.0
    elif x < 10.0:
        while x > 2.0:
            x -= 1.0
            y += 1.0 / x
    if 1.0 <= x <= 2.0:
        g = x - PSI_ROOT1 - PSI_ROOT2 - PSI_ROOT3
        r = polynomial(x - 1.0, PSI_P) / polynomial(x - 1.0, PSI_Q)
        return y + g * PSI_Y + g * r
    series = 0.0
    if x < 1.0e17:
        z = 1.0 / (x * x)
        series = z * polynomial(z, PSI_ASYMPTOTIC)
    return y + math.log(x) - 0.5 / x - series


# (2k)! / B_2k, the Euler-Maclaurin coefficients of the Hurwitz zeta function
ZETA_A = np.array(
    [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10]
    + [-2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15]
    + [1.8152105401943546773e17, -7.1661652561756670113e18]
)


@register_jitable
def zeta(s, q):
    """The Hurwitz zeta function sum((k + q)^-s, k >= 0), s > 1, by Euler-Maclaurin
    summation (negative q for integer s, continuing the sum past 9)."""
    if s == 1.0:
        return math.inf
    if s < 1.0:
        return math.nan
    if q <= 0.0:
        if q == math.floor(q):
            return math.inf
        if s != math.floor(s):
            return math.nan
    if q > 1e15:  # the integral's term alone, q^(1 - s) / (s - 1), as the sum underflows
        return q ** (1.0 - s) / (s - 1.0)
    total = q**-s
    a = q
    i = 0
    b = 0.0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = a**-s
        total += b
        if abs(b / total) < MACHEP:
            return total
    w = a
    total += b * w / (s - 1.0)
    total -= 0.5 * b
    a = 1.0
    k = 0.0
    for i in range(12):
        a *= s + k
        b /= w
        t = a * b / ZETA_A[i]
        total += t
        if abs(t / total) < MACHEP:
            return total
        k += 1.0
        a *= s + k
        b /= w
        k += 1.0
    return total


@register_jitable
def polygamma(n, x):
    """The n-th derivative of psi: (-1)^(n+1) n! zeta(n + 1, x) for n >= 1."""
    if n == 0:
        return psi(x)
    return (-1.0) ** (n + 1) * math.gamma(n + 1.0) * zeta(n + 1.0, x)


@register_jitable
def gamma(x):
    """The gamma function, nan at the negative integers and -inf, as SciPy."""
    if x == 0.0:
        return math.copysign(math.inf, x)
    if x < 0.0 and x == math.floor(x):
        return math.nan
    return math.gamma(x)


@register_jitable
def gammaln(x):
    """log |gamma(x)|; inf at the poles, -inf at -inf as SciPy."""
    if x == -math.inf:
        return -math.inf
    return math.lgamma(x)


# Stirling's series of log gamma: log gamma(z) = (z - 1/2) log z - z + log sqrt(2 pi)
# + w(z), w(z) = sum B_2k / (2k (2k - 1) z^(2k - 1)), summed here from the smallest term
STIRLING = np.array(
    [1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12]  # in 1 / z^2
)


@register_jitable
def stirling_remainder(z):
    """w(z) of Stirling's series for z >= 10 (to about 1e-17)."""
    u = 1.0 / (z * z)
    return polynomial(u, STIRLING) / z


@register_jitable
def betaln(a, b):
    """log |B(a, b)| = lgamma(a) + lgamma(b) - lgamma(a + b). With a large argument the
    two largest terms cancel, so their difference is taken by Stirling's series."""
    if a > b:
        a, b = b, a
    if b == math.inf and a > 0.0:  # B(a, b) tends to 0
        return -math.inf
    if a == -math.inf:
        return math.inf if not math.isnan(b) else b
    if a > 0.0 and b >= 10.0:
        difference = (
            -(a + b - 0.5) * math.log1p(a / b)
            - a * math.log(b)
            + a
            + stirling_remainder(b)
            - stirling_remainder(a + b)
        )
        return gammaln(a) + difference
    return gammaln(a) + gammaln(b) - gammaln(a + b)


# -- the logistic function, and x log y ------------------------------------------------


@register_jitable
def expit(x):
    """1 / (1 + exp(-x)), without overflow for large negative x."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@register_jitable
def logit(p):
    """log(p / (1 - p)), as log1p differences near 1/2."""
    if 0.3 < p < 0.65:
        s = 2.0 * p - 1.0
        return math.log1p(s) - math.log1p(-s)
    if p < 0.0 or p > 1.0:
        return math.nan
    return math.log(p / (1.0 - p))


@register_jitable
def xlogy(x, y):
    """x log y, 0 where x is 0 (unless y is nan)."""
    if x == 0.0 and not math.isnan(y):
        return 0.0
    return x * np.log(y)


@register_jitable
def xlog1py(x, y):
    """x log(1 + y), 0 where x is 0 (unless y is nan)."""
    if x == 0.0 and not math.isnan(y):
        return 0.0
    return x * np.log1p(y)


@register_jitable
def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below."""
    if math.isnan(x):
        return x
    if x > 0.0:
        return -x * math.log(x)
    if x == 0.0:
        return 0.0
    return -math.inf


@register_jitable
def rel_entr(x, y):
    """x log(x / y) for x, y > 0; 0 at x = 0 <= y; inf elsewhere."""
    if math.isnan(x) or math.isnan(y):
        return math.nan
    if x > 0.0 and y > 0.0:
        return x * math.log(x / y)
    if x == 0.0 and y >= 0.0:
        return 0.0
    return math.inf
