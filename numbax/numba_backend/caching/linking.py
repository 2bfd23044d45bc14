"""Finalize what numbax compiles with less repeated work than Numba does: callees
linked without a second optimization, and no machine code for functions only compiled
code calls.

**Linking.** Numba makes each compiled function's machine code self-contained: it links the LLVM
module of every function it calls (and, through theirs, of everything those call) into
the caller's module, then runs LLVM's whole optimization pipeline over the result
(``CPUCodeLibrary.finalize``). Linking first lets LLVM inline small callees; but a
callee was optimized when it was compiled, and a large one (a fused loop, a reduction,
an allocation with its error paths) is optimized again in every caller, gaining
nothing: LLVM does not inline it. numbax's generated functions call dozens of such
helpers, and a derivative's generated functions call each other, so this second
optimization was a fifth to a third of a new program's compile time (``python -m
benchmarks.compile``: the Hessian, the MLP, the RNN and the LSTM).

While numbax compiles generated code (:func:`linking_large_callees_late`), a library
links the callees whose module is small before optimizing, as Numba does, and the large
ones after, as they are. The result is the same code: the large callees' functions are
called, not inlined, either way, and the machine code stays self-contained, so the disk
cache keeps working. Functions compiled outside numbax's compiles (the user's own
``numba.njit`` code called directly) are linked as Numba links them.

**Machine code.** Numba also emits machine code for every function it compiles, and
makes a C wrapper for it, even for one that only compiled code calls: an overload's
implementation (``@overload``: compiled without a Python entry point), which reaches
its callers as LLVM IR linked into theirs, where it is emitted again. During numbax's
compiles, such a library stays LLVM IR until something asks for an address in it
(:func:`_get_pointer_to_function`), gets no C wrapper, and is saved to the runtime
cache as that IR (:func:`_serialize_using_object_code`): 15% of the compile time of
the rule table's Jacobians (eight operations, ``jit(jacfwd)`` and ``jit(jacrev)``: 36.2
s before, 30.9 s after, one run each, a fresh cache). Its environment (the Python objects
its code may refer to) is set once a module defining the environment's symbol is in the
execution engine: the first caller's, which links it in (:func:`_set_env`).

**C wrappers.** Numba gives every function it compiles a C entry point (a ``cfunc``
wrapper) for when it is used as a first-class function value. numbax never hands out its
own functions that way, so generated code and numbax's kernels compiled during numbax's
compiles get none (:func:`_lowering_run_pass`): their Python entry point, if any, stays.
About 4% of a sample of the rule table's compile time; within the noise over the whole
test suite.

**Large functions at -O2.** LLVM's -O3 pipeline adds passes that copy code to specialize
it (among them non-trivial loop unswitching, which duplicates a loop for each condition
it can hoist, and more aggressive inlining). On a small kernel that is what makes it
fast; on a generated function of thousands of array operations (a derivative's glue
around its kernels: every operation lowered with its shape checks and allocation) the
copies multiply: the LSTM's gradient grew from 20,000 to 56,000 lines of IR (21,000 at
-O2) and took 21 s of LLVM, 4 s at -O2 (``python -m benchmarks.compile --only lstm``,
one run each: its first call with an empty cache took 34.2 s before, 22.7 s after; with
numbax's helpers cached, 23.2 s before, 9.7 s after). A function whose lowered module is
larger than :data:`LARGE_FUNCTION_BITCODE` is optimized at -O2, loop vectorization
included; its callees (the fused loops and reductions where its time goes) were
optimized at -O3 in their own libraries, and a callee's optimized loops are not undone
by the caller's passes.

**Elementwise loops at -O2.** The same holds for a fused elementwise loop's driver
(:func:`optimized_moderately`: its flat loop, its threaded chunks and its broadcasting
nest, the scalar kernel inlined in each): -O3's extra passes made its machine code
larger without making it faster. ``jit(grad)`` of the MLP of a dict spent 0.2 to 0.4 s
less on its first call (with numbax's helpers compiled anew: 4.57 and 4.63 s against
4.36 and 4.17), and the runtime benchmarks (``python -m benchmarks --only
selu,poly,grad_logistic,hessian_logistic,vmap_large_f32,per_example,per_example_mlp,lorenz,md,mlp_grad
--repeat 3``, two runs each way) kept their minimum times within 2%. The summing loops
(``loops/fused_sums.py``) stay at -O3: at -O2 the molecular dynamics benchmark's took 15%
longer (42.4 ms against 37.0), and so did every function at -O2 in a ``vmap`` of a
gradient (``per_example``: twice the time).

The replacements are installed only for the Numba versions whose code they mirror
(:data:`_MIRRORED`); with any other, Numba's own runs unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import llvmlite.binding as ll
import numba
from numba.core import codegen, config, typed_passes

from numbax.codegen.load import GENERATED_PREFIX

LARGE_BITCODE = 16_000
"""Bytes of bitcode above which a callee is linked after optimization: about 400 LLVM
instructions, far beyond what LLVM's inliner takes (its threshold is a few hundred
instructions' cost, and each callee's own callees are counted in its module)."""

LARGE_FUNCTION_BITCODE = 200_000
"""Bytes of bitcode of a library's lowered module above which it is optimized at -O2:
about 5,000 LLVM instructions. numbax's kernels are a few kilobytes; the gradients of
autograd's RNN and LSTM examples 250 kB and 616 kB, a Hessian's 100 kB."""

MODERATE_OPT = 2
"""LLVM's optimization level for a large function (see the module's docstring)."""

_MIRRORED = ("0.68",)
"""Numba versions whose ``CPUCodeLibrary.finalize`` :func:`_finalize` reproduces."""

_state = threading.local()
_large: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_large_functions: weakref.WeakSet[Any] = weakref.WeakSet()
"""Libraries optimized at :data:`MODERATE_OPT`: large functions and marked ones."""
_without_machine_code: weakref.WeakSet[Any] = weakref.WeakSet()
"""Libraries finalized as LLVM IR only (see the module's docstring)."""
_pending_environments: dict[str, Any] = {}
"""Environments whose symbol no module in the execution engine defines yet, by name."""
_IR_ONLY = "numbax-llvm-ir"
"""The kind of a serialized library kept as LLVM IR (Numba's are bitcode and object)."""
_PYTHON_ENTRY_PREFIX = "_ZN7cpython"
"""How the name of a function's Python entry point (its CPython wrapper) begins."""
_NUMBAX_MODULES = ("numbax.", GENERATED_PREFIX)
"""How the modules of numbax's own functions are named: its package and generated code."""
_UNRESOLVED_PREFIX = codegen.RuntimeLinker.PREFIX
"""How the pointer through which Numba links a recursive call is named."""


@contextlib.contextmanager
def linking_large_callees_late() -> Iterator[None]:
    """Within this block (this thread), libraries Numba finalizes link their large
    callees after optimizing their own code."""
    with _set_in_this_thread("active", True):
        yield


def optimized_moderately(function: Any) -> Any:
    """Mark ``function`` (Python) to be optimized at :data:`MODERATE_OPT` whenever numbax
    compiles it (see the module's docstring); returns it."""
    function.__numbax_moderate__ = True
    return function


def _is_large(library: Any) -> bool:
    large = _large.get(library)
    if large is None:
        size = len(library._get_module_for_linking().as_bitcode())
        large = _large[library] = size > LARGE_BITCODE
    return large


def _finalize(self: codegen.CPUCodeLibrary) -> None:
    """``CPUCodeLibrary.finalize`` with large callees linked after optimization (see
    the module's docstring); Numba's own outside numbax's compiles."""
    if not getattr(_state, "active", False):
        return _numba_finalize(self)
    codegen.require_global_compiler_lock()
    self._codegen._check_llvm_bugs()
    self._raise_if_finalized()
    if config.DUMP_FUNC_OPT:
        codegen.dump(f"FUNCTION OPTIMIZED DUMP {self.name}", self.get_llvm_str(), "llvm")
    late = []
    seen = set()
    for library in self._linking_libraries:
        if library in seen:
            continue
        seen.add(library)
        self._reload_init.update(library._reload_init)  # the parent inherits it
        if _is_large(library):
            late.append(library)
        else:
            self._final_module.link_in(library._get_module_for_linking(), preserve=True)
    with _optimization_level(MODERATE_OPT if self in _large_functions else None):
        self._optimize_final_module()
    for library in late:
        self._final_module.link_in(library._get_module_for_linking(), preserve=True)
    self._final_module.verify()
    if _only_compiled_code_calls(self):
        self._finalized = True  # as LLVM IR: what callers link
        _without_machine_code.add(self)
        return None
    if _calls_itself(self):
        for library in _linked(self):
            if library in _without_machine_code:
                _without_machine_code.discard(library)
                _emit_machine_code(library)
    _emit_machine_code(self)
    return None


@contextlib.contextmanager
def _optimization_level(level: int | None) -> Iterator[None]:
    """Within this block (this thread), the pass pipelines LLVM builds are at most
    ``level`` (None: Numba's)."""
    with _set_in_this_thread("opt_cap", level):
        yield


@contextlib.contextmanager
def _set_in_this_thread(setting: str, value: Any) -> Iterator[None]:
    """``setting`` of this module's thread-local state is ``value`` within the block."""
    previous = getattr(_state, setting, None)
    setattr(_state, setting, value)
    try:
        yield
    finally:
        setattr(_state, setting, previous)


def _pass_builder(self: codegen.CPUCodegen, **kwargs: Any) -> Any:
    """``CPUCodegen._pass_builder``, its level capped by :func:`_optimization_level`."""
    cap = getattr(_state, "opt_cap", None)
    if cap is not None:
        kwargs["opt"] = min(kwargs.get("opt", config.OPT), cap)
    return _numba_pass_builder(self, **kwargs)


def _optimize_functions(self: codegen.CPUCodeLibrary, ll_module: Any) -> None:
    """``CPUCodeLibrary._optimize_functions``, the first pass over a newly lowered
    module: during numbax's compiles, a module larger than
    :data:`LARGE_FUNCTION_BITCODE` marks its library as a large function, optimized at
    :data:`MODERATE_OPT` here and when finalized."""
    if getattr(_state, "active", False) and len(ll_module.as_bitcode()) > LARGE_FUNCTION_BITCODE:
        _large_functions.add(self)
    with _optimization_level(MODERATE_OPT if self in _large_functions else None):
        _numba_optimize_functions(self, ll_module)


def _calls_itself(library: codegen.CPUCodeLibrary) -> bool:
    """Whether the library's module holds a recursive call, which Numba links through a
    pointer it fills in when the module enters the execution engine (``RuntimeLinker``).
    Resolving it made LLVM emit the pending modules, and crashed the process when a
    callee linked into it had been kept as LLVM IR: the callees of such a module get
    their machine code first."""
    return any(
        gv.name.startswith(_UNRESOLVED_PREFIX) for gv in library._final_module.global_variables
    )


def _linked(library: codegen.CPUCodeLibrary) -> list[codegen.CPUCodeLibrary]:
    """Every library linked into ``library``, directly or not."""
    found: dict[int, codegen.CPUCodeLibrary] = {}
    todo = list(library._linking_libraries)
    while todo:
        linked = todo.pop()
        if id(linked) not in found:
            found[id(linked)] = linked
            todo.extend(linked._linking_libraries)
    return list(found.values())


def _only_compiled_code_calls(library: codegen.CPUCodeLibrary) -> bool:
    """Whether nothing outside compiled code can reach the library's functions: it has
    no Python entry point."""
    return not any(
        fn.name.startswith(_PYTHON_ENTRY_PREFIX) and not fn.is_declaration
        for fn in library._final_module.functions
    )


def _emit_machine_code(library: codegen.CPUCodeLibrary) -> None:
    """Numba's last step of finalizing: the module into the execution engine, as machine
    code; then the environments waiting for a symbol it defines are set."""
    library._finalize_final_module()
    engine = library._codegen._engine
    for name in [n for n in _pending_environments if engine.is_symbol_defined(n)]:
        _numba_set_env(library._codegen, name, _pending_environments.pop(name))


def _get_pointer_to_function(self: codegen.JITCodeLibrary, name: str) -> int:
    """``JITCodeLibrary.get_pointer_to_function``, which emits the machine code of a
    library kept as LLVM IR when asked for a function it defines (0, as Numba gives,
    for one it does not: the Python entry point such a library has none of)."""
    self._ensure_finalized()
    if self in _without_machine_code:
        try:
            defined = not self._final_module.get_function(name).is_declaration
        except NameError:
            defined = False
        if not defined:
            return 0
        _without_machine_code.discard(self)
        _emit_machine_code(self)
    return _numba_get_pointer_to_function(self, name)


def _serialize_using_object_code(self: codegen.JITCodeLibrary) -> Any:
    """``serialize_using_object_code`` (a disk cache's): a library left as LLVM IR is
    saved as the IR its callers link (:data:`_IR_ONLY`), still without machine code."""
    self._ensure_finalized()
    if self in _without_machine_code:
        return (self.name, _IR_ONLY, self._get_module_for_linking().as_bitcode())
    return _numba_serialize_using_object_code(self)


def _unserialize(cls: type, codegen_: Any, state: tuple) -> Any:
    """``CPUCodeLibrary._unserialize``, which also loads what
    :func:`_serialize_using_object_code` saved as IR: a library finalized as LLVM IR,
    its machine code emitted if an address in it is asked for."""
    name, kind, data = state
    if kind != _IR_ONLY:
        return _numba_unserialize(cls, codegen_, state)
    library = codegen_.create_library(name)
    library._final_module = library._shared_module = ll.parse_bitcode(data)
    library._finalized = True
    _without_machine_code.add(library)
    return library


def _set_env(self: codegen.JITCPUCodegen, env_name: str, env: Any) -> None:
    """``JITCPUCodegen.set_env``, which waits for the symbol of a library kept as LLVM IR
    to be defined (Numba's writes through the address the engine gives, null then)."""
    if self._engine.is_symbol_defined(env_name):
        _numba_set_env(self, env_name, env)
    else:
        _pending_environments[env_name] = env


def _lowering_run_pass(self: Any, state: Any) -> bool:
    """Numba's lowering pass, without a C wrapper for the functions numbax compiles
    that nothing calls through a C pointer: during numbax's compiles, any function
    without a Python entry point (an overload's implementation), and numbax's own
    functions (generated code, kernels), which numbax never hands out as first-class
    function values. A user's own ``numba.njit`` function keeps its wrapper."""
    if getattr(_state, "active", False) and (
        state.flags.no_cpython_wrapper or state.func_id.modname.startswith(_NUMBAX_MODULES)
    ):
        state.flags.no_cfunc_wrapper = True
    if getattr(_state, "active", False) and getattr(
        state.func_id.func, "__numbax_moderate__", False
    ):
        if state.library is None:  # made here as Numba's pass makes it, to be marked
            state.library = state.targetctx.codegen().create_library(state.func_id.func_qualname)
            state.library.enable_object_caching()
        _large_functions.add(state.library)
    return _numba_lowering_run_pass(self, state)


_numba_finalize = codegen.CPUCodeLibrary.finalize
_numba_pass_builder = codegen.CPUCodegen._pass_builder
_numba_optimize_functions = codegen.CPUCodeLibrary._optimize_functions
_numba_get_pointer_to_function = codegen.JITCodeLibrary.get_pointer_to_function
_numba_set_env = codegen.JITCPUCodegen.set_env
_numba_serialize_using_object_code = codegen.JITCodeLibrary.serialize_using_object_code
_numba_unserialize = codegen.CPUCodeLibrary._unserialize.__func__
_numba_lowering_run_pass = typed_passes.BaseNativeLowering.run_pass
if numba.__version__.startswith(_MIRRORED):
    codegen.CPUCodeLibrary.finalize = _finalize  # type: ignore[method-assign]
    codegen.CPUCodegen._pass_builder = _pass_builder  # type: ignore[method-assign]
    codegen.CPUCodeLibrary._optimize_functions = _optimize_functions  # type: ignore[method-assign]
    codegen.JITCodeLibrary.get_pointer_to_function = _get_pointer_to_function  # type: ignore[method-assign]
    codegen.JITCPUCodegen.set_env = _set_env  # type: ignore[method-assign]
    codegen.JITCodeLibrary.serialize_using_object_code = _serialize_using_object_code  # type: ignore[method-assign]
    codegen.JITCodeLibrary._unserialize = classmethod(_unserialize)  # type: ignore[assignment]
    typed_passes.BaseNativeLowering.run_pass = _lowering_run_pass  # type: ignore[method-assign]
