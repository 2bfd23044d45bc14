"""``nx.export``: transformed functions written as standalone files, run in a fresh
process where numbax cannot be imported, against numbax's own results.

The files are written here, then one subprocess imports them all and prints their
results (one Python start, one Numba compile for the jitted file)."""

from __future__ import annotations

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
out = {{
    "grad": load("grad_branchy").grad_branchy(x, 4).tolist(),
    "custom": load("grad_loss").grad_loss(w, m).tolist(),
    "vmap": load("vmap_row_norm").vmap_row_norm(m).tolist(),
    "jit": float(load("jit_branchy").branchy(x)),
    "hessian": load("hessian_squashed").jacfwd_jacrev_squashed_sum(x).tolist(),
    "pytree": {{k: np.asarray(v).tolist() for k, v in
               load("grad_tree").grad_tree_loss({{"w": x, "b": 1.5}}).items()}},
}}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each export's file, and what a fresh process without numbax computes with them."""
    where = tmp_path_factory.mktemp("exported")
    files = {
        "grad": nx.export(nx.grad(branchy), where / "grad_branchy.py"),
        "custom": nx.export(nx.grad(loss), where / "grad_loss.py"),
        "vmap": nx.export(nx.vmap(row_norm), where / "vmap_row_norm.py", M),
        "jit": nx.export(nx.jit(branchy, static_argnums=1), where / "jit_branchy.py", X, 4),
        "hessian": nx.export(nx.hessian(squashed_sum), where / "hessian_squashed.py"),
        "pytree": nx.export(nx.grad(tree_loss), where / "grad_tree.py"),
    }
    script = _RUN.format(x=X.tolist(), w=W.tolist(), m=M.tolist())
    result = subprocess.run(
        [sys.executable, "-I", "-c", textwrap.dedent(script)],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return files, json.loads(result.stdout.strip().splitlines()[-1])


def test_eager_grad_of_a_loop_with_a_branch_runs_without_numbax(exported):
    files, out = exported
    np.testing.assert_allclose(out["grad"], nx.grad(branchy)(X, 4), rtol=1e-13)
    text = files["grad"].read_text()
    assert not re.search(r"^\s*(import|from) numbax", text, re.MULTILINE)
    assert "def squashed(" in text and "SCALE = 2.0" in text  # the user's code, copied
    assert "__all__ = ['grad_branchy']" in text


def test_a_custom_rule_is_exported_with_its_rule(exported):
    files, out = exported
    np.testing.assert_allclose(out["custom"], nx.grad(loss)(W, M), rtol=1e-13)
    assert "def softplus_jvp(" in files["custom"].read_text()


def test_vmap_exports_the_program_its_example_ran(exported):
    files, out = exported
    np.testing.assert_allclose(out["vmap"], nx.vmap(row_norm)(M), rtol=1e-13)
    assert "def vmap_row_norm(" in files["vmap"].read_text()


def test_jit_export_compiles_with_numba_alone(exported):
    files, out = exported
    np.testing.assert_allclose(out["jit"], branchy(X, 4), rtol=1e-12)
    text = files["jit"].read_text()
    assert "import numba" in text
    assert "n = 4" in text  # the static argument, baked in: the file takes x only


def test_compositions_and_pytrees_are_exported(exported):
    _, out = exported
    np.testing.assert_allclose(out["hessian"], nx.hessian(squashed_sum)(X), rtol=1e-13)
    expected = nx.grad(tree_loss)({"w": X, "b": 1.5})
    assert out["pytree"].keys() == expected.keys()
    for key in expected:
        np.testing.assert_allclose(out["pytree"][key], expected[key], rtol=1e-13)


def test_header_names_the_function_its_file_and_line(exported):
    files, _ = exported
    head = files["grad"].read_text().splitlines()[:3]
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
