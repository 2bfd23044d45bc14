"""Elementwise fusion under jit: same values and dtypes as NumPy, whatever the shapes."""

import importlib.util
import inspect
import os
import re
import subprocess
import sys
import textwrap

import astor
import gast
import numba
import numpy as np
import pytest

import numbax as nx
from numbax.numba_backend.cpu import compile_helper
from numbax.numba_backend.loops import elementwise as elementwise_module
from numbax.numba_backend.loops.elementwise import elementwise
from numbax.numba_backend.passes.fuse import _parameters_unpacked_early
from numbax.numba_backend.passes.fused_loops import MOST_INPUTS
from tests.numba_backend.generated_sources import jit_sources


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def reuse(x, y):
    a = np.exp(x) * 2.0
    b = a + y
    c = np.sin(b) - a
    return c * b + a


def interrupted(x, y):
    a = np.exp(x) * 2.0
    s = np.sum(a)
    b = a + y * s
    return np.sin(b) - a


def branchy(x, flag):
    y = x * 2.0 + 1.0
    if flag:
        z = np.tanh(y) * y
    else:
        z = np.cos(y) - y
    return z + x


def predicate(x, y):
    return (x > y) & (x * 2.0 < 3.0)


def strong_scalar(x, y):
    s = np.sum(y)
    return x * s + 1.0


def in_loop(x, n):
    for _ in range(n):
        x = np.sqrt(x * x + 1.0) - 0.5
    return x


LINE_OF_INTERRUPTED = interrupted.__code__.co_firstlineno + 1
FUNCTIONS = {
    f.__name__: (f, nx.jit(f))
    for f in (selu, reuse, interrupted, branchy, predicate, strong_scalar, in_loop)
}
rng = np.random.default_rng(3)
X = rng.standard_normal((6, 5))


def _check(name, *args):
    plain, jitted = FUNCTIONS[name]
    expected = plain(*args)
    got = jitted(*args)
    assert np.asarray(got).dtype == np.asarray(expected).dtype, (name, args)
    assert np.shape(got) == np.shape(expected), (name, args)
    tight = all(np.asarray(a).dtype != np.float32 for a in (got, *args))
    np.testing.assert_allclose(
        got, expected, rtol=1e-13 if tight else 4e-6, atol=0 if tight else 1e-6
    )


@pytest.mark.parametrize(
    "x",
    [X, X.astype(np.float32), X.T, X[::2, 1:], X[0], np.float64(0.7), X.reshape(-1)[:0]],
    ids=["c-contiguous", "float32", "transposed", "strided", "1-d", "0-d scalar", "empty"],
)
def test_fused_chain_matches_numpy_for_any_layout(x):
    _check("selu", x)


@pytest.mark.parametrize(
    "y",
    [X * 0.5, X[0], np.float32(2.0), 2.0, X.astype(np.float32)],
    ids=["same shape", "broadcast row", "numpy scalar", "python scalar", "mixed dtype"],
)
def test_values_needed_later_end_their_group(y):
    _check("reuse", X, y)
    _check("interrupted", X, y)


def test_arrays_of_one_rank_broadcast_unequal_shapes():
    # the compiled signature of the same-shape case: the shapes differ only at run time
    for y in (X[:1] * 0.5, X[:, :1] * 0.5, X[:1, :1] * 0.5):
        _check("reuse", X, y)
        _check("reuse", y, X)
    with pytest.raises(ValueError, match="broadcast"):
        FUNCTIONS["reuse"][1](X, X[:2, :2].copy())


@pytest.mark.parametrize("flag", [True, False])
def test_fusion_inside_branches(flag):
    _check("branchy", X, flag)


@pytest.mark.parametrize(
    ("x_dtype", "y_dtype"),
    [(np.float32, np.float64), (np.float64, np.float32), (np.float32, np.float32)],
)
def test_numpy_scalars_keep_their_dtype_in_promotion(x_dtype, y_dtype):
    # np.sum(y) is a NumPy scalar: strongly typed, unlike a Python float.
    _check("strong_scalar", X.astype(x_dtype), X.astype(y_dtype))


@pytest.mark.parametrize("alpha", [1.5, 2, np.float32(1.5), np.float64(1.5)])
def test_python_and_numpy_scalar_arguments(alpha):
    _check("selu", X.astype(np.float32), alpha)


def test_boolean_results():
    _check("predicate", X, X.T.copy().T * 0.9)


def test_loops_are_left_as_they_are():
    _check("in_loop", np.abs(X), 3)
    assert "@nxrt.elementwise" not in FUNCTIONS["in_loop"][1].source


def test_generated_source_fuses_each_line_once():
    assert FUNCTIONS["reuse"][1].source.count("@nxrt.elementwise") == 1
    # `a` is needed after np.sum: it is the result of one kernel and an input of the next
    text = FUNCTIONS["interrupted"][1].source
    assert text.count("@nxrt.elementwise") == 2
    assert f"a = _interrupted_line{LINE_OF_INTERRUPTED}(x)" in text
    selu_text = FUNCTIONS["selu"][1].source
    assert selu_text.count("@nxrt.elementwise") == 1
    assert "_where = x if _gt else _sub" in selu_text


def test_large_results_are_correct():
    big = rng.standard_normal(3_000_000).astype(np.float32)  # above the huge-page size
    _check("selu", big)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_generated_source_also_runs_as_plain_python(name):
    """Invariant 2 of the design: the source Numba compiles runs unchanged in CPython."""
    plain, jitted = FUNCTIONS[name]
    args = {"branchy": (X, True), "in_loop": (np.abs(X), 2), "selu": (X,)}.get(name, (X, X.T.T))
    python_function = jitted.specialize().python_function
    np.testing.assert_allclose(python_function(*args), plain(*args), rtol=1e-13)


# -- values recomputed rather than stored (rematerialize.py) ---------------------------


def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def reassigned(x, y):
    a = np.exp(x) * 2.0
    s = np.sum(a)
    x = np.full_like(x, s)  # what `a` was computed from changes: `a` is read as stored
    return np.sin(a) + x * y


def _module(directory, name, lines):
    path = directory / f"{name}.py"
    path.write_text("\n".join(["import numpy as np", "", *lines, ""]))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def _unrolled(depth, directory):
    """``deep(x)``: ``depth`` elementwise lines, a sum, then a line reading the last."""
    lines = ["def deep(x):", "    a0 = x * 1.0"]
    lines += [f"    a{k} = a{k - 1} * 1.01 + 0.1" for k in range(1, depth)]
    lines += ["    s = np.sum(x)", f"    return a{depth - 1} * s + a0"]
    module, _ = _module(directory, f"unrolled_{depth}", lines)
    return module.deep


def test_an_adjoint_recomputes_the_forward_values_it_reads():
    grad = nx.jit(nx.grad(sum_logistic))
    x = np.linspace(-3.0, 3.0, 11)
    s = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(grad(x), s * (1.0 - s), rtol=1e-13)
    np.testing.assert_allclose(grad(x), nx.grad(sum_logistic)(x), rtol=1e-14)
    text = grad.source
    # one loop for the forward sweep (it feeds the sum), one for the adjoint, from x
    assert text.count("@nxrt.elementwise") == 2
    body = text.split("def grad_sum_logistic(x):")[1]
    call = next(line for line in body.splitlines() if line.strip().startswith("_ct_x = "))
    assert call.endswith("(x, _ct_sum)"), call
    assert "_exp =" not in body
    # the sum is computed only for the seed's dtype: neither it nor its loop runs
    assert "nxrt.sum" not in body and "nxrt.seed_of_sum(" in body


def complex_sum(x):
    return np.sum(np.exp(1j * x))


def test_the_seed_of_a_sum_keeps_grads_checks_and_value_and_grad_keeps_the_sum():
    with pytest.raises(TypeError, match="complex"):
        nx.jit(nx.grad(complex_sum))(np.ones(3))
    value, grad = nx.jit(nx.value_and_grad(sum_logistic))(np.linspace(-1.0, 1.0, 5))
    np.testing.assert_allclose(value, sum_logistic(np.linspace(-1.0, 1.0, 5)), rtol=1e-14)
    np.testing.assert_allclose(grad, nx.grad(sum_logistic)(np.linspace(-1.0, 1.0, 5)))


def test_a_value_whose_inputs_changed_is_read_as_stored():
    jitted = nx.jit(reassigned)
    np.testing.assert_allclose(jitted(X, X.T.T), reassigned(X, X.T.T), rtol=1e-13)


def stored_into(x, w):
    y = x * 2.0
    y[1:] = w
    return y * 3.0


def stored_into_in_a_loop(x, w):
    y = x * 2.0
    for k in range(2):
        y[k] = w
    return y * 3.0


def both_tangents(x, w):
    return nx.jvp(stored_into, (x, w), (x, 1.0)), nx.jvp(stored_into_in_a_loop, (x, w), (x, 1.0))


def test_an_array_stored_into_is_not_recomputed_from_before_the_store():
    # the JVP's code, inlined: y * 3.0 and its tangent were computed again from x
    x = np.linspace(0.0, 1.0, 4)
    for got, want in zip(nx.jit(both_tangents)(x, 7.0), both_tangents(x, 7.0), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-14)


def test_long_chains_are_recomputed_up_to_a_bound(tmp_path):
    deep = _unrolled(40, tmp_path)
    jitted = nx.jit(deep)
    np.testing.assert_allclose(jitted(X), deep(X), rtol=1e-13)


# -- cotangents that keep their shape join the fused loop (kept_shapes.py) --------------


def weighted(x, w):
    return np.sum(np.cos(x) * x * w)


def real_of_complex(x, y):
    return np.sum(np.real(np.exp(1j * x) * y))


@pytest.mark.parametrize(
    "x, w",
    [
        (np.linspace(0.1, 2.0, 6), np.linspace(1.0, 3.0, 6)),  # one shape: one adjoint loop
        (np.linspace(0.1, 2.0, 6).reshape(3, 2), np.array([2.0, -1.0])),  # w broadcast
        (np.linspace(0.1, 2.0, 6).astype(np.float32), np.float64(1.5)),  # a float32 x
        (np.linspace(0.1, 2.0, 6), 1.5),  # a Python float
    ],
    ids=["same-shape", "broadcast", "float32", "python-float"],
)
def test_an_unbroadcast_that_keeps_the_shape_is_fused_and_one_that_sums_is_not(x, w):
    grad = nx.jit(nx.grad(weighted, argnums=(0, 1)))
    want = nx.grad(weighted, argnums=(0, 1))(x, w)
    got = grad(x, w)
    for g, expected in zip(got, want, strict=True):
        assert np.shape(g) == np.shape(expected)
        assert np.result_type(g) == np.result_type(expected)
        rtol = 1e-5 if np.result_type(expected) == np.float32 else 1e-13
        np.testing.assert_allclose(g, expected, rtol=rtol)
    body = grad.source.split("def grad_weighted(x, w):")[1]
    kernels = grad.source.split("def grad_weighted(x, w):")[0]
    # cos(x)'s and x's cotangents come from x alone: they have its shape, whatever w's,
    # and are converted in the loop; those of the products with w may have to be summed
    # over axes where w broadcast x (or x broadcast w), known only when it runs: by the
    # loop that makes them, as it makes them (a Python float w has no axes to sum)
    assert re.search(r"_ct_x = nxrt\.cotangent_as\(\w+, x\)", kernels)
    # (with the product's other cotangent, which reads the same arrays, in one loop)
    assert re.search(r"_ct_mul, _ct_w = _grad_weighted_line\d+\(_mul, w, ", body)
    assert "@nxrt.elementwise(unbroadcast=True" in kernels


def test_a_complex_cotangent_of_a_real_value_keeps_its_real_part_in_the_loop():
    x, y = np.linspace(0.1, 2.0, 5), np.linspace(-1.0, 1.0, 5)
    grad = nx.jit(nx.grad(real_of_complex, argnums=(0, 1)))
    for g, expected in zip(grad(x, y), nx.grad(real_of_complex, argnums=(0, 1))(x, y), strict=True):
        assert np.result_type(g) == np.float64
        np.testing.assert_allclose(g, expected, rtol=1e-13)


def damped(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def total_of_damped(x):
    return np.sum(damped(x))


def total_of_slope(x):
    return np.sum(nx.grad(total_of_damped)(x))


def test_the_adjoint_of_a_vjp_reads_its_cotangents_as_of_their_outputs_shape():
    """``grad`` of ``grad``: the second adjoint runs the first VJP again, whose
    cotangent parameter has its output's shape (reverse.COTANGENT_OF); no cotangent of
    it is left to sum in its own pass, as the first adjoint's are not."""
    x = np.linspace(-3.0, 3.0, 7)
    curvature = nx.grad(total_of_slope)
    np.testing.assert_allclose(nx.jit(curvature)(x), curvature(x), rtol=1e-12)
    h = 1e-4  # the slope's own slope, elementwise
    slope = nx.grad(total_of_damped)
    fd = (slope(x + h) - slope(x - h)) / (2 * h)
    np.testing.assert_allclose(curvature(x), fd, rtol=1e-6, atol=1e-9)
    for text in jit_sources("vjp_vjp_damped"):
        body = text.split("\ndef vjp_vjp_damped(")[1]
        assert "nxrt.unbroadcast(" not in body, text
        assert body.count("_vjp_vjp_damped_line") <= 5, text


def product(x, w):
    return np.sin(x * w)


def total_of_product(x, w):
    return np.sum(product(x, w) ** 2)


def slope_in_w(x, w):
    return np.sum(nx.grad(total_of_product, argnums=1)(x, w) ** 2)


def test_a_cotangent_of_an_output_broadcast_from_two_parameters_is_still_summed():
    """``product``'s output broadcasts ``w`` over ``x``'s rows: its cotangent has both
    shapes, so that of ``w`` (first and second order) is summed over the rows."""
    x = np.linspace(0.1, 1.2, 6).reshape(3, 2)
    w = np.array([0.5, -1.5])
    for f in (nx.grad(total_of_product, argnums=1), nx.grad(slope_in_w, argnums=1)):
        got, want = nx.jit(f)(x, w), f(x, w)
        assert got.shape == (2,)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    h = 1e-6
    g = nx.grad(slope_in_w, argnums=1)(x, w)
    for k in range(2):
        e = np.zeros(2)
        e[k] = h
        fd = (slope_in_w(x, w + e) - slope_in_w(x, w - e)) / (2 * h)
        np.testing.assert_allclose(g[k], fd, rtol=1e-6)


def two_quotients(a, b):
    p = a / (1.0 + b * b)
    q = b / (1.0 + a * a)
    return np.sum(p * 0.7 + q * 1.3)


def test_a_recomputed_value_assigned_twice_reads_the_assignment_it_read():
    """``_ct_a = u`` then ``_ct_a = _ct_a + v``: a loop that recomputes the second
    reads the first, not what ``_ct_a`` holds by then (which counted ``v`` twice)."""
    a = np.array([0.3, -0.7, 1.1])
    b = 2.0 * a
    grad = nx.grad(two_quotients, argnums=(0, 1))
    for got, want in zip(nx.jit(grad)(a, b), grad(a, b), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def logistic_loss(w, x, y):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def test_a_loop_whose_value_a_later_loop_recomputes_is_not_run():
    """The adjoint assigns ``_ct_p`` twice (``_ct_p = _ct_p + _div``); once the later
    loop recomputes the first value, the loop that made it computes what nothing reads
    and goes (a pass over the batch with an ``exp`` and a division, before)."""
    rng = np.random.default_rng(0)
    w, x, y = rng.standard_normal(4) / 2, rng.standard_normal((6, 4)), rng.random(6)
    per_example = nx.vmap(nx.grad(logistic_loss), in_axes=(None, 0, 0))
    compiled = nx.jit(per_example)
    np.testing.assert_allclose(compiled(w, x, y), per_example(w, x, y), rtol=1e-13)
    fused = compile_helper(compiled.fun.shown().function, {}).py_func  # what runs
    text = inspect.getsource(sys.modules[fused.__module__])
    assert "@nxrt.elementwise" in text
    body = text.split("\ndef vmap_logistic_loss(")[-1]
    for target, kernel in re.findall(r"\n    (\w+) = (_\w+_line\d+(?:_\d+)?)\(", body):
        later = body.split(f"{target} = {kernel}(", 1)[1]
        assert re.search(rf"(?<!\w){target}(?!\w)", later.split("\n", 1)[1]), (target, body)


def squared_error(w, x):
    return (x @ w - 1.0) ** 2


def cube(z):
    return z * z * z


def test_the_seeds_of_a_batch_of_outputs_join_the_adjoints_loop():
    """``vmap(grad(f))`` seeds each example's output with one of its dtype: in a loop the
    seed needs the output's dtype only, so the outputs are never stored for it. A
    complex output still raises JAX's TypeError; ``holomorphic=True`` takes it."""
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal(3), rng.standard_normal((5, 3))
    per_example = nx.vmap(nx.grad(squared_error), in_axes=(None, 0))
    compiled = nx.jit(per_example)
    np.testing.assert_allclose(compiled(w, x), 2.0 * (x @ w - 1.0)[:, None] * x, rtol=1e-13)
    fused = compile_helper(compiled.fun.shown().function, {}).py_func
    text = inspect.getsource(sys.modules[fused.__module__])
    assert "nxrt.grad_seed(" in text and "nxrt.grad_seeds(" not in text
    z = np.array([0.5 + 1.0j, -1.0 + 0.25j])
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        nx.jit(nx.vmap(nx.grad(cube)))(z)
    np.testing.assert_allclose(
        nx.jit(nx.vmap(nx.grad(cube, holomorphic=True)))(z), 3.0 * z * z, rtol=1e-13
    )


# -- the same code in every process; loops of bounded width ------------------------------


def _uneven_pairs(directory):
    """Products of values that cost two and three statements to compute again, after a
    sum: more than the copy budget, so which are copied depends on the order the reads
    are visited in."""
    count = 24
    lines = ["def uneven(x):"]
    lines += [
        f"    a{k} = x * {k + 1}.0 + {k}.5" + (" * 1.5" if k % 2 else "") for k in range(count)
    ]
    products = " + ".join(f"a{k} * a{k + 1}" for k in range(0, count, 2))
    lines += ["    s = np.sum(x)", f"    return ({products}) * s"]
    return _module(directory, "uneven", lines)


_LOWERED_TEXT = """
import importlib.util, sys
import numpy as np, numbax as nx
spec = importlib.util.spec_from_file_location("uneven", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(nx.jit(module.uneven).lower(np.linspace(-1.0, 1.0, 7)).as_text())
"""


def test_the_generated_code_is_the_same_in_every_process(tmp_path):
    """The disk cache is keyed by the generated text: text that followed Python's string
    hashing (a set's order) would be new in every process, and never found again."""
    module, path = _uneven_pairs(tmp_path)
    texts = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "NUMBAX_CACHE_DIR": str(tmp_path / "c")}
        run = subprocess.run(
            [sys.executable, "-c", _LOWERED_TEXT, str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
        texts.add(run.stdout)
    assert len(texts) == 1
    x = np.linspace(-1.0, 1.0, 7)
    np.testing.assert_allclose(nx.jit(module.uneven)(x), module.uneven(x), rtol=1e-13)


def test_a_run_reading_more_arrays_than_a_loop_takes_is_split(tmp_path):
    """A fused loop is typed as a ufunc, which takes 64 operands at most: a run over more
    arrays (high-order derivatives make them) becomes several loops."""
    count = 70
    names = [f"a{k}" for k in range(count)]
    lines = [f"def wide({', '.join(names)}):", f"    return {' * 1.5 + '.join(names)}"]
    module, _ = _module(tmp_path, "wide", lines)
    arrays = [np.full(5, float(k)) for k in range(count)]
    jitted = nx.jit(module.wide)
    np.testing.assert_allclose(jitted(*arrays), module.wide(*arrays), rtol=1e-13)
    loops = re.findall(r"@nxrt\.elementwise.*\ndef \w+\(([^)]*)\)", jitted.source)
    assert len(loops) > 1
    assert all(len(params.split(",")) <= MOST_INPUTS for params in loops)


def _same_shapes_kernel(a, b, c):
    return a * b - c / (1.0 + b)


SAME_SHAPES = elementwise(_same_shapes_kernel, same_shapes=True)


@numba.njit
def _call_same_shapes(a, b, c):
    return SAME_SHAPES(a, b, c)


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (3, 4), (3, 4)),
        ((3, 4), (1, 4), (3, 1)),
        ((1, 1), (3, 4), (3, 4)),
        ((5,), (1,), (5,)),
    ],
    ids=["one shape", "row and column", "one element", "1-d"],
)
def test_a_loop_declared_same_shapes_broadcasts_arguments_that_are_not(shapes):
    """``same_shapes`` only leaves out the compiled broadcasting nest: arguments whose
    shapes differ after all are broadcast first (``elementwise._spread``), with NumPy's
    answer, and unbroadcastable ones raise NumPy's error."""
    a, b, c = (rng.standard_normal(shape) for shape in shapes)
    want = _same_shapes_kernel(a, b, c)
    got = _call_same_shapes(a, b, c)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-15)
    np.testing.assert_allclose(SAME_SHAPES(a, b, c), want, rtol=1e-15)  # interpreted
    read_only = b.copy()
    read_only.flags.writeable = False  # no copy of its type: the broadcasting nest
    np.testing.assert_allclose(_call_same_shapes(a, read_only, c), want, rtol=1e-15)


def test_a_loop_declared_same_shapes_still_refuses_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match="broadcast"):
        _call_same_shapes(X, X[:2], X)


def test_loops_of_values_computed_from_the_same_arrays_are_declared_same_shapes():
    """The second derivative's adjoint computes every value elementwise from ``x`` and
    cotangents of ``x``'s shape: its loop reading several of them is declared
    ``same_shapes``; one reading ``x`` and a parameter that may be a scalar is not."""
    x = np.linspace(-3.0, 3.0, 7)
    curvature = nx.grad(total_of_slope)
    np.testing.assert_allclose(nx.jit(curvature)(x), curvature(x), rtol=1e-12)
    declared = [t for t in jit_sources("vjp_vjp_damped") if "same_shapes=True" in t]
    assert declared, jit_sources("vjp_vjp_damped")
    np.testing.assert_allclose(nx.jit(selu)(X, 1.5, 1.05), selu(X, 1.5, 1.05), rtol=1e-13)
    for text in jit_sources("selu"):
        assert "same_shapes" not in text, text


def total_of_curvature(x):
    return np.sum(nx.grad(total_of_slope)(x))


def test_the_third_adjoint_unpacks_its_cotangents_first_and_is_one_loop():
    """The third adjoint reads each tuple of cotangents where the first read it: moved
    to the start, those items no longer split its elementwise code, which becomes one
    loop (three runs and nine loops before)."""
    x = np.linspace(-2.0, 2.0, 9)
    third = nx.grad(total_of_curvature)
    np.testing.assert_allclose(nx.jit(third)(x), third(x), rtol=1e-12, atol=1e-12)
    h = 1e-4
    curvature = nx.grad(total_of_slope)
    fd = (curvature(x + h) - curvature(x - h)) / (2 * h)
    np.testing.assert_allclose(third(x), fd, rtol=1e-6, atol=1e-8)
    for text in jit_sources("vjp_vjp_vjp_damped"):
        assert text.count("@nxrt.elementwise") == 1, text


def test_only_items_and_copies_of_parameters_never_assigned_move_up_past_elementwise_code():
    body = gast.parse(
        textwrap.dedent(
            """
            a = x * 2.0
            t = pair
            first = t[0]
            b = a + first
            copy = x
            again = y
            again = y[0]
            y = a
            late = y[0]
            store[0] = b
            c = b * b
            kept = store[0]
            """
        )
    ).body

    def elementwise(stmt):  # as the fuser would answer for these
        return isinstance(stmt.targets[0], gast.Name) and isinstance(
            stmt.value, (gast.BinOp, gast.Name)
        )

    moved = _parameters_unpacked_early(body, ["x", "pair", "y", "store"], elementwise)
    order = [astor.to_source(gast.gast_to_ast(stmt.targets[0])).strip() for stmt in moved]
    # ``store[0] = b`` might change ``store``: ``kept`` moves up to it, not past it
    assert order == [
        "t",
        "first",
        "copy",
        "a",
        "b",
        "again",
        "again",
        "y",
        "late",
        "store[0]",
        "kept",
        "c",
    ]


PLAIN = elementwise(_same_shapes_kernel)


@numba.njit
def _call_plain(a, b, c):
    return PLAIN(a, b, c)


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (4,), (3, 4)),
        ((3, 4), (), (3, 1)),
        ((2, 3, 4), (3, 4), (4,)),
        ((4,), (3, 4), (1, 4)),
    ],
    ids=["bias", "0-d", "three ranks", "first smaller"],
)
def test_arrays_of_fewer_dimensions_broadcast_in_the_loop(shapes):
    """An array of fewer dimensions (the bias of ``x @ w + b``) is viewed with leading
    dimensions of length 1, as NumPy broadcasts it, and goes through the loop written
    for the largest ndim (Numba's ufunc machinery took 1-2 s to compile each)."""
    a, b, c = (rng.standard_normal(shape) for shape in shapes)
    want = _same_shapes_kernel(a, b, c)
    for call in (_call_plain, _call_same_shapes):
        got = call(a, b, c)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-15)
    transposed = np.asfortranarray(a)  # not C-contiguous: the ufunc
    np.testing.assert_allclose(_call_plain(transposed, b, c), want, rtol=1e-15)


def _compiled_with_sources(monkeypatch, call, *args):
    """``call(*args)``, compiled now, and the sources of the fused-loop implementations
    generated while Numba typed it."""
    sources = []
    define = elementwise_module.define

    def recorded(source, *rest, **options):
        sources.append(source)
        return define(source, *rest, **options)

    monkeypatch.setattr(elementwise_module, "define", recorded)
    return call(*args), sources


def _scaled_shift(a, b, c):
    return a * b + c


SCALED_SHIFT = elementwise(_scaled_shift)


@numba.njit
def _call_scaled_shift(a, b, c):
    return SCALED_SHIFT(a, b, c)


def _scaled(a, b):
    return a * b


SCALED = elementwise(_scaled)


@numba.njit
def _call_scaled(a, b):
    return SCALED(a, b)


@pytest.mark.parametrize("scale_dtype", [np.float64, np.float32])
def test_a_0d_array_is_read_once_and_the_loop_stays_flat(monkeypatch, scale_dtype):
    """A 0-d array next to larger ones is the scalar it holds: the loop over the others
    stays one flat loop (on every thread when large), with NumPy's dtype (a 0-d array is
    not a weak scalar: float32 values times a float64 0-d array are float64)."""
    a = rng.standard_normal((300, 40)).astype(np.float32)
    b = np.array(1.5, scale_dtype)
    got, (source,) = _compiled_with_sources(monkeypatch, _call_scaled, a, b)
    want = a * b
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert "a1 = r1[()]" in source and "_run_chunks" in source, source
    assert "for i0 in" not in source, source


def test_an_array_of_fewer_dimensions_goes_straight_to_the_loop_nest(monkeypatch):
    """A bias (fewer dimensions) is broadcast against larger arrays: no flat loop for
    equal shapes is compiled for it, since it would never run."""
    a, c = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    b = rng.standard_normal(5)
    got, (source,) = _compiled_with_sources(monkeypatch, _call_scaled_shift, a, b, c)
    np.testing.assert_allclose(got, a * b + c, rtol=1e-15)
    assert "a1 = r1.reshape((1, r1.shape[0]))" in source, source
    assert "_run_chunks" not in source and "flat" not in source, source


def filled_then_read(x, buf):
    scale = x * 0.5
    buf.fill(3.0)
    first = buf[0]
    return first * x + scale


def added_then_read(x, buf):
    scale = x * 0.5
    buf[0] += 2.0
    first = buf[0]
    return first * x + scale


@pytest.mark.parametrize("f", [filled_then_read, added_then_read])
def test_an_item_read_after_the_parameter_is_written_is_read_there(f):
    """``buf[0]`` read after ``buf`` is written: moving the read up to join the
    elementwise code before it would read the value from before the write (a silent
    wrong answer before the read stopped at the write)."""
    x = np.linspace(0.5, 1.5, 4)
    want = f(x, np.zeros(4))
    np.testing.assert_allclose(nx.jit(f)(x, np.zeros(4)), want, rtol=1e-15)


def complex_helper(x):
    return np.exp(1j * x)


def complex_total(x):
    return np.sum(complex_helper(x))


def test_the_seed_of_a_sum_of_a_call_does_not_sum_and_keeps_grads_checks():
    """``grad`` of ``np.sum(helper(x))``: the helper's values are read again (for their
    shape), so no loop makes them for the seed alone, but the seed still needs only the
    sum's dtype: ``nxrt.seed_of_total``, and the sum does not run. Its dtype is checked
    as ``grad_seed`` checks it."""
    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(nx.jit(nx.grad(total_of_damped))(x), nx.grad(total_of_damped)(x))
    (text,) = jit_sources("grad_total_of_damped")
    body = text.split("def grad_total_of_damped(x):")[1]
    assert "nxrt.seed_of_total(_damped)" in body and "nxrt.sum" not in body, text
    with pytest.raises(TypeError, match="complex"):
        nx.jit(nx.grad(complex_total))(x)
    value, _ = nx.jit(nx.value_and_grad(total_of_damped))(x)  # the value is the sum
    np.testing.assert_allclose(value, total_of_damped(x), rtol=1e-14)


def mean_squared_error(w, x, y):
    return np.mean((x @ w - y) ** 2)


def complex_mean(x):
    return np.mean(np.exp(1j * x))


def test_the_seed_of_a_mean_loss_takes_no_mean_and_keeps_grads_checks():
    """``grad`` of ``np.mean((x @ w - y) ** 2)``: the mean is read by the seed (its
    dtype) and by its adjoint's ``reduced_count`` (its size, the seed's): neither needs
    it taken, so ``nxrt.seed_of_mean`` seeds the reverse pass and the count reads the
    seed. The dtype is checked as ``grad_seed`` checks it; ``value_and_grad`` still
    takes the mean, its value."""
    rng = np.random.default_rng(4)
    w, x, y = rng.standard_normal(3), rng.standard_normal((6, 3)), rng.standard_normal(6)
    grad = nx.grad(mean_squared_error)
    np.testing.assert_allclose(nx.jit(grad)(w, x, y), grad(w, x, y), rtol=1e-13)
    np.testing.assert_allclose(grad(w, x, y), 2.0 * x.T @ (x @ w - y) / 6, rtol=1e-13)
    (text,) = jit_sources("grad_mean_squared_error")
    body = text.split("def grad_mean_squared_error(")[1]
    assert "nxrt.seed_of_mean(" in body and "nxrt.mean(" not in body, text
    assert re.search(r"nxrt\.reduced_count\(\w+, _ct_mean\)", body), text
    with pytest.raises(TypeError, match="complex"):
        nx.jit(nx.grad(complex_mean))(np.ones(3))
    value, _ = nx.jit(nx.value_and_grad(mean_squared_error))(w, x, y)
    np.testing.assert_allclose(value, mean_squared_error(w, x, y), rtol=1e-14)
    integers = np.arange(6).reshape(2, 3)  # a mean of integers is a float
    np.testing.assert_allclose(
        nx.jit(grad)(w, integers, np.ones(2)), grad(w, integers, np.ones(2)), rtol=1e-13
    )


def shared_chain(x, y):
    a = np.exp(x) * y
    return a + 1.0, a * 2.0


def chain_rebinding_its_input(x, y):
    a = np.exp(x) * y
    b = a + 1.0
    x = x * 3.0
    return b, a - x


def test_values_two_loops_share_are_computed_in_each_instead_of_stored():
    """Two outputs of one chain: each loop computes the chain again (its *cone*) rather
    than reading it stored, so nothing but the outputs is written. Where the run
    changes a value a cone reads before the cone's place, the run is split as before."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal(4)
    for function in (shared_chain, chain_rebinding_its_input):
        for got, want in zip(nx.jit(function)(x, y), function(x, y), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-14)
    (text,) = jit_sources("shared_chain")
    body = text.split("def shared_chain(")[1]
    assert len(re.findall(r"= _shared_chain_line\d+\(", body)) == 2, text
    assert "nxrt.op_" not in body and "nxrt.exp(" not in body, text
    (text,) = jit_sources("chain_rebinding_its_input")
    body = text.split("def chain_rebinding_its_input(")[1]
    assert re.search(r"\n    a = _chain_rebinding_its_input_line\d+\(", body), text


def test_the_jvp_of_a_vjp_is_one_loop_per_output():
    """The Hessian of a sum of elementwise terms is the JVP of its gradient: two
    outputs (the VJP's cotangent and its tangent) of one chain, each one loop."""
    x = np.linspace(-2.0, 2.0, 7)
    hessian = nx.jit(nx.hessian(sum_logistic))
    h = 1e-5
    gradient = nx.grad(sum_logistic)
    fd = (gradient(x + h) - gradient(x - h)) / (2 * h)
    np.testing.assert_allclose(np.diag(hessian(x)), fd, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(hessian(x), nx.hessian(sum_logistic)(x), rtol=1e-13)
    for text in jit_sources("jvp_vjp_sum_logistic"):  # other tests' argument types too
        body = text.split("def jvp_vjp_sum_logistic(")[1]
        assert len(re.findall(r"= _jvp_vjp_sum_logistic_line\d+\(", body)) == 2, text
        assert "nxrt.op_" not in body, text


def summed_square_error(x, y):
    return np.sum((x - y) ** 2)


def test_the_slope_of_a_square_is_a_product_in_the_loop():
    """``nxrt.mul_pow(2, x, 1)`` (``x ** 2``'s slope) is ``2 * x`` on the loop's
    scalars: no kernel of its own to compile, and float32 stays float32."""
    for dtype in (np.float64, np.float32):
        x, y = np.linspace(-1.0, 1.0, 5).astype(dtype), np.ones(5, dtype)
        got = nx.jit(nx.grad(summed_square_error))(x, y)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, 2 * (x - y), rtol=1e-6)
    for text in jit_sources("grad_summed_square_error"):
        assert "nxrt.mul_pow(" not in text, text
        assert "nxrt.weak(2, _sub" in text and ") * _sub" in text, text


def cubed_and_constant(x):
    return np.sum(np.sin(x) * x**3 + x**0)


def test_a_powers_derivative_joins_the_adjoints_loop():
    """``nxrt.mul_pow(c, x, p)`` (``c * x ** p``, exactly 0 where ``c`` is 0) is
    elementwise: in the adjoint's loop, with ``c`` taking ``x``'s dtype as NumPy's weak
    scalars do (a float32 derivative stays float32), and 0 where ``x ** 0``'s derivative
    meets ``x == 0``."""
    grad = nx.grad(cubed_and_constant)
    for dtype in (np.float64, np.float32):
        x = np.linspace(-1.0, 1.0, 5).astype(dtype)  # 0.0 among them
        got = nx.jit(grad)(x)
        assert got.dtype == dtype
        want = np.cos(x) * x**3 + np.sin(x) * 3 * x**2
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14)
        np.testing.assert_array_equal(got, grad(x).astype(dtype))
    for text in jit_sources("grad_cubed_and_constant"):
        body = text.split("def grad_cubed_and_constant(")[1]
        assert "nxrt.mul_pow(" not in body, text  # only inside the loop
        assert "nxrt.mul_pow(nxrt.weak(" in text, text
