"""nx.jit: results, dtypes, static arguments, options, inspection, errors, disk cache."""

import subprocess
import sys
import textwrap
from functools import partial

import numpy as np
import pytest

import numbax as nx


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


selu_jit = nx.jit(selu)


def test_quickstart_selu_plain_and_jitted():
    x = np.arange(5.0)
    expected = np.array([0.0, 1.05, 2.1, 3.15, 4.2])
    np.testing.assert_allclose(selu(x), expected)
    np.testing.assert_allclose(selu_jit(x), expected, rtol=1e-15)


def test_selu_negative_inputs_and_keyword_defaults():
    x = np.linspace(-3, 3, 11)
    np.testing.assert_allclose(selu_jit(x), selu(x), rtol=1e-14)
    np.testing.assert_allclose(selu_jit(x, lmbda=2.0), selu(x, lmbda=2.0), rtol=1e-14)
    np.testing.assert_allclose(selu_jit(x, 1.0, 1.0), selu(x, 1.0, 1.0), rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_python_floats_do_not_promote_arrays(dtype):
    x = np.linspace(-2, 2, 7).astype(dtype)
    result = selu_jit(x)
    assert result.dtype == selu(x).dtype == dtype
    np.testing.assert_allclose(result, selu(x), rtol=4 * np.finfo(dtype).eps)


@nx.jit
def mixed_literals(x, k):
    return 2 * x + 0.5 * k - x / 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_weak_scalars_follow_numpy_promotion(dtype):
    x = np.arange(4).astype(dtype)
    expected = (2 * x + 0.5 * 3 - x / 3).dtype
    assert mixed_literals(x, 3).dtype == expected, dtype


@partial(nx.jit, static_argnums=1)
def repeat_add(x, n):
    total = x
    for _ in range(n):
        total = total + x
    return total


def test_static_argument_specializes_per_value():
    x = np.ones(3)
    np.testing.assert_array_equal(repeat_add(x, 2), 3 * x)
    assert "n = 2" in repeat_add.source
    np.testing.assert_array_equal(repeat_add(x, 5), 6 * x)
    assert "n = 5" in repeat_add.source
    np.testing.assert_array_equal(repeat_add(x, n=2), 3 * x)
    assert len(repeat_add._specializations) == 2


def test_static_argnames_decorator_form():
    @nx.jit(static_argnames="axis")
    def total(x, axis):
        return np.sum(x, axis=axis)

    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(total(x, axis=0), x.sum(axis=0))
    np.testing.assert_array_equal(total(x, 1), x.sum(axis=1))
    assert total.static_argnames == ("axis",)


def test_unhashable_static_argument_names_it():
    with pytest.raises(TypeError, match=r"Non-hashable static.*'n' \(position 1\)"):
        repeat_add(np.ones(2), [1])


@pytest.mark.parametrize("argnums", [2, -3])
def test_static_argnums_out_of_range(argnums):
    with pytest.raises(ValueError, match="static_argnums"):
        nx.jit(repeat_add.fun, static_argnums=argnums)


def test_unknown_static_argname():
    with pytest.raises(ValueError, match="no parameter named 'm'"):
        nx.jit(repeat_add.fun, static_argnames="m")


def test_accepted_jax_options_and_backend_errors():
    f = nx.jit(selu, donate_argnums=0, keep_unused=True, backend="cpu")
    np.testing.assert_allclose(f(np.arange(3.0)), selu(np.arange(3.0)))
    with pytest.raises(RuntimeError, match="unknown device or backend 'tpu'"):
        nx.jit(selu, backend="tpu")
    with pytest.raises(TypeError, match="unexpected keyword.*nopython_please"):
        nx.jit(selu, nopython_please=True)


def test_numba_options_pass_through():
    @partial(nx.jit, boundscheck=True)
    def read(x, i):
        return x[i]

    with pytest.raises(IndexError):
        read(np.zeros(3), 7)
    fast = nx.jit(selu, fastmath=True)
    np.testing.assert_allclose(fast(np.arange(3.0)), selu(np.arange(3.0)), rtol=1e-12)


def test_source_is_readable_and_maps_to_user_lines(capsys):
    text = selu_jit.source
    line = selu.__code__.co_firstlineno + 1
    assert f"# line {line}: return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)" in text
    assert "def selu(x, alpha=1.67, lmbda=1.05):" in text
    assert nx.source(selu_jit) == text
    nx.show(selu_jit)
    assert capsys.readouterr().out.strip() == text.strip()


def test_inspection_after_call():
    selu_jit(np.arange(3.0))
    assert len(selu_jit.signatures) >= 1
    assert "float64" in str(selu_jit.signatures[0])
    assert callable(selu_jit.inspect_types)


def test_block_until_ready_is_identity_on_trees():
    tree = {"a": np.ones(2), "b": (np.zeros(1), 3.0)}
    assert nx.block_until_ready(tree) is tree


def _twice(x):
    return 2.0 * x


def test_calls_to_user_helpers_and_jitted_functions_compile():
    inner = nx.jit(lambda v: v - 1.0)

    @nx.jit
    def outer(x):
        return inner(_twice(x)) + 1.0

    np.testing.assert_allclose(outer(np.arange(3.0)), 2 * np.arange(3.0))


def test_closures_and_jit_of_jit():
    scale = np.array([1.0, 2.0, 3.0])
    f = nx.jit(nx.jit(lambda x: x * scale))
    np.testing.assert_array_equal(f(np.ones(3)), scale)


def test_methods_can_be_jitted_with_static_self():
    class Model:
        @partial(nx.jit, static_argnums=0)
        def apply(self, x):
            return x * 2.0

        @nx.jit
        def apply_dynamic(self, x):
            return x * 2.0

    np.testing.assert_array_equal(Model().apply(np.ones(2)), 2 * np.ones(2))
    with pytest.raises(nx.CompileError, match=r"argument 'self'.*static_argnums"):
        Model().apply_dynamic(np.ones(2))


def test_unsupported_construct_names_construct_and_line():
    def uses_try(x):
        try:
            return x + 1
        except ValueError:
            return x

    with pytest.raises(nx.TransformError, match="try") as info:
        nx.jit(uses_try)(1.0)
    assert __file__ in str(info.value)
    assert str(uses_try.__code__.co_firstlineno + 1) in str(info.value)


def test_numba_failure_is_explained_in_user_terms():
    def bad(x):
        y = x + 1
        return y.no_such_attribute

    with pytest.raises(nx.CompileError) as info:
        nx.jit(bad)(np.ones(2))
    message = str(info.value)
    assert "'bad'" in message
    assert "return y.no_such_attribute" in message
    assert f"line {bad.__code__.co_firstlineno + 2}" in message
    assert info.value.__cause__ is not None


def test_numba_failure_in_a_derivative_names_the_users_line():
    """jit of a gradient compiles generated code: the error maps its line back through
    the derivative's source to the user's."""

    def through_a_tuple(t):
        s = np.sin(t)  # NumPy converts the tuple; Numba has no np.sin of a tuple
        return np.sum(s)

    with pytest.raises(nx.CompileError) as info:
        nx.jit(nx.grad(through_a_tuple))((1.0, 2.0))
    message = str(info.value)
    assert "in: s = np.sin(t)" in message
    assert f"at {__file__}, line {through_a_tuple.__code__.co_firstlineno + 1}" in message


def test_reductions_with_axis_and_keepdims_under_jit():
    @nx.jit
    def normalize_rows(x):
        return (x - x.mean(axis=1, keepdims=True)) / np.std(x, axis=1, keepdims=True)

    x = np.random.default_rng(0).standard_normal((4, 5))
    expected = (x - x.mean(axis=1, keepdims=True)) / np.std(x, axis=1, keepdims=True)
    np.testing.assert_allclose(normalize_rows(x), expected, rtol=1e-12)


_COLD_START = textwrap.dedent(
    """
    import numpy as np
    import numbax as nx

    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)

    def standardize(x):
        return (x - np.mean(x, axis=0)) / np.sum(x) + x.std()

    def weighted(params):  # a dict pytree: a record type in the compiled signature
        return params["w"] * params["x"]

    def clipped_sum(x):  # the branch on a mapped value makes vmap batch it by its loop
        total = 0.0
        for i in range(x.shape[0]):
            if x[i] > 0.5:
                total = total + x[i]
        return total

    x = np.arange(4.0, dtype=np.float32)
    calls = [
        (nx.jit(selu), (x,)),
        (nx.jit(standardize), (x,)),
        (nx.jit(weighted), ({"w": x, "x": x},)),
        (nx.jit(nx.vmap(clipped_sum)), (np.linspace(0.0, 1.0, 6).reshape(2, 3),)),
    ]
    for f, args in calls:
        f(*args)
        stats = f._latest.dispatcher.stats
        print(stats.cache_hits.total(), stats.cache_misses.total())
    """
)


def test_second_process_loads_compiled_code_from_disk(tmp_path):
    script = tmp_path / "coldstart.py"
    script.write_text(_COLD_START)
    env = {**__import__("os").environ, "NUMBAX_CACHE_DIR": str(tmp_path / "cache")}

    def run():
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-3000:]
        return [int(v) for v in out.stdout.split()]

    assert run() == [0, 1] * 4  # cold: every function compiled
    assert run() == [1, 0] * 4  # warm: every one loaded from disk, pytree and vmap too


@nx.jit
def powers(x, y):
    return x**2 + x**2.5 - 2.0**y + x**y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_power_operator_keeps_dtype_and_values(dtype):
    x = np.linspace(0.1, 3.0, 9).astype(dtype)
    y = np.linspace(-1.0, 2.0, 9).astype(dtype)
    expected = x**2 + x**2.5 - 2.0**y + x**y
    got = powers(x, y)
    assert got.dtype == expected.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=8 * np.finfo(dtype).eps)
    assert "x ** 2\n" in powers.source  # integer exponents stay multiplications


@pytest.mark.parametrize(
    ("fun", "args"),
    [
        (np.exp, (np.linspace(-2, 2, 5, dtype=np.float32),)),
        (np.maximum, (np.arange(4.0), np.full(4, 1.5))),
        (np.linalg.norm, (np.arange(6.0).reshape(2, 3),)),
    ],
    ids=["exp", "maximum", "linalg.norm"],
)
def test_numpy_functions_can_be_jitted_directly(fun, args):
    jitted = nx.jit(fun)
    expected = fun(*args)
    got = jitted(*args)
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, rtol=2e-6)
