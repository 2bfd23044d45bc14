"""Compiled code never runs with stale values: what Numba froze into machine code (a
module attribute, a ``range`` bound, a user's ``njit``/``vectorize`` helper in another
file, arrays inside tuples and lists) is in the cache key, so an edit between two
processes, or a re-run notebook cell in one, uses the new value.

Compile settings (``NUMBA_BOUNDSCHECK`` and the like) are checked in
``tests/numba_backend/test_code_settings.py``."""

import hashlib
import json
import linecache
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numba
import numpy as np

import numbax as nx
from numbax.codegen.fingerprint import fingerprint, frozen_print
from numbax.codegen.reuse import reuse_key

REPO = Path(__file__).resolve().parents[2]

CONSTS = """\
import numpy as np
K = {k}
N = {n}
W = (np.ones(2000), np.ones(3))
W[0][1000] = {k}
WL = [np.ones(2000)]
WL[0][1000] = {k}
"""

HELPERS = """\
import numba
import consts

@numba.njit
def scale(x):
    return x * {factor}

@numba.vectorize(["float64(float64)"])
def vscale(x):
    return x * {factor}

@numba.njit
def shift(x):
    return x + consts.K
"""

PROGRAM = """\
import hashlib
import json
import numpy as np
import numbax as nx
import consts
import helpers
from consts import WL

x = np.linspace(0.5, 1.5, 2000)

def times_k(x):
    return x * consts.K

def loop_to_n(x):
    s = 0.0
    for i in range(consts.N):
        s += x[i] * consts.K
    return s

def sin_k(x):
    return np.sum(np.sin(x) * consts.K)

def njit_helper(x):
    return helpers.scale(x)

def vectorize_helper(x):
    return helpers.vscale(x)

def helper_reading_a_module(x):
    return helpers.shift(x)

def tuple_of_arrays(x):
    return np.sum(x * consts.W[0])

def list_of_arrays(x):
    return np.sum(x * WL[0])

K = consts.K
got = {
    "jit attribute": (nx.jit(times_k)(x), x * K),
    "jit range bound": (nx.jit(loop_to_n)(x), sum(x[i] * K for i in range(consts.N))),
    "jit(grad)": (nx.jit(nx.grad(sin_k))(x), np.cos(x) * K),
    "jit(vmap)": (nx.jit(nx.vmap(times_k))(x[:6]), x[:6] * K),
    "njit helper": (nx.jit(njit_helper)(x), helpers.scale.py_func(x)),
    "vectorize helper": (nx.jit(vectorize_helper)(x), helpers.vscale(x)),
    "njit helper reading a module": (nx.jit(helper_reading_a_module)(x), x + K),
    "tuple of arrays": (nx.jit(tuple_of_arrays)(x), np.sum(x * consts.W[0])),
    "list of arrays": (nx.jit(list_of_arrays)(x), np.sum(x * WL[0])),
}
pairs = {k: [np.asarray(a).tolist(), np.asarray(b).tolist()] for k, (a, b) in got.items()}
print(json.dumps(pairs))
"""


def _run_program(folder: Path, k: float, n: int, factor: float) -> dict:
    (folder / "consts.py").write_text(CONSTS.format(k=k, n=n))
    (folder / "helpers.py").write_text(HELPERS.format(factor=factor))
    env = {
        **os.environ,
        "NUMBAX_CACHE_DIR": str(folder / "cache"),
        "NUMBAX_COMPILE_LOG": "0",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(folder)]),
        "PYTHONDONTWRITEBYTECODE": "1",  # an edited module is read again, never a .pyc
    }
    done = subprocess.run(
        [sys.executable, "program.py"], cwd=folder, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_values_edited_between_two_processes_are_used(tmp_path):
    (tmp_path / "program.py").write_text(PROGRAM)
    first = _run_program(tmp_path, k=2.0, n=3, factor=2.0)
    second = _run_program(tmp_path, k=3.0, n=4, factor=3.0)  # the warm cache of the first
    for name in first:
        for run in (first, second):
            got, want = run[name]
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
        assert first[name][1] != second[name][1], f"{name}: the edit changes nothing"


# -- within one process: notebook cells run again ---------------------------------------
def run_cell(text: str, namespace: dict) -> None:
    """Run ``text`` as a Jupyter cell does: in a file named by a hash of the cell's
    text (the same cell run again has the same name), readable by ``linecache``."""
    text = textwrap.dedent(text)
    name = f"/tmp/ipykernel_0/{hashlib.sha1(text.encode()).hexdigest()[:10]}.py"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    exec(compile(text, name, "exec"), namespace)  # noqa: S102 (the test's own cells)


def test_a_helper_cell_run_again_is_used_by_a_new_jit():
    namespace = {"np": np, "nx": nx}
    helper = """
    import numba
    @numba.njit
    def scale(x):
        return x * {factor}
    """
    user = """
    @nx.jit
    def f(x):
        return scale(x) + 1.0
    """
    run_cell(helper.format(factor=2.0), namespace)
    run_cell(user, namespace)
    assert namespace["f"](np.ones(3))[0] == 3.0
    run_cell(helper.format(factor=5.0), namespace)  # the helper edited and run again
    run_cell(user, namespace)  # and the cell that jits f
    assert namespace["f"](np.ones(3))[0] == 6.0


def test_a_module_attribute_set_anew_is_used_by_a_new_jit():
    consts = types.ModuleType("numbax_test_consts")
    consts.K = 2.0
    namespace = {"np": np, "nx": nx, "consts": consts}
    run_cell(
        """
        def times_k(x):
            return x * consts.K

        def sum_sin_k(x):
            return np.sum(np.sin(x) * consts.K)
        """,
        namespace,
    )
    times_k, sum_sin_k = namespace["times_k"], namespace["sum_sin_k"]
    x = np.linspace(0.1, 0.9, 4)
    for k in (2.0, 7.0):
        consts.K = k
        np.testing.assert_allclose(nx.jit(times_k)(x), x * k)
        np.testing.assert_allclose(nx.jit(nx.grad(sum_sin_k))(x), np.cos(x) * k)
        np.testing.assert_allclose(nx.jit(nx.vmap(times_k))(x), x * k)


def test_tuples_of_arrays_that_print_the_same_compile_apart():
    def make(weights):
        def loss(x):
            return np.sum(x * weights[0])

        return loss

    first, second = (np.ones(2000),), (np.ones(2000),)
    second[0][1000] = 5.0
    assert repr(first) == repr(second)
    x = np.ones(2000)
    assert nx.jit(make(first))(x) == 2000.0
    assert nx.jit(make(second))(x) == 2004.0
    assert nx.jit(nx.grad(make(second)))(x)[1000] == 5.0


# -- the keys themselves (no compile) ----------------------------------------------------
def _defined(text: str, namespace: dict) -> dict:
    """``text`` run as the module ``numbax_test_helpers`` at the same file and line, as an
    edited file is read again."""
    namespace = {"__name__": "numbax_test_helpers", **namespace}
    exec(compile(textwrap.dedent(text), "numbax_test_helpers.py", "exec"), namespace)  # noqa: S102
    return namespace


def test_the_fingerprint_holds_the_module_attributes_the_text_reads():
    consts = types.ModuleType("numbax_test_consts")
    consts.K, consts.UNREAD = 2.0, 1.0
    before = fingerprint({"consts": consts}, "return x * consts.K")
    consts.UNREAD = 5.0
    assert fingerprint({"consts": consts}, "return x * consts.K") == before
    consts.K = 3.0
    assert fingerprint({"consts": consts}, "return x * consts.K") != before


def test_numba_helpers_are_fingerprinted_by_their_code_and_what_they_read():
    consts = types.ModuleType("numbax_test_consts")
    consts.K = 2.0
    source = """
    @numba.njit
    def scale(x):
        return x * {factor} + consts.K
    """
    prints = set()
    for factor in (2.0, 3.0):
        helper = _defined(source.format(factor=factor), {"numba": numba, "consts": consts})
        prints.add(frozen_print(helper["scale"]))
    consts.K = 4.0
    prints.add(frozen_print(helper["scale"]))
    assert len(prints) == 3  # the edited body, then the module attribute it reads


def test_a_new_jit_is_keyed_by_the_module_attributes_its_code_reads():
    consts = types.ModuleType("numbax_test_consts")
    consts.K = 2.0
    times_k = _defined("def times_k(x):\n    return x * consts.K\n", {"consts": consts})["times_k"]
    before = reuse_key(times_k)
    assert reuse_key(times_k) == before
    consts.K = 3.0
    assert reuse_key(times_k) != before
