"""Arrays inside a GPU thread: one example's array code as loops over local memory.

A thread's code (``vmap(f)`` on the GPU, ``f`` maybe a gradient) may compute with the
arrays of its example: ``np.tanh(w @ x + b)``, and the cotangents of its reverse pass.
numba-cuda compiles no NumPy array operation in device code, and a thread can allocate
an array only of a size fixed when compiling (``cuda.local.array``). So:

* one example runs on the host first (:func:`record_arrays`), which gives the shape and
  dtype of every array the function's names hold; the device function is generated
  for those shapes (a batch with other shapes is compiled again);
* each statement that makes an array gets a ``cuda.local.array`` of its shape and
  writes it in loops (:func:`local_arrays`): elementwise lines element by element, with
  NumPy's broadcasting; products, sums and their adjoints as the sums they are;
* arrays the function returns are written into the result arrays the kernel passes it
  for its example (``_result_0``...), since a thread's local memory is gone when its
  function returns; it returns its numbers only;
* an array made in every pass of a loop is written into a buffer made before the
  outermost loop, which only its name may hold (a copy, a view or a tuple of it is
  refused), and reverse mode keeps such a loop's arrays as rows of a tape;
* the example's shapes are numbers in the code (:func:`known_shapes`), so a loop over
  ``range(v.shape[0])`` is bounded.

What is not one of these operations on an array, and what would take one example's
shape for another's (a slice by a value of the example, a branch the host's run did
not take giving a name another shape), is refused at the user's line, naming the
operation, rather than given to numba-cuda to fail on or computed wrong.
"""

from __future__ import annotations

import collections
import copy
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from numbax.numba_backend.math import elementary
from numbax.transform.analysis.shape_sources import ELEMENTWISE_BINOPS
from numbax.transform.names import Namer

ELEMENTWISE_RUNTIME = frozenset(
    [*elementary.__all__, "weak", "mul_pow", "xlogy", "keep_dtype"]
    + [
        f"device_{name}"
        for name in "sqrt isfinite isinf copysign floor ceil trunc rint sign".split()
    ]
)
"""The ``nxrt`` helpers that act on each element: written on an example's elements
they are the scalar functions device code already calls."""


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


# -- the pass ----------------------------------------------------------------------------


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
            if _assigns_name(node) and node.targets[0].id in once:
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


def local_arrays(
    fn: gast.FunctionDef, arrays: ThreadArrays, resolve: Callable[[gast.expr], Any]
) -> gast.FunctionDef:
    """``fn`` (lowered device code) with each array it makes in local memory and each
    operation on arrays written as loops, for the arrays of :func:`record_arrays`. Leaf
    ``k`` of its result, when ``arrays.returned[k]`` says it is an array, is written
    into the parameter ``_result_<j>`` (``j`` counting the array leaves) instead.
    ``resolve(node)``: the object a call's function names (a NumPy ufunc is
    elementwise)."""
    writer = _Writer(fn, arrays, resolve)
    body = writer.block(fn.body, in_loop=False)
    fn.body = _without(body, writer.unread_tuples(body))
    outputs = sum(arrays.returned)
    fn.args.args += [gast.Name(f"_result_{j}", gast.Param(), None, None) for j in range(outputs)]
    return fn


class _Writer:
    def __init__(
        self, fn: gast.FunctionDef, arrays: ThreadArrays, resolve: Callable[[gast.expr], Any]
    ) -> None:
        self.resolve = resolve  # the object a call's function names
        # what names read and hold, from the code as it was (the blocks are rewritten
        # as they are read)
        self.fn = copy.deepcopy(fn)
        self.arrays = dict(arrays.arrays)
        self.varying = set(arrays.varying)
        self.returned = list(arrays.returned)
        self.numbers = set(arrays.numbers)
        self.tuples: dict[str, gast.Tuple] = {}  # names bound to tuple displays
        self.returned_tuples: set[str] = set()  # those a return wrote out
        self.lists: dict[str, gast.List] = {}  # names bound to list displays
        self.listed: set[str] = set()  # those made into local arrays
        self.namer = Namer.for_function(fn)
        self.locals = {a.id for a in fn.args.args} | {
            n.id
            for n in gast.walk(fn)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
        }
        self.made: set[str] = set()  # names holding arrays made here (not an argument's)
        self.renamed: set[tuple[str, str]] = set()  # (y, t): `t = ...; y = t` made one
        self.buffers: list[gast.stmt] | None = None  # made before the outermost loop
        self.hoisted: list[gast.stmt] | None = None  # where _allocate puts them now
        self.index_adds: dict[str, int] = {}  # name: its `name = index_add(name, ...)`
        for node in gast.walk(fn):
            if isinstance(node, gast.Assign) and isinstance(node.value, gast.Call):
                args = node.value.args
                if _runtime_name(node.value) == "index_add" and isinstance(args[0], gast.Name):
                    target = node.targets[0]
                    if isinstance(target, gast.Name) and target.id == args[0].id:
                        self.index_adds[target.id] = self.index_adds.get(target.id, 0) + 1

    # -- statements ------------------------------------------------------------------
    def block(self, stmts: list[gast.stmt], in_loop: bool) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        index = 0
        while index < len(stmts):
            stmt = stmts[index]
            if in_loop and index + 1 < len(stmts):
                merged = self._named(stmt, stmts[index + 1])
                if merged is not None:
                    stmt, index = merged, index + 1
            out += self.statement(stmt, in_loop)
            index += 1
        return out

    def _named(self, made: gast.stmt, named: gast.stmt) -> gast.Assign | None:
        """``t = <value>`` then ``y = t``, with ``t`` read nowhere else (a temporary of
        the core language), as one ``y = <value>``: in a loop ``y`` is then the only name
        of the array the line makes."""
        if not (_assigns_name(made) and _assigns_name(named)):
            return None
        temporary, name = made.targets[0].id, named.targets[0].id
        if not (isinstance(named.value, gast.Name) and named.value.id == temporary):
            return None
        if self._reads(temporary) != 1 or temporary == name:
            return None
        held = self.arrays.get(temporary)
        if held is None or held != self.arrays.get(name) or {temporary, name} & self.varying:
            return None
        self.renamed.add((name, temporary))
        merged = gast.Assign([gast.Name(name, gast.Store(), None, None)], made.value, None)
        vars(merged).update({k: v for k, v in vars(made).items() if k not in made._fields})
        return merged

    def statement(self, stmt: gast.stmt, in_loop: bool) -> list[gast.stmt]:
        if isinstance(stmt, gast.For | gast.While):
            outermost = self.buffers is None
            if outermost:
                self.buffers = []
            stmt.body = self.block(stmt.body, in_loop=True)
            stmt.orelse = self.block(stmt.orelse, in_loop=True)
            if not outermost:
                return [stmt]
            buffers, self.buffers = self.buffers, None
            return _located(buffers, stmt) + [stmt]
        if isinstance(stmt, gast.If):
            stmt.body = self.block(stmt.body, in_loop)
            stmt.orelse = self.block(stmt.orelse, in_loop)
            if not stmt.body and not stmt.orelse:
                return []  # a tape made at the first pass, now made before the loop
            stmt.body = stmt.body or [gast.Pass()]
            return [stmt]
        if isinstance(stmt, gast.Return):
            return _located(self.result(stmt), stmt)
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, gast.Name):
                if isinstance(stmt.value, gast.Tuple):
                    self.tuples[target.id] = stmt.value
                    return [stmt]
                if isinstance(stmt.value, gast.List):
                    self.lists[target.id] = stmt.value
                    return [stmt]
                return _located(self.assign(target.id, stmt.value, stmt, in_loop), stmt)
            if isinstance(target, gast.Subscript) and not self._reads_arrays(stmt.value):
                return [stmt]  # one element of an array: a number
            if isinstance(target, gast.Subscript) and _names([target.value], _base(target)):
                return _located(self.store(target, stmt.value, stmt), stmt)
        if isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name):
            name = stmt.target.id
            if name in self.arrays:
                self._fixed(name, stmt)
                value = gast.BinOp(gast.Name(name, gast.Load(), None, None), stmt.op, stmt.value)
                return _located(self.elementwise(name, value, stmt, allocate=False), stmt)
        if self._reads_arrays(stmt):
            raise NotInThread(
                f"{_text(stmt)!r} works on whole arrays in a way a GPU thread cannot run yet",
                getattr(stmt, "lineno", None),
            )
        return [stmt]

    def assign(self, name: str, value: gast.expr, stmt: gast.stmt, in_loop: bool) -> list:
        if isinstance(value, gast.Call) and _runtime_name(value) == "local_tape":
            if self._reads_arrays(value.args[0]):
                return self.tape(name, value)
        if name not in self.arrays:
            if not self._reads_arrays(value):
                return [stmt]  # numbers only
            if not self._inferred(name, value):
                return self.to_number(name, value, stmt)
        self._fixed(name, stmt)
        if isinstance(value, gast.Subscript):
            self._constant_slices(value, stmt)
        if isinstance(value, gast.Name | gast.Subscript):
            return [stmt]  # another name for an array, or a view of one: nothing to make
        if isinstance(value, gast.Call) and _runtime_name(value) == "index_add":
            added = self.index_add(name, value, stmt)
            if added is not None:
                return added
        if in_loop:
            return self.in_a_loop(name, value, stmt)
        if any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(value)):
            # written while read (``_ct_x = _ct_x + t``): into an array of its own
            own = self.namer.fresh(name)
            self.arrays[own] = self.arrays[name]
            made = self.assign(own, value, stmt, in_loop)
            return [*made, _assign(name, gast.Name(own, gast.Load(), None, None))]
        return self._make(name, value, stmt)

    def tape(self, name: str, value: gast.Call) -> list[gast.stmt]:
        """A tape of ``capacity`` arrays like ``value`` (a loop's reverse-mode tape): one
        array with a row for each, made before the outermost loop."""
        array, capacity = value.args
        if not isinstance(capacity, gast.Constant):
            raise NotInThread(_unknown(value), getattr(value, "lineno", None))
        held = self.arrays[array.id] if isinstance(array, gast.Name) else None
        if held is None:
            raise NotInThread(_unknown(value), getattr(value, "lineno", None))
        self.arrays[name] = ArrayValue((int(capacity.value), *held.shape), held.dtype)
        return self._allocate(name)

    def store(self, target: gast.Subscript, value: gast.expr, stmt: Any) -> list[gast.stmt]:
        """``a[k] = <array>`` (a tape's push, a row written): element by element into
        the row, which has the value's shape."""
        if not (isinstance(target.value, gast.Name) and target.value.id in self.arrays):
            raise NotInThread(_unknown(value), getattr(stmt, "lineno", None))
        row = self._indexed_shape(target)
        if not (self._elementwise(value) and self._operation(value) is None):
            raise NotInThread(_unknown(value), getattr(stmt, "lineno", None))
        element = _Indexed(self, row).visit(value)
        index = target.slice.elts if isinstance(target.slice, gast.Tuple) else [target.slice]
        at = ", ".join([*(_text(i) for i in index), _indices(len(row))]).rstrip(", ")
        return _parse(_nest(row, f"{target.value.id}[{at}] = {_text(element)}"))

    def in_a_loop(self, name: str, value: gast.expr, stmt: Any) -> list[gast.stmt]:
        """``name = value`` in a loop: written into a buffer of the statement's own, made
        before the outermost loop, then given the name. Sound where no other name may
        hold the buffer (``name`` is the only one: no copy, view or tuple of it) and the
        buffer is not read while written (``value`` reads ``name`` only elementwise, at
        the element written; else through a second buffer)."""
        if self._aliased(name) or self._viewed(name):
            raise NotInThread(
                f"{name} is a new array in every pass of a loop, and another name may hold "
                "it (a copy, a view, a tuple), which a GPU thread's one buffer for it cannot "
                "keep apart: write the loop's arrays element by element into arrays made "
                "before it",
                getattr(stmt, "lineno", None),
            )
        if self._operation(value) == "unbroadcast" and _names(value.args[:1], name):
            if self._shape(value.args[0]) == self.arrays[name].shape:
                return []  # its own cotangent, of its own shape: as it is
        own = self.namer.fresh(f"{name.lstrip('_')}_buffer")
        self.arrays[own] = self.arrays[name]
        reads_itself = any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(value))
        saved, self.buffers = self.buffers, None
        self.hoisted = saved
        try:
            if reads_itself and not self._elementwise_of_itself(name, value):
                written = self.namer.fresh(f"{name.lstrip('_')}_next")
                self.arrays[written] = self.arrays[name]
                made = self._make(written, value, stmt) + self._allocate(own)
                made += _parse(
                    _nest(self.arrays[name].shape, _copy(own, written, self.arrays[name].rank))
                )
            else:
                made = self._make(own, value, stmt)
        finally:
            self.hoisted, self.buffers = None, saved
        return [*made, _assign(name, gast.Name(own, gast.Load(), None, None))]

    def _make(self, name: str, value: gast.expr, stmt: Any) -> list[gast.stmt]:
        """A new array ``name`` of ``value``: an operation on arrays, or elementwise."""
        operation = self._operation(value)
        if operation is not None:
            return self.array_operation(name, operation, value, stmt)
        if self._elementwise(value):
            return self.elementwise(name, value, stmt, allocate=True)
        raise NotInThread(_unknown(value), getattr(stmt, "lineno", None))

    def _elementwise_of_itself(self, name: str, value: gast.expr) -> bool:
        """Whether ``value`` is elementwise and reads ``name`` only whole (at the element
        being written, as its shape is the result's)."""
        if self._operation(value) is not None or not self._elementwise(value):
            return False
        return not any(
            isinstance(n, gast.Subscript) and _names(list(gast.walk(n.value)), name)
            for n in gast.walk(value)
        )

    def _viewed(self, name: str) -> bool:
        """Whether a view of ``name``'s array (a row, a slice) is given a name."""
        return any(
            isinstance(n, gast.Assign)
            and isinstance(n.value, gast.Subscript)
            and _names([n.value.value], name)
            and isinstance(n.targets[0], gast.Name)
            and n.targets[0].id in self.arrays
            for n in gast.walk(self.fn)
        )

    def index_add(self, name: str, value: gast.Call, stmt: Any) -> list[gast.stmt] | None:
        """``name = index_add(a, index, v)`` as ``a[index] += v`` in place, where no other
        name reads ``a``'s array (a cotangent made here, added into element by element);
        None where that cannot be shown."""
        base, index, added = value.args
        if not (isinstance(base, gast.Name) and base.id in self.made):
            return None
        indices = index.elts if isinstance(index, gast.Tuple) else [index]
        if not all(self._is_number(i) for i in indices):
            return None  # a slice: not one element or row
        accumulating = base.id == name
        if accumulating and self._aliased(name):
            return None
        if not accumulating and self._reads(base.id) != 1:
            return None
        self.made.add(name)
        shape = self._shape(added)
        at = ", ".join([*(_text(i) for i in indices), *(f"_i{k}" for k in range(len(shape)))])
        element = f"{_text(added)}[{_indices(len(shape))}]" if shape else _text(added)
        out = [] if accumulating else [_assign(name, base)]
        return out + _parse(_nest(shape, f"{name}[{at}] += {element}"))

    def _is_number(self, node: gast.expr) -> bool:
        if isinstance(node, gast.Constant):
            return isinstance(node.value, int)
        return isinstance(node, gast.Name) and node.id in self.numbers

    def _reads(self, name: str) -> int:
        return sum(
            isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
            for n in gast.walk(self.fn)
        )

    def _aliased(self, name: str) -> bool:
        """Whether another name may hold ``name``'s array: one name given the other,
        ``keep_dtype`` of it (but in the last return), or a tuple that is not only the
        result returned at the end (``unbroadcast`` of the same shape gives it as it is
        only outside loops, where no buffer is written twice)."""
        final = _returned(self.fn)
        for node in gast.walk(self.fn):
            if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
                value, target = node.value, node.targets[0].id
                if isinstance(value, gast.Name) and name in (value.id, target):
                    if (target, value.id) not in self.renamed:
                        return True
                if isinstance(value, gast.Tuple) and _names(value.elts, name):
                    if self._reads(target) != 1 or target not in self._result_tuples():
                        return True
            if isinstance(node, gast.Call) and node is not final and _names(node.args[:1], name):
                if _runtime_name(node) == "keep_dtype":
                    return True
        return False

    def _result_tuples(self) -> set[str]:
        """The names of tuples the last ``return`` reads, directly or in other tuples,
        made outside any loop (a buffer they hold is not written again)."""
        displays = {
            n.targets[0].id: n.value
            for n in self.fn.body
            if _assigns_name(n) and isinstance(n.value, gast.Tuple)
        }
        final = _returned(self.fn)
        found: set[str] = set()
        if final is None:
            return found
        todo = [n.id for n in gast.walk(final) if isinstance(n, gast.Name)]
        while todo:
            name = todo.pop()
            if name in displays and name not in found:
                found.add(name)
                todo += [n.id for n in gast.walk(displays[name]) if isinstance(n, gast.Name)]
        return found

    def to_number(self, name: str, value: gast.expr, stmt: gast.stmt) -> list:
        """``name = <a number computed from arrays>``: a sum or a product of vectors."""
        operation = self._operation(value)
        if operation is None:
            raise NotInThread(_unknown(value), getattr(stmt, "lineno", None))
        args = _arguments(value)
        if isinstance(value, gast.Call) and value.keywords:
            raise NotInThread(_unknown(value), getattr(stmt, "lineno", None))
        if operation in ("sum", "mean", "prod", *_EXTREMA) and _full(args[1:]):
            args = args[:1]  # axis=None, keepdims=False: the whole array
        shapes = [self._shape(a) for a in args]
        if operation in ("dot", "matmul", "vdot", "inner") and shapes == [shapes[0], shapes[0]]:
            return self.contraction(name, "k,k->", args, (), stmt)
        if operation == "sum" and len(args) == 1:
            spec = _letters(len(shapes[0])) + "->"
            return self.contraction(name, spec, args, (), stmt)
        if operation == "unbroadcast" and self._shape(args[1]) == ():
            spec = _letters(len(shapes[0])) + "->"
            return self.contraction(name, spec, args[:1], (), stmt)
        if operation in _EXTREMA and len(args) == 1:
            return self.extremum(name, args[0], _EXTREMA[operation])
        if operation in ("mean", "prod") and len(args) == 1:
            return self.mean_or_product(name, operation, args[0])
        if operation == "reduced_count" and len(args) == 2:
            size = int(np.prod(shapes[0])) // max(1, int(np.prod(shapes[1])))
            dtype = _inexact(self._dtype(args[:1]))
            return [_parse(f"{name} = {_dtype_text(dtype)}({size})")[0]]
        raise NotInThread(_unknown(value), getattr(stmt, "lineno", None))

    def extremum(self, name: str, array: gast.expr, compare: str) -> list[gast.stmt]:
        """``name = np.max(array)`` (``compare`` ``>``) or ``np.min`` (``<``): a NaN
        wins, as in NumPy."""
        shape = self._shape(array)
        if 0 in shape:
            raise NotInThread(
                f"the {'maximum' if compare == '>' else 'minimum'} of {_text(array)!r}, "
                "which has no elements",
                getattr(array, "lineno", None),
            )
        element = f"{_text(array)}[{_indices(len(shape))}]"
        first = f"{_text(array)}[{', '.join('0' for _ in shape)}]"
        body = f"if {element} {compare} {name} or {element} != {element}:\n    {name} = {element}"
        return _parse(f"{name} = {first}\n" + _nest(shape, body))

    def mean_or_product(self, name: str, operation: str, array: gast.expr) -> list[gast.stmt]:
        shape = self._shape(array)
        dtype = self._dtype([array])
        element = f"{_text(array)}[{_indices(len(shape))}]"
        if operation == "prod":
            start, step = f"{_dtype_text(dtype)}(1)", f"{name} *= {element}"
            return _parse(f"{name} = {start}\n" + _nest(shape, step))
        start = f"{_dtype_text(_inexact(dtype))}(0)"
        size = int(np.prod(shape))
        text = f"{name} = {start}\n" + _nest(shape, f"{name} += {element}")
        return _parse(text + f"\n{name} = {name} / {_dtype_text(_inexact(dtype))}({size})")

    def result(self, stmt: gast.Return) -> list[gast.stmt]:
        """``return`` of a result with arrays: each written into its ``_result_<j>``."""
        if not any(self.returned):
            return [stmt]
        leaves = list(self._leaves(stmt.value))
        if len(leaves) != len(self.returned):
            raise NotInThread(
                "its result's structure is not written out where it returns (a tuple of "
                "names), so its arrays cannot be written for the kernel",
                getattr(stmt, "lineno", None),
            )
        out: list[gast.stmt] = []
        numbers: list[gast.expr] = []
        outputs = 0
        for leaf, is_array in zip(leaves, self.returned, strict=True):
            if not is_array:
                numbers.append(leaf)
                continue
            target = f"_result_{outputs}"
            outputs += 1
            shape = self._shape(leaf)
            index = ", ".join(f"_i{k}" for k in range(len(shape)))
            body = f"{target}[{index}] = {_text(leaf)}[{index}]"
            out += _parse(_nest(shape, body))
        if numbers:
            value = numbers[0] if len(numbers) == 1 else gast.Tuple(numbers, gast.Load())
            out.append(gast.Return(value))
        else:
            out.append(gast.Return(None))
        return out

    def unread_tuples(self, body: list[gast.stmt]) -> set[str]:
        """The tuples of arrays only a ``return`` read, which it now writes out, and the
        lists of numbers only made into local arrays."""
        read = {
            n.id
            for stmt in body
            for n in gast.walk(stmt)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
        }
        return (self.returned_tuples | self.listed) - read

    def _leaves(self, value: gast.expr) -> Iterator[gast.expr]:
        if isinstance(value, gast.Call) and _runtime_name(value) == "keep_dtype":
            yield from self._leaves(value.args[0])
        elif isinstance(value, gast.Name) and value.id in self.tuples:
            self.returned_tuples.add(value.id)
            yield from self._leaves(self.tuples[value.id])
        elif isinstance(value, gast.Tuple):
            for item in value.elts:
                yield from self._leaves(item)
        else:
            yield value

    # -- operations ------------------------------------------------------------------
    def _operation(self, value: gast.expr) -> str | None:
        if isinstance(value, gast.BinOp) and isinstance(value.op, gast.MatMult):
            return "matmul"
        if isinstance(value, gast.Call):
            name = _runtime_name(value)
            if name is None and isinstance(value.func, gast.Attribute):
                name = value.func.attr  # np.dot, np.outer...
            if name in _ARRAY_OPERATIONS:
                return name
        return None

    def array_operation(self, name: str, operation: str, value: gast.expr, stmt: Any) -> list:
        args = _arguments(value)
        ranks = tuple(len(self._shape(a)) for a in args)
        if operation in ("matmul", "dot") and ranks in _PRODUCTS:
            return self.contraction(name, _PRODUCTS[ranks], args, self.arrays[name].shape, stmt)
        if operation in ("matmul_vjp_x", "dot_vjp_a", "matmul_vjp_y", "dot_vjp_b"):
            ct, x, y = args
            table = _VJP_X if operation in ("matmul_vjp_x", "dot_vjp_a") else _VJP_Y
            found = table.get((len(self._shape(x)), len(self._shape(y))))
            if found is not None:
                spec, order = found
                operands = [(ct, x, y)[k] for k in order]
                return self.contraction(name, spec, operands, self.arrays[name].shape, stmt)
        if operation == "outer" and ranks == (1, 1):
            return self.contraction(name, "i,j->ij", args, self.arrays[name].shape, stmt)
        if operation == "unbroadcast":
            if self._shape(args[1]) != self.arrays[name].shape:
                raise _other_shape(name, self.arrays[name].shape, stmt)
            return self.unbroadcast(name, args[0], stmt)
        if operation == "broadcast_reduced":
            return self.spread(name, args, stmt)
        if operation in ("owned", "copy") and len(args) == 1:  # a fresh copy
            return self.elementwise(name, args[0], stmt, allocate=True)
        if operation in ("array", "asarray") and len(args) == 1:
            made = self.from_numbers(name, args[0])
            if made is not None:
                return made
        if operation == "tie_weights" and _full(args[2:]):
            return self.tie_weights(name, args[0], args[1])
        if operation == "prod_others" and _full(args[1:]) and ranks[0] == 1:
            return self.prod_others(name, args[0])
        if operation in ("zeros", "ones") and not all(map(self._static, args)):
            raise NotInThread(
                f"{_text(value)!r} makes an array whose shape is a value of the example, "
                "and a GPU thread's arrays have one shape: give the shape as constants "
                "(or np.zeros_like), or run it on the CPU (backend='cpu')",
                getattr(stmt, "lineno", None),
            )
        if operation in ("zeros_like", "zeros"):
            return self.elementwise(name, gast.Constant(0, None), stmt, True, fill=True)
        if operation in ("ones_like", "ones"):
            return self.elementwise(name, gast.Constant(1, None), stmt, True, fill=True)
        raise NotInThread(_unknown(value), getattr(stmt, "lineno", None))

    def from_numbers(self, name: str, value: gast.expr) -> list[gast.stmt] | None:
        """``np.array([a, b...])`` of numbers: a local array given each; None for
        anything else."""
        if isinstance(value, gast.Name) and value.id in self.lists:
            self.listed.add(value.id)
            value = self.lists[value.id]
        if not isinstance(value, gast.List | gast.Tuple):
            return None
        if self.arrays[name].shape != (len(value.elts),) or self._reads_arrays(value):
            return None
        return self._allocate(name) + [
            _assign_element(name, k, element) for k, element in enumerate(value.elts)
        ]

    def tie_weights(self, name: str, array: gast.expr, extremum: gast.expr) -> list[gast.stmt]:
        """``1/count`` where ``array`` attains its ``extremum`` (its ``count`` ties share
        the derivative, as in JAX), 0 elsewhere; NaN everywhere when it attains it
        nowhere (a NaN extremum)."""
        shape = self.arrays[name].shape
        count = self.namer.fresh("count")
        at = f"{_text(array)}[{_indices(len(shape))}] == {_text(extremum)}"
        counted = f"{count} = 0\n" + _nest(shape, f"if {at}:\n    {count} += 1")
        share = f"(1.0 / {count} if {at} else 0.0) if {count} else np.nan"
        weight = f"{name}[{_indices(len(shape))}] = {share}"
        return _parse(counted) + self._allocate(name) + _parse(_nest(shape, weight))

    def prod_others(self, name: str, array: gast.expr) -> list[gast.stmt]:
        """Each element's product of the others: the products before it, then after it
        (exact with zeros, never a quotient)."""
        (n,) = self.arrays[name].shape
        before, after = self.namer.fresh("before"), self.namer.fresh("after")
        one = f"{_dtype_text(self.arrays[name].dtype)}(1)"
        a = _text(array)
        text = (
            f"{before} = {one}\n"
            f"for _i0 in range({n}):\n    {name}[_i0] = {before}\n    {before} *= {a}[_i0]\n"
            f"{after} = {one}\n"
            f"for _i0 in range({n - 1}, -1, -1):\n    {name}[_i0] *= {after}\n"
            f"    {after} *= {a}[_i0]"
        )
        return self._allocate(name) + _parse(text)

    def contraction(
        self, name: str, spec: str, operands: list[gast.expr], shape: tuple, stmt: Any
    ) -> list[gast.stmt]:
        """``name = einsum(spec, *operands)`` as loops: a fresh local array (a number
        when ``shape`` is ``()``) summed into element by element."""
        inputs, output = spec.split("->")
        sizes: dict[str, int] = {}
        for letters, operand in zip(inputs.split(","), operands, strict=True):
            for letter, size in zip(letters, self._shape(operand), strict=True):
                if sizes.setdefault(letter, size) != size:
                    raise _other_shape(name, shape, stmt)
        if tuple(sizes[c] for c in output) != tuple(shape):
            raise _other_shape(name, shape, stmt)
        summed = [c for c in dict.fromkeys(inputs.replace(",", "")) if c not in output]
        product = " * ".join(
            f"{_text(op)}[{', '.join(f'_{c}' for c in letters)}]" if letters else _text(op)
            for letters, op in zip(inputs.split(","), operands, strict=True)
        )
        element = f"{name}[{', '.join(f'_{c}' for c in output)}]" if output else name
        zero = f"{_dtype_text(self.arrays[name].dtype if output else self._dtype(operands))}(0)"
        inner = f"{element} += {product}" if summed else f"{element} = {product}"
        for c in reversed(summed):
            inner = f"for _{c} in range({sizes[c]}):\n" + _indent(inner)
        if summed:
            inner = f"{element} = {zero}\n" + inner
        for c in reversed(output):
            inner = f"for _{c} in range({sizes[c]}):\n" + _indent(inner)
        return (self._allocate(name) if output else []) + _parse(inner)

    def unbroadcast(self, name: str, value: gast.expr, stmt: Any) -> list[gast.stmt]:
        """The cotangent ``value`` summed down to ``name``'s shape (``like``'s)."""
        shape, source = self.arrays[name].shape, self._shape(value)
        if source == shape and self.hoisted is None:
            return [_assign(name, value)]  # the same shape: the same values
        if source == shape:  # in a loop: a copy, so that no two names hold one buffer
            return self.elementwise(name, value, stmt, allocate=True)
        extra = len(source) - len(shape)
        letters = _letters(len(source))
        kept = "".join(
            c for k, c in enumerate(letters) if k >= extra and shape[k - extra] == source[k]
        )
        if len(kept) != len(shape):  # axes of size 1 kept: summed into index 0
            out = self._allocate(name)
            out += _parse(_nest(shape, f"{name}[{_indices(len(shape))}] = 0"))
            target = ", ".join(
                f"_i{k}" if shape[k] == source[k + extra] else "0" for k in range(len(shape))
            )
            body = f"{name}[{target}] += {_text(value)}[{_indices(len(source))}]"
            return out + _parse(_nest(source, body))
        return self.contraction(name, f"{letters}->{kept}", [value], shape, stmt)

    def spread(self, name: str, args: list[gast.expr], stmt: Any) -> list[gast.stmt]:
        """``broadcast_reduced(ct, a, axis, keepdims)``: ``ct`` spread back over the
        axes of ``a`` a reduction summed."""
        value, _, *options = args
        axis = _constant(options[0]) if options else None
        keepdims = bool(_constant(options[1])) if len(options) > 1 else False
        shape = self.arrays[name].shape
        if self._shape(value) == ():
            return self.elementwise(name, value, stmt, allocate=True, fill=True)
        axes = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
        reduced = {a % len(shape) for a in axes}
        index = [
            "0" if k in reduced else f"_i{k}"
            for k in range(len(shape))
            if keepdims or k not in reduced
        ]
        body = f"{name}[{_indices(len(shape))}] = {_text(value)}[{', '.join(index)}]"
        return self._allocate(name) + _parse(_nest(shape, body))

    def elementwise(
        self, name: str, value: gast.expr, stmt: Any, allocate: bool, fill: bool = False
    ) -> list[gast.stmt]:
        """``name = value`` element by element, each array read with broadcasting;
        ``fill``: ``value`` is a number each element takes."""
        shape = self.arrays[name].shape
        read = [self._shape(leaf) for leaf in _Indexed(self, shape).leaves(value)]
        if not (fill or (read and np.broadcast_shapes(*read) == shape)):
            raise _other_shape(name, shape, stmt)
        element = _Indexed(self, shape).visit(value)
        body = f"{name}[{_indices(len(shape))}] = {_text(element)}"
        return (self._allocate(name) if allocate else []) + _parse(_nest(shape, body))

    # -- what values are -------------------------------------------------------------
    def _allocate(self, name: str) -> list[gast.stmt]:
        """``name = cuda.local.array(<its shape>, <its dtype>)``: where it is written, or
        before the outermost loop when it is written in one (its buffer is then the
        same in every pass)."""
        self.made.add(name)
        array = self.arrays[name]
        shape = f"({array.shape[0]},)" if array.rank == 1 else str(array.shape)
        made = _parse(f"{name} = cuda.local.array({shape}, {_dtype_text(array.dtype)})")
        if self.hoisted is None:
            return made
        self.hoisted += made
        return []

    def _static(self, node: gast.expr) -> bool:
        """A value fixed when compiling: constants, and globals or closure variables (the
        generated code freezes them), in tuples or negated."""
        if isinstance(node, gast.Name):
            return node.id not in self.locals
        if isinstance(node, gast.UnaryOp):
            return self._static(node.operand)
        if isinstance(node, gast.Tuple):
            return all(map(self._static, node.elts))
        return isinstance(node, gast.Constant)

    def _constant_slices(self, view: gast.Subscript, stmt: Any) -> None:
        """A view's shape must be the one example's run saw in every example: its slices'
        bounds written as constants (``v[1:]``, ``v[::-1]``), not values of the example."""
        index = view.slice.elts if isinstance(view.slice, gast.Tuple) else [view.slice]
        for part in index:
            if not isinstance(part, gast.Slice):
                continue
            for bound in (part.lower, part.upper, part.step):
                if bound is not None and not self._static(bound):
                    raise NotInThread(
                        f"{_text(view)!r} slices by a value of the example, so the view's "
                        "shape may differ between examples, and a GPU thread's arrays have "
                        "one shape: slice by constants, or run it on the CPU (backend='cpu')",
                        getattr(stmt, "lineno", None),
                    )

    def _fixed(self, name: str, stmt: Any) -> None:
        if name in self.varying:
            raise NotInThread(
                f"{name} holds arrays of different shapes (or an array and a number) in one "
                "run, so a GPU thread cannot give it one array in its local memory",
                getattr(stmt, "lineno", None),
            )

    def _shape(self, node: gast.expr) -> tuple[int, ...]:
        """The shape of an operand: a name's array, an array's element or row, a
        number's ``()``."""
        if isinstance(node, gast.Name) and node.id in self.arrays:
            return self.arrays[node.id].shape
        if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name):
            if node.value.id in self.arrays:
                return self._indexed_shape(node)
        if self._reads_arrays(node):
            raise NotInThread(_unknown(node), getattr(node, "lineno", None))
        return ()

    def _indexed_shape(self, node: gast.Subscript) -> tuple[int, ...]:
        base = self.arrays[node.value.id].shape
        index = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        if any(isinstance(i, gast.Slice) for i in index):
            raise NotInThread(
                f"{_text(node)!r} slices an array inside a GPU thread; index it element by element",
                getattr(node, "lineno", None),
            )
        return base[len(index) :]

    def _reads_arrays(self, node: gast.AST) -> bool:
        """Whether ``node`` reads a whole array, or a row of one (not an element)."""
        if isinstance(node, gast.Name):
            return node.id in self.arrays and not isinstance(node.ctx, gast.Store)
        if isinstance(node, gast.Attribute) and node.attr in _NUMBERS_OF_AN_ARRAY:
            return False
        if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name):
            if node.value.id in self.arrays:
                return self._indexed_shape(node) != () or self._reads_arrays(node.slice)
        return any(self._reads_arrays(child) for child in gast.iter_child_nodes(node))

    def _dtype(self, operands: list[gast.expr]) -> np.dtype:
        found = [
            self.arrays[op.id].dtype
            for op in operands
            if isinstance(op, gast.Name) and op.id in self.arrays
        ]
        return np.result_type(*found) if found else np.dtype(np.float64)

    def _elementwise(self, value: gast.expr) -> bool:
        for node in gast.walk(value):
            if isinstance(node, gast.BinOp) and not isinstance(node.op, ELEMENTWISE_BINOPS):
                return False
            if isinstance(node, gast.Call):
                name = _runtime_name(node)
                if name in ELEMENTWISE_RUNTIME or _is_math(node):
                    continue
                ufunc = self.resolve(node.func)
                if not (isinstance(ufunc, np.ufunc) and ufunc.signature is None):
                    return False
                if node.keywords or (ufunc.nin, ufunc.nout) != (len(node.args), 1):
                    return False
        return True

    def _inferred(self, name: str, value: gast.expr) -> bool:
        """Whether ``name``, which the host's run never gave an array (it is written on
        a path that run did not take), holds one here: an elementwise line of float64
        arrays it knows, whose shape is their broadcast. Noted in :attr:`arrays`; False
        where that cannot be told."""
        if name in self.numbers or not self._elementwise(value):
            return False
        leaves = [
            n
            for n in gast.walk(value)
            if isinstance(n, gast.Name) and n.id in self.arrays and isinstance(n.ctx, gast.Load)
        ]
        dtypes = {self.arrays[n.id].dtype for n in leaves}
        if not leaves or dtypes != {np.dtype(np.float64)}:
            return False  # float32 could become float64 with a number beside it
        if isinstance(value, gast.Compare | gast.BoolOp) or any(
            isinstance(n, gast.Subscript) for n in gast.walk(value)
        ):
            return False  # booleans, or rows of arrays: not inferred
        shape = np.broadcast_shapes(*(self.arrays[n.id].shape for n in leaves))
        self.arrays[name] = ArrayValue(tuple(shape), np.dtype(np.float64))
        return True


class _Indexed(gast.NodeTransformer):
    """An elementwise expression on one element of a result of ``shape``: each array
    read at the element's index, broadcast as NumPy does."""

    def __init__(self, writer: _Writer, shape: tuple[int, ...]) -> None:
        self.writer = writer
        self.shape = shape

    def _index(self, node: gast.expr) -> gast.expr:
        own = self.writer._shape(node)
        if own == ():
            return node
        skip = len(self.shape) - len(own)
        index = [
            "0" if size == 1 and self.shape[skip + k] != 1 else f"_i{skip + k}"
            for k, size in enumerate(own)
        ]
        return _parse_expression(f"{_text(node)}[{', '.join(index)}]")

    def leaves(self, value: gast.expr) -> list[gast.expr]:
        """The arrays ``value`` reads whole (names, and rows of arrays)."""
        found: list[gast.expr] = []

        class Leaves(gast.NodeVisitor):
            def visit_Name(inner, node: gast.Name) -> None:  # noqa: N802, N805
                if node.id in self.writer.arrays:
                    found.append(node)

            def visit_Subscript(inner, node: gast.Subscript) -> None:  # noqa: N802, N805
                if self.writer._shape(node) != ():
                    found.append(node)

        Leaves().visit(value)
        return found

    def visit_Name(self, node: gast.Name) -> gast.expr:  # noqa: N802 (the visitor's name)
        return self._index(node) if node.id in self.writer.arrays else node

    def visit_Subscript(self, node: gast.Subscript) -> gast.expr:  # noqa: N802
        return self._index(node)


# -- the operations' loops -----------------------------------------------------------------

_NUMBERS_OF_AN_ARRAY = ("shape", "ndim", "size")
"""An array's attributes that are numbers (or tuples of them): device code reads them."""

_ARRAY_OPERATIONS = frozenset(
    "matmul dot vdot inner outer sum unbroadcast broadcast_reduced matmul_vjp_x matmul_vjp_y "
    "dot_vjp_a dot_vjp_b zeros_like zeros ones_like ones array asarray max amax min amin mean "
    "prod reduced_count tie_weights prod_others owned copy".split()
)

_PRODUCTS = {(1, 1): "k,k->", (2, 1): "ik,k->i", (1, 2): "k,kn->n", (2, 2): "ik,kn->in"}
"""``x @ y`` (and ``np.dot``) by the ranks of ``x`` and ``y``."""

_VJP_X = {
    (1, 1): (",k->k", (0, 2)),
    (2, 1): ("i,k->ik", (0, 2)),
    (1, 2): ("kn,n->k", (2, 0)),
    (2, 2): ("in,kn->ik", (0, 2)),
}
"""The cotangent of ``x`` in ``x @ y`` by the ranks of ``x`` and ``y``: the product and
which of ``(ct, x, y)`` it multiplies."""

_VJP_Y = {
    (1, 1): ("k,->k", (1, 0)),
    (1, 2): ("k,n->kn", (1, 0)),
    (2, 1): ("ik,i->k", (1, 0)),
    (2, 2): ("ik,in->kn", (1, 0)),
}
"""The cotangent of ``y`` in ``x @ y``, as :data:`_VJP_X`."""


def _other_shape(name: str, shape: tuple[int, ...], stmt: Any) -> NotInThread:
    """A line whose array has another shape than the one example's run gave ``name``
    (a branch that run did not take)."""
    return NotInThread(
        f"this line gives {name} another shape than {shape}, its shape in the example run "
        "on the host to learn them (a branch that run did not take): a GPU thread's arrays "
        "have one shape; give the name one shape on every path",
        getattr(stmt, "lineno", None),
    )


def _runtime_name(call: gast.Call) -> str | None:
    func = call.func
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
        if func.value.id == "nxrt":
            return func.attr
    return None


def _is_math(call: gast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, gast.Attribute)
        and isinstance(func.value, gast.Name)
        and (func.value.id == "math")
        or (isinstance(func, gast.Name) and func.id in ("abs", "min", "max", "float", "int"))
    )


def _arguments(value: gast.expr) -> list[gast.expr]:
    if isinstance(value, gast.BinOp):
        return [value.left, value.right]
    return list(value.args)


def _unknown(value: gast.expr) -> str:
    return (
        f"{_text(value)!r} is an operation on arrays a GPU thread cannot run yet (a thread "
        "runs elementwise arithmetic, products (@, np.dot, np.outer), sums and their "
        "derivatives on its example's arrays): write it element by element, or run the "
        "function on the CPU (backend='cpu')"
    )


def _constant(node: gast.expr) -> Any:
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, gast.Tuple) and all(isinstance(e, gast.Constant) for e in node.elts):
        return tuple(e.value for e in node.elts)
    raise NotInThread(
        f"{_text(node)!r}: an axis a GPU thread needs as a constant", getattr(node, "lineno", None)
    )


_EXTREMA = {"max": ">", "amax": ">", "min": "<", "amin": "<"}


def _full(options: list[gast.expr]) -> bool:
    """Whether a reduction's ``axis`` and ``keepdims`` (when given) are None and False:
    over the whole array."""
    return all(isinstance(o, gast.Constant) and o.value in (None, False) for o in options)


def _inexact(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _letters(rank: int) -> str:
    return "abcdefgh"[:rank]


def _indices(rank: int) -> str:
    return ", ".join(f"_i{k}" for k in range(rank))


def _nest(shape: tuple[int, ...], body: str) -> str:
    """``body`` inside one loop per axis of ``shape`` (``_i0``, ``_i1``...)."""
    for k in reversed(range(len(shape))):
        body = f"for _i{k} in range({shape[k]}):\n" + _indent(body)
    return body


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _dtype_text(dtype: np.dtype) -> str:
    return f"np.{np.dtype(dtype).name}"


def _text(node: gast.AST) -> str:
    return gast.unparse(node).strip()


def _parse(text: str) -> list[gast.stmt]:
    return gast.parse(text).body


def _parse_expression(text: str) -> gast.expr:
    return gast.parse(text).body[0].value


def _assign(name: str, value: gast.expr) -> gast.Assign:
    return gast.Assign([gast.Name(name, gast.Store(), None, None)], value, None)


def _names(nodes: list[gast.AST], name: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == name for n in nodes)


def _returned(fn: gast.FunctionDef) -> gast.expr | None:
    last = fn.body[-1]
    return last.value if isinstance(last, gast.Return) else None


def _without(stmts: list[gast.stmt], names: set[str]) -> list[gast.stmt]:
    """``stmts`` without those assigning ``names``, in their blocks too."""
    kept = []
    for stmt in stmts:
        if isinstance(stmt, gast.Assign) and all(
            isinstance(t, gast.Name) and t.id in names for t in stmt.targets
        ):
            continue
        for block in ("body", "orelse"):
            if hasattr(stmt, block):
                setattr(stmt, block, _without(getattr(stmt, block), names))
        kept.append(stmt)
    return kept


def _assigns_name(stmt: gast.stmt) -> bool:
    return (
        isinstance(stmt, gast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
    )


def _base(target: gast.Subscript) -> str:
    value = target.value
    return value.id if isinstance(value, gast.Name) else ""


def _copy(target: str, source: str, rank: int) -> str:
    return f"{target}[{_indices(rank)}] = {source}[{_indices(rank)}]"


def _assign_element(name: str, index: int, value: gast.expr) -> gast.Assign:
    target = gast.Subscript(
        gast.Name(name, gast.Load(), None, None), gast.Constant(index, None), gast.Store()
    )
    return gast.Assign([target], value, None)


def _located(new: list[gast.stmt], old: gast.stmt) -> list[gast.stmt]:
    """``new`` statements standing for ``old``: each, and each inside their loops, with
    its line and origin, so comments and errors name the user's line."""
    if len(new) == 1 and new[0] is old:
        return new
    extra = {k: v for k, v in vars(old).items() if k not in old._fields}
    for stmt in new:
        for node in gast.walk(stmt):
            if isinstance(node, gast.stmt):
                vars(node).update(extra)
    return new


def bindings(cuda: Any) -> dict[str, Any]:
    """What the code :func:`local_arrays` writes names besides the function's own."""
    return {"cuda": cuda, "np": np}
