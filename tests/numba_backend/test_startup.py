"""numbax's start-up shortcut for SciPy's BLAS bindings leaves SciPy fully usable."""

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
