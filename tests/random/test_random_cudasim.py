"""The generator's scalar core and the samplers' scalar bodies compiled as CUDA device
functions, run in Numba's CUDA simulator: a kernel's threads must give numbax.random's
numbers (bit for bit, but for the last bits of ``log``).

The simulator is chosen by ``NUMBA_ENABLE_CUDASIM=1``, which Numba reads when it is first
imported, so the kernel runs in a subprocess: this pytest process keeps the real target.
"""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    from numba import config, cuda

    from numbax import random as nr
    from numbax.random.threefry import threefry2x32 as threefry_numpy
    from numbax.numba_backend.random.kernels import scalar_core

    assert config.ENABLE_CUDASIM
    threefry2x32, hash_index, _, unit_f32, unit_f64 = scalar_core(cuda.jit(device=True))


    @cuda.jit
    def draw(key, x, hashed, bits, u32, u64):
        i = cuda.grid(1)
        if i < bits.size:
            w0, w1 = threefry2x32(key[0], key[1], x[0, i], x[1, i])
            hashed[0, i] = w0
            hashed[1, i] = w1
            h0, h1 = hash_index(key[0], key[1], i)
            bits[i] = h0 ^ h1
            u32[i] = unit_f32(key[0], key[1], i)
            u64[i] = unit_f64(key[0], key[1], i)


    for seed in (0, 1701, 2**40 + 5):
        key = nr.key(seed)
        x = nr.bits(nr.fold_in(key, 1), (2, 8))
        hashed = np.zeros((2, 8), np.uint32)
        bits = np.zeros(8, np.uint32)
        u32 = np.zeros(8, np.float32)
        u64 = np.zeros(8, np.float64)
        draw[1, 8](key, x, hashed, bits, u32, u64)
        expected = np.stack(threefry_numpy(key[:1], key[1:], x[0], x[1]))
        assert hashed.tobytes() == expected.tobytes(), (seed, hashed, expected)
        assert bits.tobytes() == nr.bits(key, 8).tobytes(), seed
        assert u32.tobytes() == nr.uniform(key, 8, np.float32).tobytes(), seed
        assert u64.tobytes() == nr.uniform(key, 8, np.float64).tobytes(), seed
    print("ok")
    """
)


def test_scalar_core_runs_in_a_cuda_kernel():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


SAMPLERS_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    from numba import config, cuda

    from numbax import random as nr
    from numbax.numba_backend.cuda.random import scalar_draws

    assert config.ENABLE_CUDASIM
    draws = scalar_draws(cuda.jit(device=True), "simulator")


    def kernel(kind):
        normal, uniform, exponential, gamma = (
            draws[name][np.dtype(kind)] for name in ("normal", "uniform", "exponential", "gamma")
        )

        @cuda.jit
        def draw(keys, elements, out):
            i = cuda.grid(1)
            if i < keys.shape[0]:
                k0, k1 = keys[i, 0], keys[i, 1]
                out[i, 0] = normal(k0, k1, 0)
                out[i, 1] = uniform(k0, k1, 0, kind(-1.0), kind(2.5))
                out[i, 2] = exponential(k0, k1, 0)
                out[i, 3] = gamma(elements[i, 0], elements[i, 1], kind(0.3), False)
                out[i, 4] = gamma(elements[i, 0], elements[i, 1], kind(2.5), False)

        return draw


    keys = nr.split(nr.key(1701), 4)
    elements = np.stack([nr.split(k, 1)[0] for k in keys])
    for kind, rtol in ((np.float32, 1e-5), (np.float64, 1e-13)):
        out = np.zeros((4, 5), kind)
        kernel(kind)[1, 4](keys, elements, out)
        want = np.array([
            [
                nr.normal(k, dtype=kind),
                nr.uniform(k, dtype=kind, minval=-1.0, maxval=2.5),
                nr.exponential(k, dtype=kind),
                nr.gamma(k, 0.3, dtype=kind),
                nr.gamma(k, 2.5, dtype=kind),
            ]
            for k in keys
        ])
        assert out[:, 1].tobytes() == want[:, 1].astype(kind).tobytes(), kind
        # the rest to rounding: the device's log is libm's here, numbax's own on the CPU
        np.testing.assert_allclose(out, want, rtol=rtol)
    print("ok")
    """
)


def test_the_samplers_bodies_run_in_a_cuda_kernel():
    """The CPU loops' scalar bodies, compiled as device functions, in the simulator."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SAMPLERS_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
