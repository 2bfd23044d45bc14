"""Reading functions: files, closures, lambdas, decorators, and functions without source."""

import functools

import gast
import numpy as np
import pytest

import numbax as nx
from numbax.transform.source import describe_file, read_function


def plain(x, a=2.0):
    return x * a


def _identity_decorator(f):
    return f


@_identity_decorator
def decorated(x):
    return x + 1


def make_closure(k):
    offset = np.arange(3.0)

    def inner(x):
        return x * k + offset

    return inner


lambdas = [lambda y: y - 1, lambda z, w: z * w]


def test_module_function_lines_are_the_files():
    src = read_function(plain)
    assert src.name == "plain"
    assert src.firstlineno == plain.__code__.co_firstlineno
    assert src.line(src.tree.body[0].lineno) == "return x * a"
    assert src.filename == __file__


def test_decorators_are_removed():
    src = read_function(decorated)
    assert src.tree.decorator_list == []
    assert src.line(src.tree.lineno) == "def decorated(x):"


def test_nested_function_captures_closure_values():
    inner = make_closure(3)
    src = read_function(inner)
    assert src.closure["k"] == 3
    np.testing.assert_array_equal(src.closure["offset"], np.arange(3.0))
    assert src.name == "inner"


@pytest.mark.parametrize("index", [0, 1])
def test_lambdas_on_one_line_are_told_apart(index):
    src = read_function(lambdas[index])
    params = [a.id for a in src.tree.args.args]
    assert params == (["y"] if index == 0 else ["z", "w"])
    assert isinstance(src.tree.body[0], gast.Return)


def test_jit_decorated_function_is_read_without_its_decorator():
    @nx.jit
    def twice(x):
        return 2 * x

    src = read_function(twice.fun)
    assert src.tree.decorator_list == []
    assert src.name == "twice"


def test_exec_defined_function_has_no_source():
    namespace = {}
    exec("def made_by_exec(x):\n    return x\n", namespace)
    with pytest.raises(nx.TransformError, match="made_by_exec.*cannot be read"):
        read_function(namespace["made_by_exec"])


@pytest.mark.parametrize("fun", [len, functools.partial(plain, a=1.0)])
def test_builtin_and_c_functions_have_no_source(fun):
    with pytest.raises(nx.TransformError, match="cannot be read"):
        read_function(fun)


@pytest.mark.parametrize("fun", [np.exp, np.maximum, np.sum])
def test_numpy_functions_are_read_as_a_wrapper_that_calls_them(fun):
    src = read_function(fun)
    call = src.tree.body[0].value
    assert src.name == fun.__name__
    assert len(src.tree.args.args) == (fun.nin if isinstance(fun, np.ufunc) else 1)
    assert src.globals[call.func.value.id] is np


def test_numba_functions_are_read_from_their_python_source():
    import numba

    src = read_function(numba.njit(plain))
    assert src.name == "plain"


def test_notebook_cells_are_named_as_cells():
    assert describe_file("<ipython-input-3-abc>") == "an IPython cell"
    assert describe_file("/tmp/ipykernel_123/4567.py") == "a notebook cell"


table = {
    "double": lambda v: v * 2,
    "pair": (lambda a, b: a - b, lambda c: -c),
}
spanning = functools.reduce(
    lambda f, g: f,
    [
        lambda q: q + 1,
    ],
)


@pytest.mark.parametrize(
    ("fun", "params"),
    [
        (table["double"], ["v"]),
        (table["pair"][0], ["a", "b"]),
        (table["pair"][1], ["c"]),
        (spanning, ["q"]),
    ],
    ids=["dict entry", "tuple first", "tuple second", "inside a multi-line call"],
)
def test_lambdas_inside_larger_expressions(fun, params):
    src = read_function(fun)
    assert [a.id for a in src.tree.args.args] == params
    assert src.line(src.tree.lineno).count("lambda") >= 1
