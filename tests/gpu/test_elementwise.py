"""``nx.jit(f, backend="gpu")`` of an elementwise function: one GPU thread per element
of its arguments' broadcast, on Numba's CUDA simulator (tiny arrays), equal to NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.numba_backend.cuda import target as gpu


def selu(x, alpha=1.67, lam=1.05):
    return lam * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def softplus_pair(x, y):
    return np.log1p(np.exp(x * y)) - np.tanh(y)


X = np.linspace(-2.0, 2.0, 7)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_selu_equals_numpy_in_its_dtype(dtype):
    x = X.astype(dtype)
    got = nx.device_get(nx.jit(selu, backend="gpu")(x))
    assert got.dtype == selu(x).dtype == dtype
    np.testing.assert_allclose(got, selu(x), rtol=1e-6 if dtype == np.float32 else 1e-14)


def test_arguments_broadcast_and_results_keep_the_shape():
    x = X[:6].reshape(2, 3)
    y = np.array([0.5, -1.0, 2.0])
    got = nx.jit(softplus_pair, backend="gpu")(x, y)
    assert gpu.is_device_array(got) and got.shape == (2, 3)
    np.testing.assert_allclose(nx.device_get(got), softplus_pair(x, y), rtol=1e-14)


def test_a_scalar_argument_is_shared_by_every_thread():
    got = nx.jit(selu, backend="gpu")(X, 2.0, 0.5)
    np.testing.assert_allclose(nx.device_get(got), selu(X, 2.0, 0.5), rtol=1e-14)


def test_the_derivative_of_an_elementwise_chain_is_elementwise_too():
    """grad of a per-element function, vmapped, is elementwise: one thread each."""
    per_element = nx.vmap(nx.grad(selu))
    got = nx.jit(per_element, backend="gpu")(X)
    np.testing.assert_allclose(nx.device_get(got), per_element(X), rtol=1e-14)


def test_source_shows_a_thread_per_element():
    compiled = nx.jit(selu, backend="gpu")
    compiled(X)
    assert "one thread per element" in compiled.source
    assert "_result = selu(x[_example], alpha, lam)" in compiled.source


def test_arguments_broadcast_on_the_device_without_copies():
    """Each argument is read at its own size, through strides that are 0 where it is
    broadcast: a device array of any broadcastable shape, a NumPy one not spread out."""
    gpu_device = nx.devices("gpu")[0]
    row, column = nx.device_put(X, gpu_device), nx.device_put(X[:3].reshape(3, 1), gpu_device)
    got = nx.jit(softplus_pair, backend="gpu")(row, column)
    assert got.shape == (3, 7)
    want = softplus_pair(X, X[:3].reshape(3, 1))
    np.testing.assert_allclose(nx.device_get(got), want, rtol=1e-14)
    compiled = nx.jit(softplus_pair, backend="gpu")
    compiled(X.reshape(7, 1, 1), X[:2].reshape(1, 2, 1))
    assert "y[_broadcast_offset(_example, _shape, _strides_1)]" in compiled.source


def test_a_device_array_that_is_not_contiguous_is_refused_with_what_to_pass():
    on_device = nx.device_put(np.ones((3, 4)), nx.devices("gpu")[0])
    strided = on_device[:, ::2]
    with pytest.raises(ValueError, match="not C-contiguous"):
        nx.jit(softplus_pair, backend="gpu")(strided, 1.0)


def ignores_its_first(x, y):
    return y * 2.0


def test_an_array_the_result_does_not_read_is_not_its_shape():
    """As in NumPy: the result broadcasts the arrays it reads, and no others."""
    got = nx.jit(ignores_its_first, backend="gpu")(X.reshape(7, 1), X[:3])
    assert got.shape == (3,)
    np.testing.assert_allclose(nx.device_get(got), 2 * X[:3])
    with pytest.raises(TypeError, match="it reads none here"):
        nx.jit(ignores_its_first, backend="gpu")(X, 3.0)


def test_arrays_are_needed():
    with pytest.raises(TypeError, match="once per element of the arrays it reads"):
        nx.jit(selu, backend="gpu")(1.0)


def linear(x, w):
    return np.tanh(x @ w)


def running_total(x):
    return np.cumsum(x) * 2.0


def test_an_operation_the_kernels_do_not_run_is_named_in_its_refusal():
    with pytest.raises(nx.CompileError, match=r"\(the matrix product @\).*cupy.matmul") as info:
        nx.jit(linear, backend="gpu")(np.ones((2, 3)), np.ones((3, 2)))
    assert info.value.construct == "the matrix product @"
    with pytest.raises(nx.CompileError, match=r"\(numpy.cumsum\) is neither"):
        nx.jit(running_total, backend="gpu")(X)
