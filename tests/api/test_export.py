"""``nx.export``: transformed functions written as standalone files, run in a fresh
process where numbax cannot be imported, against numbax's own results.

The files are written here, then one subprocess imports them all and prints their
results (one Python start, one Numba compile for the jitted file)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbax as nx
from numbax.codegen.standalone import ExportError

SCALE = 2.0


def squashed(x):
    return np.tanh(x) * SCALE


def horner(c, x, n):
    """A loop with a branch and a helper, for jit (cheap to compile: scalars only)."""
    acc = 0.0
    for i in range(n):
        if c[i] > 0:
            acc = acc * x + squashed(c[i])
        else:
            acc = acc * x - c[i]
    return acc


def squashed_sum(x):
    return np.sum(squashed(x) * x)


def branchy(x, n):
    """A loop with a branch, calling a helper that reads a global."""
    acc = 0.0
    for i in range(n):
        if x[i] > 0:
            acc = acc + squashed(x[i]) ** 2
        else:
            acc = acc - np.sin(x[i])
    return acc + np.sum(x * x)


@nx.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return softplus(x), x_dot / (1.0 + np.exp(-x))


def loss(w, x):
    return np.sum(softplus(x @ w))


def row_norm(v):
    return np.sqrt(np.sum(v * v)) + SCALE


def tree_loss(params):
    return np.sum(np.cos(params["w"]) ** 2) * params["b"]


X = np.array([0.5, -1.0, 2.0, -0.25])
W = np.array([0.3, -0.2, 0.1])
M = np.arange(12.0).reshape(4, 3) / 10.0

_RUN = """
import json, sys, importlib.util
sys.modules["numbax"] = None  # what the files import must not include numbax
try:
    import numbax
    sys.exit("numbax is importable")
except ImportError:
    pass
import numpy as np

def load(name):
    spec = importlib.util.spec_from_file_location(name, name + ".py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

x = np.array({x}); w = np.array({w}); m = np.array({m})
jitted = load("jit_horner")
out = {{
    "grad": load("grad_branchy").grad_branchy(x, 4).tolist(),
    "custom": load("grad_loss").grad_loss(w, m).tolist(),
    "vmap": load("vmap_row_norm").vmap_row_norm(m).tolist(),
    "jit": float(jitted.horner(x, 0.3)),
    "jit_signatures": len(jitted.horner.signatures),  # Numba's: it was compiled
    "jit_grad": float(load("jit_grad_horner").grad_horner(x, 0.3)),
    "hessian": load("hessian_squashed").jacfwd_jacrev_squashed_sum(x).tolist(),
    "pytree": {{k: np.asarray(v).tolist() for k, v in
               load("grad_tree").grad_tree_loss({{"w": x, "b": 1.5}}).items()}},
}}
print(json.dumps(out))
"""


def test_exports_run_in_a_fresh_process_without_numbax(tmp_path):
    """One test, one subprocess: pytest-xdist would run a shared fixture once per worker.

    The eager grad of a loop with a branch (calling a helper that reads a global), a
    custom rule, a vmap, a jitted loop with a branch, a helper and a static argument
    (the one Numba compile), a Hessian and a pytree gradient."""
    files = {
        "grad": nx.export(nx.grad(branchy), tmp_path / "grad_branchy.py"),
        "custom": nx.export(nx.grad(loss), tmp_path / "grad_loss.py"),
        "vmap": nx.export(nx.vmap(row_norm), tmp_path / "vmap_row_norm.py", M),
        "jit": nx.export(nx.jit(horner, static_argnums=2), tmp_path / "jit_horner.py", X, 0.3, 4),
        "jit_grad": nx.export(  # its loop's tape, an array under jit: a list there
            nx.jit(nx.grad(horner, argnums=1), static_argnums=2),
            tmp_path / "jit_grad_horner.py",
            X,
            0.3,
            4,
        ),
        "hessian": nx.export(nx.hessian(squashed_sum), tmp_path / "hessian_squashed.py"),
        "pytree": nx.export(nx.grad(tree_loss), tmp_path / "grad_tree.py"),
    }
    script = _RUN.format(x=X.tolist(), w=W.tolist(), m=M.tolist())
    result = subprocess.run(
        [sys.executable, "-I", "-c", textwrap.dedent(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])

    np.testing.assert_allclose(out["grad"], nx.grad(branchy)(X, 4), rtol=1e-13)
    np.testing.assert_allclose(out["custom"], nx.grad(loss)(W, M), rtol=1e-13)
    np.testing.assert_allclose(out["vmap"], nx.vmap(row_norm)(M), rtol=1e-13)
    np.testing.assert_allclose(out["jit"], horner(X, 0.3, 4), rtol=1e-12)
    assert out["jit_signatures"] == 1
    np.testing.assert_allclose(out["jit_grad"], nx.grad(horner, argnums=1)(X, 0.3, 4), rtol=1e-12)
    np.testing.assert_allclose(out["hessian"], nx.hessian(squashed_sum)(X), rtol=1e-13)
    expected = nx.grad(tree_loss)({"w": X, "b": 1.5})
    assert out["pytree"].keys() == expected.keys()
    for key in expected:
        np.testing.assert_allclose(out["pytree"][key], expected[key], rtol=1e-13)

    text = {kind: path.read_text() for kind, path in files.items()}
    for kind, source in text.items():
        assert not re.search(r"^\s*(import|from) numbax", source, re.MULTILINE), kind
        assert ("import numba" in source) == kind.startswith("jit"), kind
    assert "def squashed(" in text["grad"] and "SCALE = 2.0" in text["grad"]  # user code
    assert "def softplus_jvp(" in text["custom"]  # the rule, copied
    assert "n = 4" in text["jit"]  # the static argument, baked in: the file takes c, x
    assert "def squashed(" in text["jit"] and "squashed = numba.njit(" in text["jit"]
    assert "__all__ = ['grad_branchy']" in text["grad"]
    head = text["grad"].splitlines()[:3]
    assert head[0].startswith("# grad_branchy: grad of branchy (")
    assert "test_export.py, line" in head[0]
    assert f"numbax {nx.__version__}" in head[1]


def test_export_refuses_what_numbax_did_not_make(tmp_path):
    with pytest.raises(ExportError, match="nx.export takes a function numbax made"):
        nx.export(branchy, tmp_path / "f.py")


def test_a_value_with_no_source_is_refused_by_name(tmp_path):
    handle = open(__file__)  # noqa: SIM115 (an object no file can hold)

    def reads_a_file(x):
        return x * len(handle.name)

    try:
        with pytest.raises(ExportError, match="'handle'"):
            nx.export(nx.grad(reads_a_file), tmp_path / "g.py")
    finally:
        handle.close()


double = lambda x: 2.0 * x  # noqa: E731 (a lambda, which has no def to copy)


def calls_a_lambda(x):
    return np.sum(double(x))


def test_a_lambda_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(ExportError, match="lambda; define it with def"):
        nx.export(nx.grad(calls_a_lambda), tmp_path / "h.py")


def _scaler(k):
    def scale(x):
        return x * k

    return scale


triple, halve = _scaler(3.0), _scaler(0.5)


def two_scales(x):
    return np.sum(triple(x) * halve(x))


def test_two_values_of_one_name_are_both_kept(tmp_path):
    """Two closures of one ``scale`` (over different ``k``): each is copied with its own
    ``k``, renamed in the second copy where it is defined and where it is read, and so
    is the derivative numbax generated once for both."""
    path = nx.export(nx.grad(two_scales), tmp_path / "two_scales.py")
    spec = importlib.util.spec_from_file_location("two_scales", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_allclose(module.grad_two_scales(X), nx.grad(two_scales)(X), rtol=1e-14)
    text = path.read_text()
    # one generated text (vjp of scale) reading two closures: copied twice
    assert "def vjp_scale(" in text and "def vjp_scale_2(" in text
    assert "def triple(" in text and "def halve(" in text  # the closures, by their names
    assert {"k = 0.5", "k_2 = 3.0"} <= set(text.splitlines()) or {
        "k = 3.0",
        "k_2 = 0.5",
    } <= set(text.splitlines())
