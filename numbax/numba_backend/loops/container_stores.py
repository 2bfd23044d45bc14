"""Stores into pytree containers in compiled code: a new tuple in the name, not a write.

Compiled code holds a list or dict argument as a tuple or NamedTuple (``boundary.py``),
which it cannot change. Yet the core language stores into containers: normalization
writes an array changed through an item back into its container (``u = params[0];
u[0] = 0.0`` is followed by ``params[0] = u``: ``normalize/aliases.py``), and reverse
mode replays, restores and zeroes such items in the containers and their cotangents.
Here each store with a constant key into a name that may hold a container (a pytree
argument of this specialization, or a name made from one: its items that are
containers, copies, what numbax's helpers make like it), and each write-back with one
(whatever its base: a helper's parameters have no known structure), becomes

    params = nxrt.stored(params, 0, u)

which gives a new tuple with that item replaced (a NamedTuple: that field), and stores
into an array as before. A store with a string key (``p["w"] = w``) is into a dict.

Value semantics are what generated code needs, and they are the caller's too wherever
the store leaves the caller's container as it was: a write-back puts back the very array
the item held, and derivatives' code works on copies or restores what it changed. A
store the user wrote into a container argument (``params[0] = np.zeros(3)``) changes the
caller's list under NumPy, which compiled code cannot do: it is refused at its line.
"""

from __future__ import annotations

from typing import Any

import gast
import numba
import numpy as np
from numba import types
from numba.extending import overload

from numbax import tree_util
from numbax.errors import CompileError
from numbax.numba_backend.boundary import field_name
from numbax.numba_backend.generated import define
from numbax.numba_backend.redirects import lowering_helper
from numbax.transform.normalize.aliases import WRITE_BACK
from numbax.transform.source import FunctionSource
from numbax.transform.walk import walk

__all__ = ["container_stores", "items_kept_as_copies", "may_store_into_containers", "stored"]

_RUNTIME = "nxrt"


@lowering_helper
def stored(base: Any, key: Any, value: Any) -> Any:
    """``base[key] = value``, returning ``base`` (in Python; compiled, a tuple or
    NamedTuple ``base`` is not changed: a new one holds ``value`` at ``key``)."""
    base[key] = value
    return base


def items_kept_as_copies(fn: gast.FunctionDef) -> gast.FunctionDef:
    """``fn`` with each ``nxrt.kept_item(item, base)`` made ``nxrt.owned(item)``, in
    place: for a GPU thread, whose function holds one example's arrays and no pytree, a
    store's base is an array, whose old item is kept as a copy."""
    for node in walk(fn):
        if (
            isinstance(node, gast.Call)
            and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name)
            and node.func.value.id == _RUNTIME
            and node.func.attr == "kept_item"
        ):
            node.func.attr = "owned"
            node.args = node.args[:1]
    return fn


def may_store_into_containers(fn: gast.FunctionDef) -> bool:
    """Whether ``fn`` (as written) writes anything, which its normalized code may write
    back into a container (a subscript store, ``x op= v``, a call for its effect): its
    specializations are then for the structures of their pytree arguments."""
    return any(
        (isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Subscript))
        or isinstance(node, gast.AugAssign)
        or (isinstance(node, gast.Expr) and isinstance(node.value, gast.Call))
        for node in walk(fn)
    )


_UNKNOWN = object()
"""What a parameter of a function numbax generated holds where no structure is known
(compiled as a helper of other compiled code): perhaps a container."""


def container_stores(
    fn: gast.FunctionDef, containers: dict[str, Any] | None, source: FunctionSource
) -> gast.FunctionDef:
    """``fn`` (normalized) with its stores into containers rewritten, in place;
    ``containers``: this specialization's pytree arguments by parameter (None: not
    known, for a function compiled to be called from compiled code; then any parameter
    of a function numbax generated may be one)."""
    user_code = getattr(source.func, "__numbax_identity__", None) is None
    if containers is None and not user_code:
        args = fn.args
        containers = {a.id: _UNKNOWN for a in args.posonlyargs + args.args + args.kwonlyargs}
    held = _holding_containers(fn, containers or {})
    for node in walk(fn):
        for block in ("body", "orelse"):
            stmts = getattr(node, block, None)
            if isinstance(stmts, list):
                setattr(node, block, [_rewritten(s, held, user_code, source) for s in stmts])
    return fn


def _rewritten(
    stmt: gast.stmt, held: dict[str, Any], user_code: bool, source: FunctionSource
) -> gast.stmt:
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Subscript)):
        return stmt
    target = stmt.targets[0]
    key = _constant_key(target.slice)
    if not isinstance(target.value, gast.Name) or key is None:
        return stmt
    name = target.value.id
    write_back = getattr(stmt, WRITE_BACK, False)
    if not (isinstance(key, str) or name in held or write_back):
        return stmt
    if user_code and not write_back and name in held:
        raise _refusal(name, held[name], stmt.lineno, source)
    call = gast.Call(
        gast.Attribute(gast.Name(_RUNTIME, gast.Load(), None, None), "stored", gast.Load()),
        [gast.Name(name, gast.Load(), None, None), target.slice, stmt.value],
        [],
    )
    replaced = gast.Assign([gast.Name(name, gast.Store(), None, None)], call)
    return gast.copy_location(replaced, stmt)


def _refusal(name: str, value: Any, line: int, source: FunctionSource) -> CompileError:
    kind = type(value).__name__
    construct = f"a store into `{name}`, a {kind} argument (or an item of one)"
    return CompileError(
        f"{construct} is not supported under jit (line {line}: `{source.line(line)}`): "
        f"compiled code holds the {kind} as a tuple and cannot change the caller's; "
        f"make a new {kind} in the function instead (`{name} = [v, *{name}[1:]]`, "
        f"`{name} = {{**{name}, 'k': v}}`) and return it, or write into the array "
        f"itself (`{name}[0][...] = v`)",
        function=getattr(source.func, "__qualname__", source.name),
        transformation="jit",
        filename=source.filename,
        lineno=line,
        construct=construct,
    )


def _constant_key(index: gast.expr) -> int | str | None:
    if isinstance(index, gast.Constant) and type(index.value) in (int, str):
        return index.value
    if (
        isinstance(index, gast.UnaryOp)
        and isinstance(index.op, gast.USub)
        and isinstance(index.operand, gast.Constant)
        and type(index.operand.value) is int
    ):
        return -index.operand.value
    return None


def _holding_containers(fn: gast.FunctionDef, containers: dict[str, Any]) -> dict[str, Any]:
    """The names that may hold a container, each with a value of its structure: the
    pytree arguments, names assigned one, an item of one that is a container, or what a
    helper of numbax makes from one (``zeros_like(params)``, ``index_add(ct, 0, v)``)."""
    held = {name: value for name, value in containers.items() if not _leaf(value)}
    changed = bool(held)
    while changed:
        changed = False
        for node in walk(fn):
            if not (isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name)):
                continue
            name = node.targets[0].id
            found = _container_of(node.value, held)
            if name not in held and found is not None:
                held[name] = found
                changed = True
    return held


def _container_of(value: gast.expr, held: dict[str, Any]) -> Any:
    if isinstance(value, gast.Name):
        return held.get(value.id)
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
        base, key = held.get(value.value.id), _constant_key(value.slice)
        if base is None or base is _UNKNOWN or key is None:
            return None  # an item of a parameter of unknown structure: taken for a leaf
        try:
            item = base[key] if not isinstance(key, str) or isinstance(base, dict) else None
        except (IndexError, KeyError, TypeError):
            return None
        return None if item is None or _leaf(item) else item
    if isinstance(value, gast.Call) and value.args and isinstance(value.args[0], gast.Name):
        func = value.func
        numbax_helper = (
            isinstance(func, gast.Attribute)
            and isinstance(func.value, gast.Name)
            and func.value.id == _RUNTIME
        )
        return held.get(value.args[0].id) if numbax_helper else None
    return None


def _leaf(value: Any) -> bool:
    return value is not _UNKNOWN and tree_util.is_flat((value,))


# -- compiled ---------------------------------------------------------------------------
@overload(stored, prefer_literal=True)  # a tuple's position, a NamedTuple's field
def _stored_numba(base, key, value):
    if isinstance(base, types.BaseNamedTuple) and isinstance(key, types.StringLiteral):
        field = key.literal_value
        field = field if field in base.fields else field_name(field)
        return _replaced(base, base.fields.index(field), value, "cls")
    if isinstance(base, types.BaseTuple) and isinstance(key, types.IntegerLiteral):
        position = key.literal_value % len(base)
        made = "cls" if isinstance(base, types.BaseNamedTuple) else ""
        return _replaced(base, position, value, made)
    if isinstance(base, types.BaseTuple) and isinstance(key, types.Integer):
        return lambda base, key, value: numba.literally(key)

    def in_place(base, key, value):
        base[key] = value
        return base

    return in_place


def _replaced(base: types.BaseTuple, position: int, value: types.Type, made: str) -> Any:
    """``impl(base, key, value)``: ``base`` with ``value`` at ``position``, as an array of
    the item's shape where the item is an array and ``value`` a number (a cotangent
    zeroed: ``ct[0] = 0``), so that the tuple keeps its type."""
    item = base.types[position]
    new = "value"
    if isinstance(item, types.Array) and isinstance(value, types.Number):
        new = f"np.full_like(base[{position}], value)"
    parts = [new if i == position else f"base[{i}]" for i in range(len(base))]
    text = f"{made}({', '.join(parts)}{',' if len(parts) == 1 and not made else ''})"
    scope = {"np": np, "cls": getattr(base, "instance_class", None)}
    return define(f"def impl(base, key, value):\n    return {text}\n", scope, "stored")
