"""Reverse mode on valid programs that once crashed it: loops whose results never reach
the output, lists made and appended to inside loops, and variables defined on only some
paths before a loop. Each is checked against central differences by grad, jacrev and
vjp interpreted, and by grad under jit."""

import re

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian

X = np.array([0.3, 0.5, 0.7])


def check_reverse(f, x, s, jit=True):
    """grad, jacrev and vjp of the scalar ``f(x, s)`` w.r.t. both arguments agree with
    central differences, interpreted, and (``jit``) grad under jit."""
    want = [numeric_jacobian(f, (x, s), i) for i in (0, 1)]
    grads = nx.grad(f, argnums=(0, 1))
    out, pullback = nx.vjp(f, x, s)
    results = [
        ("grad", grads(x, s)),
        ("jacrev", nx.jacrev(f, argnums=(0, 1))(x, s)),
        ("vjp", pullback(np.ones_like(out))),
    ]
    if jit:
        results.append(("jit(grad)", nx.jit(grads)(x, s)))
    for label, got in results:
        for i, g, w in zip((0, 1), got, want, strict=True):
            np.testing.assert_allclose(
                g, w, rtol=1e-5, atol=1e-6, err_msg=f"{label} of {f.__name__} w.r.t. {i}"
            )


# -- a loop whose results never reach the output ----------------------------------------


def unused_loop_index(x, s):
    r = x[0] * s
    for j in range(3):
        u = x[j]  # noqa: F841
    return r


def unused_loop_max(x, s):
    r = np.max(x) * s
    for j in range(3):
        u = x[j] * s  # noqa: F841
    return r


def unused_nested_loops(x, s):
    r = x[1] * s
    for i in range(2):
        for j in range(3):
            u = x[j] * x[i]  # noqa: F841
    return r + s


def unused_while_loop(x, s):
    r = x[2] * s
    k = 0
    u = x[0]
    while k < 3:
        u = u * x[k]
        k = k + 1
    return r


def unused_loop_with_break(x, s):
    r = x[0] * x[1]
    u = s
    for j in range(3):
        u = u + x[j]
        if u > 1.0:
            break
    return r * s


def partly_used_loop(x, s):
    acc = 0.0
    r = x[0] * s
    for j in range(3):
        u = x[j] * 2.0  # noqa: F841
        acc = acc + x[j] * s
    return r + acc


@pytest.mark.parametrize(
    "f",
    [
        unused_loop_index,
        unused_loop_max,
        unused_nested_loops,
        unused_while_loop,
        unused_loop_with_break,
        partly_used_loop,
    ],
)
def test_a_loop_whose_result_is_unused(f):
    check_reverse(f, X, 1.5)


def test_an_unused_loop_leaves_no_cotangent_behind():
    text = nx.source(nx.grad(unused_loop_index))
    assert "_ct_x = nxrt.zeros_like(x)" not in text
    assert "range(3 - 1" not in text  # no reverse loop


# -- lists made and appended to inside a loop ---------------------------------------------


def list_in_loop(x, s):
    acc = 0.0
    for _i in range(2):
        lst = []
        lst.append(x[0])
        acc = acc + lst[0]
    return acc * s


def list_in_loop_grown(x, s):
    acc = 0.0
    for i in range(3):
        lst = [s]
        for j in range(i + 1):
            lst.append(x[j] * s)
        acc = acc + lst[i] * lst[-1] + lst[0]
    return acc


def list_in_while_loop(x, s):
    acc = 0.0
    k = 0
    while k < 3:
        lst = []
        lst.append(x[k])
        lst.append(s * x[k])
        acc = acc + lst[1] * lst[0]
        k = k + 1
    return acc


def list_popped_in_loop(x, s):
    acc = s
    for i in range(3):
        lst = [x[i]]
        lst.append(acc * x[i])
        v = lst.pop()
        acc = acc + v * lst[0]
    return acc


def list_in_loop_with_break(x, s):
    acc = 0.0
    for i in range(3):
        lst = []
        lst.append(x[i] * s)
        acc = acc + lst[0]
        if acc > 0.6:
            break
    return acc


def list_in_a_branch(x, s):
    acc = s
    if s > 0.0:
        lst = []
        lst.append(x[1])
        acc = acc * lst[0]
    return acc


@pytest.mark.parametrize(
    "f",
    [
        list_in_loop,
        list_in_loop_grown,
        list_in_while_loop,
        list_popped_in_loop,
        list_in_loop_with_break,
        list_in_a_branch,
    ],
)
def test_a_list_made_inside_a_loop(f):
    check_reverse(f, X, 1.5)


# -- a variable defined on only some paths before a loop ----------------------------------


def defined_on_some_paths(x, c):
    if c > 0.0:
        y = x * 2.0
    for _i in range(3):
        if c > 0.0:
            y = np.sin(y)
    return np.sum(x) * c + (np.sum(y) if c > 5.0 else 0.0)


def defined_on_some_paths_while(x, c):
    if c > 0.0:
        y = x * c
    k = 0
    while k < 2:
        if c > 0.0:
            y = y * y + x
        k = k + 1
    return np.sum(x * c) + (np.sum(y) if c > 5.0 else c)


def defined_on_some_paths_nested(x, c):
    if c > 0.0:
        y = x * c
    for _i in range(2):
        for _j in range(2):
            if c > 0.0:
                y = np.cos(y) + c
    return np.sum(x) * c + (np.sum(y) if c > 5.0 else 0.0)


def defined_on_some_paths_break(x, c):
    if c > 0.0:
        y = x * c
    for _i in range(3):
        if c > 0.0:
            y = np.sin(y) + x
        if np.sum(x) > 5.0:
            break
    return np.sum(x) * c + (np.sum(y) if c > 5.0 else 0.0)


def carried_from_the_iteration_before(x, c):
    z = c
    for i in range(3):
        if i > 0:
            z = z + y * 3.0  # noqa: F821 (y of the iteration before)
        y = x[i] * 2.0  # noqa: F841
    return z


def carried_in_a_while_loop(x, c):
    z = c
    k = 0
    while k < 3:
        if k > 0:
            z = z * 0.5 + y  # noqa: F821
        y = x[k] + c  # noqa: F841
        k = k + 1
    return z


@pytest.mark.parametrize("c", [1.5, 7.0, -1.0])
@pytest.mark.parametrize(
    "f",
    [
        defined_on_some_paths,
        defined_on_some_paths_while,
        defined_on_some_paths_nested,
        defined_on_some_paths_break,
    ],
)
def test_a_variable_defined_on_some_paths(f, c):
    check_reverse(f, X, c)


@pytest.mark.parametrize("c", [1.5, -1.0])
@pytest.mark.parametrize("f", [carried_from_the_iteration_before, carried_in_a_while_loop])
def test_a_value_carried_into_the_next_iteration(f, c):
    # interpreted only: Numba compiles no function (these included) that reads a
    # variable before its first assignment in the code
    check_reverse(f, X, c, jit=False)
    with pytest.raises(nx.CompileError, match="'y' is not defined"):
        nx.jit(f)(X, c)


# -- a variable overwritten where it may not exist yet ------------------------------------
# (its old value is saved where it exists, as its flag says, and given back there)


def overwritten_where_it_may_not_exist(x, c):
    z = c
    if c > 0.0:
        y = x * 2.0
    if c > 0.0:
        z = z + np.sum(np.sin(y))
    if c > 1.0:
        y = x * 3.0
    return z + np.sum(y) if c > 0.0 else z


def overwritten_by_a_loop(x, c):
    z = c
    if c > 0.0:
        y = x * c
    if c > 0.0:
        z = z + np.sum(y * y)
    for _i in range(2):
        y = x * 3.0
        z = z + np.sum(y)
    return z


def overwritten_in_each_iteration(x, c):
    z = c
    for _i in range(2):
        if c > 0.0:
            t = x * c
        if c > 0.0:
            z = z + np.sum(np.sin(t))
        if c > 1.0:
            t = x * 3.0
        z = z + (np.sum(t) if c > 0.0 else 0.0)
    return z


def started_by_the_first_iteration(x, c):
    for i in range(3):
        if i == 0:
            y = x * c
        else:
            y = np.sin(y) * c  # noqa: F821
    return np.sum(y)


@pytest.mark.parametrize("c", [1.5, 0.5, -0.5])
@pytest.mark.parametrize(
    "f",
    [
        overwritten_where_it_may_not_exist,
        overwritten_by_a_loop,
        overwritten_in_each_iteration,
        started_by_the_first_iteration,
    ],
)
def test_a_variable_overwritten_where_it_may_not_exist(f, c):
    check_reverse(f, X, c)
    check_forward(f, X, c)


def scaled_from_the_iteration_before(x, c):
    z = c
    for i in range(3):
        if i > 0:
            z = z + y * c  # noqa: F821 (y of the iteration before)
        y = x[i] * 2.0  # noqa: F841
    return z


def scaled_in_a_while_loop(x, c):
    z = c
    j = 0
    while j < 3:
        if j > 0:
            z = z * c + y * c  # noqa: F821
        y = np.sin(x[j]) * c  # noqa: F841
        j = j + 1
    return z


def scaled_in_nested_loops(x, c):
    z = c
    for i in range(2):
        for j in range(2):
            if i + j > 0:
                z = z + np.sin(y) * c  # noqa: F821
            y = x[i + j] * c  # noqa: F841
    return z


@pytest.mark.parametrize("c", [1.3, -0.7])
@pytest.mark.parametrize(
    "f", [scaled_from_the_iteration_before, scaled_in_a_while_loop, scaled_in_nested_loops]
)
def test_a_value_from_the_iteration_before_overwritten(f, c):
    # the value an iteration reads from the one before is saved before the iteration
    # overwrites it; interpreted only (see test_a_value_carried_into_the_next_iteration)
    check_reverse(f, X, c, jit=False)
    check_forward(f, X, c)
    with pytest.raises(nx.CompileError, match="'y' is not defined"):
        nx.jit(nx.grad(f, argnums=1))(X, c)


def check_forward(f, x, s):
    """jacfwd of ``f(x, s)`` w.r.t. both arguments agrees with central differences."""
    got = nx.jacfwd(f, argnums=(0, 1))(x, s)
    for i, g in enumerate(got):
        want = numeric_jacobian(f, (x, s), i)
        np.testing.assert_allclose(
            g, want, rtol=1e-5, atol=1e-6, err_msg=f"jacfwd of {f.__name__} w.r.t. {i}"
        )


# -- a value first assigned in a branch or a nested loop of a taped loop, read after it ---
# (the adjoint of what follows runs before the branch's or nested loop's own: the value
# is kept at the end of the iteration, so that adjoint sees this iteration's value)


def assigned_in_both_branches(x, c):
    z = 0.0
    for i in range(3):
        if x[i] > 0.4:
            y = x * c
        else:
            y = x * 2.0
        z = z + np.sum(np.sin(y))
        if z > 100.0:
            break
    return z


def assigned_in_both_branches_continue(x, c):
    z = 0.0
    for i in range(3):
        if x[i] > 0.4:
            y = x * c
        else:
            y = x * 2.0
        z = z + np.sum(np.sin(y))
        if z < -100.0:
            continue
        z = z * 0.5 + np.sum(y * y) * 0.1
    return z


def assigned_in_both_branches_store(x, c):
    a = np.zeros(3)
    for i in range(3):
        if x[i] > 0.4:
            y = x[i] * c
        else:
            y = np.cos(x[i]) * 2.0
        a[i] = np.sin(y) * y
    return np.sum(a * x)


def assigned_in_nested_branches(x, c):
    z = 0.0
    for i in range(3):
        if x[i] > 0.4:
            if c > 1.0:
                y = x * c
            else:
                y = np.sin(x) * c
            w = y * y
        else:
            y = x * 2.0
            w = y + c
        z = z + np.sum(np.sin(y) * w)
        if z > 100.0:
            break
    return z


def assigned_in_both_branches_while(x, c):
    z = 0.0
    k = 0
    while k < 3:
        if x[k] > 0.4:
            y = x * c
        else:
            y = x * 2.0
        z = z + np.sum(np.sin(y))
        k = k + 1
    return z


def assigned_in_one_branch(x, c):
    z = 0.0
    y = x * 0.5
    for i in range(3):
        if x[i] > 0.4:
            t = np.sin(y) * c
            y = t * x
        z = z + np.sum(np.cos(y))
        if z > 100.0:
            break
    return z


def first_assigned_in_one_branch(x, c):
    z = 0.0
    for i in range(3):
        if x[i] > 0.4:
            t = np.sin(x) * c
        if x[i] > 0.4:
            z = z + np.sum(t * t)
        if z > 100.0:
            break
    return z


def first_assigned_in_an_inner_loop(x, c):
    z = 0.0
    for _i in range(3):
        for j in range(2):
            t = np.sin(x * c) + j
        z = z + np.sum(t * t) * j
        if z > 100.0:
            break
    return z


def first_assigned_in_an_inner_loop_with_break(x, c):
    z = 0.0
    for i in range(3):
        for j in range(3):
            if x[j] > 0.4:
                t = np.sin(x * c) + i
            else:
                t = x * (c + i)
            if j == i:
                break
        z = z + np.sum(t * t)
        if z > 100.0:
            break
    return z


def first_assigned_in_an_inner_while_loop(x, c):
    z = 0.0
    a = np.zeros(3)
    for i in range(3):
        k = 0
        while k < 2:
            t = np.cos(x * c) * (k + 1.0)
            k = k + 1
        a[i] = np.sum(t * x)
        z = z + a[i] * np.sum(t)
    return z


@pytest.mark.parametrize("c", [1.5, 0.5, -0.8])
@pytest.mark.parametrize("x", [X, np.array([0.5, 0.3, 0.7]), np.array([0.2, 0.9, 0.1])])
@pytest.mark.parametrize(
    "f",
    [
        assigned_in_both_branches,
        assigned_in_both_branches_continue,
        assigned_in_both_branches_store,
        assigned_in_nested_branches,
        assigned_in_both_branches_while,
        assigned_in_one_branch,
        first_assigned_in_one_branch,
        first_assigned_in_an_inner_loop,
        first_assigned_in_an_inner_loop_with_break,
        first_assigned_in_an_inner_while_loop,
    ],
)
def test_a_value_first_assigned_in_a_branch_or_inner_loop(f, x, c):
    check_reverse(f, x, c)


# -- a chain of branches on a parameter passed as a constant ------------------------------
# (Numba prunes the branches of the inlined callee that the constant rules out; the
# adjoint sweep must branch on the same tests, not on saved copies of them, or Numba
# keeps a branch reading what it pruned and refuses the function)


def chosen_by_mode(x, mode):
    if mode == 1:
        r = np.sum(x)
    elif mode == 2:
        r = np.sum(x * x)
    elif mode == 3:
        r = np.sum(np.cos(x) * x)
    else:
        r = np.sum(np.sin(x) * x)
    return r


def a_branch_chain_on_a_constant(x, s):
    return chosen_by_mode(x, 4) * s + chosen_by_mode(x, 2)


def test_a_branch_chain_on_a_constant():
    check_reverse(a_branch_chain_on_a_constant, X, 1.5)
    assert "_old" not in nx.grad(chosen_by_mode).source  # no branch restores a saved test


# -- loop tapes under jit: arrays ---------------------------------------------------------
# (numba_backend/passes/tapes.py: a tape pushed once per iteration of a for loop over range(n)
# becomes an array of n slots indexed by the iteration; any other tape used only by
# append and pop, an array that doubles when full, with a count of its values)


def taped_range_loop(x, s):
    acc = s
    for i in range(3):
        acc = np.sin(acc * x[i]) + s
    return acc


def taped_nested_loops(x, s):
    acc = s
    for i in range(2):
        for j in range(3):
            acc = np.sin(acc * x[j]) + x[i]
    return acc


def taped_loop_in_a_branch(x, s):
    acc = s
    if s > 0.5:
        for i in range(3):
            acc = np.sin(acc * x[i])
    return acc * x[0]


def taped_inside_a_branch(x, s):
    y = np.zeros(3)
    acc = s
    for i in range(3):
        if x[i] > 0.4:
            acc = np.sin(acc * x[i])
        y[i] = acc
    return np.sum(y * s)


def taped_while_loop(x, s):
    acc = s
    k = 0
    while k < 3:
        acc = np.sin(acc * x[k]) + s
        k = k + 1
    return acc


def taped_int_turned_float(x, s):
    acc = 0
    for i in range(3):
        acc = np.sin(acc + x[i] * s)
    return acc


def taped_array_state(x, s):
    h = x
    for _ in range(3):
        h = np.tanh(h * s + x)
    return np.sum(h)


def taped_zero_trip_loop(x, s, n):
    acc = s
    for i in range(n):
        acc = np.sin(acc * x[i]) + s
    return acc * x[0]


def taped_long_while_loop(x, s):
    acc = 0  # an int, then floats
    k = 0
    while k < 40:  # past the 16 slots a growing tape starts with
        acc = np.sin(acc * 0.5 + x[k % 3] * s)
        k = k + 1
    return acc


def _tapes(text):
    """The tapes of a generated source: indexed by an iteration, growing, and lists."""
    arrays = set(re.findall(r"(_tape_\w+) = nxrt\.tape\(", text))
    growing = set(re.findall(r"(_tape_\w+?)_size = 0", text))
    lists = set(re.findall(r"(_tape_\w+) = \[\]", text))
    return arrays - growing, growing, lists


@pytest.mark.parametrize(
    ("f", "indexed", "growing"),
    [
        (taped_range_loop, {"_tape_acc"}, set()),
        (taped_nested_loops, set(), {"_tape_acc"}),  # pushed by both loops
        (taped_loop_in_a_branch, {"_tape_acc"}, set()),
        (taped_inside_a_branch, None, {"_tape_acc"}),  # pushed only where the branch runs
        (taped_while_loop, set(), {"_tape_acc", "_tape_k"}),
        (taped_long_while_loop, set(), {"_tape_acc", "_tape_k"}),
        (taped_int_turned_float, {"_tape_acc"}, set()),
        (taped_array_state, {"_tape_h"}, set()),  # nxrt.tape: a list of n slots
    ],
)
def test_loop_tapes_under_jit(f, indexed, growing):
    check_reverse(f, X, 0.8, jit=False)
    grads = nx.jit(nx.grad(f, argnums=(0, 1)))
    want = [numeric_jacobian(f, (X, 0.8), i) for i in (0, 1)]
    for g, w in zip(grads(X, 0.8), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"jit(grad) of {f.__name__}")
    got_indexed, got_growing, got_lists = _tapes(nx.source(grads))
    assert not got_lists
    if indexed is None:  # others too: those pushed in the branch
        assert growing <= got_growing
    else:
        assert (got_indexed, got_growing) == (indexed, growing)
    eager = _tapes(nx.grad(f).source)
    assert eager[2] and not eager[0] | eager[1]  # interpreted: lists, as they were


def test_an_array_tape_of_a_loop_that_may_not_run():
    grads = nx.jit(nx.grad(taped_zero_trip_loop, argnums=(0, 1)))
    for n in (0, 3):
        want = [numeric_jacobian(taped_zero_trip_loop, (X, 0.8, n), i) for i in (0, 1)]
        for label, got in (
            ("grad", nx.grad(taped_zero_trip_loop, argnums=(0, 1))(X, 0.8, n)),
            ("jit(grad)", grads(X, 0.8, n)),
        ):
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{label}, n={n}")
    assert _tapes(nx.source(grads)) == ({"_tape_acc"}, set(), set())


# -- lists that lose elements: ``l.pop()`` of a list never appended to, its value unused,
# and the adjoint's own pops differentiated again (grad of grad) -------------------------


def pop_of_a_display(x, s):
    values = [x * s, x * 3.0]
    last = values.pop()
    return np.sum(last * last) + np.sum(values[0])


def pop_value_unused(x, s):
    values = [x * 2.0, x * s, x * 4.0]
    values.pop()
    return np.sum(values[0] * values[1])


def appended_then_popped(x, s):
    values = []
    for i in range(3):
        values.append(x * (i + s))
    values.pop()
    return np.sum(values[0] * values[1])


@pytest.mark.parametrize("f", [pop_of_a_display, pop_value_unused, appended_then_popped])
def test_a_popped_list_keeps_its_elements_cotangents(f):
    """The popped element's cotangent went nowhere (a zero gradient, silently) when the
    list was never appended to, and a pop whose value was unused left the adjoint a list
    of the wrong length (an ``IndexError``)."""
    check_reverse(f, X, 0.8)


def sums_of_a_list(x):
    values = []
    for i in range(3):
        values.append(np.sum(x * x * (i + 1.0)))
    return values[0] * values[2] + values[1]


def weighted_slope(x):
    return np.sum(nx.grad(sums_of_a_list)(x) * np.array([0.4, -0.9, 1.3]))


def test_grad_of_a_gradient_through_a_list_appended_in_a_loop():
    """The first adjoint pops the list's cotangents; the second differentiates those
    pops: each popped cotangent's own cotangent is pushed back, and the list has its
    length again where the first adjoint read it."""
    want = numeric_jacobian(weighted_slope, (X,), 0)
    for second in (nx.grad(weighted_slope), nx.jit(nx.grad(weighted_slope))):
        np.testing.assert_allclose(second(X), want, rtol=1e-5, atol=1e-6)


def branch_in_loop(x):
    z = 0.0
    for _ in range(2):
        if np.max(x * x) > 1.0:
            y = x / 3.25
        else:
            y = (x * x) ** 2.0  # never runs at X_WIDE: its values never exist
        z = z + np.sum(np.sin(y))
    return z


def weighted_branch_slope(x):
    return np.sum(nx.grad(branch_in_loop)(x) * np.array([0.4, -0.9, 1.3]))


X_WIDE = np.array([1.06, -1.24, 1.5])


def test_grad_of_a_gradient_through_a_branch_not_taken_in_a_loop():
    """The first adjoint's loop carries the cotangent of a value only the other branch
    makes; the second adjoint made it zero, and fitted it to the value, where the value
    never existed (an ``UnboundLocalError``): now only where it does."""
    want = numeric_jacobian(weighted_branch_slope, (X_WIDE,), 0)
    for second in (nx.grad(weighted_branch_slope), nx.jit(nx.grad(weighted_branch_slope))):
        np.testing.assert_allclose(second(X_WIDE), want, rtol=1e-5, atol=1e-6)
