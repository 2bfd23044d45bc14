"""Memory and collector pauses: what compiled code costs a long-running process.

``python -m benchmarks.memory [--closures N] [--steps N]`` runs two measurements, each
in a fresh process with an empty cache directory:

* **closures**: parameter sweeps, every closure and ``jit`` object dropped after its
  call; the resident set's growth per closure after a full collection, for
  ``nx.jit(make(k))(x)`` over ``N`` floats ``k``, ``nx.jit(nx.grad(make_data(data)))``
  over ``N`` arrays of 1,000 floats and ``nx.jit(make_steps(n))`` over ``N`` integers
  ``n`` (``range(n)``), all passed to one compiled function each
  (``numba_backend/passes/captured.py``), and ``nx.jit(f)(x, k)`` with ``k`` an argument;
* **pauses**: a cold ``jit(grad)`` of the MLP benchmark's loss, then a loop of ``N``
  steps that allocates reference cycles as a training loop does; the longest full
  collection the loop met (timed by ``gc.callbacks``), and one ``gc.collect()`` after.

Each child prints JSON; the parent prints a table. Nothing here is asserted: the
numbers move with the machine (quote several runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

_CLOSURES = """\
import gc, json, numpy as np, numbax as nx
def rss_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 1e6
def make(k):
    def f(x):
        return np.sum(np.sin(x) * k)
    return f
def make_data(data):
    def loss(w):
        return np.sum((data * w - 1.0) ** 2)
    return loss
def make_steps(n):
    def f(x):
        total = 0.0
        for i in range(n):
            total = total + np.sum(x) * i
        return total
    return f
def f_of_k(x, k):
    return np.sum(np.sin(x) * k)
x = np.linspace(0.0, 1.0, 10)
nx.jit(make(0.5))(x)  # numbax's own helpers, compiled once for every closure
nx.jit(nx.grad(make_data(np.ones(1000))))(x[:1])
nx.jit(make_steps(1))(x)
nx.jit(f_of_k)(x, 0.5)
def growth(sweep, n):
    gc.collect()
    start = rss_mb()
    for i in range(n):
        sweep(i)
    gc.collect()
    return (rss_mb() - start) / n
def floats(i):
    closure = make(i + 0.25)
    nx.jit(closure)(x)
def arrays(i):
    closure = make_data(np.full(1000, i + 0.25))
    nx.jit(nx.grad(closure))(x[:1])
def integers(i):
    nx.jit(make_steps(i + 2))(x)
def arguments(i):
    nx.jit(f_of_k)(x, i + 0.25)
print(json.dumps(dict(
    closure_mb=growth(floats, {n}),
    array_mb=growth(arrays, {n}),
    integer_mb=growth(integers, {n}),
    argument_mb=growth(arguments, {n}),
)))
"""

_PAUSES = """\
import gc, json, time, numpy as np, numbax as nx
from benchmarks.kernels import mlp_loss
from benchmarks.workloads_grad import mlp_inputs
args = mlp_inputs(True)
began = time.perf_counter()
gradient = nx.jit(nx.grad(mlp_loss))
gradient(*args)
compiled = time.perf_counter() - began
pauses = []
def timed(phase, info):
    global started
    if phase == "start":
        started = time.perf_counter()
    elif info["generation"] == 2:
        pauses.append(time.perf_counter() - started)
gc.callbacks.append(timed)
class Node:
    'An object of the loop, in a cycle with another.'
for _ in range({n}):
    gradient(*args)
    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle, as a training loop's objects make
    scratch = [[j] for j in range(50)]
gc.callbacks.remove(timed)
began = time.perf_counter()
gc.collect()
after = time.perf_counter() - began
print(json.dumps(dict(compile_s=compiled, full_collections=len(pauses),
                      longest_ms=1e3 * max(pauses, default=0.0), collect_after_ms=1e3 * after)))
"""


def run_child(code: str) -> dict:
    """Run ``code`` (written to a file: numbax reads its functions' source) in a fresh
    process with an empty cache; its JSON line."""
    with tempfile.TemporaryDirectory(prefix="numbax-memory-") as cache:
        script = Path(cache, "child.py")
        script.write_text(code)
        env = {
            **os.environ,
            "NUMBAX_CACHE_DIR": str(Path(cache, "cache")),
            "NUMBAX_COMPILE_LOG": "0",
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])
            ),
        }
        done = subprocess.run(
            [sys.executable, str(script)], cwd=REPO_ROOT, env=env, capture_output=True, text=True
        )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__)
    parser.add_argument("--closures", type=int, default=100, help="closures in the sweep")
    parser.add_argument("--steps", type=int, default=20_000, help="steps of the loop")
    options = parser.parse_args(argv)
    n = options.closures
    sweep = run_child(_CLOSURES.format(n=n))
    print("closures under jit, dropped after their call: resident set growth per closure")
    print(f"  jit(make(k)), {n} floats k:                  {sweep['closure_mb']:.3f} MB")
    print(f"  jit(grad(make_data(a))), {n} arrays a:        {sweep['array_mb']:.3f} MB")
    print(f"  jit(make_steps(n)), {n} integers n:           {sweep['integer_mb']:.3f} MB")
    print(f"  jit(f)(x, k), {n} values of the argument k:   {sweep['argument_mb']:.3f} MB")
    pauses = run_child(_PAUSES.format(n=options.steps))
    print(
        f"after a cold jit(grad) of the MLP ({pauses['compile_s']:.1f} s), {options.steps} steps:"
    )
    print(f"  full collections in the loop:  {pauses['full_collections']}")
    print(f"  longest of them:               {pauses['longest_ms']:.1f} ms")
    print(f"  a full collection after it:    {pauses['collect_after_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
