"""The CPU target: compile a specialization with ``numba.njit``, and explain Numba's
failures in user terms.

The generated module comes from the target-neutral pipeline (``pipeline.py``); this
module wraps its function with ``numba.njit`` and numbax's trusted disk cache
(``caching/disk_cache.py``), so a later process loads the machine code from disk instead of
compiling again, and compiles the user functions the generated code calls the same way.
"""

from __future__ import annotations

import inspect
import threading
import types
import weakref
from dataclasses import dataclass
from typing import Any, NoReturn

import numba
import numpy as np
from numba.core import errors as numba_errors

from numbax import tree_util
from numbax.codegen.emit import EmittedSource
from numbax.codegen.reuse import reuse_key
from numbax.errors import CompileError
from numbax.numba_backend.boundary import python_result
from numbax.numba_backend.caching import (  # noqa: F401  (helpers compiled once, see there)
    disk_cache,
    runtime_cache,
)
from numbax.numba_backend.caching.compile_log import describe
from numbax.numba_backend.caching.startup import preload_blas_bindings
from numbax.numba_backend.loops import (
    blas_threads,
    slice_errors,
)
from numbax.numba_backend.loops.bounds import BoundsError, as_numpy_error
from numbax.numba_backend.lower import RECURSIVE
from numbax.numba_backend.np.scalar_rules import PYTHON_SCALAR_PARAMETERS, NumPyScalarsCompiler
from numbax.numba_backend.numba_errors import translate_numba_error, untypeable_argument_error
from numbax.numba_backend.passes.captured import Captured
from numbax.numba_backend.passes.stand_ins import RESULT_TYPE_ONLY
from numbax.numba_backend.pipeline import Specialization, specialize
from numbax.transform.source import FunctionSource, display_name, read_function

preload_blas_bindings()
slice_errors.install()

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
    """One compiled specialization: the Numba dispatcher and the generated module."""

    dispatcher: Any
    generated: Specialization

    @property
    def python_function(self) -> types.FunctionType:
        return self.generated.function

    @property
    def source(self) -> FunctionSource:
        return self.generated.source

    @property
    def text(self) -> str:
        return self.generated.text

    @property
    def emitted(self) -> EmittedSource:
        return self.generated.emitted

    @property
    def path(self) -> str:
        return self.generated.path

    @property
    def captured(self) -> tuple:
        """What a call passes ahead of its arguments: the captured values the function
        takes as parameters (``passes/captured.py``)."""
        return self.generated.captured

    def __call__(self, *args: Any) -> Any:
        if self.generated.captured:
            args = (*self.generated.captured, *args)
        try:
            return python_result(self.dispatcher(*args))
        except CALL_ERRORS as err:
            explain_failure(err, self, args)


class Float16Error(CompileError, TypeError):
    """An argument of dtype float16, which Numba types but cannot compile on the CPU: a
    ``TypeError`` (the argument's type) that is also numbax's :class:`CompileError`."""


CALL_ERRORS = (*NUMBA_ERRORS, NotImplementedError, BoundsError)
"""What a call of compiled code raises that :func:`explain_failure` explains."""


def explain_failure(err: Exception, compiled: Compiled, args: tuple) -> NoReturn:
    """Raise what a failed call means to the user: a :class:`CompileError` naming the
    function and line for Numba's errors, and for a float16 argument (Numba types float16
    but cannot compile it on the CPU, and says only ``NotImplementedError: float16``, or
    finds no implementation); any other ``NotImplementedError`` (one the user's code
    raises) is raised again as it is; an index out of bounds as NumPy's ``IndexError``,
    naming the user's line in a note."""
    if isinstance(err, BoundsError):
        raise as_numpy_error(err) from None
    names = list(inspect.signature(compiled.python_function).parameters)
    for index, arg in enumerate(args):
        if any(np.asarray(leaf).dtype == np.float16 for leaf in tree_util.tree_leaves(arg)):
            name = names[index] if index < len(names) else f"#{index}"
            raise _float16_error(
                compiled,
                f"argument {name!r} holds float16 values, which Numba does not compile on "
                "the CPU. Cast it to float32 (x.astype(np.float32)) before the call, or call "
                "the function without jit.",
            ) from err
    if isinstance(err, NotImplementedError) and str(err) == "float16":  # Numba's own
        raise _float16_error(
            compiled,
            "it computes with float16 values (np.float16 or a 'float16' dtype inside it), "
            "which Numba does not compile on the CPU. Compute in float32 and cast the "
            "result to float16 after the call, or call the function without jit.",
        ) from err
    if isinstance(err, NUMBA_ERRORS):
        for index, arg in enumerate(args):
            if not _numba_can_type(arg):
                raise untypeable_argument_error(
                    compiled.generated, index, type(arg).__name__
                ) from err
        raise translate_numba_error(err, compiled.generated) from err
    raise err


def _numba_can_type(value: Any) -> bool:
    """Whether Numba types ``value`` as an argument. Its dispatcher falls back to the
    imprecise ``pyobject`` for anything else and then fails far from the cause ("non-precise
    type pyobject"), so the argument is named here instead."""
    try:
        return not isinstance(numba.typeof(value), numba.types.PyObject)
    except ValueError:
        return False


def _float16_error(compiled: Compiled, message: str) -> Float16Error:
    """The error for float16 in a compiled call, at the user's function."""
    return Float16Error(
        message,
        function=display_name(compiled.source.func),
        transformation="jit",
        filename=compiled.source.filename,
        lineno=compiled.source.firstlineno,
        construct="float16",
    )


def compile_function(
    source: FunctionSource,
    statics: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    transformation: str = "jit",
    weak_params: frozenset[str] | None = None,
    inline: bool = False,
    result_type_only: bool = False,
    containers: dict[str, Any] | None = None,
    capture: Captured = Captured.NOTHING,
) -> Compiled:
    """Generate, load and wrap one specialization of ``source`` (compiled lazily by Numba).

    ``weak_params``: the parameters given Python scalars, which NumPy 2 promotion treats
    as weakly typed (None: any parameter may be one). ``inline``: compiled code that
    calls the function takes its body in (Numba's ``inline="always"``) instead of
    calling a separately compiled function, unless it calls itself.
    ``result_type_only``: for callers that read only the result's shape and dtype
    (``passes/stand_ins.py``). ``containers``: pytree arguments by parameter, whose container
    types the specialization is for (``transform/container_checks.py``). ``capture``:
    which of its captured values are parameters a call passes (``passes/captured.py``), so
    that the closures of one code share one compiled function (:data:`_dispatchers`).
    """
    blas_threads.watch()
    options = dict(options or {})
    helper_options = _helper_options(options)
    generated = specialize(
        source,
        lambda func, **kind: compile_helper(func, helper_options, **kind),
        statics,
        options,
        transformation,
        weak_params,
        result_type_only=result_type_only,
        containers=containers,
        capture=capture,
    )
    typed_per_call = typed_per_process(generated.bindings.values())
    njit_options = {**DEFAULT_NUMBA_OPTIONS, **options}
    cached = njit_options.pop("cache", True) and not typed_per_call
    if inline and not generated.calls_itself:
        njit_options["inline"] = "always"
    key = (
        generated.module.__name__,
        generated.function.__name__,
        repr(sorted(njit_options.items())),
    )
    with _dispatchers_lock:
        dispatcher = _dispatchers.get(key)
    if dispatcher is not None:  # the same module: another closure of the same code
        return Compiled(dispatcher, generated)
    # its own loops compute on NumPy scalars as NumPy does (scalar_rules.py)
    weak = generated.weak_params
    setattr(generated.function, PYTHON_SCALAR_PARAMETERS, None if weak is None else frozenset(weak))
    dispatcher = numba.njit(pipeline_class=NumPyScalarsCompiler, **njit_options)(generated.function)
    disk_cache.attach(dispatcher, cached)
    describe(dispatcher, generated.text.split("\n", 1)[0].lstrip("# "))  # "jit of f (...)"
    if typed_per_call:
        dispatcher.__numbax_typed_per_process__ = True
    if generated.calls_itself:  # by its module-level name: the compiled version
        setattr(generated.module, generated.function.__name__, dispatcher)
    if generated.result_stood_in:
        setattr(dispatcher, RESULT_TYPE_ONLY, True)
    with _dispatchers_lock:
        dispatcher = _dispatchers.setdefault(key, dispatcher)
    return Compiled(dispatcher, generated)


_dispatchers: weakref.WeakValueDictionary[tuple, Any] = weakref.WeakValueDictionary()
"""Numba's dispatcher of each generated module's function, while compiled code holds
it: specializations generated into the same module (the same text and bindings: the
closures of one code, whose captured values are parameters) share its machine code
instead of compiling it again."""
_dispatchers_lock = threading.Lock()


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


def compile_helper(func: Any, options: dict[str, Any], result_type_only: bool = False) -> Any:
    """The Numba dispatcher for a user function called from compiled code (cached).

    The function is inlined into its callers: each compiled function costs Numba a
    pipeline run and LLVM a module of its own to optimize, link into every caller and
    optimize again there, which for derivatives (a chain of generated functions, each
    calling the next: ``grad(grad(f))``) cost more than compiling their bodies once.

    An object numbax made says what compiled code calls for it: ``__numbax_dispatcher__``
    gives its dispatcher (``jit(f)``, ``vmap(f)``'s loop), ``__numbax_primal__`` the
    function to compile in its place (``custom_jvp(f)``, ``checkpoint(f)``: ``f``).

    ``result_type_only``: for a call whose result is read only for its shape and dtype,
    the variant whose result is a stand-in (``passes/stand_ins.py``), where it differs."""
    if result_type_only:
        return _result_type_helper(func, options)
    if not hasattr(func, "__numbax_dispatcher__") and hasattr(func, "__numbax_primal__"):
        func = func.__numbax_primal__()
    if hasattr(func, "__numbax_dispatcher__"):
        return func.__numbax_dispatcher__(options)
    # by what its code freezes (numbax.codegen.reuse): a helper whose global was rebound
    # since it was compiled compiles again
    key = (reuse_key(func), tuple(sorted(options.items())))
    if key in _compiling:
        return RECURSIVE
    if key not in _helpers:
        _compiling.add(key)
        try:
            _helpers[key] = compile_function(
                read_function(func), options=options, inline=True
            ).dispatcher
        finally:
            _compiling.discard(key)
    return _helpers[key]


def _result_type_helper(func: Any, options: dict[str, Any]) -> Any:
    """:func:`compile_helper`'s variant of user function ``func`` for callers that read
    only its result's shape and dtype; the function itself where the variant would be
    the same (or while it is being compiled: a recursive call)."""
    key = (reuse_key(func), tuple(sorted(options.items())))
    variant = (*key, "result type")
    if variant not in _helpers:
        if key in _compiling or variant in _compiling:
            return compile_helper(func, options)
        _compiling.add(variant)
        try:
            compiled = compile_function(
                read_function(func), options=options, inline=True, result_type_only=True
            )
        finally:
            _compiling.discard(variant)
        if compiled.generated.result_stood_in:
            _helpers[variant] = compiled.dispatcher
        else:
            _helpers[variant] = compile_helper(func, options)
    return _helpers[variant]


def _helper_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "inline"}
