"""Read a Python function's source into a gast tree that every transformation starts from.

numbax never traces: it rewrites source. So the first step for any function is to find
its text (in a module file, a Jupyter/IPython cell, or a nested/lambda definition), make
sure that text is what the running code was compiled from, take the definition out of it
(line numbers stay the user's real file lines; decorators are dropped, since the object
we were given is the undecorated function), and capture what its names refer to
(globals, closure cells, default values).
"""

from __future__ import annotations
import __future__

import ast
import builtins
import contextlib
import copy
import dataclasses
import functools
import inspect
import linecache
import operator
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gast

from numbax.errors import TransformError
from numbax.transform.nodes import clone

_UNDEFINED = object()


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

    def default_bindings(self) -> dict[str, Any]:
        """The names the signature's defaults read (:func:`bind_defaults`) with their
        values: what a module made of this tree must bind before its ``def`` runs."""
        return {
            name: self.closure[name] for name in default_names(self.tree) if name in self.closure
        }

    def line(self, lineno: int) -> str:
        """The user's source line ``lineno`` (stripped), for comments and errors."""
        return linecache.getline(self.filename, lineno).strip()

    @property
    def location(self) -> str:
        """Human-readable place of the definition: a file or a notebook cell."""
        return describe_file(self.filename)

    def live(self, name: str) -> Any:
        """What the free name ``name`` denotes in the running function *now*: its closure
        cell, else its global, else the builtin (``KeyError`` when none is defined).

        ``closure`` and ``globals`` are what the transformation saw; generated code
        that runs eagerly reads this instead, as the function itself would."""
        code = self.func.__code__
        if name in code.co_freevars and self.func.__closure__:
            cell = self.func.__closure__[code.co_freevars.index(name)]
            try:
                return cell.cell_contents
            except ValueError:  # not assigned yet
                raise KeyError(name) from None
        try:
            return self.globals[name]
        except KeyError:
            builtin = getattr(builtins, name, _UNDEFINED)
            if builtin is _UNDEFINED:
                raise
            return builtin


class LiveNamespace(dict):
    """The globals of a generated function that runs eagerly (or of a function numbax
    derived from the user's: see :func:`function_from_tree`): its own bindings (NumPy,
    numbax's runtime, derivative functions) are held, and every other name is read
    through ``read`` when the code runs — the user's globals and closure cells as they
    are at that moment, as the user's own function would read them.

    CPython looks globals up through ``__getitem__`` (hence ``__missing__``) when they are
    not an exact dict; ``__contains__`` and ``get`` agree with it, so that a later
    transformation reading this function resolves the same names."""

    def __init__(self, bindings: dict[str, Any], read: Callable[[str], Any]) -> None:
        super().__init__(bindings)
        self._read = read

    def __missing__(self, name: str) -> Any:
        return self._read(name)

    def __contains__(self, name: object) -> bool:
        if dict.__contains__(self, name):
            return True
        try:
            self._read(name)
        except KeyError:
            return False
        return True

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


def display_name(func: Any) -> str:
    """``Model.apply`` for a method, ``inner`` for a nested function (no ``<locals>``)."""
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    return qualname.rsplit("<locals>.", 1)[-1]


def refuse_variadic(
    func: Any, transformation: str, keyword_only: bool = False, star_args: bool = False
) -> None:
    """Raise :class:`TransformError` when ``func`` takes ``**kwargs`` (and, with
    ``star_args``, ``*args``; with ``keyword_only``, keyword-only parameters, where
    numbax cannot pass them by position: custom rules, as JAX's): numbax
    generates code for named parameters, and cannot name what ``**kwargs`` holds.
    (``*args`` is otherwise named per call: see :mod:`numbax.codegen.variadic`.)"""
    target = inspect.unwrap(getattr(func, "fun", func))
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # no signature: what reads the source says why
        return
    refused = {inspect.Parameter.VAR_KEYWORD: "**kwargs"}
    if star_args:
        refused[inspect.Parameter.VAR_POSITIONAL] = "*args"
    if keyword_only:
        refused[inspect.Parameter.KEYWORD_ONLY] = "keyword-only parameters"
    found = list(dict.fromkeys(refused[p.kind] for p in params if p.kind in refused))
    if not found:
        return
    name = display_name(func)
    code = getattr(target, "__code__", None)
    if found == ["keyword-only parameters"]:
        advice = (
            f"{name!r} must take each parameter by position here (custom_jvp and "
            "custom_vjp take none, as in JAX; vmap and checkpoint take those of a Python "
            "function, not of a transformation of one): write `def f(x, scale=1.0)` "
            "instead of `def f(x, *, scale=1.0)`."
        )
    else:
        advice = (
            f"{name!r} must name each parameter it is given, since the generated code "
            "passes arguments by name. Write `def f(x, *, scale)` (or `def f(x, y)`), or "
            "take the values as one dict or tuple parameter and pass it: transformations "
            "treat it as a pytree."
        )
    raise TransformError(
        f"{' and '.join(found)} {'is' if found == ['**kwargs'] else 'are'} not supported by "
        f"numbax.{transformation}: {advice}",
        function=name,
        transformation=transformation,
        filename=getattr(code, "co_filename", None),
        lineno=getattr(code, "co_firstlineno", None),
        construct=found[0],
    )


_expanded: weakref.WeakKeyDictionary[types.FunctionType, FunctionSource] = (
    weakref.WeakKeyDictionary()
)


def bind_in_closure(source: FunctionSource, value: Any, name: str, taken: set[str]) -> str:
    """A name under which the transformed code of ``source`` reads ``value``: ``name``,
    or ``name_2``, ``name_3``... when ``name`` already means something else (a global,
    a closure value, or one of the function's ``taken`` local names). The value is put in
    ``source``'s closure, which generated code reads like the function's own."""
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    chosen, count = base, 1
    while True:
        bound = source.closure.get(chosen, source.globals.get(chosen))
        if bound is value or (bound is None and chosen not in taken):
            break
        count += 1
        chosen = f"{base}_{count}"
    source.closure[chosen] = value
    return chosen


def register_source(func: types.FunctionType, source: FunctionSource) -> None:
    """Make ``source`` what :func:`read_function` reads for the generated ``func``: a
    user function rewritten in place (``*args`` named), whose lines stay the user's."""
    _expanded[func] = source


def function_from_tree(
    tree: gast.FunctionDef,
    like: FunctionSource,
    namespace: LiveNamespace,
    qualname: str,
    defaults: tuple | None = None,
    kwdefaults: dict[str, Any] | None = None,
) -> types.FunctionType:
    """A Python function compiled from ``tree`` (whose lines are those of ``like``'s
    file), with ``namespace`` for globals, registered so that transformations read
    ``tree`` as its source: a function numbax derived from the user's (a nested def
    lifted out, a method with its object bound)."""
    bare = clone(tree)  # defaults are values of the function, not of its code
    bare.args.defaults = []
    bare.args.kw_defaults = [None] * len(bare.args.kwonlyargs)
    module = ast.fix_missing_locations(gast.gast_to_ast(gast.Module([bare], [])))
    code = compile(module, like.filename, "exec", dont_inherit=True)
    body = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    function = types.FunctionType(body, namespace, tree.name, defaults or None)
    function.__kwdefaults__ = kwdefaults or None
    function.__qualname__ = qualname
    function.__module__ = getattr(like.func, "__module__", None)
    source = FunctionSource(
        func=function,
        tree=copy.copy(tree),  # its signature is rewritten, the caller's tree is not
        filename=like.filename,
        firstlineno=tree.lineno,
        globals=namespace,
    )
    bind_defaults(source)
    register_source(function, source)
    return function


def derived_tree(func: Any) -> gast.FunctionDef | None:
    """The source tree numbax registered for a function it derived from the user's (a
    nested def lifted out, a method with its object bound: :func:`function_from_tree`),
    whose text is not the user's definition; None for any other function."""
    expanded = _expanded.get(func) if isinstance(func, types.FunctionType) else None
    return None if expanded is None else clone(expanded.tree)


_stand_ins: list[Callable[[Any], types.FunctionType | None]] = []


def register_stand_in(stand_in: Callable[[Any], types.FunctionType | None]) -> None:
    """Let a layer above supply the function :func:`read_function` reads for a callable
    without Python source of its own: ``stand_in(func)`` returns that function, or None
    for a callable it does not know (``numbax.codegen.numpy_functions``: a NumPy
    function is read as a generated one-line wrapper that calls it)."""
    _stand_ins.append(stand_in)


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
    """Parse ``func``'s source, or raise :class:`TransformError` saying why it can't be read.

    The text is the one that produced ``func.__code__``: the file is compiled again and
    its code objects compared with the running one, so two lambdas on one line are told
    apart by their columns, and a file edited since it was imported is refused instead
    of being transformed in place of the code that runs."""
    name = display_name(func)
    if hasattr(func, "nested_dispatcher"):  # jit(f): f's source (jit adds no code)
        func = func.fun
    if hasattr(func, "__numbax_function__"):  # grad(f), jacfwd(f)...: their generated code
        func = func.__numbax_function__()
    for stand_in in _stand_ins:
        replacement = stand_in(func)
        if replacement is not None:
            func = replacement
            break
    func = getattr(func, "py_func", func)  # a Numba-compiled function: its Python source
    expanded = _expanded.get(func) if isinstance(func, types.FunctionType) else None
    if expanded is not None:
        return dataclasses.replace(expanded, tree=clone(expanded.tree))
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
    if code.co_flags & _ASYNC_FLAGS:
        raise TransformError(
            f"async functions are not supported by numbax.{transformation}: {name!r} is an "
            "async def (a coroutine). Transform a plain def that computes the value, and "
            "await around it.",
            function=name,
            transformation=transformation,
            filename=code.co_filename,
            lineno=code.co_firstlineno,
            construct="an async def",
        )
    lines = _file_lines(func)
    if not lines:
        raise TransformError(
            f"the source of {name!r} cannot be read (it was probably created by exec or "
            "eval, or its file is gone): define it in a file or a notebook cell.",
            function=name,
            transformation=transformation,
            filename=code.co_filename,
        )
    tree = _definition(func, lines, transformation)
    closure = {}
    if func.__closure__:
        for var, cell in zip(code.co_freevars, func.__closure__, strict=True):
            with contextlib.suppress(ValueError):  # an empty cell: not assigned yet
                closure[var] = cell.cell_contents
    source = FunctionSource(
        func=func,
        tree=tree,
        filename=code.co_filename,
        firstlineno=tree.lineno,
        globals=func.__globals__,
        closure=closure,
    )
    bind_defaults(source)
    return source


_PLAIN = (bool, int, float, complex, str, bytes, type(None))
_SPELLED_OUT = 60
"""The longest default value written into generated text; a longer one is named."""


def bind_defaults(source: FunctionSource) -> None:
    """Make the defaults in ``source.tree``'s signature the values ``source.func``
    holds (``__defaults__``, ``__kwdefaults__``), not the expressions its ``def`` wrote.

    A default is a value, computed once where the user's ``def`` (or ``lambda``) ran:
    ``lambda x, k=k: x * k`` made in a loop holds each turn's ``k``, and ``def f(x,
    scale=SCALE)`` holds what ``SCALE`` was then. A module generated from the tree runs
    its ``def`` elsewhere, where those names mean nothing (or something else), so each
    default is written as:

    * the user's own expression, when it is a literal (``ast.literal_eval``) whose
      value the function holds still: ``scale=2.0``, ``axes=(0, 1)``, as before;
    * else the value itself, when it is a plain number, string, bytes, bool, None, or a
      tuple of those, whose ``repr`` reads back as it (so not ``nan``), and short: ``k=k``
      holding 2.0 is written ``k=2.0``. A reader sees the value the function uses (the
      ``def`` line's comment shows the user's ``k=k``); the text, hence the cache key,
      holds the value, so two lambdas of one loop never share a module;
    * else a name, ``_default_<parameter>``, bound to the very object in the closure
      (an array, a NumPy scalar, a list, a function, ``inf``): ``k=_default_k`` reads
      as a default, and the object keeps its identity (an array the user updates in
      place is seen updated, as Python would). Generated modules bind it like any
      value numbax binds (``free_bindings``), and their cache key describes it
      (``fingerprint``: arrays by content).

    Done here, where every function is read (the user's, one numbax derived from it,
    or one it generated, read again by the next transformation), so that no
    transformation needs to know."""
    func, tree = source.func, source.tree
    args = tree.args = copy.copy(tree.args)
    positional = [*args.posonlyargs, *args.args]
    values = tuple(func.__defaults__ or ())[-len(positional) :] if positional else ()
    written = dict(
        zip(_ids(positional[len(positional) - len(args.defaults) :]), args.defaults, strict=True)
    )
    with_default = positional[len(positional) - len(values) :]
    args.defaults = [
        _default(source, param.id, written.get(param.id), value)
        for param, value in zip(with_default, values, strict=True)
    ]
    kwvalues = func.__kwdefaults__ or {}
    args.kw_defaults = [
        _default(source, param.id, old, kwvalues[param.id]) if param.id in kwvalues else None
        for param, old in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]


def default_names(tree: gast.FunctionDef) -> set[str]:
    """The names the defaults in ``tree``'s signature read: a module runs them when its
    ``def`` does, so it must bind them itself (they are never read live)."""
    args = tree.args
    return {
        node.id
        for default in [*args.defaults, *args.kw_defaults]
        if default is not None
        for node in gast.walk(default)
        if isinstance(node, gast.Name)
    }


def _ids(params: list[gast.Name]) -> list[str]:
    return [param.id for param in params]


def _default(
    source: FunctionSource, param: str, written: gast.expr | None, value: Any
) -> gast.expr:
    """The expression a generated signature gives ``param`` for its default ``value``
    (``written``: the user's expression, if any): see :func:`bind_defaults`."""
    if written is not None and _holds(written, value):
        return written
    where = written if written is not None else source.tree
    if _spellable(value):
        node = gast.ast_to_gast(ast.parse(repr(value), mode="eval")).body
    else:
        taken = {n.id for n in gast.walk(source.tree) if isinstance(n, gast.Name)}
        node = gast.Name(
            bind_in_closure(source, value, f"_default_{param}", taken), gast.Load(), None, None
        )
    for part in gast.walk(node):
        gast.copy_location(part, where)
    return node


def _literal(text: str | ast.expr) -> Any:
    """The value of the literal ``text`` (or node), or ``_UNDEFINED`` when it is none."""
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNDEFINED


def _holds(written: gast.expr, value: Any) -> bool:
    """Whether ``written`` is a literal whose value is ``value`` (same type and repr)."""
    literal = _literal(gast.gast_to_ast(clone(written)))
    return (
        literal is not _UNDEFINED and type(literal) is type(value) and repr(literal) == repr(value)
    )


def _spellable(value: Any) -> bool:
    """Whether ``value`` is written into generated text as itself (:func:`bind_defaults`)."""
    if not _plain(value):
        return False
    text = repr(value)
    literal = _literal(text)
    return len(text) <= _SPELLED_OUT and type(literal) is type(value) and repr(literal) == text


def _plain(value: Any) -> bool:
    if type(value) is tuple:
        return all(_plain(item) for item in value)
    return type(value) in _PLAIN


_ASYNC_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_FUTURE_FLAGS = functools.reduce(
    operator.or_, (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names)
)


def _file_lines(func: types.FunctionType) -> list[str]:
    """The current lines of the file (or notebook cell) ``func`` was compiled from:
    ``linecache``'s list, the same object until the file changes."""
    filename = func.__code__.co_filename
    if not (filename.startswith("<") and filename.endswith(">")):
        linecache.checkcache(filename)  # the file as it is now, not as first read
    return linecache.getlines(filename, func.__globals__)


_DEFINITIONS_KEPT = 2048
_definitions_read: dict[tuple[str, types.CodeType], tuple[list[str], gast.FunctionDef]] = {}
"""The definitions read so far, by file and code object, with the lines they were read
from. A function is read again by every transformation of it and every composition,
and finding its definition compiles and searches its whole file; while ``linecache``
holds the same lines (the file is unchanged), a copy of the tree read before serves."""


def _definition(
    func: types.FunctionType, lines: list[str], transformation: str
) -> gast.FunctionDef:
    """``func``'s definition in ``lines`` (the caller's to edit)."""
    key = (func.__code__.co_filename, func.__code__)
    known = _definitions_read.get(key)
    if known is not None and known[0] is lines:
        return clone(known[1])
    tree = _parse_definition(func, "".join(lines), transformation)
    if len(_definitions_read) >= _DEFINITIONS_KEPT:
        del _definitions_read[next(iter(_definitions_read))]  # the oldest
    _definitions_read[key] = (lines, clone(tree))
    return tree


def _parse_definition(func: types.FunctionType, text: str, transformation: str) -> gast.FunctionDef:
    code = func.__code__
    name = display_name(func)
    # A test module pytest rewrote (its own namespace: not a name a generated one reads).
    pytest_rewritten = dict.__contains__(func.__globals__, "@py_builtins")
    module, compiled = _compile(
        code.co_filename, text, code.co_flags & _FUTURE_FLAGS, pytest_rewritten
    )
    if compiled is None or not any(c == code for c in _code_objects(compiled, code)):
        raise TransformError(
            f"the source of {name!r} in {describe_file(code.co_filename)} changed since it "
            "was imported: the function that runs is not the one the file defines now, so "
            "numbax cannot read its source. Reload its module (importlib.reload(module)) or "
            "restart Python, then transform it again.",
            function=name,
            transformation=transformation,
            filename=code.co_filename,
            lineno=code.co_firstlineno,
        )
    node = _find_definition(module, code)
    if node is None:
        raise TransformError(
            f"could not locate the definition of {name!r} in its source",
            function=name,
            transformation=transformation,
            filename=code.co_filename,
            lineno=code.co_firstlineno,
        )
    node = _detached(node)
    if isinstance(node, ast.Lambda):
        node = _lambda_to_def(node)
    node.decorator_list = []
    _drop_signature_annotations(node)
    return gast.ast_to_gast(ast.Module(body=[node], type_ignores=[])).body[0]


def _detached(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> ast.AST:
    """A copy of ``node`` whose parts this module edits (its decorators, the annotations
    of its signature) are its own: the parsed module is cached, and must stay as it was.
    The rest is shared: converting to gast makes a new tree without changing it."""
    node = copy.copy(node)
    args = node.args = copy.copy(node.args)
    for kind in ("posonlyargs", "args", "kwonlyargs"):
        setattr(args, kind, [copy.copy(arg) for arg in getattr(args, kind)])
    for kind in ("vararg", "kwarg"):
        if getattr(args, kind) is not None:
            setattr(args, kind, copy.copy(getattr(args, kind)))
    return node


def _drop_signature_annotations(node: ast.FunctionDef) -> None:
    """Remove the parameters' and the result's annotations: the generated module binds
    only what the body reads, so ``x: Any`` would name a type it cannot see."""
    args = node.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            arg.annotation = None
    node.returns = None


@functools.lru_cache(maxsize=16)
def _compile(
    filename: str, text: str, flags: int, pytest_rewritten: bool
) -> tuple[ast.Module | None, types.CodeType | None]:
    """The file's syntax tree and its code, compiled as Python compiled it on import."""
    try:
        module = ast.parse(text, filename)
        if not pytest_rewritten:
            return module, compile(module, filename, "exec", flags=flags, dont_inherit=True)
        from _pytest.assertion.rewrite import rewrite_asserts

        rewritten = ast.parse(text, filename)
        rewrite_asserts(rewritten, text.encode(), filename)
        return module, compile(rewritten, filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):  # edited into text that does not compile
        return None, None


def _code_objects(code: types.CodeType, like: types.CodeType) -> list[types.CodeType]:
    """The code objects nested in ``code`` with ``like``'s name and first line."""
    found = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == like.co_name and const.co_firstlineno == like.co_firstlineno:
                found.append(const)
            found += _code_objects(const, like)
    return found


def _find_definition(module: ast.Module, code: types.CodeType) -> ast.AST | None:
    """The def or lambda node that compiles to ``code`` (whose text is known to match):
    the one on its first line whose extent holds every instruction's position."""
    candidates = _definitions(module).get((code.co_name, code.co_firstlineno), [])
    positions = [
        (line, col, end_line, end_col)
        for line, end_line, col, end_col in code.co_positions()
        if None not in (line, col, end_line, end_col) and (line, col) != (end_line, end_col)
    ]

    def holds(node: ast.AST) -> bool:
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        return all(start <= (a, b) and (c, d) <= end for a, b, c, d in positions)

    held = [node for node in candidates if holds(node)]
    if not held:
        return None
    return min(held, key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset))


@functools.lru_cache(maxsize=16)  # as many as _compile keeps
def _definitions(module: ast.Module) -> dict[tuple[str, int], list[ast.AST]]:
    """The defs and lambdas of a parsed module by the name and first line of the code
    each compiles to (a decorated def's code starts at its first decorator), each list
    in ``ast.walk``'s order: one walk per file, however many of its functions are read."""
    found: dict[tuple[str, int], list[ast.AST]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Lambda):
            key = ("<lambda>", node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            key = (node.name, first)
        else:
            continue
        found.setdefault(key, []).append(node)
    return found


def _lambda_to_def(node: ast.Lambda) -> ast.FunctionDef:
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
