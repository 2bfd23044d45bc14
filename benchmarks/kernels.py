"""The plain NumPy functions the benchmarks compile with numbax.

They live in their own module, importing nothing but NumPy, because numbax reads a
function's source from its file: the cold-start workload's fresh subprocesses import
them from here (a function typed into ``python -c`` has no readable source), and
importing this module must not add to the start-up time being measured.
"""

import numpy as np


def selu(x, alpha=1.67, lmbda=1.05):
    """JAX quickstart's first example: scaled exponential linear unit."""
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def poly(x):
    """A cubic with shared subexpressions: NumPy makes four temporaries, a compiler none."""
    return x + x * x + x * x * x


def add_one(x):
    """Almost no work, so a call measures the dispatch overhead alone."""
    return x + 1


def many_ops(x):
    """Forty chained elementwise operations and reductions: a compile-time stress test.

    Cold start of a numbax function grows with the size of the generated source and of
    what Numba must type and optimize; this stands in for a realistic model function.
    """
    a = np.sin(x) + 1.0
    b = np.cos(a) * x
    c = np.exp(-b * b)
    d = np.tanh(c - 0.5)
    s1 = np.sum(d)
    e = d / (1.0 + np.abs(s1))
    f = np.sqrt(e * e + 1.0)
    g = np.log(f + 1.0)
    h = np.maximum(g, 0.1 * x)
    m1 = np.mean(h)
    i = h - m1
    j = i * i
    v1 = np.mean(j)
    k = i / np.sqrt(v1 + 1e-6)
    l2 = np.where(k > 0, k, 0.01 * k)
    n = np.exp(l2 - np.max(l2))
    p = n / np.sum(n)
    q = np.log1p(p) * 3.0
    r = np.arctan(q - x)
    s = np.minimum(r, 0.5)
    t = np.abs(s) ** 1.5
    u = np.hypot(t, a)
    w = np.floor(u * 10.0) / 10.0
    y = w + np.sinh(0.1 * b)
    z = np.cosh(0.1 * c) - y
    m2 = np.max(z)
    m3 = np.min(z)
    z2 = (z - m3) / (m2 - m3 + 1e-12)
    o = np.expm1(0.5 * z2)
    o2 = o * np.sign(x)
    o3 = np.clip(o2, -0.75, 0.75)
    o4 = o3 + np.square(d)
    o5 = np.arcsinh(o4)
    o6 = np.log2(1.0 + np.abs(o5))
    o7 = np.exp2(-o6)
    o8 = o7 * np.cbrt(f)
    s2 = np.sum(o8 * x)
    s3 = np.prod(1.0 + 1e-3 * o7[:8])
    return s2 + s3 + np.std(o8) + np.var(k)


def sum_logistic(x):
    """JAX quickstart's function to differentiate."""
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def mlp_loss(params, x, y):
    """Mean squared error of a two-hidden-layer tanh MLP (784-256-256-10)."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    out = h2 @ w3 + b3
    return np.mean((out - y) ** 2)


VMAP_MAT = np.random.default_rng(1701).standard_normal((150, 100))
"""The quickstart's matrix (150 x 100) that ``apply_matrix`` multiplies one vector by."""


VMAP_MAT32 = VMAP_MAT.astype(np.float32)
"""The same matrix in float32, for the float32 batch."""


def apply_matrix(v):
    """JAX quickstart's function written for one example."""
    return np.dot(VMAP_MAT, v)


def apply_matrix32(v):
    """``apply_matrix`` in float32 (the quickstart's own dtype)."""
    return np.dot(VMAP_MAT32, v)


def logistic_loss(w, x, y):
    """Binary cross-entropy of one example of logistic regression."""
    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def mlp_example_loss(params, x, y):
    """Squared error of one example of a one-hidden-layer tanh network."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return np.sum((h @ w2 + b2 - y) ** 2)
