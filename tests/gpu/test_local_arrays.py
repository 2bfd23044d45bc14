"""Arrays inside a GPU thread (``numba_backend/cuda/local_arrays.py``): each example's array
code, and its gradient's, as loops over local memory, equal to the CPU's batch.

On the simulator the threads run as Python, so the examples are few and small;
``benchmarks/gpu/ptx.py`` compiles the MLP's kernel for a GPU with numba-cuda.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.gpu.helpers import leaves
from tests.helpers.source import line_of

RNG = np.random.default_rng(7)
W1, B1, W2 = RNG.normal(size=(4, 3)), RNG.normal(size=4), RNG.normal(size=4)
X, Y = RNG.normal(size=(3, 3)), RNG.normal(size=3)
PARAMETERS = (None, None, None, 0, 0)


def mlp_loss(w1, b1, w2, x, y):
    h = np.tanh(w1 @ x + b1)
    p = np.dot(w2, h)
    return (p - y) ** 2 + 0.1 * np.sum(h * h)


SIZE = 3


def weighted_norm(v, weights):
    """A loop writing the gradient's array element by element (its bound a constant, so
    that the tape of ``total`` fits in the thread's local memory)."""
    total = 0.0
    for k in range(SIZE):
        total = total + weights[k] * v[k] * v[k]
    return np.sqrt(total)


def broadcast_rows(m, row, column):
    """Broadcasting inside the thread: a matrix with a row and a column."""
    scaled = m * row + np.exp(column)
    return np.sum(scaled * scaled) + m[1] @ row


def grown_in_a_loop(v, w):
    for _ in range(3):
        v = v * 0.5
        v = np.tanh(w @ v) + v  # a product of the array the loop carries
    return np.sum(v)


def kept_in_a_loop(v):
    first = v
    for _ in range(2):
        v = v * 0.5
        first = v  # another name for the loop's array
    return np.sum(first + v)


def sliced(v):
    return np.sum(v[1:] * 2.0)


def both(v):
    return v * 2.0, np.sum(v)


def _check(per_example, axes, *args, rtol=1e-12):
    got = nx.jit(nx.vmap(per_example, in_axes=axes), backend="gpu")(*args)
    want = nx.vmap(per_example, in_axes=axes)(*args)
    for g, w in zip(leaves(got), leaves(want), strict=True):
        host = nx.device_get(g)
        assert host.shape == np.shape(w) and host.dtype == np.result_type(w)
        np.testing.assert_allclose(host, w, rtol=rtol)


def test_per_example_gradients_of_an_mlp():
    _check(nx.grad(mlp_loss, argnums=(0, 1, 2)), PARAMETERS, W1, B1, W2, X, Y)


def test_a_value_with_its_gradient_arrays():
    """Numbers returned and arrays written, in one result."""
    _check(nx.value_and_grad(mlp_loss, argnums=(0, 3)), PARAMETERS, W1, B1, W2, X, Y)


def test_float32_stays_float32():
    args = [a.astype(np.float32) for a in (W1, B1, W2, X, Y)]
    _check(nx.grad(mlp_loss, argnums=(0, 1)), PARAMETERS, *args, rtol=1e-5)


def test_a_gradient_written_element_by_element_in_a_loop():
    _check(nx.grad(weighted_norm), (0, None), X, np.array([1.0, 2.0, 0.5]))


def test_broadcasting_inside_the_thread():
    m = RNG.normal(size=(3, 2, 3))
    row, column = RNG.normal(size=3), RNG.normal(size=(2, 1))
    _check(broadcast_rows, (0, None, None), m, row, column)
    _check(nx.grad(broadcast_rows, argnums=(0, 1, 2)), (0, None, None), m, row, column)


def test_arrays_returned_per_example():
    _check(both, 0, X)


def test_the_source_shows_the_loops_under_the_users_lines():
    batched = nx.jit(nx.vmap(nx.grad(mlp_loss), in_axes=PARAMETERS), backend="gpu")
    batched(W1, B1, W2, X, Y)
    text = nx.source(batched)
    assert "arrays in local memory, for one example's shapes: w1 (4, 3) float64" in text
    assert "_matmul = cuda.local.array((4,), np.float64)" in text
    assert "# line 23: h = np.tanh(w1 @ x + b1)" in text.replace(
        f"line {line_of(mlp_loss, 'np.tanh')}", "line 23"
    )
    assert "_result_0[_i0, _i1] = _ct_w1[_i0, _i1]" in text
    assert "_out_0[_example]" in text


def test_arrays_made_in_every_pass_of_a_loop():
    """Each written into a buffer made before the loop, the same in every pass."""
    w = np.eye(3) * 0.3 + 0.1
    _check(grown_in_a_loop, (0, None), X, w)
    batched = nx.jit(nx.vmap(grown_in_a_loop, in_axes=(0, None)), backend="gpu")
    batched(X, w)
    assert "_v_buffer = cuda.local.array((3,), np.float64)\n    _matmul_buffer" in batched.source


def test_the_gradient_of_a_loop_carrying_an_array_keeps_a_tape_of_rows():
    """Each pass's array pushed as a row of a tape in local memory, popped in reverse."""
    w = np.eye(3) * 0.3 + 0.1
    per_example = nx.value_and_grad(grown_in_a_loop, argnums=(0, 1))
    _check(per_example, (0, None), X, w)
    batched = nx.jit(nx.vmap(per_example, in_axes=(0, None)), backend="gpu")
    batched(X, w)
    assert "_tape_v = cuda.local.array((3, 3), np.float64)" in batched.source
    assert "_tape_v[_tape_v_size, _i0] = v[_i0]" in batched.source


def test_another_name_for_an_array_made_in_a_loop_is_refused_at_its_line():
    with pytest.raises(nx.CompileError, match="another name may hold it") as info:
        nx.jit(nx.vmap(kept_in_a_loop), backend="gpu")(X)
    assert info.value.lineno == line_of(kept_in_a_loop, "v = v * 0.5")


def test_a_slice_is_a_view_of_the_examples_array():
    _check(sliced, 0, X)


def test_what_a_thread_cannot_run_on_arrays_is_named_at_the_users_line():
    """The adjoint of a slice adds into part of an array; not written yet."""
    with pytest.raises(nx.CompileError, match="nxrt.index_add") as info:
        nx.jit(nx.vmap(nx.grad(sliced)), backend="gpu")(X)
    assert info.value.lineno == line_of(sliced, "v[1:]")


def log_sum_exp(v, s):
    """A per-example reduction by the maximum, its ties, and a product."""
    m = np.max(v)
    return m + np.log(np.sum(np.exp(v - m))) + s * np.prod(v) + np.mean(v * s) - np.min(v)


def test_the_reductions_of_an_example_and_their_derivatives():
    v = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, 0.0], [3.0, 3.0, -2.0]])  # ties, a zero
    _check(log_sum_exp, (0, None), v, 0.7)
    _check(nx.grad(log_sum_exp, argnums=(0, 1)), (0, None), v, 0.7)


def first_of(v, k):
    return np.sum(v[:k] * 2.0)


def test_a_view_whose_shape_is_a_value_of_the_example_is_refused_at_its_line():
    """Its shape in one example is not its shape in every example."""
    with pytest.raises(nx.CompileError, match="slices by a value of the example") as info:
        nx.jit(nx.vmap(first_of), backend="gpu")(X, np.array([1, 2, 3]))
    assert info.value.lineno == line_of(first_of, "v[:k]")


def shape_by_branch(v, s):
    if s > 0:
        t = v * 2.0
    else:
        t = s * 1.0  # a number on the path the first example does not take
    return np.sum(t)


def test_a_name_with_another_shape_on_a_path_not_taken_is_refused_at_its_line():
    with pytest.raises(nx.CompileError, match="another shape than") as info:
        nx.jit(nx.vmap(shape_by_branch), backend="gpu")(X, np.array([1.0, -1.0, 2.0]))
    assert info.value.lineno == line_of(shape_by_branch, "t = s * 1.0")


def norm_by_shape(v):
    """A loop bounded by the example's shape, known when compiling."""
    total = 0.0
    for k in range(v.shape[0]):
        total = total + v[k] * v[k] * v.ndim
    return np.sqrt(total)


def test_a_loop_over_an_arrays_shape_is_bounded_for_its_tape():
    _check(nx.grad(norm_by_shape), 0, X)
    batched = nx.jit(nx.vmap(nx.grad(norm_by_shape)), backend="gpu")
    batched(X)
    assert "for k in range(3):" in batched.source
    assert "nxrt.local_tape(total, 3)" in batched.source
