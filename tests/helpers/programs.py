"""Small functions covering the core language, for the derivative tests: straight
lines, reassignment, branches, loops of every kind, in-place stores, helper calls,
tuples. Each entry of PROGRAMS is (function, example arguments)."""

import numpy as np

import numbax as nx


def straight(x, y):
    return np.sum(np.sin(x) * y + x / y)


def reassigned(x):
    y = x * 2.0
    y = y * y + x
    y = np.tanh(y)
    return np.sum(y)


def branch(x, y):
    if np.sum(x) > 0:
        z = x * y
    else:
        z = np.sin(x) + y
    return np.sum(z * z)


def one_sided(x):
    z = x * 3.0
    if np.max(x) > 1.0:
        z = np.exp(x)
    return np.sum(z)


def horner(c, x):
    acc = 0.0
    for i in range(c.shape[0]):
        acc = acc * x + c[i]
    return acc


def nested_loops(x):
    total = 0.0
    for i in range(x.shape[0]):
        for j in range(i):
            total = total + x[i] * np.sin(x[j])
    return total


def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def array_accumulation(x):
    acc = np.zeros_like(x)
    for i in range(1, 4):
        acc = acc + np.sin(x * i) / i
    return np.sum(acc * acc)


def in_place(x):
    n = x.shape[0]
    out = np.zeros(n)
    out[0] = x[0]
    for i in range(1, n):
        out[i] = out[i - 1] * x[i] + x[i - 1]
    return np.sum(out)


def helper(u, v):
    return u * np.exp(v)


def calls_helper(x):
    y = helper(x, x * 0.5)
    return np.sum(helper(y, x))


@nx.jit
def jitted_model(w, x):
    return np.tanh(w * x)


def calls_jitted(w):
    return np.sum(jitted_model(w, np.linspace(-1.0, 1.0, 3)) ** 2)


def tuples(x):
    t = (x, x * 2.0)
    a, b = t
    pair = divide_both(a, b)
    return np.sum(pair[0] * pair[1] + a * b)


def divide_both(a, b):
    return a / (1.0 + b * b), b / (1.0 + a * a)


def strided(x):
    y = x[::2] * x[1::2]
    z = x[::-1]
    return np.sum(y) + np.sum(z[:2] * x[-2:]) + x[3] ** 2


def early_exit(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] * x[i]
        if total > 4.0:
            return total
    return total * 2.0


def data_dependent_trips(x, n):
    y = x
    for _ in range(int(n)):
        y = np.cos(y) * x
    return np.sum(y)


def recurrent(h, w):
    """A parameter rebound in a loop: differentiated in w only, h still carries w."""
    for _ in range(3):
        h = np.tanh(w * h) + h
    return np.sum(h)


def scaled_sin(x, scale=2.0, shift=0.5):
    return scale * np.sin(x + shift)


def keyword_calls(x):
    """A helper called with its defaults, with keywords, and with keywords out of order."""
    return np.sum(scaled_sin(x) + scaled_sin(x, shift=-1.0) * scaled_sin(scale=x, x=x))


def and_in_loop(x):
    """``a and b`` is ``t = a; if t: t = b``: the branch reassigns its own test."""
    out = np.zeros(4)
    for j in range(4):
        if j > 0 and j <= 2:
            out[j] = x[j] * j
    return np.sum(out * out)


def range_from_variable(x):
    """An inner loop's start that the loop itself moves on (samples written once)."""
    out = np.zeros(4)
    k = 0
    for i in range(4):
        for j in range(k, 4):
            if j > i:
                break
            out[j] = x[i] * i
            k = j + 1
    return np.sum(out * x)


_rng = np.random.default_rng(0)
_x3 = np.array([0.3, -0.7, 1.2])
_x4 = np.array([0.5, -0.4, 0.8, 1.1])

PROGRAMS = {
    "straight": (straight, (_x3, np.array([1.5, 2.0, 2.5]))),
    "reassigned": (reassigned, (_x3 * 0.5,)),
    "branch-taken": (branch, (_x3, 1.3)),
    "branch-else": (branch, (-_x3 - 1.0, 1.3)),
    "one_sided": (one_sided, (_x3,)),
    "horner": (horner, (np.array([1.0, -2.0, 3.0, 0.5]), 0.7)),
    "nested_loops": (nested_loops, (_x4,)),
    "newton_while": (newton_sqrt, (2.0,)),
    "array_accumulation": (array_accumulation, (_x3,)),
    "in_place": (in_place, (_x4,)),
    "calls_helper": (calls_helper, (_x3,)),
    "calls_jitted": (calls_jitted, (0.8,)),
    "tuples": (tuples, (_x3,)),
    "strided": (strided, (np.linspace(0.1, 0.8, 6),)),
    "early_exit": (early_exit, (_x4 * 2.0,)),
    "data_dependent_trips": (data_dependent_trips, (_x3, 3.0)),
    "recurrent": (recurrent, (_x3, _x3[::-1] + 0.5)),
    "keyword_calls": (keyword_calls, (_x3,)),
    "and_in_loop": (and_in_loop, (_x4,)),
    "range_from_variable": (range_from_variable, (_x4,)),
}
