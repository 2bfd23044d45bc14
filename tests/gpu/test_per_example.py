"""``nx.jit(nx.vmap(f), backend="gpu")``: one GPU thread per example, on Numba's CUDA
simulator (``tests/conftest.py``), equal to the CPU's batch.

The simulator runs every thread as Python, so the batches are tiny; on a machine with a
GPU, ``NUMBA_ENABLE_CUDASIM=0`` runs the same tests there (``benchmarks/gpu``).
"""

from __future__ import annotations

import math

import numba.core.errors
import numpy as np
import pytest

import numbax as nx
from benchmarks.gpu.replay import damped as damped_steps  # a loop with a tape and a break
from numbax.numba_backend.cuda import target as gpu
from tests.gpu.helpers import leaves
from tests.helpers.source import line_of


def newton_sqrt(a):
    """Each example stops at its own trip count."""
    x = a
    while abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def energy(a, b):
    r = np.tanh(a * b) + a**2
    if a > 0:  # a branch per example
        r = r + np.exp(-b) * math.sin(a)
    return r


def row_norm(v, scale):
    total = 0.0
    for k in range(v.shape[0]):
        total = total + v[k] * v[k]
    return scale * np.sqrt(total)


def per_example_vector(a):
    return np.array([a, 2 * a])


A = np.array([2.0, 3.0, 0.25, 9.0, -0.5])


def test_each_example_runs_its_own_while_loop():
    got = nx.jit(nx.vmap(newton_sqrt), backend="gpu")(np.abs(A))
    np.testing.assert_allclose(nx.device_get(got), np.sqrt(np.abs(A)), rtol=1e-12)


@pytest.mark.parametrize("transform", ["value", "grad", "value_and_grad"])
def test_a_branch_and_its_derivatives_inside_each_thread(transform):
    """Forward and reverse mode inside the thread, with an unmapped argument."""
    per_example = {
        "value": energy,
        "grad": nx.grad(energy, argnums=(0, 1)),
        "value_and_grad": nx.value_and_grad(energy),
    }[transform]
    b = 0.7
    got = nx.jit(nx.vmap(per_example, in_axes=(0, None)), backend="gpu")(A, b)
    want = nx.vmap(per_example, in_axes=(0, None))(A, b)
    for g, w in zip(*(leaves(v) for v in (got, want)), strict=True):
        np.testing.assert_allclose(nx.device_get(g), w, rtol=1e-13)


def test_the_gradient_of_a_bounded_loop_keeps_its_tapes_in_local_memory():
    x = np.array([0.5, 1.0, 2.9, 5.0])  # the last two leave the loop early
    per_example = nx.value_and_grad(damped_steps, argnums=(0, 1))
    batched = nx.jit(nx.vmap(per_example, in_axes=(0, None)), backend="gpu")
    value, (dx, drate) = batched(x, 10.0)
    want_value, (want_dx, want_drate) = nx.vmap(per_example, in_axes=(0, None))(x, 10.0)
    np.testing.assert_allclose(nx.device_get(value), want_value, rtol=1e-13)
    np.testing.assert_allclose(nx.device_get(dx), want_dx, rtol=1e-13)
    np.testing.assert_allclose(nx.device_get(drate), want_drate, rtol=1e-13)
    assert "_tape_x = nxrt.local_tape(x, 20)" in batched.source  # one slot an iteration


def relaxation(steps):
    def relax(x, rate):
        for _ in range(steps):  # a closure variable: frozen when compiling
            x = x - rate * np.sin(x)
        return x

    return relax


def test_a_loop_bounded_by_a_closure_variable_sizes_its_tapes_by_its_value():
    x = np.array([0.3, 1.2, 2.5])
    per_example = nx.grad(relaxation(6), argnums=(0, 1))
    batched = nx.jit(nx.vmap(per_example, in_axes=(0, None)), backend="gpu")
    got = batched(x, 0.4)
    want = nx.vmap(per_example, in_axes=(0, None))(x, 0.4)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(nx.device_get(g), w, rtol=1e-13)
    assert "nxrt.local_tape(x, 6)" in batched.source


def test_two_closures_of_one_factory_are_two_device_functions():
    x = np.array([0.3, 1.2])
    for steps in (2, 3):
        got = nx.jit(nx.vmap(relaxation(steps), in_axes=(0, None)), backend="gpu")(x, 0.4)
        want = nx.vmap(relaxation(steps), in_axes=(0, None))(x, 0.4)
        np.testing.assert_allclose(nx.device_get(got), want, rtol=1e-14)


def countdown(n):
    return 0.0 if n <= 0 else 1.0 + countdown(n - 1)


def coupled(x):
    return np.sum(x * x) * np.sum(np.sin(x))


def test_a_vmap_inside_the_thread_is_refused_at_the_function():
    """jacfwd batches its JVPs over the basis with a vmap, which a thread cannot run
    (read as a function, the vmap called itself until Python's recursion limit)."""
    per_example = nx.vmap(nx.hessian(coupled))
    with pytest.raises(nx.CompileError, match="vmap inside each thread") as caught:
        nx.jit(per_example, backend="gpu")(np.ones((2, 3)))
    assert caught.value.lineno == coupled.__code__.co_firstlineno


def test_recursion_is_refused_at_the_function():
    with pytest.raises(nx.CompileError, match="calls itself") as info:
        nx.jit(nx.vmap(countdown), backend="gpu")(np.array([3, 4]))
    assert info.value.lineno == countdown.__code__.co_firstlineno


def clashing(_size, cuda):
    return _size * cuda


def test_parameters_named_like_the_kernels_own_names():
    got = nx.jit(nx.vmap(clashing), backend="gpu")(A, A + 1.0)
    np.testing.assert_allclose(nx.device_get(got), A * (A + 1.0))


def test_rows_of_a_matrix_are_examples():
    v = np.arange(12.0).reshape(4, 3)
    got = nx.jit(nx.vmap(row_norm, in_axes=(0, None)), backend="gpu")(v, 2.0)
    np.testing.assert_allclose(nx.device_get(got), 2 * np.linalg.norm(v, axis=1), rtol=1e-13)


def test_results_stay_on_the_device_and_come_back_when_asked():
    batched = nx.jit(nx.vmap(newton_sqrt), backend="gpu")
    on_device = nx.device_put(np.array([4.0, 16.0]), nx.devices("gpu")[0])
    assert gpu.is_device_array(on_device)
    result = nx.block_until_ready(batched(on_device))  # a device array in, no copy
    assert gpu.is_device_array(result)
    assert isinstance(nx.device_get(result), np.ndarray)
    np.testing.assert_allclose(nx.device_get({"r": result})["r"], [2.0, 4.0])
    again = batched(result)  # a result is an argument of the next call as it is
    np.testing.assert_allclose(nx.device_get(again), np.sqrt([2.0, 4.0]), rtol=1e-12)


def test_dtypes_are_numpys():
    """float32 stays float32; ``np.exp`` of a Python float is float64, as in NumPy."""
    batched = nx.jit(nx.vmap(energy, in_axes=(0, None)), backend="gpu")
    a = A.astype(np.float32)
    for b in (np.float32(0.5), 0.5):
        got = nx.device_get(batched(a, b))
        want = nx.vmap(energy, in_axes=(0, None))(a, b)
        assert got.dtype == want.dtype == (np.float32 if isinstance(b, np.float32) else np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_empty_batch_is_refused_as_by_the_cpus_loop():
    with pytest.raises(ValueError, match="the batch is empty"):
        nx.jit(nx.vmap(newton_sqrt), backend="gpu")(np.array([], dtype=np.float64))


def test_source_shows_the_kernel_its_launch_and_the_device_function():
    batched = nx.jit(nx.vmap(nx.grad(energy)), backend="gpu")
    assert "not called yet" in batched.source
    batched(A, np.full(A.shape, 0.3))
    text = nx.source(batched)
    assert "_result = grad_energy(a[_example], b[_example])" in text
    assert "launch: 128 threads a block" in text
    assert "# gpu device function of grad_energy" in text
    assert "# adjoint of line" in text  # the derivative's lines map to the user's


def test_devices():
    cpus = nx.devices()  # numbax's default backend: the CPU's cores
    assert {d.platform for d in cpus} == {"cpu"} and len(cpus) == nx.local_device_count()
    (device,) = nx.devices("gpu")
    assert device.platform == "gpu" and repr(device) == "CudaDevice(id=0)"
    with pytest.raises(RuntimeError, match="unknown backend"):
        nx.devices("tpu")


# -- what the GPU backend refuses, and how it says so -------------------------------------


def test_a_function_that_is_not_elementwise_is_refused_at_its_first_such_line():
    with pytest.raises(nx.CompileError, match=r"jit\(vmap\(f\), backend='gpu'\)") as info:
        nx.jit(energy, backend="gpu")(A, A)
    assert (info.value.filename, info.value.lineno) == (__file__, line_of(energy, "if a > 0"))
    with pytest.raises(nx.CompileError) as info:
        nx.jit(row_norm, backend="gpu")(A, 1.0)
    assert info.value.lineno == line_of(row_norm, "for k in")


def test_an_array_of_numbers_per_example():
    """Written into its rows of the result (``local_arrays``)."""
    got = nx.jit(nx.vmap(per_example_vector), backend="gpu")(A)
    np.testing.assert_array_equal(nx.device_get(got), np.stack([A, 2 * A], axis=1))


def test_an_axis_other_than_the_first_is_refused():
    with pytest.raises(ValueError, match="np.moveaxis"):
        nx.jit(nx.vmap(row_norm, in_axes=(1, None)), backend="gpu")(np.ones((3, 4)), 1.0)


def test_a_while_loops_tape_is_refused_at_the_users_line():
    """Its trip count has no bound to size a tape in local memory by. The simulator
    would run a Python list, which a GPU cannot allocate, so both refuse."""
    with pytest.raises(nx.CompileError, match="tape") as info:
        nx.jit(nx.vmap(nx.grad(newton_sqrt)), backend="gpu")(A)
    assert info.value.filename == __file__
    assert info.value.lineno == line_of(newton_sqrt, "while")


def test_what_numba_cuda_cannot_compile_is_named_at_the_users_line(monkeypatch):
    """The simulator compiles nothing; on a GPU, numba-cuda's typing error at the first
    launch becomes numbax's CompileError at the line it points to."""
    batched = nx.jit(nx.vmap(energy, in_axes=(0, None)), backend="gpu")
    kernel = batched.kernel(A, 0.5)
    path = kernel.function.generated.path
    line = next(
        n
        for n, text in enumerate(kernel.function.text.splitlines(), start=1)
        if "math.sin(a)" in text and not text.lstrip().startswith("#")
    )

    class Launcher:
        def __getitem__(self, config):
            def launch(*args):
                message = f'Unknown attribute\n\nFile "{path}", line {line}:\n'
                raise numba.core.errors.TypingError(message)

            return launch

    monkeypatch.setattr(kernel, "launcher", Launcher())
    with pytest.raises(nx.CompileError, match="Numba cannot compile it") as info:
        batched(A, 0.5)
    assert (info.value.filename, info.value.lineno) == (__file__, line_of(energy, "math.sin"))
    assert "jit(backend='gpu')" in str(info.value) and "backend='cpu'" in str(info.value)


def test_options_the_gpu_does_not_take_are_refused_not_ignored():
    with pytest.raises(TypeError, match=r"does not take \['static_argnums'\]"):
        nx.jit(nx.vmap(newton_sqrt), backend="gpu", static_argnums=0)
    compiled = nx.jit(nx.vmap(newton_sqrt), backend="gpu", donate_argnums=0)  # JAX's: no effect
    np.testing.assert_allclose(nx.device_get(compiled(np.array([4.0]))), [2.0])


def test_a_pytree_argument_is_refused_with_what_to_pass():
    with pytest.raises(TypeError, match="argument 'b' is a dict"):
        nx.jit(nx.vmap(energy, in_axes=(0, None)), backend="gpu")(A, {"b": 1.0})


def test_without_numba_cuda_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(gpu, "simulated", lambda: False)
    monkeypatch.setattr(gpu.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(gpu.GpuUnavailableError, match=r"pip install 'numbax\[cuda\]'"):
        nx.jit(nx.vmap(energy), backend="gpu")
