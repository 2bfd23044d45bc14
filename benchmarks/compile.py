"""Compile latency: how long a program's first call takes, cold and warm, and where it goes.

``python -m benchmarks.compile [--quick] [--only NAME[,NAME]] [--json PATH] [--show-compiled]``

Each workload (:data:`WORKLOADS`) runs in fresh interpreters: once with an empty cache
directory (**cold**: numbax generates source and Numba compiles everything), then again in
a new process with the directory the cold run filled (**warm**: what a user pays after a
restart; ideally only loading), and a third time with only numbax's compiled runtime
helpers left in the directory (**new program**: what a user who has run other programs
pays for one never run before; numbax's helpers are compiled once per installation,
for the argument types programs meet). ``NUMBAX_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` both point
into the fresh directory, and the installed runtime is turned off
(``NUMBAX_INSTALLED_RUNTIME=0``), so nothing compiled earlier helps these runs. A fourth
run, **cold, installed**, starts from another empty directory with numbax's installed
runtime (``python -m numbax precompile``, run by ``make bench``): what a new user of an
installed numbax pays for a first program (the column shows "–" when there is no
current installed runtime). For each run the
child reports its import time and its first call's time (the table's columns are
import + first call, the warm import also shown apart) and its CPU time (on a shared
machine, wall time waits for others; CPU time is what the process itself spent), the
number of functions Numba compiled (``numba:compile`` events), and where Numba's time
went: type inference (the compiler passes ``nopython_type_inference`` and
``partial_type_inference``) and LLVM (time holding LLVM's lock), each counted once
however the compiles nest. The size of
the generated source is the number of lines of the modules numbax wrote to the cache.
Where a workload has a JAX twin (the same program with ``jax.numpy``, see
``compile_programs.jax_twin``) and JAX is installed, JAX's first call in a fresh process
is timed too and the ratio cold numbax / cold JAX printed; without JAX the column shows
"–".

``--show-compiled`` lists what the warm process still compiled: every entry is something
the disk cache does not serve.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]

# -- the workloads ------------------------------------------------------------------------

Built = tuple[Callable[..., Any], tuple]
"""A workload ready to run: the function to call first and its arguments."""


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _nested_grad(grad: Callable, programs: Any, order: int) -> Callable:
    """``grad`` of the sum of the previous derivative, ``order`` deep (autograd's tanh
    example): elementwise the ``order``-th derivative of ``programs.tanh``."""
    derivative = grad(programs.sum_tanh)
    for _ in range(order - 1):
        derivative = grad(programs.summed(derivative))
    return derivative


def build_rnn(nx: Any, programs: Any, quick: bool) -> Built:
    x, y = programs_numpy().sequence_inputs(_rng(), 4 if quick else 20, 8, 16)
    params = programs_numpy().rnn_params(_rng(), 16, 32)
    return nx.jit(nx.grad(programs.rnn_log_likelihood)), (params, x, y)


def build_lstm(nx: Any, programs: Any, quick: bool) -> Built:
    x, y = programs_numpy().sequence_inputs(_rng(), 4 if quick else 20, 8, 16)
    params = programs_numpy().lstm_params(_rng(), 16, 32)
    return nx.jit(nx.grad(programs.lstm_log_likelihood)), (params, x, y)


def build_tanh4(nx: Any, programs: Any, quick: bool) -> Built:
    order = 2 if quick else 4
    return nx.jit(_nested_grad(nx.grad, programs, order)), (np.linspace(-7.0, 7.0, 700),)


def build_hessian(nx: Any, programs: Any, quick: bool) -> Built:
    return nx.jit(nx.hessian(programs.sum_logistic)), (np.linspace(-1.0, 1.0, 100),)


def build_mlp_dict(nx: Any, programs: Any, quick: bool) -> Built:
    rng = _rng()
    params = programs_numpy().mlp_dict_params(rng, (64, 128, 10))
    x, y = rng.standard_normal((32, 64)), rng.standard_normal((32, 10))
    return nx.jit(nx.grad(programs.mlp_dict_loss)), (params, x, y)


def build_fluidsim(nx: Any, programs: Any, quick: bool) -> Built:
    rng = _rng()
    n = 16 if quick else 32
    vx, vy, smoke = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.random((n, n))
    return nx.jit(programs.simulate, static_argnums=3), (vx, vy, smoke, 2 if quick else 10)


def build_vmap_loop(nx: Any, programs: Any, quick: bool) -> Built:
    positions = 3.0 * _rng().random((64, 8, 3))
    batched = nx.vmap(programs.pair_energy, in_axes=(0, None))
    return nx.jit(batched), (positions, np.array([1.0, 1.0]))


def build_tiny(nx: Any, programs: Any, quick: bool) -> Built:
    return nx.grad(programs.tiny), (np.linspace(0.0, 1.0, 5),)


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    build: Callable[[Any, Any, bool], Built]
    jax_twin: bool = True  # the same program runs under JAX (jax.numpy for numpy)


WORKLOADS = {
    w.name: w
    for w in [
        Workload("rnn", "autograd's RNN example, jit(grad), dict params", build_rnn),
        Workload("lstm", "autograd's LSTM example, jit(grad), dict params", build_lstm),
        Workload("tanh4", "4th derivative of tanh, 700 points, jit(grad^4)", build_tanh4),
        Workload("hessian", "jit(hessian(sum_logistic)), 100 inputs", build_hessian),
        Workload("mlp_dict", "jit(grad) of an MLP loss of a dict of params", build_mlp_dict),
        Workload("fluidsim", "autograd's fluid simulation, jit", build_fluidsim, jax_twin=False),
        Workload("vmap_loop", "jit(vmap) batched by its loop", build_vmap_loop, jax_twin=False),
        Workload("tiny", "grad of a one-line function, interpreted (smoke test)", build_tiny),
    ]
}
DEFAULT_WORKLOADS = [name for name in WORKLOADS if name != "tiny"]


def programs_numpy() -> Any:
    from benchmarks import compile_programs  # the child imports it after its clock starts

    return compile_programs


# -- the child process: one first call, measured ------------------------------------------


class NumbaClock:
    """Numba's compiles, counted and timed through its event API.

    Events nest (typing a function compiles its callees, lowering calls into LLVM), so
    each event's time is counted without the events inside it: typing, LLVM and the
    rest of Numba's work add up to the time spent compiling."""

    def __init__(self) -> None:
        self.compiled: list[str] = []
        self.seconds = {"typing": 0.0, "llvm": 0.0, "other": 0.0}
        self.total_s = 0.0
        self._stack: list[list] = []  # [category, start, time of nested events]

    def install(self) -> None:
        from numba.core import event

        for kind in ("numba:compile", "numba:run_pass", "numba:llvm_lock"):
            event.register(kind, _listener(self, kind))

    def start(self, kind: str, data: Any) -> None:
        data = data or {}
        if kind == "numba:compile":
            function = getattr(data.get("dispatcher"), "py_func", None)
            self.compiled.append(getattr(function, "__qualname__", repr(function)))
        category = {"numba:llvm_lock": "llvm", "numba:compile": "other"}.get(kind)
        if category is None:
            category = "typing" if "type_inference" in data.get("name", "") else "other"
        self._stack.append([category, time.perf_counter(), 0.0])

    def end(self) -> None:
        category, start, nested = self._stack.pop()
        elapsed = time.perf_counter() - start
        self.seconds[category] += elapsed - nested
        if self._stack:
            self._stack[-1][2] += elapsed
        else:
            self.total_s += elapsed


def _listener(clock: NumbaClock, kind: str) -> Any:
    """A Numba event listener reporting ``kind`` to ``clock`` (Numba is imported in the
    child only, after its clock starts)."""
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            clock.start(kind, ev.data)

        def on_end(self, ev: Any) -> None:
            clock.end()

    return Listener()


def child(name: str, peer: str, quick: bool) -> dict[str, Any]:
    """Import, build and call workload ``name`` once; the measurements as a dict."""
    start, start_cpu = time.perf_counter(), time.process_time()
    clock = NumbaClock()
    if peer == "numbax":
        clock.install()
        import numbax as nx

        programs = programs_numpy()
    else:
        import jax

        jax.config.update("jax_enable_x64", True)  # the programs compute in float64
        nx = _JaxAsNumbax(jax)
        programs = programs_numpy().jax_twin()
    imported = time.perf_counter()
    function, args = WORKLOADS[name].build(nx, programs, quick)
    out = function(*args)
    if peer == "jax":
        out = jax.block_until_ready(out)
    done = time.perf_counter()
    return dict(
        import_s=imported - start,
        call_s=done - imported,
        cpu_s=time.process_time() - start_cpu,
        checksum=_checksum(out),
        compiles=len(clock.compiled),
        compiled=clock.compiled,
        numba_s=clock.total_s,
        typing_s=clock.seconds["typing"],
        llvm_s=clock.seconds["llvm"],
    )


class _JaxAsNumbax:
    """The names a workload builder uses, spelled for JAX."""

    def __init__(self, jax: Any) -> None:
        self.jit, self.grad, self.hessian, self.vmap = jax.jit, jax.grad, jax.hessian, jax.vmap


def _checksum(out: Any) -> float:
    leaves = out.values() if isinstance(out, dict) else [out]
    return float(sum(np.sum(np.asarray(leaf), dtype=np.float64) for leaf in leaves))


# -- the parent: launch children, tabulate ------------------------------------------------


@dataclass
class Result:
    """One workload's row."""

    workload: str
    cold_s: float | None = None  # import + first call, empty cache
    warm_s: float | None = None  # import + first call, new process, the cold run's cache
    # import + first call, new process, with only numbax's compiled runtime helpers left
    # in the cache: a program never run before, by a user who has run others
    program_s: float | None = None
    program_cpu_s: float | None = None
    program_compiles: int | None = None
    # import + first call, empty cache, numbax's installed runtime
    installed_s: float | None = None
    installed_cpu_s: float | None = None
    installed_compiles: int | None = None
    warm_import_s: float | None = None
    cold_cpu_s: float | None = None  # the cold process's CPU time (import + first call)
    warm_cpu_s: float | None = None
    cold_compiles: int | None = None
    warm_compiles: int | None = None
    cold_typing_s: float | None = None
    cold_llvm_s: float | None = None
    cold_numba_s: float | None = None
    source_lines: int | None = None
    jax_cold_s: float | None = None
    error: str = ""
    warm_compiled: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        if self.cold_s is None or not self.jax_cold_s:
            return None
        return self.cold_s / self.jax_cold_s


def launch(name: str, peer: str, quick: bool, env: dict[str, str], timeout: float) -> dict:
    """Run one child; its measurements, or RuntimeError saying why it failed."""
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "benchmarks.compile", "--child", name, "--peer", peer]
    if quick:
        command.append("--quick")
    # as a user's interpreter: it keeps bytecode (without it, every process compiles
    # numbax's source again, about 0.4 s of each warm start)
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    try:
        proc = subprocess.run(
            command,
            env={**inherited, "PYTHONPATH": path, **env},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{peer} did not finish in {timeout:.0f} s") from None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise RuntimeError(f"{peer}: {lines[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def generated_lines(cache_dir: Path) -> int:
    """Lines of the modules numbax generated into ``cache_dir``."""
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in cache_dir.rglob("*.py"))


def forget_programs(cache_root: Path) -> None:
    """Remove the generated modules and their machine code, keeping numbax's compiled
    runtime helpers (the ``runtime`` directory)."""
    for versioned in cache_root.glob("py*"):
        for entry in versioned.iterdir():
            if entry.name == "runtime":
                continue
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()


def measure(name: str, quick: bool, with_jax: bool, timeout: float) -> Result:
    result = Result(name)
    with tempfile.TemporaryDirectory(prefix="numbax-compile-") as directory:
        env = {
            "NUMBAX_CACHE_DIR": f"{directory}/numbax",
            "NUMBA_CACHE_DIR": f"{directory}/numba",
            "NUMBAX_INSTALLED_RUNTIME": "0",
        }
        try:
            cold = launch(name, "numbax", quick, env, timeout)
            result.cold_s = cold["import_s"] + cold["call_s"]
            result.cold_cpu_s = cold["cpu_s"]
            result.cold_compiles = cold["compiles"]
            result.cold_typing_s, result.cold_llvm_s = cold["typing_s"], cold["llvm_s"]
            result.cold_numba_s = cold["numba_s"]
            result.source_lines = generated_lines(Path(directory, "numbax"))
            warm = launch(name, "numbax", quick, env, timeout)
            result.warm_s = warm["import_s"] + warm["call_s"]
            result.warm_import_s = warm["import_s"]
            result.warm_cpu_s = warm["cpu_s"]
            result.warm_compiles = warm["compiles"]
            result.warm_compiled = warm["compiled"]
            if not np.isclose(cold["checksum"], warm["checksum"]):
                result.error = f"warm result {warm['checksum']!r} != cold {cold['checksum']!r}"
            forget_programs(Path(directory, "numbax"))
            program = launch(name, "numbax", quick, env, timeout)
            result.program_s = program["import_s"] + program["call_s"]
            result.program_cpu_s = program["cpu_s"]
            result.program_compiles = program["compiles"]
            if installed_runtime_current():
                installed = launch(name, "numbax", quick, _empty_cache(directory), timeout)
                result.installed_s = installed["import_s"] + installed["call_s"]
                result.installed_cpu_s = installed["cpu_s"]
                result.installed_compiles = installed["compiles"]
        except RuntimeError as err:
            result.error = str(err)
    if with_jax and WORKLOADS[name].jax_twin:
        try:
            result.jax_cold_s = sum(launch(name, "jax", quick, {}, timeout)[k] for k in _TIMES)
        except RuntimeError as err:
            result.error = result.error or str(err)
    return result


_TIMES = ("import_s", "call_s")


def installed_runtime_current() -> bool:
    """Whether numbax's installed runtime is there and current (``make bench`` builds it)."""
    from numbax.codegen.installed_runtime import usable_installed_runtime

    return usable_installed_runtime() is not None


def _empty_cache(directory: str) -> dict[str, str]:
    """Cache variables for a child: a fresh directory inside ``directory``."""
    fresh = tempfile.mkdtemp(prefix="installed-", dir=directory)
    return {"NUMBAX_CACHE_DIR": f"{fresh}/numbax", "NUMBA_CACHE_DIR": f"{fresh}/numba"}


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def format_table(results: Sequence[Result]) -> str:
    header = (
        "workload",
        "cold s (CPU)",
        "warm s (import; CPU)",
        "new program s (CPU)",
        "cold, installed s (CPU)",
        "compiles cold/warm/new/installed",
        "typing s",
        "LLVM s",
        "numba s",
        "source lines",
        "JAX cold s",
        "cold/JAX",
        "note",
    )
    rows = [
        (
            r.workload,
            f"{_seconds(r.cold_s)} ({_seconds(r.cold_cpu_s)})",
            f"{_seconds(r.warm_s)} ({_seconds(r.warm_import_s)}; {_seconds(r.warm_cpu_s)})",
            f"{_seconds(r.program_s)} ({_seconds(r.program_cpu_s)})",
            f"{_seconds(r.installed_s)} ({_seconds(r.installed_cpu_s)})",
            "/".join(
                "–" if n is None else str(n)
                for n in (
                    r.cold_compiles,
                    r.warm_compiles,
                    r.program_compiles,
                    r.installed_compiles,
                )
            ),
            _seconds(r.cold_typing_s),
            _seconds(r.cold_llvm_s),
            _seconds(r.cold_numba_s),
            "–" if r.source_lines is None else str(r.source_lines),
            _seconds(r.jax_cold_s),
            _seconds(r.ratio),
            f"ERROR: {r.error}" if r.error else "",
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join(
        [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        + [line(row) for row in rows]
    )


def jax_available() -> bool:
    return importlib.util.find_spec("jax") is not None


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compile",
        description="First-call time of numbax programs, cold and warm cache, in new processes.",
    )
    parser.add_argument("--only", metavar="NAME[,NAME]", help=f"among {', '.join(WORKLOADS)}")
    parser.add_argument("--quick", action="store_true", help="smaller programs and inputs")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--show-compiled", action="store_true", help="what the warm run compiled")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per process")
    parser.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--peer", default="numbax", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(sys.argv[1:] if argv is None else argv)
    if options.child:
        print(json.dumps(child(options.child, options.peer, options.quick)))
        return 0
    names = options.only.split(",") if options.only else DEFAULT_WORKLOADS
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        print(f"unknown workload(s) {unknown}; choose among {list(WORKLOADS)}", file=sys.stderr)
        return 2
    with_jax = jax_available()
    results = []
    for name in names:
        print(f"{name}: {WORKLOADS[name].description}", file=sys.stderr, flush=True)
        results.append(measure(name, options.quick, with_jax, options.timeout))
        print(format_table(results[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(format_table(results))
    if options.show_compiled:
        for r in results:
            print(f"\n{r.workload}: compiled again in the warm process ({r.warm_compiles})")
            print("".join(f"  {name}\n" for name in r.warm_compiled), end="")
    if options.json:
        Path(options.json).write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
