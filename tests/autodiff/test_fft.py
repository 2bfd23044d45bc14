"""numpy.fft's derivatives: each transform with a complex result, checked through a real
function of it (``jacrev`` needs real outputs, ``jacfwd`` real inputs, as in JAX), so a
transpose that conjugates where JAX's convention does not, or that weighs the Hermitian
half wrongly, shows against central finite differences. The rules say so
(``checked_elsewhere``): the rule table does not check them. ``vmap``'s vectorized
method is compared with its loop. Under jit: one program of each kind of transpose,
compiled once (rocket-fft compiles slowly).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians, numeric_jacobian


def complex_of(xr, xi):
    return xr + 1j * xi


def parts(y):
    return np.real(y) * 1.3 - np.imag(y) * 0.7


def fft_n_axis_norm(xr, xi):
    return parts(np.fft.fft(xr + 1j * xi, 7, 0, "ortho"))


def ifft_cut(xr, xi):
    return parts(np.fft.ifft(xr + 1j * xi, n=3, norm="forward"))


def fft2_s(xr, xi):
    return parts(np.fft.fft2(xr + 1j * xi, (3, 6)))


def ifft2_default(xr, xi):
    return parts(np.fft.ifft2(xr + 1j * xi))


def fftn_axes(xr, xi):
    return parts(np.fft.fftn(xr + 1j * xi, None, (1,), "ortho"))


def ifftn_s_axes(xr, xi):
    return parts(np.fft.ifftn(xr + 1j * xi, (5, 3), (1, 0)))


def rfft_odd(x):
    return parts(np.fft.rfft(x, 7, 1))


def rfft_even_axis0(x):
    return parts(np.fft.rfft(x, axis=0, norm="forward"))


def rfft2_default(x):
    return parts(np.fft.rfft2(x))


def rfftn_s(x):
    return parts(np.fft.rfftn(x, (3, 7), (0, 1), "ortho"))


def ihfft_n(x):
    return parts(np.fft.ihfft(x, 6, 0, "forward"))


def irfft_complex(xr, xi):
    return np.fft.irfft(xr + 1j * xi, 6, 1, "ortho")


def hfft_complex(xr, xi):
    return np.fft.hfft(xr + 1j * xi, 7, 0)


def irfftn_complex(xr, xi):
    return np.fft.irfftn(xr + 1j * xi, (4, 6), (0, 1))


def round_trip(x):
    return np.fft.irfft(np.fft.rfft(x) * (1 + 0.5j), 5, 1)


def irfft_real_input(x):
    return np.fft.irfft(x, None, 0, "forward")


def hfft_real_input(x):
    return np.fft.hfft(x, 4, norm="ortho")


def irfft2_s(x):
    return np.fft.irfft2(x, (3, 5))


def shifts(x):
    return np.fft.fftshift(x) * np.fft.ifftshift(x, 1) + np.fft.fftshift(x, (0,))


def frequencies(x):
    return np.fft.fftfreq(6, x[0, 0]) * np.fft.rfftfreq(11, x[1, 2])


TWO = [fft_n_axis_norm, ifft_cut, fft2_s, ifft2_default, fftn_axes, ifftn_s_axes]
TWO += [irfft_complex, hfft_complex, irfftn_complex]
ONE = [rfft_odd, rfft_even_axis0, rfft2_default, rfftn_s, ihfft_n, round_trip]
ONE += [irfft_real_input, hfft_real_input, irfft2_s, shifts, frequencies]


def _inputs(k: int) -> list[np.ndarray]:
    rng = np.random.default_rng(k)
    return [rng.normal(size=(4, 5)) for _ in range(k)]


@pytest.mark.parametrize("f", TWO + ONE, ids=lambda f: f.__name__)
def test_transforms_match_finite_differences(f):
    """jacfwd and jacrev, interpreted, in the real and imaginary parts of the input."""
    check_jacobians(f, *_inputs(2 if f in TWO else 1), jit=False)


def test_second_derivatives_are_ffts_again():
    """The transposes are built of FFTs and linear helpers, each with its own rules."""

    def energy(x):
        y = np.fft.rfft(x * x, 7, 1)
        return np.sum(np.abs(y) ** 2)

    x = _inputs(1)[0]
    want = numeric_jacobian(nx.grad(energy), (x,), 0).reshape(20, 20)
    np.testing.assert_allclose(nx.hessian(energy)(x).reshape(20, 20), want, atol=1e-5)


def test_vmap_batches_the_transforms():
    """Each example transformed along its own axes, as one call on the batch."""

    def f(x):
        y = np.fft.fftn(x, None, (0, 1)) + np.fft.ifft(x, 6, 0)[:4] + np.fft.ifft2(x)
        y = np.fft.irfft(y, 4, -1) + np.fft.fftshift(x, 1)[:, :4] + np.fft.ifftshift(x)[:, :4]
        z = (
            np.fft.rfft(y, axis=0)
            + np.fft.ihfft(y, 4, 0, "ortho")
            + np.fft.rfft2(y, (4, 4), (1, 0))
        )
        w = np.fft.irfftn(z, (4, 3), (0, 1)) + np.fft.hfft(z, 4, 0)[:, :3] + np.fft.rfftn(y)[:, :3]
        return w * np.fft.fftfreq(3)

    xs = np.random.default_rng(3).normal(size=(3, 4, 5)) + 2.0
    vectorized = nx.vmap(f, method="vectorized")
    got = vectorized(xs)
    assert "vectorized" in vectorized.source
    np.testing.assert_allclose(got, np.stack([f(x) for x in xs]), atol=1e-12)


def test_matches_jax():
    """The VJP of a chain of complex and real transforms at a complex cotangent."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def f(a):
        return np.fft.rfft(np.fft.irfft(np.fft.fft(a, 5, 0), 6, 1), axis=0)

    def f_jax(a):
        return jnp.fft.rfft(jnp.fft.irfft(jnp.fft.fft(a, 5, 0), 6, 1), axis=0)

    z = complex_of(*_inputs(2))
    ct = complex_of(*_inputs(2))[:3, :5].repeat(2, 1)[:, :6]
    want = jax.vjp(f_jax, z)[1](ct)[0]
    np.testing.assert_allclose(nx.vjp(f, z)[1](ct)[0], want, atol=1e-10)


# -- under jit: one program, every transform ----------------------------------------------


def program(xr, xi):
    """One of each kind of transpose: rfft (lengths), irfft (Hermitian weights along an
    axis), rfftn and irfftn (shapes and axes), fftshift."""
    spectrum = np.fft.rfft(xr, 7, 1) * (1 + 0.5j)
    total = np.sum(np.fft.irfft(spectrum, 5, 1, "ortho") * xi)
    planes = np.fft.rfftn(xi, (4, 6), (0, 1))
    total += np.sum(np.fft.irfftn(planes * (1 - 0.5j), (4, 5), (0, 1), "forward") * xr)
    return total + np.sum(np.fft.fftshift(xr, (1,)) * xi)


@pytest.fixture(scope="module")
def compiled_grad():
    pytest.importorskip("rocket_fft")
    return nx.jit(nx.grad(program, argnums=(0, 1)))


def test_under_jit(compiled_grad):
    """The program's gradient compiled (rocket-fft compiles slowly: the other transforms
    compile through the same helpers; forward mode: the rule table's irfft sample)."""
    args = _inputs(2)
    got = compiled_grad(*args)
    for k in (0, 1):
        want = numeric_jacobian(program, args, k)
        np.testing.assert_allclose(got[k], want, atol=1e-6)


def test_jit_without_rocket_fft_says_what_to_install(tmp_path):
    """Numba has no FFT: without the `fft` extra, jit of an FFT names the package."""
    script = tmp_path / "without_rocket_fft.py"
    script.write_text(
        "import sys\n"
        "sys.modules['rocket_fft'] = None  # as if it were not installed\n"
        "import numpy as np\n"
        "import numbax as nx\n\n\n"
        "def f(x):\n"
        "    return np.fft.rfft(x)\n\n\n"
        "try:\n"
        "    nx.jit(f)(np.ones(4))\n"
        "except nx.CompileError as err:\n"
        "    print(err)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-W", "ignore", str(script)], capture_output=True, text=True, env=env
    )
    assert "numpy.fft.rfft under nx.jit needs rocket-fft" in result.stdout, result.stderr[-2000:]
    assert "pip install 'numbax[fft]'" in result.stdout
