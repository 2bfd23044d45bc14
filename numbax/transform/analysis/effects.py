"""Which functions have no effect but their value (and the errors they raise).

Reverse mode runs a helper's lines twice: once in its caller's forward sweep, and again
at the start of the helper's VJP, which needs their values (:func:`vjp_function` with a
cotangent parameter). Of that second run, a call whose value nothing reads is waste,
and in higher derivatives the waste compounds: the VJP of ``grad(f)`` re-runs
``grad(f)``, whose primal calls ``vjp_f``, whose value the second run does not need (it
calls ``vjp_vjp_f``, which computes everything itself). The cleanup pass removes such a
call when the function called is *effect free*: it writes into nothing it did not
allocate, shows nothing, and calls only what is effect free. Raising is allowed: the
first run raised already where the second would.

A function is known effect free when numbax proved it while transforming it:
:func:`effect_free` walks its normalized tree, and the api layer records the verdict on
the function (:func:`record`) and on what it generated from it (:data:`EFFECT_FREE`).
Anything else — a function numbax did not transform, an object it does not know — is
assumed to have effects.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

import gast

from numbax.errors import TransformError
from numbax.transform.walk import walk

EFFECT_FREE = "__numbax_effect_free__"
"""The attribute of a generated function that is True when it is effect free."""

_proved: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
"""User functions numbax transformed → whether they are effect free."""


def record(func: Any, effect_free: bool) -> None:
    """Remember whether ``func`` (a function numbax transformed) is effect free."""
    with contextlib.suppress(TypeError):  # not weakly referenceable: stays unknown
        _proved[func] = effect_free


def known_effect_free(target: Any) -> bool:
    """Whether calling ``target`` is known to have no effect but its value: a function
    numbax proved effect free, a generated function marked so, or a transformation
    (``grad(f)``) whose generated function is."""
    if hasattr(target, "__numbax_function__"):
        try:
            target = target.__numbax_function__()
        except TransformError:  # raised again where the call is compiled or run
            return False
    if getattr(target, EFFECT_FREE, False) is True:
        return True
    try:
        return _proved.get(target, False)
    except TypeError:
        return False


def effect_free(fn: gast.FunctionDef, pure_call: Callable[[gast.Call, bool], bool]) -> bool:
    """Whether running ``fn`` (a normalized function) has no effect but its result and
    the errors it raises: no store into an array it did not allocate itself, no
    ``global`` or ``nonlocal``, and every call effect free (``pure_call(call, True)``:
    raising allowed)."""
    allocated = _allocated_locally(fn, pure_call)
    for node in walk(fn):
        if isinstance(node, gast.Global | gast.Nonlocal | gast.Delete):
            return False
        if isinstance(node, gast.Yield | gast.YieldFrom | gast.Await | gast.Lambda):
            return False
        if isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Store):
            return False
        if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store):
            if not (isinstance(node.value, gast.Name) and node.value.id in allocated):
                return False
        if isinstance(node, gast.Call) and not pure_call(node, True):
            return False
    return True


def _allocated_locally(
    fn: gast.FunctionDef, pure_call: Callable[[gast.Call, bool], bool]
) -> set[str]:
    """Local names every assignment of which binds a new array (a call of a NumPy
    constructor that copies: writing into it changes nothing the caller holds)."""
    fresh: dict[str, bool] = {}
    params = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    for node in walk(fn):
        if isinstance(node, gast.Assign):
            for target in node.targets:
                names = target.elts if isinstance(target, gast.Tuple) else [target]
                for name in names:
                    if isinstance(name, gast.Name):
                        made = len(names) == 1 and _allocates(node.value, pure_call)
                        fresh[name.id] = fresh.get(name.id, True) and made
        elif isinstance(node, gast.AugAssign | gast.For) and isinstance(node.target, gast.Name):
            fresh[node.target.id] = False
        elif isinstance(node, gast.NamedExpr):
            fresh[node.target.id] = False
    return {name for name, made in fresh.items() if made and name not in params}


_ALLOCATORS = frozenset(
    """zeros ones empty full zeros_like ones_like empty_like full_like copy array
    eye identity arange linspace""".split()
)


def _allocates(value: gast.expr, pure_call: Callable[[gast.Call, bool], bool]) -> bool:
    """Whether ``value`` is a call of a NumPy constructor (``np.zeros(...)``,
    ``np.copy(x)``, ``np.array(x)``), which returns an array of its own."""
    return (
        isinstance(value, gast.Call)
        and isinstance(value.func, gast.Attribute)
        and isinstance(value.func.value, gast.Name)
        and value.func.value.id == "np"
        and value.func.attr in _ALLOCATORS
        and not any(k.arg == "copy" for k in value.keywords)
        and pure_call(value, True)
    )
