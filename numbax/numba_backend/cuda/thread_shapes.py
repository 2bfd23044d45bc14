"""What a GPU thread knows of one example's arrays: their shapes, from a run on the host.

numba-cuda compiles no NumPy array operation in device code, and a thread can allocate
an array only of a size fixed when compiling (``cuda.local.array``). So one example
runs on the host first (:func:`record_arrays`), which gives the shape and dtype of every
array the function's names hold (:class:`ThreadArrays`); the device function is generated
for those shapes (a batch with other shapes is compiled again). Those shapes are then
numbers in the code (:func:`known_shapes`), so a loop over ``range(v.shape[0])`` is
bounded and its reverse-mode tape fits in the thread's local memory. ``local_arrays.py``
writes the array code itself as loops over local memory, for these shapes.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gast
import numpy as np


@dataclass(frozen=True)
class ArrayValue:
    """The shape and dtype of an array a name holds."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def rank(self) -> int:
        return len(self.shape)


class NotInThread(Exception):
    """An operation on arrays that a GPU thread cannot run, at ``line`` of the function
    being compiled."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class Recording:
    """What one run of a function on the host showed: its result, the array each of its
    names held, and the names that held arrays of two shapes (or an array and a number)."""

    result: Any
    arrays: dict[str, ArrayValue]
    varying: set[str]
    numbers: set[str]

    @property
    def needs_local_arrays(self) -> bool:
        """Whether the function holds or returns arrays (an example's array arguments
        included: what it does with them is known once its code is read)."""
        return bool(self.arrays) or _has_array(self.result)


@dataclass(frozen=True)
class ThreadArrays:
    """What the device function is generated for: the array each name holds in one
    example, the names whose arrays vary, and which leaves of its result are arrays."""

    arrays: tuple[tuple[str, ArrayValue], ...]
    varying: frozenset[str]
    returned: tuple[bool, ...]
    numbers: frozenset[str] = frozenset()

    @classmethod
    def of(cls, recording: Recording) -> ThreadArrays:
        return cls(
            tuple(sorted(recording.arrays.items())),
            frozenset(recording.varying),
            tuple(array_leaves(recording.result)),
            frozenset(recording.numbers),
        )

    def describe(self, parameters: list[str]) -> str:
        """The shapes of the parameters' arrays, for the generated code's header."""
        held = dict(self.arrays)
        return ", ".join(
            f"{name} {held[name].shape} {held[name].dtype}" for name in parameters if name in held
        )


def record_arrays(function: Callable, args: list[Any]) -> Recording:
    """Run ``function`` on ``args`` (one example, on the host) and note the array held
    by each of its local names after every line."""
    arrays: dict[str, ArrayValue] = {}
    numbers: set[str] = set()
    varying: set[str] = set()
    code = function.__code__

    def note(frame: Any) -> None:
        for name, value in frame.f_locals.items():
            if _is_key(value):
                continue  # a thread's keys are pairs of numbers (random_device)
            if isinstance(value, np.ndarray) and value.ndim > 0:
                found = ArrayValue(tuple(int(n) for n in value.shape), value.dtype)
                if arrays.setdefault(name, found) != found or name in numbers:
                    varying.add(name)
            elif isinstance(value, int | float | complex | np.generic | np.ndarray):
                numbers.add(name)
                if name in arrays:
                    varying.add(name)

    def in_function(frame: Any, event: str, arg: Any) -> Any:
        note(frame)
        return in_function

    def calls(frame: Any, event: str, arg: Any) -> Any:
        return in_function if frame.f_code is code else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        with np.errstate(all="ignore"):
            result = function(*args)
    finally:
        sys.settrace(previous)
    return Recording(result, arrays, varying, numbers - set(arrays))


def _is_key(value: Any) -> bool:
    """Whether ``value`` is a random key (or a stack of keys): numbax.random's keys are
    uint32 pairs, which device code keeps as pairs of numbers, not arrays."""
    return isinstance(value, np.ndarray) and value.dtype == np.uint32 and value.shape[-1:] == (2,)


def _has_array(value: Any) -> bool:
    if isinstance(value, tuple):
        return any(map(_has_array, value))
    return np.ndim(value) > 0


def array_leaves(value: Any) -> Iterator[bool]:
    """Whether each number or array of a result (tuples nested any way, depth first)
    is an array."""
    if isinstance(value, tuple):
        for item in value:
            yield from array_leaves(item)
    else:
        yield np.ndim(value) > 0


def known_shapes(fn: gast.FunctionDef, arrays: ThreadArrays) -> gast.FunctionDef:
    """``fn`` with each ``a.shape``, ``a.ndim`` and ``a.size`` of an array of one shape
    written as its number (or tuple), and what is computed from them alone carried
    through (``n = a.shape; m = n[0]``: ``m`` is 3), as the shapes are fixed when
    compiling: a loop over ``range(v.shape[0])`` is then bounded, and its reverse-mode
    tape fits in a thread's local memory."""
    held = {name: value for name, value in arrays.arrays if name not in arrays.varying}
    stores = collections.Counter(
        n.id for n in gast.walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    )
    once = {name for name, count in stores.items() if count == 1}
    known: dict[str, Any] = {}
    for _ in range(3):  # a.shape, then its element, then their readers
        fn = _KnownShapes(held, known).visit(fn)
        for node in gast.walk(fn):
            if assigns_name(node) and node.targets[0].id in once:
                value = _constant_value(node.value)
                if value is not None:
                    known[node.targets[0].id] = value
    return fn


def _constant_value(node: gast.expr) -> Any:
    """The int, or tuple of ints, ``node`` writes, or None."""
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, gast.Tuple) and node.elts:
        values = [_constant_value(e) for e in node.elts]
        return tuple(values) if all(type(v) is int for v in values) else None
    return None


def _literal(value: Any, like: gast.AST) -> gast.expr:
    if isinstance(value, tuple):
        node = gast.Tuple([gast.Constant(v, None) for v in value], gast.Load())
    else:
        node = gast.Constant(value, None)
    return gast.copy_location(node, like)


class _KnownShapes(gast.NodeTransformer):
    def __init__(self, held: dict[str, ArrayValue], known: dict[str, Any]) -> None:
        self.held = held
        self.known = known

    def visit_Name(self, node: gast.Name) -> gast.expr:  # noqa: N802 (the visitor's name)
        if isinstance(node.ctx, gast.Load) and node.id in self.known:
            return _literal(self.known[node.id], node)
        return node

    def visit_Subscript(self, node: gast.Subscript) -> gast.expr:  # noqa: N802
        self.generic_visit(node)
        values, index = _constant_value(node.value), node.slice
        if isinstance(values, tuple) and isinstance(index, gast.Constant):
            if type(index.value) is int and -len(values) <= index.value < len(values):
                return _literal(values[index.value], node)
        return node

    def visit_Attribute(self, node: gast.Attribute) -> gast.expr:  # noqa: N802
        self.generic_visit(node)
        value = node.value
        array = self.held.get(value.id) if isinstance(value, gast.Name) else None
        if array is None or not isinstance(node.ctx, gast.Load):
            return node
        if node.attr == "shape":
            return _literal(array.shape, node)
        if node.attr in ("ndim", "size"):
            return _literal(array.rank if node.attr == "ndim" else int(np.prod(array.shape)), node)
        return node


def assigns_name(stmt: gast.stmt) -> bool:
    """Whether ``stmt`` is ``name = value`` (one target, a name)."""
    return (
        isinstance(stmt, gast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
    )
