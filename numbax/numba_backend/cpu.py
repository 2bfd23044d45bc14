"""Compile generated source with ``numba.njit``, and explain Numba's failures in user terms.

The pipeline for one specialization: normalize the user's function, bake static
arguments, lower for Numba, emit readable source, load it as a module from the cache
directory, and wrap the function with ``numba.njit(cache=True)`` so a later process
loads the machine code from disk instead of compiling again.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import types
from dataclasses import dataclass
from typing import Any, NoReturn

import gast
import numba
import numpy as np
from numba.core import errors as numba_errors

from numbax import tree_util
from numbax.codegen.cache import cache_key
from numbax.codegen.emit import EmittedSource, emit_function, emit_module
from numbax.codegen.load import load_module, module_name
from numbax.errors import CompileError
from numbax.numba_backend.boundary import python_result
from numbax.numba_backend.fuse import fuse_elementwise
from numbax.numba_backend.lower import RECURSIVE, lower_for_numba
from numbax.numba_backend.startup import preload_blas_bindings
from numbax.transform.names import Namer
from numbax.transform.normalize import normalize
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import FunctionSource, display_name, read_function
from numbax.transform.specialize import bake_static_arguments

preload_blas_bindings()

NUMBA_OPTIONS = frozenset(
    ["fastmath", "parallel", "boundscheck", "error_model", "nogil", "cache", "inline"]
)
"""Options passed through to ``numba.njit``."""

DEFAULT_NUMBA_OPTIONS = {"error_model": "numpy"}
"""What numbax compiles with unless the user says otherwise: NumPy's floating-point
rules (``1.0 / 0.0`` is ``inf``, ``0.0 / 0.0`` is ``nan``, an integer division by zero is
0 as NumPy's arrays give), not Numba's default ``error_model="python"``, which raises
``ZeroDivisionError`` where NumPy returns ``inf`` (the derivative of ``sqrt`` at 0).
Numba passes the error model on to the overloads and functions the code calls."""

NUMBA_ERRORS = (
    numba_errors.TypingError,
    numba_errors.UnsupportedError,
    numba_errors.LoweringError,
    numba_errors.NotDefinedError,  # a variable read above its first assignment
)


@dataclass
class Compiled:
    """One compiled specialization: the Numba dispatcher and where it came from."""

    dispatcher: Any
    python_function: types.FunctionType
    source: FunctionSource
    emitted: EmittedSource
    path: str

    @property
    def text(self) -> str:
        return self.emitted.text

    def __call__(self, *args: Any) -> Any:
        try:
            return python_result(self.dispatcher(*args))
        except CALL_ERRORS as err:
            explain_failure(err, self, args)


CALL_ERRORS = (*NUMBA_ERRORS, NotImplementedError)
"""What a call of compiled code raises that :func:`explain_failure` explains."""


def explain_failure(err: Exception, compiled: Compiled, args: tuple) -> NoReturn:
    """Raise what a failed call means to the user: a :class:`CompileError` naming the
    function and line for Numba's errors, and for a float16 argument (Numba types float16
    but cannot compile it on the CPU, and says only ``NotImplementedError: float16``, or
    finds no implementation); any other ``NotImplementedError`` (one the user's code
    raises) is raised again as it is."""
    names = list(inspect.signature(compiled.python_function).parameters)
    for index, arg in enumerate(args):
        if any(np.asarray(leaf).dtype == np.float16 for leaf in tree_util.tree_leaves(arg)):
            name = names[index] if index < len(names) else f"#{index}"
            raise CompileError(
                f"argument {name!r} holds float16 values, which Numba does not compile on "
                "the CPU. Cast it to float32 (x.astype(np.float32)) before the call, or call "
                "the function without jit.",
                function=display_name(compiled.source.func),
                transformation="jit",
                filename=compiled.source.filename,
                lineno=compiled.source.firstlineno,
                construct="float16",
            ) from err
    if isinstance(err, NUMBA_ERRORS):
        raise translate_numba_error(err, compiled) from err
    raise err


def compile_function(
    source: FunctionSource,
    statics: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    transformation: str = "jit",
    weak_params: frozenset[str] | None = None,
) -> Compiled:
    """Generate, load and wrap one specialization of ``source`` (compiled lazily by Numba).

    ``weak_params``: the parameters given Python scalars, which NumPy 2 promotion treats
    as weakly typed (None: any parameter may be one).
    """
    options = dict(options or {})
    fn = normalize(source, transformation)
    fn, static_bindings = bake_static_arguments(fn, statics or {})
    resolver = Resolver(source, local_names(fn))  # temporaries are locals too
    fn, kernels = fuse_elementwise(fn, resolver, Namer.for_function(fn))
    fn, runtime_bindings = lower_for_numba(
        fn, resolver, lambda f: compile_helper(f, _helper_options(options)), kernels, weak_params
    )
    header = _header(source, transformation, statics, weak_params)
    emitted = emit_module(
        [emit_function(k, source.line, _kernel_header(k)) for k in kernels]
        + [emit_function(fn, describe_line=source.line)],
        preamble=_comment(header),
    )
    namespace = {**_free_bindings([fn, *kernels], resolver), **static_bindings, **runtime_bindings}
    key = cache_key(emitted.text, _fingerprint(namespace), sorted(options.items()))
    module = load_module(module_name(source.name, key), emitted.text, namespace)
    python_function = getattr(module, fn.name)
    python_function = getattr(python_function, "py_func", python_function)  # see below
    python_function.__defaults__ = _remaining_defaults(source.func, fn)
    python_function.__kwdefaults__ = source.func.__kwdefaults__
    typed_per_call = typed_per_process(namespace.values())
    njit_options = {"cache": not typed_per_call, **DEFAULT_NUMBA_OPTIONS, **options}
    dispatcher = numba.njit(**njit_options)(python_function)
    if typed_per_call:
        dispatcher.__numbax_typed_per_process__ = True
    if runtime_bindings.get(fn.name) is RECURSIVE:  # it calls itself by its module name
        setattr(module, fn.name, dispatcher)
    return Compiled(dispatcher, python_function, source, emitted, module.__file__)


def typed_per_process(values: Any) -> bool:
    """Whether compiled code calling these values must not go to Numba's disk cache.

    A function Numba types per call (``vmap``'s, which generates its batched code for
    the arguments' ranks while Numba types the call) makes that code in the process
    that types it; a cached caller, loaded in a later process, would refer to a module
    that process has not made. So such callers, and theirs, are compiled per process
    (what they call is still cached)."""
    return any(getattr(v, "__numbax_typed_per_process__", False) for v in values)


_helpers: dict[tuple[Any, ...], Any] = {}
_compiling: set[tuple[Any, ...]] = set()


def compile_helper(func: Any, options: dict[str, Any]) -> Any:
    """The Numba dispatcher for a user function called from compiled code (cached)."""
    from numbax.api.jit import Jitted

    if hasattr(func, "__numbax_dispatcher__"):  # vmap's loop: compiled as generated
        return func.__numbax_dispatcher__(options)
    if hasattr(func, "__numbax_primal__"):  # custom_jvp, custom_vjp, checkpoint
        func = func.__numbax_primal__()
    if isinstance(func, Jitted):
        return func.nested_dispatcher()
    key = (func, tuple(sorted(options.items())))
    if key in _compiling:
        return RECURSIVE
    if key not in _helpers:
        _compiling.add(key)
        try:
            _helpers[key] = compile_function(read_function(func), options=options).dispatcher
        finally:
            _compiling.discard(key)
    return _helpers[key]


def _helper_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "inline"}


def _header(
    source: FunctionSource,
    transformation: str,
    statics: dict[str, Any] | None,
    weak_params: frozenset[str] | None,
) -> str:
    where = f"{source.location}, line {source.firstlineno}"
    text = f"{transformation} of {display_name(source.func)} ({where})"
    if statics:
        text += "\nstatic arguments: " + ", ".join(f"{k}={v!r}" for k, v in statics.items())
    if weak_params:
        text += "\nPython scalars (weakly typed, as in NumPy 2): " + ", ".join(sorted(weak_params))
    return text + "\ngenerated by numbax; edits to this file are overwritten"


def _kernel_header(kernel: gast.FunctionDef) -> str:
    text = "fused elementwise loop: runs once per element of its broadcast arguments"
    if any(isinstance(d, gast.Call) for d in kernel.decorator_list):
        text += "\nweak: those that may be Python scalars take the arrays' dtype (NumPy 2)"
    return text


def _comment(text: str) -> str:
    return "\n".join(f"# {line}" for line in text.splitlines())


def _free_bindings(fns: list[gast.FunctionDef], resolver: Resolver) -> dict[str, Any]:
    """The globals and closure values the generated functions refer to by name."""
    bound = {}
    for node in (n for fn in fns for n in gast.walk(fn)):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            value = resolver.lookup(node.id)
            if value is LOCAL or value is UNRESOLVED:
                continue
            if node.id in resolver.source.closure or node.id in resolver.source.globals:
                bound[node.id] = value
    return bound


def _remaining_defaults(func: types.FunctionType, fn: gast.FunctionDef) -> tuple | None:
    """The original default values of the parameters the generated function still has."""
    defaults = func.__defaults__ or ()
    code = func.__code__
    positional = code.co_varnames[: code.co_argcount]
    by_name = dict(zip(positional[len(positional) - len(defaults) :], defaults, strict=True))
    kept = [p.id for p in fn.args.args]
    remaining = tuple(by_name[name] for name in kept if name in by_name)
    return remaining or None


def _fingerprint(namespace: dict[str, Any]) -> list[tuple[str, str]]:
    """What the compiled code depends on besides its text: bound values that Numba
    freezes as constants (arrays by content), so a changed global never reuses stale
    machine code from the disk cache."""
    prints = []
    for name, value in sorted(namespace.items()):
        if isinstance(value, np.ndarray):
            digest = hashlib.sha1(np.ascontiguousarray(value).view(np.uint8)).hexdigest()
            prints.append((name, f"{value.dtype}{value.shape}{digest}"))
        elif hasattr(value, "py_func"):  # a compiled helper: its generated module's key
            prints.append((name, f"{value.py_func.__module__}.{value.py_func.__qualname__}"))
        elif isinstance(value, types.ModuleType):
            prints.append((name, value.__name__))
        elif callable(value):
            prints.append((name, _callable_identity(value)))
        else:
            prints.append((name, repr(value)))
    return prints


def _callable_identity(value: Any) -> str:
    """A stable name for a function the generated code calls: its module, name and,
    for Python functions, where it is defined (two lambdas bound to one name differ)."""
    own = getattr(value, "__numbax_identity__", None)  # grad(f), vmap(f), custom_jvp(f)...
    if own is not None:
        return own()
    module = getattr(value, "__module__", None) or type(value).__module__
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    text = f"{module}.{name or repr(value)}"
    code = getattr(inspect.unwrap(value), "__code__", None)  # custom_jvp(f): f's
    if code is not None:
        text += f"@{code.co_filename}:{code.co_firstlineno}"
    return text


_LOCATION = re.compile(r'File "([^"]+)", line (\d+)')
_UNTYPEABLE_ARGUMENT = re.compile(r"argument (\d+): Cannot determine Numba type of (<[^>]+>)")


def _untypeable_argument_error(compiled: Compiled, index: int, type_name: str) -> CompileError:
    params = list(inspect.signature(compiled.python_function).parameters)
    name = params[index] if index < len(params) else f"#{index}"
    return CompileError(
        f"argument {name!r} is a {type_name}, which compiled code cannot take. Pass arrays, "
        "scalars, or pytrees of them; mark the argument static (static_argnums / "
        "static_argnames) if it only configures the function.",
        function=display_name(compiled.source.func),
        transformation="jit",
        filename=compiled.source.filename,
        lineno=compiled.source.firstlineno,
    )


def translate_numba_error(err: Exception, compiled: Compiled) -> CompileError:
    """A :class:`CompileError` naming the user's function, line and the rejected construct."""
    message = str(err)
    user_line = None
    for path, line in _LOCATION.findall(message):
        if path.endswith(compiled.path.rsplit("/", 1)[-1]):
            user_line = compiled.emitted.user_line(int(line))
            break
    source = compiled.source
    bad_argument = _UNTYPEABLE_ARGUMENT.search(message)
    if bad_argument:
        return _untypeable_argument_error(compiled, int(bad_argument[1]), bad_argument[2])
    construct = _first_meaningful_line(message)
    detail = f"Numba cannot compile it: {construct}"
    if user_line is not None:
        detail += f"\n  in: {source.line(user_line)}"
    detail += (
        "\n  Rewrite that line with operations Numba supports (see the generated source "
        f"in {compiled.path}), or call the function without jit."
    )
    return CompileError(
        detail,
        function=display_name(source.func),
        transformation="jit",
        filename=source.filename,
        lineno=user_line,
        construct=construct,
    )


def _first_meaningful_line(message: str) -> str:
    for line in message.splitlines():
        line = line.strip()
        if line and not line.startswith(("-", "=", ">>>")) and "Failed in" not in line:
            return line
    return message.strip()
