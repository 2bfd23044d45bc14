"""No silent inactivity: an operation numbax has no rule for, applied to a value that
carries a derivative, is a ``TransformError`` naming it, the function, file and line;
never a derivative of zero.

The first tests walk every public name of ``numpy``, ``numpy.linalg`` and ``numpy.fft``
and every public method and attribute of ``np.ndarray``: each one is applied to an
active value in a small generated function, which ``grad`` (reverse mode) and
``jacfwd`` (forward mode) transform, without running it. Each operation has a rule
(one declared without derivative included), or the transformation refuses it. The rest
checks the rules that make common code simply work (``x.copy()``, casts) against
finite differences, and the calls made for their effect.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from typing import Any, NamedTuple

import numpy as np
import pytest

import numbax as nx
from numbax.transform import rules
from tests.coverage_report import is_composed
from tests.helpers.fd import check_jacobians

NAMESPACES = {"np": np, "np.linalg": np.linalg, "np.fft": np.fft}

# Objects indexed rather than called (np.mgrid[0:n]); their items are computed. np.r_
# and np.c_ are read as the concatenations they are (normalize/values.py).
INDEXED = ("s_", "index_exp", "mgrid", "ogrid")
READ_AS_CONCATENATIONS = ("r_", "c_")


def _operations() -> list[tuple[str, str, str]]:
    """(expression applying the operation to the active ``x``, the rule-free name a
    refusal must say, or "" where a rule exists) for every public operation."""
    out = []
    for prefix, namespace in NAMESPACES.items():
        for name in sorted(n for n in dir(namespace) if not n.startswith("_")):
            value = getattr(namespace, name)
            if inspect.ismodule(value):
                continue  # np.linalg and np.fft are walked themselves
            if name in READ_AS_CONCATENATIONS:
                out.append((f"{prefix}.{name}[x, x]", ""))
            elif name in INDEXED:
                expected = f"{rules.qualified_name(value)}[...]"
                out.append((f"{prefix}.{name}[x, x]", expected))
            elif callable(value):
                ruled = rules.rule_for(value) is not None or is_composed(value)
                out.append((f"{prefix}.{name}(x)", "" if ruled else rules.qualified_name(value)))
            else:  # a value: np.pi, np.newaxis, np.typecodes; nothing to apply
                assert isinstance(value, (float, bool, type(None), dict, tuple, np.bool_)), name
    arr = np.zeros((2, 2))
    for name in sorted(n for n in dir(np.ndarray) if not n.startswith("_")):
        if callable(getattr(arr, name)):
            ruled = rules.method_rule(name) is not None
            out.append((f"x.{name}()", "" if ruled else f".{name}()"))
        elif name != "data":  # a pytree field's usual name: see test_array_data_is_refused
            ruled = rules.attribute_rule(name) is not None
            out.append((f"x.{name}", "" if ruled else f".{name}"))
    return out


OPERATIONS = _operations()


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A module with one function per rule-free operation: ``y = <operation>(x)``."""
    lines = ["import numpy as np", ""]
    for k, (expression, expected) in enumerate(OPERATIONS):
        if expected:
            lines += [f"def op_{k}(x):", f"    y = {expression}", "    return y", ""]
    path = tmp_path_factory.mktemp("walked") / "walked_operations.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("walked_operations", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["walked_operations"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("transform", [nx.grad, nx.jacfwd], ids=["grad", "jacfwd"])
def test_every_operation_has_a_rule_or_is_refused(walked: Any, transform: Any) -> None:
    assert len(OPERATIONS) > 500
    assert sum(1 for _, expected in OPERATIONS if not expected) > 150  # ruled ones
    silent = []
    for k, (expression, expected) in enumerate(OPERATIONS):
        if not expected:
            continue
        fn = getattr(walked, f"op_{k}")
        try:
            source = transform(fn).source
        except nx.TransformError as error:
            line = fn.__code__.co_firstlineno + 1
            message = str(error)
            assert expected in message, (expression, message)
            assert f"'op_{k}'" in message and error.lineno == line, (expression, message)
            assert error.filename == walked.__file__, (expression, message)
        else:
            silent.append(f"{expression}, transformed to\n{source}")
    assert not silent, "transformed without a rule: " + "\n".join(silent)


def test_the_walk_covers_what_it_should() -> None:
    expressions = {e for e, _ in OPERATIONS}
    for probe in ("np.fft.fft(x)", "np.linalg.eigh(x)", "x.copy()", "x.base", "np.r_[x, x]"):
        assert probe in expressions
    ruled = {e for e, expected in OPERATIONS if not expected}
    for probe in ("np.copy(x)", "x.copy()", "x.item()", "np.float64(x)", "x.itemsize"):
        assert probe in ruled


# -- the refusals, one by one: message, file and line --------------------------------


def rr(x):
    return np.sum(np.r_[x, x] ** 2)


def grid(x):
    return np.sum(np.mgrid[x, x] ** 2)


def unknown_method(x):
    y = x * 2.0
    return np.sum(y.view())


def base_attribute(x):
    return np.sum(x[1:].base)


def sum_out(x):
    y = np.zeros(())
    z = np.sum(x, out=y)
    return z


def item_of_index(x):
    return x.item(1) * 2.0


@pytest.mark.parametrize(
    "f, construct, offset",
    [
        (grid, "numpy.mgrid[...]", 1),
        (unknown_method, ".view()", 2),
        (base_attribute, ".base", 1),
        (sum_out, "numpy.sum with out=", 2),
        (item_of_index, ".item()", 1),
    ],
)
@pytest.mark.parametrize("transform", [nx.grad, nx.jacfwd], ids=["grad", "jacfwd"])
def test_refusal_names_operation_function_file_and_line(f, construct, offset, transform):
    with pytest.raises(nx.TransformError) as error:
        transform(f)(np.array([0.3, -0.6, 1.1]))
    message = str(error.value)
    assert construct in message and f"'{f.__name__}'" in message
    assert error.value.filename == __file__
    assert error.value.lineno == f.__code__.co_firstlineno + offset
    assert "custom_jvp" in message


def test_imported_index_object_is_refused():
    from numpy import ogrid

    def cc(x):
        return np.sum(ogrid[x, x])

    with pytest.raises(nx.TransformError, match=r"numpy\.ogrid\[\.\.\.\]"):
        nx.grad(cc)(np.ones(3))


def test_vectorized_vmap_declines_to_the_loop():
    # a vmap of a function without batching rule still batches: by its loop method
    xs = np.arange(6.0).reshape(2, 3)
    out = nx.vmap(rr)(xs)
    np.testing.assert_allclose(out, [2 * np.sum(x**2) for x in xs])


# -- calls made for their effect ------------------------------------------------------


def fill(x):
    y = np.zeros(3)
    y.fill(x[0])
    return np.sum(y * x)


def sort_in_place(x):
    y = x * 1.0
    y.sort()
    return y[0] * 2.0 + y[2]


def copy_to(x):
    y = np.zeros(3)
    np.copyto(y, x)
    return np.sum(y * y)


def double_into(y, x):
    y[:] = 2.0 * x


def helper_writes(x):
    y = np.zeros(3)
    double_into(y, x)
    return np.sum(y)


@pytest.mark.parametrize(
    "f, construct, offset",
    [
        (fill, "y.fill()", 2),
        (copy_to, "np.copyto()", 2),
        (helper_writes, "double_into()", 2),
    ],
)
@pytest.mark.parametrize("transform", [nx.grad, nx.jacfwd], ids=["grad", "jacfwd"])
def test_call_for_its_effect_is_refused(f, construct, offset, transform):
    with pytest.raises(nx.TransformError, match="called for its effect") as error:
        transform(f)(np.array([0.3, -0.6, 1.1]))
    assert construct in str(error.value) and f"'{f.__name__}'" in str(error.value)
    assert error.value.lineno == f.__code__.co_firstlineno + offset
    assert error.value.filename == __file__


def effects_on_constants(x):
    y = np.zeros(3)
    y.fill(2.0)  # nothing here carries a derivative
    print(x)  # reads x, changes nothing
    z = x * 1.0
    z.sort()  # z varies but never reaches the output
    return np.sum(y * x)


def test_effects_that_do_not_touch_derivatives_are_fine():
    check_jacobians(effects_on_constants, np.array([0.3, -0.6, 1.1]), jit=False)


class Batch(NamedTuple):
    data: np.ndarray
    w: float


def field_named_data(p):
    return np.sum(p.data * p.w)


def test_a_pytree_field_named_like_an_array_attribute_differentiates():
    g = nx.grad(field_named_data)(Batch(np.array([1.0, 2.0]), 3.0))
    np.testing.assert_allclose(g.data, [3.0, 3.0])
    assert g.w == pytest.approx(3.0)


def array_data(x):
    return np.sum(np.frombuffer(x.data) * 2.0)


def test_array_data_is_refused():
    # x.data reads like a pytree field; on an array what it returns (a memoryview) has
    # no rule wherever it is used
    for transform in (nx.grad, nx.jacfwd):
        with pytest.raises(nx.TransformError, match="numpy.frombuffer"):
            transform(array_data)(np.array([0.3, -0.6]))


# -- what now simply works: checked against central differences -----------------------

X = np.array([0.3, -0.6, 1.1])


def while_array(x):
    i = 0
    y = x.copy()
    while i < 5:
        y = np.sin(y) + 0.1 * y[::-1]
        i += 1
    return np.sum(y)


def copy_then_store(x):
    y = x.copy()
    for i in range(3):
        y[i] = y[i] * x[i]
    return np.sum(y)


def np_copy_then_store(x):
    y = np.copy(x)
    y[0] = 0.0  # the copy's tangent is its own: x's is untouched
    return y * x


def item(x):
    return x[1:2].item() * x


def float_casts(x):
    return float(x[0]) * x + np.float64(x[1]) * x[2]


def complex_casts(x):
    return np.abs(complex(x[0]) * (1 + 2j) + np.complex128(x[1]) * 1j)


def builtin_pow(x):
    return pow(x[0], 3.0) * x + pow(2.0, x[1])


def held_function(x):
    f = np.sin
    return f(x) * 2.0


def together(x):
    y = np.copy(x)
    y[0] = 0.0
    z = x.copy()
    z[1] = z[2] * z[0]
    s = float(x[0]) * x[1:2].item() + np.float64(x[1]) * pow(x[2], 3.0) + pow(2.0, x[1])
    return np.abs(complex(x[0]) * (1 + 2j) + np.complex128(s) * 1j) * y + z


@pytest.mark.parametrize(
    "f",
    [
        while_array,
        copy_then_store,
        np_copy_then_store,
        item,
        float_casts,
        complex_casts,
        builtin_pow,
        held_function,
        sort_in_place,
    ],
)
def test_new_rules_match_finite_differences(f):
    check_jacobians(f, X, jit=False)


def test_new_rules_match_finite_differences_under_jit():
    check_jacobians(together, X)


def test_while_array_gradient_is_the_issue_value():
    np.testing.assert_allclose(nx.grad(while_array)(X), [0.82, 0.59, 0.27], atol=0.01)


def float32_cast(x):
    return np.float32(x[0]) * np.float32(2.0)


def test_cast_cotangent_has_the_input_dtype():
    g = nx.grad(float32_cast)(np.array([0.5, 1.0]))
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, [2.0, 0.0])


def copy_scaled(x):
    return x.copy() * 2.0 + np.copy(x)


def copy_loss(x):
    return np.sum(x.copy() * x)


def test_copy_batches_vectorized():
    xs = np.arange(6.0).reshape(2, 3)
    vectorized = nx.vmap(copy_scaled, method="vectorized")
    np.testing.assert_allclose(vectorized(xs), 3 * xs)
    np.testing.assert_allclose(nx.jit(vectorized)(xs), 3 * xs)
    per_example = nx.vmap(nx.grad(copy_loss), method="vectorized")
    np.testing.assert_allclose(per_example(xs), 2 * xs)


# -- JAX's values where the derivative is 0 / 0 ---------------------------------------


def array_max(x):
    return np.max(x)


def column_max(x):
    return np.sum(np.max(np.stack((x, 2.0 * x)), axis=1))


def test_max_of_nan_follows_jax():
    # JAX's max JVP divides by the number of elements equal to the max; with a nan
    # max none is, and 0 / 0 is nan: the whole gradient is nan, as jax.grad gives.
    x = np.array([1.0, np.nan, 2.0])
    for derivative in (nx.grad(array_max), nx.jacfwd(array_max)):
        assert np.isnan(derivative(x)).all()
    assert np.isnan(nx.jit(nx.grad(array_max))(x)).all()
    g = nx.grad(column_max)(np.array([[1.0, np.nan], [3.0, 4.0]]).ravel())
    assert np.isnan(g).all()
    np.testing.assert_allclose(nx.grad(array_max)(np.array([1.0, 3.0, 3.0])), [0, 0.5, 0.5])


def row_max(m):
    return np.sum(np.max(m, axis=1))


def test_max_along_an_axis_shares_ties_and_makes_a_nan_row_nan_under_jit():
    # per row as JAX: the tied elements share the row's derivative, a nan row is 0 / 0
    m = np.array([[1.0, np.nan], [3.0, 3.0], [5.0, 2.0]])
    want = np.array([[np.nan, np.nan], [0.5, 0.5], [1.0, 0.0]])
    for derivative in (nx.grad(row_max), nx.jit(nx.grad(row_max))):
        np.testing.assert_array_equal(derivative(m), want)


def array_std(x):
    return np.std(x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_std_of_constant_data_is_nan_as_in_jax():
    # std = sqrt(var), and sqrt's derivative at 0 diverges: jax.grad(jnp.std) of a
    # constant vector is nan (jax-ml/jax#11716), and so is numbax's
    for derivative in (nx.grad(array_std), nx.jacfwd(array_std)):
        assert np.isnan(derivative(np.ones(3))).all()


def complex_abs(z):
    return np.abs(z)


def test_abs_of_complex_follows_jax():
    # JAX: grad(abs)(z) = conj(z) / |z|, the cotangent convention of a real function
    np.testing.assert_allclose(nx.grad(complex_abs)(3.0 + 4.0j), 0.6 - 0.8j)
