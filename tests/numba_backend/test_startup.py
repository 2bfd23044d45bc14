"""numbax's start-up shortcuts (SciPy's BLAS bindings, rocket-fft without ``scipy.fft``)
leave SciPy fully usable."""

import os
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import numbax as nx

    jit = nx.jit  # the backend loads at numbax's first use
    assert "scipy.linalg.cython_blas" in sys.modules
    assert "scipy.linalg" not in sys.modules

    def affine(w, x):
        return np.linalg.det(w) * (w @ x)

    w = np.array([[2.0, 1.0], [0.0, 3.0]])
    x = np.array([1.0, -1.0])
    np.testing.assert_allclose(jit(affine)(w, x), affine(w, x))

    import scipy.linalg
    import scipy.linalg.cython_blas
    np.testing.assert_allclose(scipy.linalg.solve(w, x), np.linalg.solve(w, x))
    print("ok")
    """
)


def test_blas_preload_keeps_scipy_and_numba_linear_algebra_working(tmp_path):
    script = tmp_path / "startup.py"
    script.write_text(_SCRIPT)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


_FFT_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import numbax as nx

    jit = nx.jit  # the backend loads at numbax's first use
    assert "scipy.fft" not in sys.modules, "rocket-fft imported scipy.fft"
    assert "scipy.special" not in sys.modules

    def spectrum(v):
        return np.abs(np.fft.rfft(v))

    x = np.arange(8.0)
    np.testing.assert_allclose(jit(spectrum)(x), spectrum(x))

    import scipy.fft

    def scipy_spectrum(v):  # rocket-fft's versions of scipy.fft, registered now
        return np.abs(scipy.fft.rfft(v))

    np.testing.assert_allclose(jit(scipy_spectrum)(x), spectrum(x))
    print("ok")
    """
)


def test_rocket_fft_leaves_scipy_fft_until_the_program_imports_it(tmp_path):
    script = tmp_path / "fft_startup.py"
    script.write_text(_FFT_SCRIPT)
    env = {**os.environ, "NUMBAX_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"
