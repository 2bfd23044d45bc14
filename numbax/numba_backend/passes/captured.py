"""Captured numbers and arrays passed in when called, not compiled in.

Numba freezes every global and closure value a function reads into its machine code.
For the numbers and arrays a jitted function captures (``make(k)``'s ``k`` in a
parameter sweep, the data array of ``lambda w: loss(w, X)``), that means one compile
per value: each closure costs a second or more, and the machine code of every one of
them stays in the process (Numba frees little of what it compiled, about 1.3 MB per
function: 500 closures took 1.7 GB). A large array is even copied into the machine
code.

So the function numbax generates for ``nx.jit`` takes each captured number and
numeric array as a parameter of its own, ahead of the user's, and ``jit`` passes the
values they had when it generated the function (``jit`` captures values when it
compiles, as JAX does: an array is copied, read-only, as the constant Numba would have
made of it): one compile serves every closure of the same code. Integers are passed
too (:attr:`Captured.NUMBERS`) unless the function needs them as constants to compile
(a tuple indexed by one, a branch whose sides have other types): ``jit`` then compiles
them in (:attr:`Captured.INEXACT`). Booleans stay compiled in: they are flags, which
decide branches. Only the jitted function's own reads are passed; a helper it calls
keeps its captured values compiled in (their values are in the helper's key).
"""

from __future__ import annotations

import enum
from typing import Any

import gast
import numpy as np

from numbax.transform.resolve import local_names
from numbax.transform.source import FunctionSource

__all__ = ["Captured", "capture_parameters", "passed_when_called"]


class Captured(enum.Enum):
    """Which captured values a specialization takes as parameters."""

    NOTHING = "none: all compiled in (a compiled caller or an exported file passes none)"
    INEXACT = "floats, complex numbers and arrays"
    NUMBERS = "integers too"


_NUMBA_DTYPES = frozenset(np.dtype(t) for t in np.typecodes["AllInteger"] + "?fdFD")
"""The dtypes Numba compiles on the CPU (no float16, no long double)."""


def passed_when_called(value: Any, captured: Captured) -> bool:
    """Whether a captured value is passed to compiled code at each call: a Python float or
    complex number, a NumPy float or complex scalar, an array Numba takes, and for
    :attr:`Captured.NUMBERS` an integer (not a boolean)."""
    if captured is Captured.NOTHING:
        return False
    if type(value) in (float, complex):
        return True
    if isinstance(value, np.floating | np.complexfloating):
        return value.dtype in _NUMBA_DTYPES
    if captured is Captured.NUMBERS and is_integer(value):
        return True
    return type(value) is np.ndarray and value.dtype in _NUMBA_DTYPES


def is_integer(value: Any) -> bool:
    """A Python or NumPy integer (not a boolean)."""
    return type(value) is int or isinstance(value, np.integer)


def capture_parameters(
    fn: gast.FunctionDef, source: FunctionSource, captured: Captured
) -> dict[str, Any]:
    """Make the captured values ``fn`` reads that ``captured`` says are passed (see
    :func:`passed_when_called`) parameters of ``fn``, ahead of its own, in the order it
    first reads them; them by name."""
    # a name a default reads stays bound: the module's ``def`` line reads it
    kept = local_names(fn) | {
        node.id
        for default in [*fn.args.defaults, *fn.args.kw_defaults]
        if default is not None
        for node in gast.walk(default)
        if isinstance(node, gast.Name)
    }
    passed: dict[str, Any] = {}
    for node in (n for statement in fn.body for n in gast.walk(statement)):
        if not (isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load)):
            continue
        if node.id in kept or node.id in passed:
            continue
        if node.id in source.closure:
            value = source.closure[node.id]
        elif node.id in source.globals:
            value = source.globals[node.id]
        else:
            continue
        if passed_when_called(value, captured):
            passed[node.id] = _as_compiled_in(value)
    parameters = [
        gast.Name(id=name, ctx=gast.Param(), annotation=None, type_comment=None) for name in passed
    ]
    first = fn.args.posonlyargs if fn.args.posonlyargs else fn.args.args
    first[:0] = parameters
    return passed


def _as_compiled_in(value: Any) -> Any:
    """The value a call passes: an array copied and read-only, as the constant Numba
    would have compiled in (written in place later, it is not seen; compiled code
    cannot write into it)."""
    if type(value) is not np.ndarray:
        return value
    copy = value.copy()
    copy.flags.writeable = False
    return copy
