"""The source numbax transforms is the text the running code was compiled from."""

import functools
import importlib
import linecache
import sys
import textwrap

import gast
import numpy as np
import pytest

import numbax as nx
from numbax.transform.source import read_function

sq, cube = (lambda x: x * x), (lambda x: x * x * x)
outer = lambda x: (lambda y: y * 5.0)(x) + 1.0  # noqa: E731
twins = (lambda a: a * 2.0, lambda a: a * 2.0)


def _twice(f):
    @functools.wraps(f)
    def wrapper(x):
        return f(x)

    return wrapper


@_twice
def decorated(x):
    return x * 7.0


def test_lambdas_on_one_line_are_told_apart_by_their_columns():
    assert nx.jit(cube)(2.0) == 8.0
    assert nx.jit(sq)(2.0) == 4.0
    assert nx.grad(cube)(2.0) == 12.0
    assert nx.grad(sq)(2.0) == 4.0
    np.testing.assert_allclose(nx.vmap(cube)(np.array([1.0, 2.0])), [1.0, 8.0])


def test_a_lambda_holding_a_lambda_is_the_outer_one():
    body = read_function(outer).tree.body[0].value
    assert isinstance(body, gast.BinOp) and isinstance(body.left, gast.Call)


def test_twin_lambdas_are_read_at_their_own_columns():
    first, second = (read_function(f).tree for f in twins)
    assert first.col_offset < second.col_offset
    assert first.lineno == second.lineno == twins[0].__code__.co_firstlineno


def test_decorated_function_is_read_from_its_own_definition():
    # The wrapper is what the module binds; its __wrapped__ is the user's definition.
    assert read_function(decorated.__wrapped__).name == "decorated"
    assert nx.grad(decorated.__wrapped__)(1.0) == 7.0
    assert read_function(decorated).name == "wrapper"


def test_nested_functions_of_one_name_are_told_apart():
    def make(k):
        if k:

            def f(x):
                return x * 3.0

        else:

            def f(x):
                return x * 4.0

        return f

    assert nx.grad(make(True))(1.0) == 3.0
    assert nx.grad(make(False))(1.0) == 4.0


def test_function_from_text_registered_like_a_notebook_cell():
    text = "import numpy as np\ndef cell_fn(x):\n    return np.sin(x) * 2.0\n"
    filename = "<ipython-input-1-numbax-fidelity>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {}
    exec(compile(text, filename, "exec"), namespace)
    np.testing.assert_allclose(nx.grad(namespace["cell_fn"])(0.5), 2.0 * np.cos(0.5))


async def coroutine(x):
    return x


def test_async_def_is_refused_naming_file_and_line():
    with pytest.raises(nx.TransformError) as info:
        nx.grad(coroutine)(1.0)
    message = str(info.value)
    assert "async functions are not supported by numbax.grad" in message
    assert f"{__file__}, line {coroutine.__code__.co_firstlineno}" in message


def generator(x):
    yield x


def test_generator_is_refused_naming_the_yield():
    with pytest.raises(nx.TransformError, match=r"numbax\.jit.*yield \(a generator\)"):
        nx.jit(generator)(1.0)


MODULE = """\
import numpy as np


def f(x):
    return x * x
"""


@pytest.fixture
def edited_module(tmp_path, monkeypatch):
    """A module imported from a file, and a function that rewrites that file."""
    name = f"numbax_fidelity_{abs(hash(str(tmp_path)))}"
    path = tmp_path / f"{name}.py"
    path.write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)

    def edit(text: str) -> None:
        path.write_text(textwrap.dedent(text))

    yield module, edit
    sys.modules.pop(name, None)


@pytest.mark.parametrize("transform", [nx.grad, nx.jit], ids=["grad", "jit"])
def test_source_edited_after_import_is_refused(edited_module, transform):
    module, edit = edited_module
    edit(MODULE.replace("x * x", "x * x * x"))
    with pytest.raises(nx.TransformError) as info:
        transform(module.f)(2.0)
    message = str(info.value)
    assert "changed since it was imported" in message
    assert "importlib.reload" in message
    assert module.__file__ in message
    importlib.reload(module)
    assert transform(module.f)(2.0) == (12.0 if transform is nx.grad else 8.0)


def test_an_edit_after_a_first_read_is_refused_too(edited_module):
    """A definition read once is kept while the file is unchanged; an edit ends that.
    (A derivative built before the edit is of the function that runs, and stays.)"""
    module, edit = edited_module
    assert nx.grad(module.f)(2.0) == 4.0
    read_function(module.f)
    edit(MODULE.replace("x * x", "x * x * x"))
    with pytest.raises(nx.TransformError, match="changed since it was imported"):
        read_function(module.f)
    assert nx.grad(module.f)(2.0) == 4.0


def test_each_read_is_a_tree_of_its_own():
    first, second = read_function(product).tree, read_function(product).tree
    first.body.clear()
    assert second.body and read_function(product).tree.body


def test_lines_moved_by_an_edit_are_a_change(edited_module):
    module, edit = edited_module
    edit(MODULE.replace("import numpy as np\n", "import numpy as np\nSCALE = 1.0\n"))
    with pytest.raises(nx.TransformError, match="changed since it was imported"):
        nx.grad(module.f)(2.0)


def test_an_edit_elsewhere_in_the_file_is_not_a_change(edited_module):
    module, edit = edited_module
    edit(MODULE + "\n\ndef g(x):\n    return x\n")
    assert nx.grad(module.f)(2.0) == 4.0


def test_a_file_edited_into_a_syntax_error_is_a_change(edited_module):
    module, edit = edited_module
    edit(MODULE + "\ndef broken(:\n")
    with pytest.raises(nx.TransformError, match="changed since it was imported"):
        nx.grad(module.f)(2.0)


def product(*a, **options):
    return a[0] * a[1] * options.get("scale", 1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: nx.grad(product)(2.0, 3.0),
        lambda: nx.jacfwd(product, argnums=1)(2.0, 3.0),
        lambda: nx.vmap(product)(np.ones(2), np.ones(2)),
        lambda: nx.jit(product)(2.0, 3.0),
    ],
    ids=["grad", "jacfwd", "vmap", "jit"],
)
def test_star_star_kwargs_are_refused_saying_what_to_write(call):
    with pytest.raises(nx.TransformError) as info:
        call()
    message = str(info.value)
    assert "**kwargs is not supported by numbax." in message
    assert "def f(x, *, scale)" in message and "dict" in message
    assert f"{__file__}, line {product.__code__.co_firstlineno}" in message


def test_a_tuple_parameter_is_what_star_args_become():
    assert nx.grad(lambda a: a[0] * a[1])((2.0, 3.0)) == (3.0, 2.0)
