"""``vmap``'s vectorized method: each batching rule against the loop (which calls the
function once per example), interpreted and under ``jit``; the choice between the two;
and the reasons the vectorized method gives when it cannot batch a body."""

import numpy as np
import pytest

import numbax as nx

RNG = np.random.default_rng(7)
M = RNG.normal(size=(4, 3))  # shared by every example
B = 5  # batch size


def elementwise(x, y):
    return np.sin(x) * y + 2.0


def scalar_times_shared_vector(s, v):  # s must be lifted: s[:, None] * v
    return s * v


def vector_times_shared_matrix(x):  # x (3,) against M (4, 3)
    return x * M


def scalar_plus_batched_vector(s, v):
    return s + v


def reductions(x):
    return np.sum(x, axis=0), np.mean(x, axis=-1), np.max(x), x.sum(), np.cumsum(x, axis=1)


def products(x, v, u):
    return np.dot(M, v), v @ u, np.dot(v, u), x @ v, u @ x.T, np.dot(2.0, v)


def transpose_and_index(x):
    return x.T[0] + x[:, 2], x[None, 0], x[-1], x[1:3]


def comparisons(x, t):
    return np.where(x > t, x, 0.0), np.maximum(x, t), np.clip(x, -0.5, 0.5)


def shared_loop(x, n):
    for _ in range(n):
        x = 0.5 * x + np.cos(x)
    return x


def accumulated(x, n):  # a shared array the loop makes batched: repeated before it
    acc = np.zeros(x.shape)
    for i in range(n):
        acc = 0.5 * acc + x * i
    return acc + np.arange(3)


def shared_branch(x, flag):
    if flag > 0:
        y = np.exp(x)
    else:
        y = -x
    return y


def reshaped(x):  # each example reshaped; the batch axis kept first
    return x.reshape(-1) * 2.0, np.reshape(x, (2, 6)), np.ravel(x.T), x.reshape(6, 2).sum(axis=1)


def joined(x, y):  # a shared array joined to batched ones is repeated over the batch
    return np.concatenate((x, M[0], y), axis=0) * 2.0, np.stack((x, y), axis=1), np.stack((x, M[1]))


def embedded(token, w):  # a shared table indexed by each example's integer
    return np.tanh(M[token] @ w) + M[token, 2]


def shape_of_example(x):
    return x * x.shape[0] + len(x)


def shared_output(x, c):
    return x, 2.0 * c


def built_and_selected(x):  # np.array of values, np.select, np.r_ with a directive
    rows = np.array([[x[0], x[1] * 2.0], [x[2], 1.0]])
    flat = np.array([x[0], 3.0, x[2] ** 2]) + np.asarray((x, x * x)).sum(axis=0)
    selected = np.select([x > 0, x < -0.5], [x, M[1, :3]], default=x * 3.0)
    return rows, flat + selected + np.r_["0,2,0", x, x**2][3:, 0]


def picked(x, choice):  # np.choose, np.pad (compiled in the one program of their tests)
    chosen = np.choose(choice, (x, 2.0 * x, M[0, :3]), mode="clip")
    rows = np.array([[x[0], x[1] * 2.0], [x[2], 1.0]])
    chosen += np.pad(x, (2, 1), mode="reflect")[:3] + np.pad(rows, 1)[1:, 0]
    padded = np.pad(x, ((0, 1),), "edge")[1:] + np.pad(x, 2, "wrap")[:3]
    return chosen + padded + np.pad(x[None], 1, "symmetric")[1, 1:4]


def scaled_and_norm(x, w):  # one output per example, one the batch shares
    return np.tanh(x) * w, np.sum(w * w)


def calls_helpers(x, w):  # a call on batched values calls the helper's vectorized version
    y, norm = scaled_and_norm(x, w)
    return y / norm


def fills_rows(x):  # a buffer that receives batched values is made batched where made
    out = np.zeros((3, x.shape[0]))
    for i in range(3):
        out[i, :] = x * (i + 1.0)
    out[1] = 0.5  # a shared value into the batched buffer
    return out


def appends_then_stores(x, w):  # a list of batches read by index and by iterating
    rows = np.zeros((2, 3))
    for i in range(2):
        terms = []
        for k in range(3):
            terms.append((x - w[k])[1])
        total = 0.0 * x[0]
        for k in range(len(terms)):
            total = total + terms[k] * 1.5
        for term in terms:
            total = total + term
        rows[i] += total
    return rows


def replaces_an_element(x):
    parts = []
    parts.append(x * 2.0)
    parts.append(x + 1.0)
    parts[0] = parts[1] * parts[0]
    return parts[0] - parts[-1]


# (function, arguments, in_axes, out_axes)
V3 = RNG.normal(size=(B, 3))
CASES = {
    "elementwise": (elementwise, (V3, RNG.normal(size=(B, 3))), 0, 0),
    "elementwise, in_axes=(1, None)": (elementwise, (V3.T, RNG.normal(size=3)), (1, None), 0),
    "lift a scalar": (scalar_times_shared_vector, (RNG.normal(size=B), M[0]), (0, None), 0),
    "lift to a shared matrix": (vector_times_shared_matrix, (V3,), 0, 0),
    "scalar plus vector": (scalar_plus_batched_vector, (RNG.normal(size=B), V3), 0, 0),
    "reductions": (reductions, (RNG.normal(size=(B, 4, 3)),), 0, 0),
    "products": (
        products,
        (RNG.normal(size=(B, 4, 3)), V3, RNG.normal(size=(B, 3))),
        0,
        0,
    ),
    "products, shared vector": (products, (RNG.normal(size=(B, 4, 3)), V3, M[1]), (0, 0, None), 0),
    "transpose and index": (transpose_and_index, (RNG.normal(size=(B, 4, 3)),), 0, 0),
    "comparisons": (comparisons, (V3, 0.1), (0, None), 0),
    "shared loop": (shared_loop, (V3, 3), (0, None), 0),
    "shared branch": (shared_branch, (V3, -1.0), (0, None), 0),
    "accumulator": (accumulated, (V3, 3), (0, None), 0),
    "shape of an example": (shape_of_example, (RNG.normal(size=(B, 4)),), 0, 0),
    "reshape": (reshaped, (RNG.normal(size=(3, 4, B)),), 2, 0),
    "concatenate and stack": (joined, (V3, RNG.normal(size=(B, 3))), 0, 0),
    "embedding lookup": (embedded, (np.array([3, 1, 0, 3, 2]), RNG.normal(size=3)), (0, None), 0),
    "out_axes": (reductions, (RNG.normal(size=(B, 4, 3)),), 0, (1, 0, 0, 0, 2)),
    "shared output repeated": (shared_output, (V3, M), (0, None), 0),
    "arrays from values, select": (built_and_selected, (V3,), 0, 0),
    "choose, pad": (picked, (V3, RNG.integers(0, 4, size=(B, 3))), 0, 0),
    "choose by a shared index": (picked, (V3, np.array([2, 0, 1])), (0, None), 0),
    "calls a helper": (calls_helpers, (V3, RNG.normal(size=3)), (0, None), 0),
    "fills a buffer": (fills_rows, (V3,), 0, 0),
    "a list filled by append": (appends_then_stores, (V3, M[2]), (0, None), 0),
    "a list's element replaced": (replaces_an_element, (V3,), 0, 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_vectorized_equals_the_loop(case):
    fun, args, in_axes, out_axes = CASES[case]
    vectorized = nx.vmap(fun, in_axes, out_axes, method="vectorized")
    looped = nx.vmap(fun, in_axes, out_axes, method="loop")
    got, want = vectorized(*args), looped(*args)
    assert "vectorized" in vectorized.source, case
    for g, w in zip(_leaves(got), _leaves(want), strict=True):
        assert np.shape(g) == np.shape(w), case
        np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=case)


JIT_CASES = ["elementwise, in_axes=(1, None)", "lift a scalar", "reductions", "products"]
JIT_CASES += ["transpose and index", "comparisons", "shared loop", "shared output repeated"]
JIT_CASES += ["accumulator", "reshape", "concatenate and stack", "embedding lookup"]
JIT_CASES += ["arrays from values, select", "calls a helper", "fills a buffer"]
JIT_CASES += ["a list filled by append"]


@pytest.mark.parametrize("case", JIT_CASES)
def test_vectorized_under_jit(case):
    fun, args, in_axes, out_axes = CASES[case]
    compiled = nx.jit(nx.vmap(fun, in_axes, out_axes, method="vectorized"))
    want = nx.vmap(fun, in_axes, out_axes, method="loop")(*args)
    for g, w in zip(_leaves(compiled(*args)), _leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=case)


def _leaves(out):
    return list(out) if isinstance(out, tuple) else [out]


# -- derivative code is vectorized too -------------------------------------------------------


def logistic(w, x, y):
    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def mlp(w, x, y):
    h = np.tanh(w @ x)
    return np.mean((h - y) ** 2) + np.max(h)


def test_per_example_gradients_are_vectorized():
    x, y = RNG.normal(size=(B, 3)), (RNG.random(B) > 0.5).astype(float)
    w = RNG.normal(size=3)
    batched = nx.vmap(nx.grad(logistic), in_axes=(None, 0, 0))
    want = np.stack([nx.grad(logistic)(w, x[i], y[i]) for i in range(B)])
    np.testing.assert_allclose(batched(w, x, y), want, rtol=1e-12)
    assert "vectorized" in batched.source
    np.testing.assert_allclose(nx.jit(batched)(w, x, y), want, rtol=1e-12)


def test_per_example_gradients_of_a_layer_are_vectorized():
    x, y = RNG.normal(size=(B, 3)), RNG.normal(size=(B, 4))
    batched = nx.vmap(nx.grad(mlp), in_axes=(None, 0, 0))
    want = np.stack([nx.grad(mlp)(M, x[i], y[i]) for i in range(B)])
    np.testing.assert_allclose(batched(M, x, y), want, rtol=1e-12)
    assert "vectorized" in batched.source
    np.testing.assert_allclose(nx.jit(batched)(M, x, y), want, rtol=1e-12)


def two_layers(params, x, y):  # shared parameters as a tuple, one a scalar bias
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return np.sum((h @ w2 + b2 - y) ** 2)


def test_per_example_gradients_of_tuple_parameters_are_vectorized():
    params = (RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(4, 2)), 0.5)
    x, y = RNG.normal(size=(B, 3)), RNG.normal(size=(B, 2))
    batched = nx.vmap(nx.grad(two_layers), in_axes=(None, 0, 0))
    got = batched(params, x, y)
    assert "vectorized" in batched.source
    assert "np.broadcast_to(b2," in batched.source  # the shared bias's cotangent per example
    for i in range(B):
        for g, w in zip(got, nx.grad(two_layers)(params, x[i], y[i]), strict=True):
            np.testing.assert_allclose(g[i], w, rtol=1e-12)
    for g, w in zip(nx.jit(batched)(params, x, y), got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def joined_loss(x, w):
    z = np.concatenate((x, w * M[0], x * 2.0), axis=0)
    return np.sum(np.tanh(z) ** 2)


@pytest.mark.parametrize("argnum", [0, 1])
def test_gradients_through_a_concatenation_are_vectorized(argnum):
    x, w = RNG.normal(size=(B, 3)), RNG.normal(size=3)
    gradient = nx.grad(joined_loss, argnums=argnum)
    batched = nx.vmap(gradient, in_axes=(0, None))
    want = np.stack([gradient(x[i], w) for i in range(B)])
    np.testing.assert_allclose(batched(x, w), want, rtol=1e-12)
    assert "vectorized" in batched.source and "nxrt.split_like(" in batched.source
    np.testing.assert_allclose(nx.jit(batched)(x, w), want, rtol=1e-12)


BATCHED_LOGISTIC = nx.vmap(logistic, in_axes=(None, 0, 0))
X, Y = RNG.normal(size=(B, 3)), (RNG.random(B) > 0.5).astype(float)


def mean_logistic(w):
    return np.mean(BATCHED_LOGISTIC(w, X, Y))


def test_gradient_through_a_vectorized_call():
    w = RNG.normal(size=3)
    want = np.mean([nx.grad(logistic)(w, X[i], Y[i]) for i in range(B)], axis=0)
    np.testing.assert_allclose(nx.grad(mean_logistic)(w), want, rtol=1e-12)
    np.testing.assert_allclose(nx.jit(nx.grad(mean_logistic))(w), want, rtol=1e-12)
    assert "vectorized" in BATCHED_LOGISTIC.source


def test_called_from_compiled_code():
    batched = nx.vmap(elementwise)
    total = nx.jit(lambda a, b: np.sum(batched(a, b)))
    a, b = V3, RNG.normal(size=(B, 3))
    np.testing.assert_allclose(total(a, b), np.sum(elementwise(a, b)))


def test_float32_stays_float32():
    x = V3.astype(np.float32)
    out = nx.vmap(elementwise, method="vectorized")(x, x)
    assert out.dtype == np.float32
    assert nx.jit(nx.vmap(elementwise, method="vectorized"))(x, x).dtype == np.float32


def test_same_as_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = RNG.normal(size=(B, 4, 3)).astype(np.float32)
    want = jax.vmap(lambda a: (jnp.sum(a, axis=0), a.T[0] + a[:, 2], jnp.max(a)), (2,))(x)
    got = nx.vmap(
        lambda a: (np.sum(a, axis=0), a.T[0] + a[:, 2], np.max(a)), (2,), method="vectorized"
    )(x)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)


# -- what the vectorized method does not batch: the loop does, and forcing it says why ----------


def branch_on_example(x):
    if np.sum(x) > 0:
        return x
    return -x


def while_on_example(x):
    while np.max(np.abs(x)) > 1.0:
        x = x / 2.0
    return x


def branching_helper(x):
    if np.sum(x) > 0:
        return x * 2.0
    return x


def calls_a_branching_helper(x):
    return branching_helper(x) + 1.0


def halves(x, n):
    if n == 0:
        return x
    return halves(x * 0.5, n - 1)


def calls_itself(x):
    return halves(x, 2)


def scalar_accumulator(x):
    total = 0.0  # a Python number adapts to the arrays it meets: not repeated
    for i in range(3):
        total = total + x[i]
    return total


def gathers_per_example(x):
    return x[2 - (x[0] > 0)]  # a batched array indexed by a batched index


def stores_at_a_mapped_index(x):
    y = np.zeros(3)
    y[(x[0] > 0) * 1] = x[1]
    return y


def stores_into_a_view(x):
    y = np.zeros((2, 3))
    row = y[0]
    row[1] = x[1]
    return y


def slices_a_list_of_batches(x):
    parts = []
    for k in range(3):
        parts.append(x * k)
    return np.sum(parts[1:], axis=0)


def stores_a_shared_value_into_a_list_of_batches(x):
    parts = []
    parts.append(x * 2.0)
    parts[0] = np.ones(3)
    return parts[0]


DECLINED = {
    "slice of a list of batches": (slices_a_list_of_batches, "indexed by a slice", "parts[1:]"),
    "list of batched and shared values": (
        stores_a_shared_value_into_a_list_of_batches,
        "holds batched and shared values",
        "parts[0] = np.ones(3)",
    ),
    "if on a mapped value": (branch_on_example, "depends on a mapped value", "np.sum(x) > 0"),
    "while on a mapped value": (while_on_example, "depends on a mapped value", "while"),
    "call to a helper that loops": (
        calls_a_branching_helper,
        "branching_helper, which does not vectorize",
        "branching_helper(x)",
    ),
    "recursive call": (calls_itself, "halves calls itself", "halves(x, 2)"),
    "store at a mapped index": (stores_at_a_mapped_index, "a scatter", "y[(x[0] > 0) * 1]"),
    "store into a view": (stores_into_a_view, "which may be a view", "row = y[0]"),
    "gather": (gathers_per_example, "indexing by a mapped value", "x[2 - (x[0] > 0)]"),
    "scalar accumulator": (scalar_accumulator, "starts as a scalar the batch shares", "for i"),
}


@pytest.mark.parametrize("case", list(DECLINED))
def test_what_cannot_be_vectorized_loops(case):
    fun, reason, line = DECLINED[case]
    x = RNG.normal(size=(B, 3)) * 3
    want = np.stack([fun(x[i]) for i in range(B)])
    auto = nx.vmap(fun)
    np.testing.assert_allclose(auto(x), want)
    assert "one call per example" in auto.source
    with pytest.raises(nx.TransformError, match=reason) as error:
        nx.vmap(fun, method="vectorized")(x)
    assert line in str(error.value)
    assert fun.__name__ in str(error.value)
    assert f"{__file__}, line " in str(error.value)


def test_calls_and_buffers_read_as_the_batch_written_by_hand():
    called = nx.vmap(calls_helpers, (0, None))
    called(V3, M[0])
    assert "_scaled_and_norm = _vmap_scaled_and_norm(x, w)\n" in called.source
    filled = nx.vmap(fills_rows)
    filled(V3)
    assert "out = nxrt.batch_repeat(out, _size)\n" in filled.source
    assert "out[:, i, :] = _mul\n" in filled.source
    assert "out[:, 1] = 0.5\n" in filled.source


def test_loop_method_is_kept_when_asked():
    looped = nx.vmap(elementwise, method="loop")
    looped(V3, V3)
    assert "one call per example" in looped.source


SCRIPT = """
import numpy as np
import numbax as nx

def logistic(w, x, y):
    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))

def total(w, x, y):
    return np.sum(PER_EXAMPLE(w, x, y))

PER_EXAMPLE = nx.vmap(nx.grad(logistic), in_axes=(None, 0, 0))
x = np.linspace(-1.0, 1.0, 15).reshape(5, 3)
w, y = np.ones(3) * 0.1, np.ones(5)
compiled = nx.jit(PER_EXAMPLE)
print(compiled(w, x, y).sum(), nx.jit(total)(w, x, y))
shown = nx.source(compiled)  # the vectorized body it runs, from the disk cache too
print("vectorized: the whole batch at once" in shown, "_ct_w = _ct_dot[:, None] * x" in shown)
"""


def test_a_later_process_reuses_the_disk_cache(tmp_path):
    """Code Numba typed per call (vmap's, made for the arguments' ranks) must not be
    referred to by a cached caller that a later process would load before making it.
    ``nx.source`` of ``jit(vmap(f))`` shows the vectorized body the call runs, also in
    the later process, where that code came from the disk cache."""
    import os
    import subprocess
    import sys

    script = tmp_path / "per_example.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "NUMBAX_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.splitlines()[-1] == "True True", run.stdout
    assert runs[0].stdout == runs[1].stdout


def test_the_generated_source_reads_like_the_batch_written_by_hand():
    batched = nx.vmap(nx.grad(logistic), in_axes=(None, 0, 0))
    batched(np.ones(3), X, Y)
    source = batched.source
    assert "nxrt.batch_size('grad_logistic', (x, y), (0, 0), ('x', 'y'))\n" in source
    assert "_dot = x @ w\n" in source
    assert "_ct_w = _ct_dot[:, None] * x\n" in source  # nxrt.dot_vjp_b of one example
    assert "# line " in source  # each line says which line of the gradient it batches
    shown = nx.vmap(vector_times_shared_matrix)
    shown(V3)
    assert "_mul = x[:, None] * M\n" in shown.source  # lifted to broadcast as one example
