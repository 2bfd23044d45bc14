"""Reject, before any rewriting, every construct the core language cannot express.

All of ``normalize``'s refusals go through :func:`unsupported`, so each message has the
same shape: the construct, the user's line, and what to write instead; the
:class:`~numbax.errors.TransformError` adds the transformation, function and file.
Checking everything up front means a function is either transformed completely or
refused at its first unsupported line, never half-rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator

import gast
import numpy as np

from numbax.errors import TransformError
from numbax.transform.resolve import Resolver
from numbax.transform.source import FunctionSource

_MOVE_OUT = "move it out of the transformed function (into its caller)"
# node type -> (construct, what to do instead)
_REJECTED: dict[type, tuple[str, str]] = {
    gast.Try: ("a try statement", f"exception handling cannot be transformed: {_MOVE_OUT}"),
    gast.TryStar: ("a try/except* statement", _MOVE_OUT),
    gast.With: ("a with statement", _MOVE_OUT),
    gast.AsyncWith: ("an async with statement", _MOVE_OUT),
    gast.AsyncFor: ("an async for loop", "use a plain for loop"),
    gast.Await: ("await", "transform a synchronous function"),
    gast.Yield: ("yield (a generator)", "collect the values in a list and return it"),
    gast.YieldFrom: ("yield from (a generator)", "collect the values in a list and return it"),
    gast.Global: (
        "a global statement",
        "pass the value in as an argument and return the new value",
    ),
    gast.Nonlocal: (
        "a nonlocal statement",
        "pass the value in as an argument and return the new value",
    ),
    gast.ClassDef: ("a class definition", "define the class at module level"),
    gast.Delete: ("a del statement", "drop the del, or rebind the name to a new value"),
    gast.Import: ("an import inside the function", "import at module level"),
    gast.ImportFrom: ("an import inside the function", "import at module level"),
    gast.Match: ("a match statement", "use if/elif/else"),
    gast.TypeAlias: ("a type alias statement", "define it at module level"),
    gast.Starred: (
        "a starred expression (*x)",
        "pass or unpack the items one by one (index the sequence: x[0], x[1], ...)",
    ),
    gast.GeneratorExp: (
        "a generator expression",
        "use a list comprehension [... for ...] instead",
    ),
    gast.SetComp: ("a set comprehension", "build a list, or compute the set outside"),
    gast.Set: ("a set display {a, b}", "use a list or a tuple"),
    gast.JoinedStr: (
        "an f-string",
        "Numba cannot compile f-strings; build the text with str() and +, or pass the "
        "values as separate arguments (print('x =', x))",
    ),
}

_ATTRIBUTE_STORE = (
    "an assignment to an attribute (obj.attr = ...)",
    "transformed functions must not change objects they were given: return the new value instead",
)
_DOUBLE_STAR = ("a **mapping argument in a call", "pass the keyword arguments one by one")
_BARE_RAISE = ("a bare raise", "raise a specific exception, e.g. raise ValueError('...')")
_RAISE_FROM = ("raise ... from ...", "drop the from clause")
_MATRIX_ADVICE = (
    "numbax computes with arrays, whose * is elementwise: make an array (np.array(...), "
    "np.asarray(m)) and write a @ b for the matrix product"
)
_MATRIX_MAKERS = (np.matrix, np.asmatrix, np.bmat)
_VARIADIC = ("*args/**kwargs parameters", "list the parameters one by one")
_ASYNC = ("an async def", "transform a synchronous function")


def unsupported(
    source: FunctionSource,
    transformation: str,
    lineno: int | None,
    construct: str,
    advice: str,
) -> TransformError:
    """The one shape of every refusal: construct, user line, what to do instead."""
    where = f" (line {lineno}: `{source.line(lineno)}`)" if lineno else ""
    return TransformError(
        f"{construct} is not supported{where}; {advice}",
        function=getattr(source.func, "__qualname__", source.name),
        transformation=transformation,
        filename=source.filename,
        lineno=lineno,
        construct=construct,
    )


def reject_unsupported(
    source: FunctionSource, transformation: str, fn: gast.FunctionDef | None = None
) -> None:
    """Raise :class:`TransformError` for the first construct the core language lacks in
    ``fn`` (by default ``source``'s tree; normalize gives it with its nested functions
    lifted out, see nested.py)."""
    fn = source.tree if fn is None else fn
    if isinstance(fn, gast.AsyncFunctionDef):
        raise unsupported(source, transformation, fn.lineno, *_ASYNC)
    if fn.args.vararg is not None or fn.args.kwarg is not None:
        raise unsupported(source, transformation, fn.lineno, *_VARIADIC)
    for stmt in fn.body:
        for node, line in _walk(stmt, stmt.lineno):
            problem = _problem(node)
            if problem is not None:
                raise unsupported(source, transformation, line, *problem)


def reject_matrices(
    source: FunctionSource, transformation: str, fn: gast.FunctionDef, resolver: Resolver
) -> None:
    """Raise :class:`TransformError` at the first call that makes a ``numpy.matrix``:
    its operators are not an array's (``*`` multiplies matrices), which neither the
    rules nor Numba follow."""
    for stmt in fn.body:
        for node, line in _walk(stmt, stmt.lineno):
            maker = resolver.resolve(node.func) if isinstance(node, gast.Call) else None
            if any(maker is known for known in _MATRIX_MAKERS):
                what = f"numpy.{maker.__name__} (a numpy.matrix, whose * is a matrix product)"
                raise unsupported(source, transformation, line, what, _MATRIX_ADVICE)


def _problem(node: gast.AST) -> tuple[str, str] | None:
    if type(node) in _REJECTED:
        return _REJECTED[type(node)]
    if isinstance(node, gast.Attribute) and isinstance(node.ctx, (gast.Store, gast.Del)):
        return _ATTRIBUTE_STORE
    if isinstance(node, gast.keyword) and node.arg is None:
        return _DOUBLE_STAR
    if isinstance(node, gast.Dict) and any(key is None for key in node.keys):
        return _DOUBLE_STAR
    if isinstance(node, gast.Raise):
        if node.exc is None:
            return _BARE_RAISE
        if node.cause is not None:
            return _RAISE_FROM
    return None


def _walk(node: gast.AST, line: int) -> Iterator[tuple[gast.AST, int]]:
    """Every node under ``node`` with the nearest line number at or above it."""
    line = getattr(node, "lineno", None) or line
    yield node, line
    for child in gast.iter_child_nodes(node):
        yield from _walk(child, line)
