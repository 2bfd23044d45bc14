"""Workloads for derivatives through loops: what JAX needs ``fori_loop`` for, or cannot do.

* ``lorenz``: reverse mode through a 10,000-step Python ``for`` loop over scalar state.
  numbax differentiates the loop as written; the Numba peer is the adjoint written by an
  expert (a forward loop saving the state in preallocated arrays, then a backward loop);
  JAX's is ``value_and_grad`` of a ``lax.fori_loop`` twin. The NumPy peer, the reference,
  is that same hand-written adjoint interpreted by Python.
* ``lorenz_compile``: the first call in a fresh process with empty caches, at 1,000 and at
  10,000 steps (a static argument, so a constant in numbax's source, as in JAX's unrolled
  trace): does compile time grow with the loop? JAX traces a Python loop by unrolling it,
  so its compile time does; its ``fori_loop`` does not.
* ``newton_while``: the gradient of the roots Newton's method finds in a ``while`` loop
  that runs to a tolerance. JAX cannot reverse-differentiate ``lax.while_loop``, so its
  peer is ``grad`` of a ``fori_loop`` with the iteration count fixed in advance; the
  reference and the Numba peer use the implicit-function theorem.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass, field

import numba
import numpy as np

from benchmarks import kernels_loops
from benchmarks.coldstart import Attempts
from benchmarks.kernels_loops import LORENZ_DT, NEWTON_TOL
from benchmarks.runner import Config, PeerWorkload, Row, peer_available, progress

# -- lorenz: the adjoint by hand, and JAX's fori_loop twin ------------------------------------


@numba.njit(fastmath=False)
def lorenz_adjoint(sigma, rho, beta, n_steps):
    """``value_and_grad`` of ``kernels_loops.lorenz`` w.r.t. (σ, ρ, β), derived by hand.

    The forward loop saves each step's state; the backward loop runs the Euler step's
    transposed Jacobian over the cotangent (ax, ay, az) of the state, last step first.
    """
    dt = LORENZ_DT
    xs = np.empty(n_steps)
    ys = np.empty(n_steps)
    zs = np.empty(n_steps)
    x, y, z = 1.0, 1.0, 1.0
    for i in range(n_steps):
        xs[i], ys[i], zs[i] = x, y, z
        dx = sigma * (y - x)
        dy = x * (rho - z) - y
        dz = x * y - beta * z
        x, y, z = x + dt * dx, y + dt * dy, z + dt * dz
    value = x * x
    ax, ay, az = 2.0 * x, 0.0, 0.0
    g_sigma, g_rho, g_beta = 0.0, 0.0, 0.0
    for i in range(n_steps - 1, -1, -1):
        x, y, z = xs[i], ys[i], zs[i]
        g_sigma += dt * ax * (y - x)
        g_rho += dt * ay * x
        g_beta -= dt * az * z
        ax, ay, az = (
            ax + dt * (-sigma * ax + (rho - z) * ay + y * az),
            ay + dt * (sigma * ax - ay + x * az),
            az + dt * (-x * ay - beta * az),
        )
    return value, (g_sigma, g_rho, g_beta)


def lorenz_fori(sigma, rho, beta, n_steps):
    """``kernels_loops.lorenz`` as JAX must write it to keep the loop rolled."""
    import jax

    def step(_, state):
        x, y, z = state
        dx = sigma * (y - x)
        dy = x * (rho - z) - y
        dz = x * y - beta * z
        return x + LORENZ_DT * dx, y + LORENZ_DT * dy, z + LORENZ_DT * dz

    x, _, _ = jax.lax.fori_loop(0, n_steps, step, (1.0, 1.0, 1.0))
    return x * x


def lorenz_inputs(quick: bool) -> tuple:
    """σ, ρ, β as NumPy float64 (so JAX runs with x64) and the step count (static)."""
    return (np.float64(10.0), np.float64(28.0), np.float64(8.0 / 3.0), 1_000 if quick else 10_000)


def numbax_lorenz():
    import numbax as nx

    return nx.jit(nx.value_and_grad(kernels_loops.lorenz, argnums=(0, 1, 2)), static_argnums=3)


def jax_lorenz_fori():
    import jax

    return jax.jit(jax.value_and_grad(lorenz_fori, argnums=(0, 1, 2)), static_argnums=3)


# -- newton_while -----------------------------------------------------------------------------

NEWTON_FIXED_STEPS = 10
"""JAX's fixed iteration count: what the ``while`` loop takes on the benchmark's inputs
(a JAX user has to know or overestimate it; too few shows up as a mismatch)."""


def newton_grad_numpy(a, b):
    """The roots by Newton's method, then d(root)/d(a, b) by the implicit-function theorem:
    x³ + a·x − b = 0 gives dx/da = −x / (3x² + a) and dx/db = 1 / (3x² + a)."""
    x = np.zeros_like(b)
    r = -b
    while np.max(np.abs(r)) > NEWTON_TOL:
        x = x - r / (3.0 * x * x + a)
        r = x * x * x + a * x - b
    slope = 3.0 * x * x + a
    return -x / slope, 1.0 / slope


@numba.njit(fastmath=False)
def newton_grad_loop(a, b):
    """The same, one element at a time: each root iterates only until it has converged."""
    da = np.empty_like(a)
    db = np.empty_like(b)
    for i in range(a.size):
        x = 0.0
        r = -b[i]
        while abs(r) > NEWTON_TOL:
            x -= r / (3.0 * x * x + a[i])
            r = x * x * x + a[i] * x - b[i]
        slope = 3.0 * x * x + a[i]
        da[i] = -x / slope
        db[i] = 1.0 / slope
    return da, db


def newton_fori(a, b):
    """``kernels_loops.newton_cubic`` with the tolerance test replaced by a fixed count."""
    import jax
    import jax.numpy as jnp

    def step(_, x):
        return x - (x * x * x + a * x - b) / (3.0 * x * x + a)

    return jnp.sum(jax.lax.fori_loop(0, NEWTON_FIXED_STEPS, step, jnp.zeros_like(b)))


def newton_inputs(quick: bool) -> tuple:
    """a > 0 (so each cubic has one real root) and right-hand sides b of either sign."""
    rng = np.random.default_rng(0)
    n = 1_000 if quick else 10_000
    return rng.uniform(0.5, 2.0, n), rng.uniform(-5.0, 5.0, n)


def numbax_newton():
    import numbax as nx

    return nx.jit(nx.grad(kernels_loops.newton_cubic, argnums=(0, 1)))


def jax_newton_fori():
    import jax

    return jax.jit(jax.grad(newton_fori, argnums=(0, 1)))


@dataclass
class NotedWorkload(PeerWorkload):
    """A peer workload whose rows say what each peer computes (unless a mismatch is noted)."""

    notes: dict[str, str] = field(default_factory=dict)

    def run(self, config: Config) -> list[Row]:
        rows = super().run(config)
        for row in rows:
            row.note = row.note or self.notes.get(row.peer, "")
        return rows


# -- lorenz_compile: first calls in fresh processes -------------------------------------------

_CHILD = """\
import json, time
start = time.perf_counter()
import numpy as np
{imports}
imported = time.perf_counter()
value, grads = {call}(np.float64(10.0), np.float64(28.0), np.float64(8.0 / 3.0), {n_steps})
done = time.perf_counter()
print(json.dumps(dict(import_s=imported - start, call_s=done - imported,
                      checksum=float(value) + float(sum(grads)))))
"""

_NUMBAX = (
    "import numbax as nx\nfrom benchmarks import workloads_loops",
    "workloads_loops.numbax_lorenz()",
)
_JAX = (
    "import jax\njax.config.update('jax_enable_x64', True)\nfrom benchmarks import workloads_loops"
)
_JAX_UNROLLED = (
    _JAX,
    "jax.jit(jax.value_and_grad(workloads_loops.kernels_loops.lorenz, argnums=(0, 1, 2)),"
    " static_argnums=3)",
)
_JAX_FORI = (_JAX, "workloads_loops.jax_lorenz_fori()")


@dataclass(frozen=True)
class CompileCase:
    """One peer's first call at one step count, launched ``runs`` times."""

    label: str
    peer: tuple[str, str]
    n_steps: int
    runs: int
    cold_numba: bool = False

    def measure(self) -> Attempts:
        """Launch the child ``runs`` times; numbax's each with empty numbax and Numba caches."""
        imports, call = self.peer
        code = _CHILD.format(imports=imports, call=call, n_steps=self.n_steps)
        attempts = Attempts()
        for _ in range(self.runs):
            with tempfile.TemporaryDirectory(prefix="numbax-loops-") as directory:
                env = {"NUMBAX_CACHE_DIR": f"{directory}/numbax"}
                if self.cold_numba:
                    env["NUMBA_CACHE_DIR"] = f"{directory}/numba"
                attempts.add(code, env)
        return attempts

    def row(self) -> Row:
        """Median and best first-call time; an error if the result is not the adjoint's."""
        progress(f"  lorenz_compile: {self.label}")
        attempts = self.measure()
        if not attempts.launches:
            return Row("lorenz_compile", self.label, error=attempts.error)
        value, grads = lorenz_adjoint.py_func(10.0, 28.0, 8.0 / 3.0, self.n_steps)
        expected = value + sum(grads)
        calls = [launch.call_s for launch in attempts.launches]
        wrong = [x.checksum for x in attempts.launches if not np.isclose(x.checksum, expected)]
        return Row(
            "lorenz_compile",
            self.label,
            median_s=statistics.median(calls),
            min_s=min(calls),
            error=f"checksum {wrong[0]!r}, the adjoint gives {expected!r}" if wrong else "",
            extra={"runs": len(calls), "n_steps": self.n_steps},
        )


@dataclass(frozen=True)
class LorenzCompile:
    """First-call time of each peer's jitted ``value_and_grad`` of Lorenz, in fresh processes.

    numbax runs with empty numbax and Numba cache directories (nothing compiled before
    helps it); JAX's persistent cache is off by default. The unrolled JAX trace of the
    Python loop is launched once (it takes minutes), at 100 steps under ``--quick``.
    """

    id: str = "lorenz_compile"
    description: str = "first call, fresh process, empty caches: numbax vs JAX unrolled/fori"

    def run(self, config: Config) -> list[Row]:
        runs = 1 if config.quick else 3
        unrolled_steps = 100 if config.quick else 1_000
        numbax = {
            n: CompileCase(f"numbax, {n:,} steps", _NUMBAX, n, runs, cold_numba=True).row()
            for n in (1_000, 10_000)
        }
        small, large = numbax[1_000], numbax[10_000]
        if small.median_s and large.median_s:
            small.note = "jit(value_and_grad), empty numbax and Numba caches"
            large.note = f"{large.median_s / small.median_s:.2f}× the 1,000-step compile"
        rows = [small, large]
        if not peer_available("jax"):
            return rows
        jax_cases = [
            CompileCase(
                f"jax unrolled, {unrolled_steps:,} steps", _JAX_UNROLLED, unrolled_steps, 1
            ),
            CompileCase("jax fori_loop, 1,000 steps", _JAX_FORI, 1_000, runs),
            CompileCase("jax fori_loop, 10,000 steps", _JAX_FORI, 10_000, runs),
        ]
        for case in jax_cases:
            row = case.row()
            own = numbax.get(case.n_steps)
            if row.median_s and own is not None and own.median_s:
                row.ratio = own.median_s / row.median_s
            rows.append(row)
        unrolled = rows[2]
        unrolled.note = "the Python loop traced by jax.jit: one launch"
        if unrolled.ratio:
            unrolled.note += f"; numbax compiles {1 / unrolled.ratio:.0f}× faster"
        rows[3].note = rows[4].note = "lax.fori_loop twin"
        return rows


WORKLOADS = [
    NotedWorkload(
        id="lorenz",
        description="value_and_grad of Lorenz-63 Euler, 10,000 steps, wrt (σ, ρ, β)",
        inputs=lorenz_inputs,
        impls={
            "numpy": lambda: lorenz_adjoint.py_func,
            "numbax": numbax_lorenz,
            "jax": jax_lorenz_fori,
            "numba": lambda: lorenz_adjoint,
        },
        rtol=1e-9,
        notes={
            "numpy": "hand-written adjoint, interpreted (the reference)",
            "numbax": "the Python loop as written",
            "jax": "lax.fori_loop twin",
            "numba": "hand-written adjoint, preallocated state arrays",
        },
    ),
    LorenzCompile(),
    NotedWorkload(
        id="newton_while",
        description="grad of Newton's roots of x³+ax−b (while loop to 1e-12), 10,000 elements",
        inputs=newton_inputs,
        impls={
            "numpy": lambda: newton_grad_numpy,
            "numbax": numbax_newton,
            "jax": jax_newton_fori,
            "numba": lambda: newton_grad_loop,
        },
        rtol=1e-9,
        notes={
            "numpy": "Newton solve + implicit-function theorem (the reference)",
            "numbax": "reverse mode through the while loop",
            "jax": f"grad of fori_loop, {NEWTON_FIXED_STEPS} fixed iterations (while_loop: no VJP)",
            "numba": "per-element Newton + implicit-function theorem",
        },
    ),
]
