"""Cold start: seconds from a fresh process's start to its first jitted result.

Users restart kernels and scripts all day, so what a new process pays matters as much as
steady-state speed. Each measurement launches ``python -c`` and times it from the parent,
interpreter start-up and exit included; the child also reports its own split between
imports and the first call. numbax is measured with an empty cache directory (cold: it
generates source and Numba compiles) and again with the directory the cold run filled
(warm: Numba loads machine code from disk). ``NUMBA_CACHE_DIR`` points into the same fresh
directory, so nothing Numba cached earlier, numbax's own helpers included, can help the
cold run; Python's bytecode and the OS file cache stay warm in both. JAX is measured as it
ships: its persistent compilation cache is off by default, so every JAX start compiles.

Each child prints a checksum of its result, compared with NumPy's in the parent, so a
start-up path that computes something wrong is reported rather than timed.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import kernels
from benchmarks.runner import Config, Row, peer_available, progress

REPO_ROOT = Path(__file__).resolve().parents[1]

_CHILD = """\
import json, time
start = time.perf_counter()
import numpy as np
{imports}
imported = time.perf_counter()
x = np.random.default_rng(0).standard_normal({size}).astype(np.{dtype})
out = {call}
done = time.perf_counter()
print(json.dumps(dict(import_s=imported - start, call_s=done - imported,
                      checksum=float(np.sum(out, dtype=np.float64)))))
"""

_NUMBAX = ("import numbax as nx\nfrom benchmarks import kernels", "nx.jit(kernels.{name})(x)")
_JAX = (
    "import jax\nfrom benchmarks import kernels_jax",
    "jax.block_until_ready(jax.jit(kernels_jax.{name})(x))",
)


@dataclass(frozen=True)
class Case:
    """A function (by name in ``kernels``) and the input it is first called on."""

    name: str
    size: int
    dtype: str

    def child_code(self, peer: tuple[str, str]) -> str:
        imports, call = peer
        return _CHILD.format(
            imports=imports, size=self.size, dtype=self.dtype, call=call.format(name=self.name)
        )

    def reference_checksum(self) -> float:
        """What the child's checksum must be: the NumPy function on the same input."""
        x = np.random.default_rng(0).standard_normal(self.size).astype(self.dtype)
        return float(np.sum(getattr(kernels, self.name)(x), dtype=np.float64))


@dataclass(frozen=True)
class Launch:
    """One child process: wall time seen by the parent, and the child's own split."""

    wall_s: float
    import_s: float
    call_s: float
    checksum: float


@dataclass
class Attempts:
    """The launches of one kind that succeeded, and the first failure's message if any."""

    launches: list[Launch] = field(default_factory=list)
    error: str = ""

    def add(self, code: str, env: dict[str, str]) -> None:
        try:
            self.launches.append(launch(code, env))
        except RuntimeError as err:
            self.error = self.error or str(err)


def launch(code: str, env: dict[str, str]) -> Launch:
    """Run ``code`` in a fresh interpreter that can import ``benchmarks``; time it."""
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    full_env = {**os.environ, "PYTHONPATH": path, **env}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code], env=full_env, capture_output=True, text=True, check=False
    )
    wall_s = time.perf_counter() - start
    if proc.returncode < 0:
        raise RuntimeError(f"child process killed by {signal.Signals(-proc.returncode).name}")
    if proc.returncode > 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise RuntimeError(f"child process failed: {lines[-1]}")
    return Launch(wall_s=wall_s, **json.loads(proc.stdout.strip().splitlines()[-1]))


def numbax_cold_and_warm(case: Case, runs: int) -> tuple[Attempts, Attempts]:
    """``runs`` pairs of launches: each pair a fresh cache directory, then the same again.

    A failing warm launch (a broken disk cache) leaves the cold numbers standing.
    """
    code = case.child_code(_NUMBAX)
    cold, warm = Attempts(), Attempts()
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="numbax-coldstart-") as directory:
            env = {
                "NUMBAX_CACHE_DIR": f"{directory}/numbax",
                "NUMBA_CACHE_DIR": f"{directory}/numba",
            }
            cold.add(code, env)
            warm.add(code, env)
    return cold, warm


def summary_row(label: str, attempts: Attempts, expected: float) -> Row:
    """Median and best wall time of the launches; the best run's import/call split."""
    if not attempts.launches:
        return Row("coldstart", label, error=attempts.error)
    launches = attempts.launches
    best = min(launches, key=lambda launch: launch.wall_s)
    wrong = [x.checksum for x in launches if not np.isclose(x.checksum, expected, rtol=1e-5)]
    error = f"result checksum {wrong[0]!r}, NumPy gives {expected!r}" if wrong else ""
    return Row(
        "coldstart",
        label,
        median_s=statistics.median(x.wall_s for x in launches),
        min_s=best.wall_s,
        note=f"import {best.import_s:.2f} s, first call {best.call_s:.2f} s",
        error=error or attempts.error,
        extra={"runs": len(launches), "import_s": best.import_s, "call_s": best.call_s},
    )


@dataclass(frozen=True)
class ColdStart:
    """SELU's first call in a new process (numbax cold/warm, JAX), and a 40-operation
    function's (numbax cold/warm). Times are the best of three launches (one if quick)."""

    selu: Case
    many_ops: Case
    id: str = "coldstart"
    description: str = "fresh process: import + first jitted call, disk cache cold vs warm"

    def run(self, config: Config) -> list[Row]:
        runs = 1 if config.quick else 3
        rows = self._numbax_rows(self.selu, runs)
        rows += self._jax_rows(runs, numbax=rows)
        rows += self._numbax_rows(self.many_ops, runs)
        return rows

    def _numbax_rows(self, case: Case, runs: int) -> list[Row]:
        progress(f"  coldstart: numbax {case.name}, cold and warm cache")
        cold_attempts, warm_attempts = numbax_cold_and_warm(case, runs)
        expected = case.reference_checksum()
        cold = summary_row(f"numbax {case.name}, cold cache", cold_attempts, expected)
        warm = summary_row(f"numbax {case.name}, warm cache", warm_attempts, expected)
        if cold.min_s and warm.min_s:
            warm.extra["warm_over_cold"] = warm.min_s / cold.min_s
            warm.note = f"warm/cold {warm.min_s / cold.min_s:.2f}; {warm.note}"
        return [cold, warm]

    def _jax_rows(self, runs: int, numbax: list[Row]) -> list[Row]:
        """JAX's row; its ratio is numbax's cold start over JAX's (JAX always starts cold)."""
        if not peer_available("jax"):
            return []
        progress(f"  coldstart: jax {self.selu.name}")
        attempts = Attempts()
        for _ in range(runs):
            attempts.add(self.selu.child_code(_JAX), {})
        row = summary_row(f"jax {self.selu.name}", attempts, self.selu.reference_checksum())
        cold, warm = (r.min_s for r in numbax)
        if row.min_s and cold and warm:
            row.ratio = cold / row.min_s
            row.note = f"ratio is numbax cold / jax; warm / jax {warm / row.min_s:.2f}; {row.note}"
        return [row]
