"""Read a Python function's source into a gast tree that every transformation starts from.

numbax never traces: it rewrites source. So the first step for any function is to find
its text (in a module file, a Jupyter/IPython cell, or a nested/lambda definition), parse
it, drop its decorators (the object we were given is the undecorated function), shift
line numbers so they are the user's real file lines, and capture what its names refer
to (globals, closure cells, default values).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import linecache
import re
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

import gast

from numbax.errors import TransformError
from numbax.transform.numpy_functions import is_numpy_function, numpy_wrapper


@dataclass
class FunctionSource:
    """Everything known about one user function, read once per function."""

    func: types.FunctionType
    tree: gast.FunctionDef  # decorators removed; line numbers are the file's
    filename: str
    firstlineno: int  # line of the ``def`` (or ``lambda``) in ``filename``
    globals: dict[str, Any]
    closure: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.tree.name

    def line(self, lineno: int) -> str:
        """The user's source line ``lineno`` (stripped), for comments and errors."""
        return linecache.getline(self.filename, lineno).strip()

    @property
    def location(self) -> str:
        """Human-readable place of the definition: a file or a notebook cell."""
        return describe_file(self.filename)


def display_name(func: Any) -> str:
    """``Model.apply`` for a method, ``inner`` for a nested function (no ``<locals>``)."""
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    return qualname.rsplit("<locals>.", 1)[-1]


def describe_file(filename: str) -> str:
    """Name a source file the way a user recognises it (notebook cells included)."""
    # Jupyter names cell files by a hash of their text in a per-kernel folder, the IPython
    # terminal by execution count. The description leaves both out so that it, the
    # generated source and with them the disk cache stay the same across restarts.
    if "/ipykernel_" in filename:
        return "a notebook cell"
    if filename.startswith("<ipython-input-"):
        return "an IPython cell"
    return filename


def read_function(func: Any, transformation: str = "jit") -> FunctionSource:
    """Parse ``func``'s source, or raise :class:`TransformError` saying why it can't be read."""
    name = display_name(func)
    if hasattr(func, "nested_dispatcher"):  # jit(f): f's source (jit adds no code)
        func = func.fun
    if hasattr(func, "__numbax_function__"):  # grad(f), jacfwd(f)...: their generated code
        func = func.__numbax_function__()
    if is_numpy_function(func):
        func = numpy_wrapper(func)
    func = getattr(func, "py_func", func)  # a Numba-compiled function: its Python source
    if not isinstance(func, types.FunctionType):
        raise TransformError(
            f"the source of {name!r} cannot be read: it is a {type(func).__name__}, not a "
            "Python function defined with def or lambda. Builtin and C functions can only be "
            "transformed if numbax has a rule for them (register one with custom_jvp / "
            "custom_vjp), and other callables must be wrapped in a Python function.",
            function=name,
            transformation=transformation,
        )
    code = func.__code__
    try:
        lines, start = inspect.findsource(code)
    except (OSError, TypeError) as err:
        raise TransformError(
            f"the source of {name!r} cannot be read (it was probably created by exec or "
            "eval, or its file is gone): define it in a file or a notebook cell.",
            function=name,
            transformation=transformation,
            filename=code.co_filename,
        ) from err
    block = inspect.getblock(lines[start:])
    tree = _parse_definition(func, block, start + 1, transformation)
    closure = {}
    if func.__closure__:
        for var, cell in zip(code.co_freevars, func.__closure__, strict=True):
            with contextlib.suppress(ValueError):  # an empty cell: not assigned yet
                closure[var] = cell.cell_contents
    return FunctionSource(
        func=func,
        tree=tree,
        filename=code.co_filename,
        firstlineno=tree.lineno,
        globals=func.__globals__,
        closure=closure,
    )


def _parse_definition(
    func: types.FunctionType, block: list[str], first: int, transformation: str
) -> gast.FunctionDef:
    text = textwrap.dedent("".join(block))
    try:
        module = ast.parse(text)
    except SyntaxError:
        if func.__name__ != "<lambda>":
            raise
        # A lambda inside a larger expression (a dict entry, a call spanning lines):
        # the lines around it are not a statement of their own.
        module = _parse_lambdas(text)
    ast.increment_lineno(module, first - 1)
    node = _find_definition(module, func)
    if node is None:
        raise TransformError(
            f"could not locate the definition of {display_name(func)!r} in its source",
            function=display_name(func),
            transformation=transformation,
            filename=func.__code__.co_filename,
            lineno=first,
        )
    if isinstance(node, ast.Lambda):
        node = _lambda_to_def(node, func)
    node.decorator_list = []
    fn = gast.ast_to_gast(ast.Module(body=[node], type_ignores=[])).body[0]
    return fn


def _parse_lambdas(text: str) -> ast.Module:
    """Every lambda expression in ``text``, each parsed from its own ``lambda`` keyword
    to the longest end that parses, with line numbers relative to ``text``."""
    lambdas = []
    for match in re.finditer(r"\blambda\b", text):
        start = match.start()
        line_offset = text.count("\n", 0, start)
        tail = text[start:]
        # A lambda ends where its enclosing construct goes on: try those places, longest
        # first (`lambda x: a, b` parses as a tuple, so shorter ends are tried too).
        ends = [len(tail)] + [m.start() for m in re.finditer(r"[,)\]}\n#;]", tail)][::-1]
        for end in ends:
            try:
                expression = ast.parse(tail[:end], mode="eval").body
            except SyntaxError:
                continue
            if isinstance(expression, ast.Lambda):
                ast.increment_lineno(expression, line_offset)
                lambdas.append(ast.Expr(expression, lineno=expression.lineno, col_offset=0))
                break
    return ast.Module(body=lambdas, type_ignores=[])


def _find_definition(module: ast.Module, func: types.FunctionType) -> ast.AST | None:
    """The def or lambda node whose line and parameters match ``func``'s code object."""
    code = func.__code__
    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    is_lambda = func.__name__ == "<lambda>"
    candidates = []
    for node in ast.walk(module):
        if is_lambda and isinstance(node, ast.Lambda):
            candidates.append(node)
        elif not is_lambda and isinstance(node, ast.FunctionDef) and node.name == func.__name__:
            candidates.append(node)
    for node in candidates:
        args = node.args
        names = tuple(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)
        if names != params:
            continue
        first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else None
        if code.co_firstlineno in (node.lineno, first):
            return node
    return candidates[0] if len(candidates) == 1 else None


def _lambda_to_def(node: ast.Lambda, func: types.FunctionType) -> ast.FunctionDef:
    ret = ast.Return(value=node.body)
    ast.copy_location(ret, node.body)
    fn = ast.FunctionDef(
        name="_lambda",
        args=node.args,
        body=[ret],
        decorator_list=[],
        returns=None,
        type_comment=None,
        type_params=[],
    )
    return ast.copy_location(fn, node)
