"""``isinstance``/``type`` checks on pytree arguments, answered when specializing.

Compiled code holds every list as a tuple and every dict as a NamedTuple (Numba has no
heterogeneous lists or dicts; ``numba_backend/boundary.py``), so ``isinstance(p, list)``
would be False there and ``type(p)`` is not compiled at all. The container types of an
argument are part of the specialization key of a function that asks about them (as the
values of static arguments are), so each such check on an argument's container, or on
a container read from it by constant keys, is a constant of the specialization:

* ``isinstance(v, C)`` (``C`` a class, or a tuple of classes) becomes ``True``/``False``;
* ``type(v) is C`` (``is not``, ``==``, ``!=``) too, and ``t = type(v)`` goes once every
  test of ``t`` has been answered.

``v`` is known where it is a parameter never rebound, or a variable assigned once from
a known container by a constant key, field, or an index of a sequence whose items all
have the same container types (``for q in params``). Checks on leaves (arrays,
scalars) stay for Numba, which types them itself.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver
from numbax.transform.walk import walk

_CONTAINERS = (list, tuple, dict)


def asks_container_types(fn: gast.FunctionDef, resolver: Resolver) -> bool:
    """Whether ``fn`` calls ``isinstance`` or ``type``: its specializations are keyed by
    the container types of their pytree arguments."""
    return any(
        isinstance(node, gast.Call) and _builtin(node.func, resolver) in (isinstance, type)
        for node in walk(fn)
    )


def fold_container_checks(
    fn: gast.FunctionDef, arguments: dict[str, Any], resolver: Resolver
) -> gast.FunctionDef:
    """``fn`` (normalized) with its checks of the container types of ``arguments``
    (parameter → the value the specialization is for) answered, in place."""
    if not arguments or not asks_container_types(fn, resolver):
        return fn
    values = _values(fn)
    known = {
        name: value for name, value in arguments.items() if name not in values and _node(value)
    }
    types: dict[str, type] = {}
    classes: dict[str, tuple[type, ...]] = {}
    changed = True
    while changed:
        changed = False
        for name, node in values.items():
            if node is None or name in known or name in types or name in classes:
                continue
            found = _read(node.value, known, resolver)
            if found is not None:
                known[name] = found
            elif _is_call_of(node.value, type, resolver) and _known(node.value.args[0], known):
                types[name] = type(known[node.value.args[0].id])
            elif (found := _classes(node.value, classes, resolver)) is not None:
                classes[name] = found
            else:
                continue
            changed = True
    if not known:
        return fn
    _Fold(known, types, classes, resolver).visit(fn)
    _drop_unread(fn, set(types) | set(classes))
    return fn


def _node(value: Any) -> bool:
    """Whether ``value`` is a container whose type the key holds (not a leaf)."""
    return isinstance(value, _CONTAINERS) or (
        value is not None and not _leaf(value) and hasattr(value, "__dict__")
    )


def _leaf(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic, int, float, complex, bool, str))


def _builtin(func: gast.expr, resolver: Resolver) -> Any:
    target = resolver.resolve(func)
    return None if target is LOCAL or target is UNRESOLVED else target


def _is_call_of(node: gast.AST, function: Any, resolver: Resolver) -> bool:
    return (
        isinstance(node, gast.Call)
        and len(node.args) == 1
        and not node.keywords
        and _builtin(node.func, resolver) is function
    )


def _known(node: gast.AST, known: dict[str, Any]) -> bool:
    return isinstance(node, gast.Name) and node.id in known


def _values(fn: gast.FunctionDef) -> dict[str, gast.Assign | None]:
    """The names bound in the body, each with the assignment that gives it its one value:
    every assignment of the name assigns the same expression (a reverse sweep reads
    ``q = p[_i]`` again as the primal did), else None (a parameter never rebound is not
    among them)."""
    assigned: dict[str, list[gast.Assign]] = {}
    varying: set[str] = set()
    for node in walk(fn):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node)
            continue
        targets = node.targets if isinstance(node, gast.Assign) else []
        if isinstance(node, (gast.For, gast.AugAssign, gast.AnnAssign)):
            targets = [node.target]
        for target in targets:  # unpacked, a loop's target, updated in place
            varying |= {n.id for n in walk(target) if isinstance(n, gast.Name)}
    values: dict[str, gast.Assign | None] = dict.fromkeys(varying)
    for name, nodes in assigned.items():
        same = len({gast.dump(n.value) for n in nodes}) == 1
        values[name] = nodes[0] if same and name not in varying else None
    return values


def _read(value: gast.AST, known: dict[str, Any], resolver: Resolver) -> Any:
    """The container ``value`` reads from a known one, or None."""
    if isinstance(value, gast.Attribute) and _known(value.value, known):
        found = getattr(known[value.value.id], value.attr, None)
        return found if _node(found) else None
    if not (isinstance(value, gast.Subscript) and _known(value.value, known)):
        return None
    container, key = known[value.value.id], value.slice
    if isinstance(key, gast.Constant) and not isinstance(key.value, (bool, type(None))):
        try:
            found = container[key.value]
        except (KeyError, IndexError, TypeError):
            return None
        return found if _node(found) else None
    if isinstance(key, gast.Name) and isinstance(container, (list, tuple)) and container:
        items = [_shape_of(item) for item in container]
        if all(_node(item) for item in container) and all(i == items[0] for i in items):
            return container[0]  # every item has these container types
    return None


def _shape_of(value: Any) -> Any:
    """The container types of ``value``, comparable (leaves: None)."""
    if isinstance(value, dict):
        return (type(value), tuple((k, _shape_of(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_shape_of(v) for v in value))
    if _node(value):
        return (type(value), tuple(sorted((k, _shape_of(v)) for k, v in vars(value).items())))
    return None


def _classes(node: gast.AST, classes: dict[str, tuple[type, ...]], resolver: Resolver) -> Any:
    """The class or tuple of classes ``node`` denotes (the second argument of
    ``isinstance``), or None."""
    if isinstance(node, gast.Name) and node.id in classes:
        return classes[node.id]
    if isinstance(node, gast.Tuple):
        parts = [_classes(e, classes, resolver) for e in node.elts]
        if any(p is None for p in parts):
            return None
        return tuple(c for p in parts for c in p)
    target = _builtin(node, resolver)
    return (target,) if isinstance(target, type) else None


class _Fold(gast.NodeTransformer):
    def __init__(
        self,
        known: dict[str, Any],
        types: dict[str, type],
        classes: dict[str, tuple[type, ...]],
        resolver: Resolver,
    ) -> None:
        self.known = known
        self.types = types
        self.classes = classes
        self.resolver = resolver

    def visit_Call(self, node: gast.Call) -> gast.AST:
        self.generic_visit(node)
        if (
            len(node.args) == 2
            and not node.keywords
            and _builtin(node.func, self.resolver) is isinstance
            and _known(node.args[0], self.known)
        ):
            classes = _classes(node.args[1], self.classes, self.resolver)
            if classes is not None:
                return gast.Constant(isinstance(self.known[node.args[0].id], classes), None)
        return node

    def visit_Compare(self, node: gast.Compare) -> gast.AST:
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(
            node.ops[0], (gast.Is, gast.IsNot, gast.Eq, gast.NotEq)
        ):
            return node
        left, right = node.left, node.comparators[0]
        kind, other = self._type_of(left), right
        if kind is None:
            kind, other = self._type_of(right), left
        classes = _classes(other, self.classes, self.resolver)
        if kind is None or classes is None or len(classes) != 1:
            return node
        same = kind is classes[0]
        return gast.Constant(
            same if isinstance(node.ops[0], (gast.Is, gast.Eq)) else not same, None
        )

    def _type_of(self, node: gast.AST) -> type | None:
        """The class ``node`` holds: ``t`` of ``t = type(v)``, or ``type(v)`` itself."""
        if isinstance(node, gast.Name) and node.id in self.types:
            return self.types[node.id]
        if _is_call_of(node, type, self.resolver) and _known(node.args[0], self.known):
            return type(self.known[node.args[0].id])
        return None


def _drop_unread(fn: gast.FunctionDef, names: set[str]) -> None:
    """Remove the assignments of ``names`` that nothing reads any more."""
    read = {n.id for n in walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    gone = names - read
    if not gone:
        return
    for node in walk(fn):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                kept = [s for s in block if not _assigns(s, gone)]
                if len(kept) < len(block):
                    block[:] = kept or ([gast.Pass()] if field == "body" else [])


def _assigns(stmt: gast.stmt, names: set[str]) -> bool:
    return (
        isinstance(stmt, gast.Assign)
        and isinstance(stmt.targets[0], gast.Name)
        and stmt.targets[0].id in names
    )
