"""An index out of bounds raises NumPy's IndexError under ``jit``, as it does interpreted.

Compiled code used to read whatever memory lay past the array (``x[10]`` on three
elements, ``x[-10]``, ``np.empty(0)[0]``, an off-by-one loop) or end the process
(``x[10**8]``). Each case is run interpreted (NumPy raises) and compiled, plain, under
``grad`` and under ``vmap``: the same error, with the same message, naming the user's
line. Subscripts that hold give the values they gave, and derivatives that agree with
central differences, including where the check of a loop's subscripts moved before the
loop.
"""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian

pytestmark = pytest.mark.jit


def at_10(x):
    return x[10] * x[0]


def at_minus_10(x):
    return x[-10] * x[0]


def far_away(x):
    return x[10**8] * x[0]


def from_empty(x):
    return np.empty(0)[0] + x[0]


def column_5(m):
    return m[1, 5] * m[0, 0]


def gather(x):
    idx = np.array([0, 7])
    return np.sum(x[idx] * x[0])


def gather_list(x):
    idx = [0, -4]  # a list: NumPy's index array
    return np.sum(x[idx] * x[0])


def masked(x):
    keep = np.array([True, False])
    return np.sum(x[keep] * x[0])


def stored(x):
    y = np.zeros(3)
    y[3] = x[0]
    return np.sum(y * x)


def off_by_one(x):
    s = 0.0
    for i in range(x.shape[0] + 1):
        s = s + x[i] * x[i]
    return s


def backwards_from_n(x):
    s = 0.0
    for i in range(x.shape[0], -1, -1):
        s = s + x[i] * i
    return s


def inner_off_by_one(m):
    s = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1] + 1):
            s = s + m[i, j] * m[j, i]
    return s


X = np.array([1.0, 2.0, 3.0])
M = np.arange(1.0, 10.0).reshape(3, 3)

OUT_OF_BOUNDS = [
    (at_10, X, "index 10 is out of bounds for axis 0 with size 3"),
    (at_minus_10, X, "index -10 is out of bounds for axis 0 with size 3"),
    (far_away, X, "index 100000000 is out of bounds for axis 0 with size 3"),
    (from_empty, X, "index 0 is out of bounds for axis 0 with size 0"),
    (column_5, M, "index 5 is out of bounds for axis 1 with size 3"),
    (gather, X, "index 7 is out of bounds for axis 0 with size 3"),
    (gather_list, X, "index -4 is out of bounds for axis 0 with size 3"),
    (stored, X, "index 3 is out of bounds for axis 0 with size 3"),
    (off_by_one, X, "index 3 is out of bounds for axis 0 with size 3"),
    (backwards_from_n, X, "index 3 is out of bounds for axis 0 with size 3"),
    (inner_off_by_one, M, "index 3 is out of bounds for axis 1 with size 3"),
]

TRANSFORMATIONS = {
    "plain": lambda f: f,
    "grad": nx.grad,
    "vmap": nx.vmap,
}


def _message(call, *args) -> str:
    with pytest.raises(IndexError) as info:
        call(*args)
    return str(info.value)


@pytest.mark.parametrize("mode", list(TRANSFORMATIONS))
@pytest.mark.parametrize(
    ("f", "arg", "numpy_message"), OUT_OF_BOUNDS, ids=lambda v: getattr(v, "__name__", "")
)
def test_an_index_out_of_bounds_raises_what_it_raises_interpreted(f, arg, numpy_message, mode):
    assert _message(f, arg) == numpy_message  # NumPy's own words
    transformed = TRANSFORMATIONS[mode](f)
    if mode == "vmap":
        arg = np.stack([arg, arg])
    interpreted = _message(transformed, arg)
    with pytest.raises(IndexError) as info:
        nx.jit(transformed)(arg)
    assert type(info.value) is IndexError
    assert str(info.value) == interpreted


def test_a_boolean_index_of_another_length_raises_numpys_error():
    message = _message(masked, X)
    assert message.startswith("boolean index did not match indexed array along axis 0")
    assert _message(nx.jit(masked), X) == message
    batch = np.stack([X, X])
    assert _message(nx.jit(nx.vmap(masked)), batch) == _message(nx.vmap(masked), batch)


def test_the_error_names_the_users_file_and_line():
    with pytest.raises(IndexError) as info:
        nx.jit(at_10)(X)
    line = at_10.__code__.co_firstlineno + 1
    assert info.value.__notes__ == [f"(raised under nx.jit at {__file__}, line {line})"]


def test_jacfwd_and_jacrev_raise_it_too():
    for transform in (nx.jacfwd, nx.jacrev):
        assert _message(nx.jit(transform(off_by_one)), X) == _message(off_by_one, X)


# -- what holds gives what it gave -------------------------------------------------------


def negative_indices(x):
    s = 0.0
    for i in range(-x.shape[0], 0):
        s = s + x[i] * x[i + 1]
    return s + x[-1] * x[-3]


def leaves_before_the_end(x):
    s = 0.0
    for i in range(x.shape[0] + 5):
        if i == x.shape[0]:
            break
        s = s + x[i] * x[i]
    return s


def inner_loop_never_runs(x):
    s = x[0]
    for i in range(x.shape[0] + 3):
        for j in range(0):
            s = s + x[i] * x[j]
    return s * x[1]


def loops_over_indices(m, v):
    s = 0.0
    n = v.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            s = s + m[i, j] * v[j] * v[i - 1]
    return s + np.sum(v[np.array([2, -3])] * m[-1, 1:])


IN_BOUNDS = [
    (negative_indices, (X,)),
    (leaves_before_the_end, (X,)),
    (inner_loop_never_runs, (X,)),
    (loops_over_indices, (M, X)),
]


@pytest.mark.parametrize(("f", "args"), IN_BOUNDS, ids=lambda v: getattr(v, "__name__", ""))
def test_indices_in_bounds_give_numpys_values_and_true_derivatives(f, args):
    np.testing.assert_allclose(nx.jit(f)(*args), f(*args), rtol=1e-14)
    gradient = nx.jit(nx.grad(f))(*args)
    np.testing.assert_allclose(gradient, numeric_jacobian(f, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gradient, nx.grad(f)(*args), rtol=1e-14)


# -- where the checks are ----------------------------------------------------------------


def sums_each(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
    return s


def test_a_loop_over_the_arrays_own_length_needs_no_check():
    jitted = nx.jit(sums_each)
    assert jitted(X) == 6.0
    assert "check_index" not in nx.source(jitted)


def test_a_loops_check_runs_once_before_the_loop():
    jitted = nx.jit(off_by_one)
    with pytest.raises(IndexError):
        jitted(X)
    lines = [line.strip() for line in nx.source(jitted).splitlines()]
    checks = [n for n, line in enumerate(lines) if line.startswith("nxrt.check_index(")]
    loop = next(n for n, line in enumerate(lines) if line.startswith("for i in range("))
    assert checks and all(n < loop for n in checks)
    assert "range(" in lines[checks[0]]


def test_boundscheck_false_leaves_the_checks_out():
    checked, unchecked = nx.jit(at_minus_10), nx.jit(at_minus_10, boundscheck=False)
    x = np.arange(1.0, 12.0)
    assert checked(x) == unchecked(x) == at_minus_10(x)
    assert "check_index" in nx.source(checked)
    assert "check_index" not in nx.source(unchecked)
