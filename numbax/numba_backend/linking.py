"""Link what a compiled function calls without optimizing it a second time.

Numba makes each compiled function's machine code self-contained: it links the LLVM
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

The replacement is installed only for the Numba versions whose ``finalize`` it mirrors
(:data:`_MIRRORED`); with any other, Numba's own runs unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numba
from numba.core import codegen, config

LARGE_BITCODE = 16_000
"""Bytes of bitcode above which a callee is linked after optimization: about 400 LLVM
instructions, far beyond what LLVM's inliner takes (its threshold is a few hundred
instructions' cost, and each callee's own callees are counted in its module)."""

_MIRRORED = ("0.68",)
"""Numba versions whose ``CPUCodeLibrary.finalize`` :func:`_finalize` reproduces."""

_state = threading.local()
_large: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def linking_large_callees_late() -> Iterator[None]:
    """Within this block (this thread), libraries Numba finalizes link their large
    callees after optimizing their own code."""
    previous = getattr(_state, "active", False)
    _state.active = True
    try:
        yield
    finally:
        _state.active = previous


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
    self._optimize_final_module()
    for library in late:
        self._final_module.link_in(library._get_module_for_linking(), preserve=True)
    self._final_module.verify()
    self._finalize_final_module()
    return None


_numba_finalize = codegen.CPUCodeLibrary.finalize
if numba.__version__.startswith(_MIRRORED):
    codegen.CPUCodeLibrary.finalize = _finalize  # type: ignore[method-assign]
