"""Small functions that exercise every construct ``normalize`` lowers.

Each is registered with the inputs it runs on; tests/transform/test_normalize.py runs
the original and the normalized function on each and compares results, arguments
mutated in place, and exceptions.
"""

# The corpus exercises what linters warn about (zip without strict=, unused loop
# variables, bare annotations), on purpose.
# ruff: noqa: B007, B905, F842

import math
import types

import numpy as np
import numpy as npy
from numpy import exp as np_exp

CASES = []


def case(*inputs):
    """Register the decorated function with argument tuples to run it on."""

    def register(fn):
        CASES.append((fn, inputs))
        return fn

    return register


V = np.array([1.5, -2.0, 0.25, 3.0, -0.5])
M = np.arange(12.0).reshape(3, 4) - 5.0
CFG = types.SimpleNamespace(eps=1e-3, scale=2.0)


def helper_pair(x):
    return x.min(), x.max()


def note(log, value):
    """Record that ``value`` was computed (to check evaluation counts), return it."""
    log.append(value)
    return value


def custom_range(n):
    return [10 * i for i in builtin_range(n)]


builtin_range = range


# -- straight-line code ------------------------------------------------------------
@case((V,), (np.zeros(3),))
def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


@case((V, 2.0), (M, -1.0))
def nested_arithmetic(x, a):
    y = np_exp(x) * a + npy.sin(x) ** 2 - x / (1.0 + x * x)
    return y // 1.5 + y % 0.75


@case((M,))
def method_chain(x):
    return x.sum(axis=0).reshape(-1).cumsum()


@case((M,))
def attributes(x):
    n, m = x.shape
    return x.T @ x + n * m + x.ndim


@case((V,))
def module_constants(x):
    return x * np.pi + math.e + CFG.eps * CFG.scale


@case((V, 1.0), (V, -1.0))
def keyword_arguments(x, s, scale=2.0):
    return np.clip(x * scale, a_min=-s if s > 0 else s, a_max=None).sum(axis=0, keepdims=True)


@case((3,), (-4,))
def negative_literals(n):
    return (-2) ** 2 + (-2.5) ** n + n**-1 + -(3) * -n - (-1.5) + -(n**2)


@case((7, 3), (-7, 2))
def integer_operators(a, b):
    return (a // b, a % b, a << 2, a >> 1, a & b, a | b, a ^ b, ~a, +a, -a, not a)


@case((V, 3), (M, 1))
def comparisons_and_membership(x, k):
    items = [1, 2, 3]
    return (k in items, k not in items, x is None, x is not None, k == 3, k != 3, k <= 2)


@case((M,))
def slicing(x):
    a = x[1:, ::2]
    b = x[::-1, -1]
    c = x[..., 0]
    d = x[:, None, 1:3]
    e = x[:, np.newaxis][0, 0, 1::-1]
    return a.sum() + b.sum() + c.sum() + d.sum() + e.sum(), d.shape, e.shape


@case((V,))
def fancy_indexing(x):
    picked = x[[0, 2, 4]]
    masked = x[x > 0]
    return picked + masked[:3]


@case((V, 2.0))
def containers(x, w):
    d = {"w": w, "x": x, 1: -1}
    pair = (d["w"], d[1])
    return d["x"] * pair[0] + pair[1], [w, w + 1]


@case((V,))
def docstring_and_annotations(x):
    """A docstring is not part of the lowered body."""
    y: float = x[0] * 2
    z: int
    return y


@case((V,))
def calls_helpers(x):
    lo, hi = helper_pair(x)
    return np.maximum(np.abs(x), lo) / (hi - lo)


def make_scaler(k):
    offset = np.arange(5.0)

    def scaled(x):
        return x * k + offset

    return scaled


scaled = make_scaler(3.0)
CASES.append((scaled, ((V,),)))


@case((5,), (0,))
def string_constants(n):
    label = "count"
    return label + ":" + str(n), label.upper()


# -- assignment forms ----------------------------------------------------------------
@case((10,), (1,))
def fibonacci_swap(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@case((1, 2))
def true_swap(a, b):
    a, b = b, a
    return a, b


@case(((1, (2, 3)),))
def nested_unpacking(t):
    a, (b, c) = t
    [d, e] = b, c
    return a + b * c + d - e


@case((np.zeros(4), 1))
def unpack_into_subscripts(out, i):
    out[i], i = 5.0, 3
    out[i], out[0] = 7.0, -1.0
    return out, i


@case((3,))
def chained_targets(n):
    a = b = np.zeros(n)
    a[0] = 1.0  # a and b are one array, as in Python
    c = d = n + 1
    return b, c + d


@case((np.arange(5.0), 2))
def augmented_assignment(x, k):
    s = 0.0
    s += x[k]
    s *= 3
    s -= 1
    s /= 2
    s **= 2
    x[k] += 10.0
    x[1:3] *= 2.0
    x[x > 3] -= 1.0
    return s, x


@case((np.arange(12.0).reshape(3, 4),))
def augmented_2d_store(m):
    for i in range(m.shape[0]):
        m[i, i] -= 100.0
    m[:, -1] += m[:, 0]
    return m


@case((np.zeros(3),))
def in_place_store_no_return(x):
    x[0] = 1.0
    x[-1] = x[0] + 2.0


# -- boolean logic, conditional expressions, chained comparisons -----------------------
@case((None,), (np.array([1.0]),), (np.array([-1.0]),), (np.zeros(0),))
def short_circuit_guard(x):
    if x is not None and len(x) > 0 and x[0] > 0:
        return "positive"
    return "other"


@case((0, []), (2, [1]), (0, [0]), (3, None))
def or_and_values(a, b):
    first = a or b
    second = a and b
    third = b or a or "fallback"
    return first, second, third, not (a and b)


@case((V,), (np.zeros(0),))
def conditional_expression(x):
    head = x[0] if len(x) > 0 else 0.0
    sign = "neg" if head < 0 else "zero" if head == 0 else "pos"
    return head, sign


@case((0.5,), (5.0,), (-1.0,), (20.0,))
def chained_comparison_once(v):
    log = []
    inside = 0 < note(log, v) < 10 <= note(log, 2 * v)
    return inside, log


@case((3, 5), (7, 5), (-1, 5))
def chained_in_if(i, n):
    if 0 <= i < n:
        return i
    return -1


@case((V,))
def chained_with_calls(x):
    return 0.0 < np.abs(x).min() <= np.abs(x).max() < 100.0


@case(([3, 1, 2],), ([],))
def walrus(items):
    if (n := len(items)) > 1:
        return n, items[n - 1]
    total = 0
    while (n := n - 1) >= 0:
        total += items[n]
    return total, n


@case((1, 2), (0, 0))
def expression_statement_effects(a, b):
    log = []
    a > 0 and log.append(a)
    b or log.append("no b")
    return log


# -- comprehensions ------------------------------------------------------------------------
@case((V,))
def list_comprehension_filter(x):
    return [v * 2 for v in x if v > 0 if v < 3]


@case((M,))
def nested_comprehension(m):
    rows = [[v + 1 for v in row if v != 0] for row in m]
    flat = [v for row in m for v in row if v > 0]
    return rows, flat


@case((V,))
def comprehension_does_not_leak(x):
    v = "kept"
    doubled = [v * 2 for v in x]
    return v, doubled


@case((3,))
def comprehension_shadowing(n):
    i = 100
    pairs = [(i, [i * 10 for i in range(i)]) for i in range(n)]
    return i, pairs


@case((["a", "b"], [1, 2]))
def dict_comprehension(keys, values):
    table = {k: v * 2 for k, v in zip(keys, values)}
    inverse = {v: i for i, v in enumerate(keys) if v != "b"}
    return table, inverse


@case((V,))
def comprehension_target_name(x):
    x = [x for x in x if x > 0]
    return x


# -- if / elif ---------------------------------------------------------------------------
@case((-5,), (0,), (3,), (50,), (500,))
def elif_chain(n):
    if n < 0:
        kind = "negative"
    elif n == 0:
        kind = "zero"
    elif n < 10:
        kind = "small"
    elif n < 100:
        kind = "medium"
    else:
        kind = "large"
    return kind


@case((True,), (False,))
def empty_branches(flag):
    y = 0
    if flag:
        pass
    else:
        y = 1
    if not flag:
        pass
    return y


@case((2,))
def constant_tests(n):
    if True:
        n += 1
    if 0:
        n = -1
    assert 1, "never"
    return n


# -- for loops ----------------------------------------------------------------------------
@case((5,), (0,))
def range_loops(n):
    total = 0
    for i in range(n):
        total += i
    for i in range(2, n):
        total += 10 * i
    for i in range(n, 0, -2):
        total += 100 * i
    return total, i if n > 0 else None


@case((np.array([3.0, 1.0]),))
def data_dependent_range(x):
    acc = []
    for i in range(int(x[0])):
        for j in range(i, int(x[0]) + int(x[1])):
            acc.append(i * j)
    return acc


@case((V,), (M,))
def for_over_array(x):
    total = 0.0
    for row in x:
        total += np.sum(row) * 2
    for v in [1, 2, 3]:
        total += v
    for v in (4.0, 5.0):
        total -= v
    return total


@case((V,))
def for_over_enumerate(x):
    out = []
    for i, v in enumerate(x):
        out.append(i * v)
    for i, v in enumerate(x, 1):
        out.append(i * v)
    for k, v in enumerate(x, start=-2):
        out.append(k + v)
    for pair in enumerate(x[:2]):
        out.append(pair)
    return out


@case((V, M[0]))
def for_over_zip(x, y):
    out = []
    for a, b in zip(x, y):
        out.append(a * b)
    for a, b, c in zip(x, y, range(2)):
        out.append(a + b + c)
    for pair in zip(x, y):
        out.append(pair)
    return out


@case((V, M[1]))
def for_nested_targets(x, y):
    out = []
    for i, (a, b) in enumerate(zip(x, y)):
        out.append(i + a * b)
    for (a, b), c in zip(zip(x, y), range(1, 10, 3)):
        out.append(a - b + c)
    return out


@case((6,), (1,), (0,))
def reversed_ranges(n):
    out = []
    for i in reversed(range(n)):
        out.append(i)
    for i in reversed(range(1, n)):
        out.append(i)
    for i in reversed(range(1, 2 * n, 3)):
        out.append(i)
    for i in reversed(range(n, -n, -2)):
        out.append(i)
    return out


@case((4, 3), (5, -2), (-5, -2))
def reversed_range_variable_step(n, s):
    return [i for i in reversed(range(0, n, s))]


@case((V,))
def reversed_sequences(x):
    out = []
    for v in reversed(x):
        out.append(v)
    for i, v in enumerate(reversed(x)):
        out.append(i * v)
    for a, b in zip(reversed(x), x):
        out.append(a - b)
    return out


@case((3,))
def loop_variable_reassigned(n):
    seen = []
    for i in range(n):
        seen.append(i)
        i = 100
    return seen, i


@case((np.array([3.0, 7.0, 11.0]), 7.0), (np.array([1.0, 2.0]), 5.0))
def for_else(x, target):
    for i, v in enumerate(x):
        if v == target:
            found = i
            break
    else:
        found = -1
    for v in x:
        pass
    else:
        found += 100
    return found


@case((10,), (0,))
def while_else(n):
    k = 0
    while k < n:
        k += 3
        if k == 6:
            break
    else:
        k = -k
    return k


@case((5,))
def shadowed_range_local(n):
    range = custom_range
    out = []
    for i in range(n):
        out.append(i)
    len = 7
    for v in [1, 2]:
        out.append(v * len)
    return out


@case((3,))
def shadowed_builtin_in_comprehension(n):
    return [min for min in range(n)], [[zip for zip in range(min)] for min in range(n)]


# -- while loops ----------------------------------------------------------------------------
@case((10,), (4,), (0,))
def while_with_continue(n):
    i = 0
    odd = []
    while i < n and len(odd) < 4:
        i += 1
        if i % 2 == 0:
            continue
        odd.append(i)
    return odd


@case((100,), (1,))
def while_true_break(n):
    steps = 0
    while True:
        if n == 1:
            break
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@case((1e-6,), (0.5,))
def while_flag(tol):
    x, converged = 1.0, False
    while not converged:
        x_new = 0.5 * (x + 2.0 / x)
        converged = abs(x_new - x) < tol
        x = x_new
    return x


# -- early returns --------------------------------------------------------------------------
@case((-1,), (0,), (1,))
def early_return_if(x):
    if x < 0:
        return "negative"
    y = x * 2
    if y == 0:
        return "zero"
    return y


@case((-1,), (0,), (1,))
def return_in_all_branches(x):
    if x < 0:
        return -1
    elif x == 0:
        return 0
    else:
        return 1


@case((-1, True), (2, False), (3, True))
def return_then_fallthrough(x, flag):
    if flag:
        if x < 0:
            return "negative"
        x += 10
    return x


@case((-1,), (1,))
def return_or_fall_off_end(x):
    if x > 0:
        return x
    x -= 1


@case((V, 0.25), (V, 99.0))
def return_in_loop(x, target):
    for i in range(len(x)):
        if x[i] == target:
            return i
    return -1


@case((M, 2.0), (M, 42.0), (M, -5.0))
def return_in_nested_loops(m, target):
    count = 0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[i, j] < -3:
                continue
            count += 1
            if m[i, j] == target:
                return i, j, count
            if j > 2:
                break
        count += 100
    return None, None, count


@case((M, 3), (M, 100))
def return_in_while(m, limit):
    i = 0
    while i < m.size:
        v = m.flat[i]
        if v > limit:
            return i, v
        i += 1
    return -1, None


@case((5,), (12,))
def return_in_infinite_loop(n):
    k = 0
    while True:
        k += 1
        if k * k > n:
            return k


@case((V, 1), (V, 9))
def return_in_for_else(x, k):
    for i in range(len(x)):
        if i == k:
            break
    else:
        return "no break"
    return i


@case((-2,), (2,), (20,))
def returns_both_sides_fall_through(x):
    if x > 0:
        if x > 10:
            return "big"
        x = x * 2
    else:
        for i in range(3):
            if x + i == 0:
                return "hit"
        x = -x
    return x


@case((V,))
def return_inside_comprehension_loop_body(x):
    for row in [x, x * 2]:
        total = sum([v for v in row if v > 0])
        if total > 5:
            return total
    return 0.0


# -- assert and raise ----------------------------------------------------------------------
@case((V,), (np.zeros(0),), (-np.ones(2),))
def assertions(x):
    assert x.size > 0, "empty input"
    assert x[0] > 0
    return x[0]


@case((1.0,), (-1.0,), (0.0,))
def raising(v):
    if v < 0:
        raise ValueError("negative value", v)
    if v == 0:
        raise ZeroDivisionError
    return 1.0 / v


@case((V,))
def side_effect_calls(x):
    out = []
    out.append(x[0])
    out.extend([1, 2])
    out.append(len(out))
    return out


# -- odds and ends ----------------------------------------------------------------------------
@case((V,))
def only_a_docstring(x):
    """Nothing else: the function returns None."""


@case((4,), (0,))
def empty_loop_bodies(n):
    for _ in range(n):
        pass
    k = 0
    while k < n:
        k += 1
    return k


@case((np.zeros(2),))
def loop_into_subscript_target(out):
    for out[0] in range(3):
        out[1] += out[0]
    return out


@case((np.eye(2),), (np.zeros((2, 2)),))
def raise_module_exception(m):
    if np.linalg.det(m) == 0:
        raise np.linalg.LinAlgError("singular matrix")
    return np.linalg.inv(m)


@case((["a", "b", "c"],))
def constant_receivers(parts):
    return ", ".join(parts), "-".upper(), (2.5).is_integer()


@case((V,))
def computed_callee(x):
    funcs = [np.sin, np.cos]
    return funcs[1](x) + helper_pair(x)[0]


@case((V,))
def walrus_in_comprehension(x):
    kept = [y for v in x if (y := v * 2) > 0]
    return kept, y


@case((V, 2.0), (V, -1.0))
def multi_line_statement(x, scale):
    # fmt: off
    total = (
        np.sum(x) * scale
        + np.max(x)
        - min(scale, 0.0)
    )
    # fmt: on
    return total


@case((V,), (V, 3.0))
def keyword_only(x, shift=1.0, *, power=2):
    return np.sum((x + shift) ** power)


@case((5,), (2,))
def loop_target_tuple_from_list(n):
    pairs = [(i, i * i) for i in range(n)]
    out = 0
    for a, b in pairs:
        out += a * b
    for a, b in pairs[:2]:
        out -= a
    return out
