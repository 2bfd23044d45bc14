"""The jit pipeline up to machine code, the same for every target.

One specialization of a user function (its static values, which parameters hold
Python scalars) goes: read (``transform.source``, done by the caller) → normalize →
bake static arguments (``transform.specialize``) → fuse elementwise runs (``fuse``),
a pytree's cotangent filled in where it is zero (``fresh_fields``) →
lower for Numba (``lower``) → NumPy's bounds checks on the user's subscripts
(``bounds``) → one kernel per distinct computation (``shared_kernels``) →
loop tapes as arrays where their length is known (``tapes``) → emit readable source
and load it as a module from the cache directory (``codegen``). What comes out is a
plain Python function in that module; a target (``cpu.py``: ``numba.njit``) compiles
it, and tells the pipeline how to compile the user functions the generated code calls.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import gast
import numpy as np

from numbax.codegen.cache import cache_key, portable_path
from numbax.codegen.emit import EmittedSource, emit_function, emit_module
from numbax.codegen.fingerprint import describe_value, fingerprint
from numbax.codegen.load import load_module, module_name
from numbax.numba_backend.loops import (  # noqa: F401  (importing registers their nxrt helpers)
    bounds,
    tapes,
)
from numbax.numba_backend.loops.array_operators import call_operators
from numbax.numba_backend.loops.container_stores import container_stores, items_kept_as_copies
from numbax.numba_backend.loops.fresh_fields import fill_fresh_fields
from numbax.numba_backend.lower import RECURSIVE, lower_for_numba
from numbax.numba_backend.passes.bounds import bounds_checks
from numbax.numba_backend.passes.captured import Captured, capture_parameters, is_integer
from numbax.numba_backend.passes.fuse import fuse_elementwise, scalar_selects
from numbax.numba_backend.passes.shared_kernels import share_kernels
from numbax.numba_backend.passes.stand_ins import stand_in_result
from numbax.numba_backend.passes.tapes import array_tapes, device_tapes
from numbax.transform.container_checks import fold_container_checks
from numbax.transform.names import Namer
from numbax.transform.normalize import normalize
from numbax.transform.provenance import resolve
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource, describe_file, display_name
from numbax.transform.specialize import bake_static_arguments
from numbax.tree_util import tree_structure

HelperCompiler = Callable[..., Any]
"""How a target compiles a user function that generated code calls: the compiled
callable to bind, or :data:`~numbax.numba_backend.lower.RECURSIVE` for the function
being compiled; with ``result_type_only=True`` (CPU), for a call whose result is read
only for its shape and dtype."""


class ThreadPasses(Protocol):
    """The passes of a target that runs one example per thread (the GPU's, in
    ``cuda/``), which the CPU target neither runs nor imports."""

    def before_resolving(self, fn: gast.FunctionDef) -> gast.FunctionDef:
        """The function with what is known of its arrays' shapes written in."""

    def after_lowering(
        self, fn: gast.FunctionDef, resolve: Callable[[gast.expr], Any]
    ) -> gast.FunctionDef:
        """The lowered function as one thread's code."""

    def held(self, fn: gast.FunctionDef) -> str | None:
        """What the generated module's header says the thread holds."""


@dataclass
class Specialization:
    """One specialization's generated module, ready for a target to compile."""

    function: types.FunctionType  # the generated function, as Python
    module: types.ModuleType
    source: FunctionSource  # the user's function it was generated from
    emitted: EmittedSource
    bindings: dict[str, Any]  # what the module binds by name
    result_stood_in: bool = False  # its result is a stand-in of its shape and dtype
    # what a call passes ahead of its arguments: the captured values the function takes
    # as its first parameters, as they were when it was generated (``passes/captured.py``)
    captured: tuple = ()
    weak_params: frozenset[str] | None = None  # parameters that hold Python scalars

    @property
    def captures_integers(self) -> bool:
        """Whether it takes a captured integer as a parameter (``Captured.NUMBERS``)."""
        return any(map(is_integer, self.captured))

    @property
    def text(self) -> str:
        return self.emitted.text

    @property
    def path(self) -> str:
        return self.module.__file__

    @property
    def calls_itself(self) -> bool:
        """Whether the function calls itself by its module-level name, which the target
        must bind to its compiled version."""
        return self.bindings.get(self.function.__name__) is RECURSIVE


def specialize(
    source: FunctionSource,
    compile_helper: HelperCompiler,
    statics: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    transformation: str = "jit",
    weak_params: frozenset[str] | None = None,
    target: str = "cpu",
    thread: ThreadPasses | None = None,
    extra_bindings: dict[str, Any] | None = None,
    result_type_only: bool = False,
    containers: dict[str, Any] | None = None,
    capture: Captured = Captured.NOTHING,
) -> Specialization:
    """Generate and load one specialization of ``source`` with ``statics`` baked in.

    ``target``: ``"cpu"`` runs the passes that serve ``numba.njit`` (elementwise runs
    fused into loops over arrays, the user's subscripts checked against NumPy's bounds
    (``bounds.py``; the option ``boundscheck=False`` leaves them out), tapes as arrays);
    ``"cuda"`` leaves them out, as a device function runs on one example's scalars and
    allocates nothing: ``thread`` holds its passes.

    ``result_type_only``: the callers read only the shape and dtype of the result,
    which may then be a stand-in (``stand_ins.stand_in_result``; CPU only).

    ``options`` are the target's compile options: they change the machine code, so they
    are part of the module's cache key. ``weak_params``: the parameters given Python
    scalars, which NumPy 2 promotion treats as weakly typed (None: any parameter may be
    one). ``containers``: the pytree arguments whose container types the function asks
    about (``isinstance``), by parameter, whose checks are answered here. ``capture``:
    which captured values the function reads become its first parameters
    (``passes/captured.py``), which a call from Python passes (``Specialization.captured``).
    """
    fn = normalize(source, transformation)
    fn, static_bindings = bake_static_arguments(fn, statics or {})
    captured = capture_parameters(fn, source, capture)
    if weak_params is not None:  # Python scalars are weakly typed (NumPy 2)
        weak_params |= {k for k, v in captured.items() if type(v) in (int, float, complex)}
    if thread is not None:
        fn = thread.before_resolving(fn)
    resolver = Resolver(source, local_names(fn))  # temporaries are locals too
    fn = fold_container_checks(fn, containers or {}, resolver)
    kernels: list[gast.FunctionDef] = []
    stood_in = False
    if target == "cpu":
        fn, kernels = fuse_elementwise(fn, resolver, Namer.for_function(fn))
        fill_fresh_fields(fn.body, resolver)
        stood_in = result_type_only and stand_in_result(fn, resolver, kernels)
    elif target == "cuda":
        fn = scalar_selects(fn, resolver)
    if target == "cpu":
        fn = container_stores(fn, containers, source)
    else:  # a device function holds one example's arrays, no pytree
        fn = items_kept_as_copies(fn)
    fn, runtime_bindings = lower_for_numba(fn, resolver, compile_helper, kernels, weak_params)
    if target == "cpu":
        if (options or {}).get("boundscheck") is not False:
            fn = bounds_checks(fn, _user_line)
        kernels = share_kernels(fn, kernels, source.filename)
        fn = array_tapes(fn)
        if not (options or {}).get("parallel"):
            call_operators(fn.body, resolver.resolve)
    elif thread is not None:
        fn = thread.after_lowering(fn, resolver.resolve)
    else:
        fn = device_tapes(fn, resolver.resolve)
    held = thread.held(fn) if thread is not None else None
    if stood_in:
        held = "for callers that read only the result's shape and dtype: a stand-in of them"
    if containers:  # the checks of their types were answered for these
        kinds = ", ".join(f"{k}: {tree_structure(v)}" for k, v in containers.items())
        held = "\n".join([*([held] if held else []), f"pytree arguments of types {kinds}"])
    if captured:
        passed = "captured when compiled, passed in at each call: " + ", ".join(captured)
        held = "\n".join([*([held] if held else []), passed])
    header = _header(source, transformation, statics, weak_params, held)
    emitted = emit_module(
        [emit_function(k, source.line, _kernel_header(k)) for k in kernels]
        + [emit_function(fn, describe_line=source.line)],
        preamble=_comment(header),
    )
    bindings = {
        **{k: frozen_list(v) for k, v in resolver.free_bindings(fn, *kernels).items()},
        **static_bindings,
        **runtime_bindings,
        **(extra_bindings or {}),
    }
    key = cache_key(
        emitted.text,
        fingerprint(bindings, emitted.text),
        sorted({**(options or {}), "target": target}.items()),
    )
    module = load_module(module_name(source.name, key), emitted.text, bindings)
    function = getattr(module, fn.name)
    # A module loaded before holds its compiled version when the function calls itself.
    function = getattr(function, "py_func", function)
    function.__defaults__ = _remaining_defaults(source.func, fn)
    function.__kwdefaults__ = source.func.__kwdefaults__
    return Specialization(
        function, module, source, emitted, bindings, stood_in, tuple(captured.values()), weak_params
    )


def frozen_list(value: Any) -> Any:
    """A global or closure list of arrays and numbers (a bound ``ws=[w1, w2]`` of
    ``functools.partial``, a list of weights) as a tuple, nested lists too.

    Numba compiles no list read from globals (a reflected list is not a compile-time
    constant) but reads a tuple; generated code only reads such a list (Numba refuses
    a write to a global either way), and arguments cross into compiled code as tuples
    already (``boundary.to_numba``). Anything else is bound as it is."""
    if not isinstance(value, list) or not _numbers_and_arrays(value):
        return value
    return tuple(frozen_list(v) for v in value)


def _numbers_and_arrays(value: Any) -> bool:
    if isinstance(value, (list, tuple)) and not hasattr(type(value), "_fields"):
        return all(_numbers_and_arrays(v) for v in value)
    return isinstance(value, (np.ndarray, np.generic, bool, int, float, complex))


def _user_line(filename: str, line: int) -> str:
    """A user's line as generated text names it: ``model.py, line 5`` (a generated
    module's file by its name alone)."""
    return f"{portable_path(describe_file(filename))}, line {line}"


def _header(
    source: FunctionSource,
    transformation: str,
    statics: dict[str, Any] | None,
    weak_params: frozenset[str] | None,
    arrays: str | None = None,
) -> str:
    user = resolve(source.filename, source.firstlineno)  # through compositions
    where = _user_line(user.filename, user.line)
    text = f"{transformation} of {display_name(source.func)} ({where})"
    if statics:
        text += "\nstatic arguments: " + ", ".join(
            f"{k}={describe_value(v)}" for k, v in statics.items()
        )
    if weak_params:
        text += "\nPython scalars (weakly typed, as in NumPy 2): " + ", ".join(sorted(weak_params))
    if arrays:
        text += "\n" + arrays
    return text + "\ngenerated by numbax; edits to this file are overwritten"


def _kernel_header(kernel: gast.FunctionDef) -> str:
    declared = getattr(kernel, "numbax_sum", {})
    if "summed" in declared:
        text = (
            "fused elementwise loop: runs once per element of its broadcast arguments and\n"
            "adds each value into the sum over the axes `summed` names (no values stored)"
        )
    elif "also" in declared:
        text = (
            "fused elementwise loop: runs once per element of the broadcast of its arguments\n"
            "after the first two (likes); adds the values of `also` into the first like's\n"
            "shape and its own into the second's, both made there (no values stored)"
        )
    elif declared:
        text = (
            "fused elementwise loop: runs once per element of the broadcast of its arguments\n"
            "after the first (like) and adds each value into like's shape (no values stored)"
        )
    else:
        text = "fused elementwise loop: runs once per element of its broadcast arguments"
    if getattr(kernel, "numbax_same_shapes", False):
        text += (
            "\nsame_shapes: the program shows its arrays have one shape (were they to\n"
            "differ, they are broadcast first)"
        )
    weak = any(
        keyword.arg == "weak"
        for decorator in kernel.decorator_list
        if isinstance(decorator, gast.Call)
        for keyword in decorator.keywords
    )
    if weak:
        text += "\nweak: those that may be Python scalars take the arrays' dtype (NumPy 2)"
    return text


def _comment(text: str) -> str:
    return "\n".join(f"# {line}" for line in text.splitlines())


def _remaining_defaults(func: types.FunctionType, fn: gast.FunctionDef) -> tuple | None:
    """The original default values of the parameters the generated function still has."""
    defaults = func.__defaults__ or ()
    code = func.__code__
    positional = code.co_varnames[: code.co_argcount]
    by_name = dict(zip(positional[len(positional) - len(defaults) :], defaults, strict=True))
    kept = [p.id for p in fn.args.args]
    remaining = tuple(by_name[name] for name in kept if name in by_name)
    return remaining or None
