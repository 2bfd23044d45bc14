"""Arrays inside a GPU thread: one example's array code as loops over local memory.

A thread's code (``vmap(f)`` on the GPU, ``f`` maybe a gradient) may compute with the
arrays of its example: ``np.tanh(w @ x + b)``, and the cotangents of its reverse pass.
numba-cuda compiles no NumPy array operation in device code, and a thread can allocate
an array only of a size fixed when compiling (``cuda.local.array``). So:

* one example runs on the host first (``thread_shapes.record_arrays``), which gives the
  shape and dtype of every array the function's names hold; the device function is
  generated for those shapes (a batch with other shapes is compiled again);
* each statement that makes an array gets a ``cuda.local.array`` of its shape and
  writes it in loops (:func:`local_arrays`): elementwise lines element by element, with
  NumPy's broadcasting; products, sums and their adjoints as the sums they are
  (``array_loops.py``);
* arrays the function returns are written into the result arrays the kernel passes it
  for its example (``_result_0``...), since a thread's local memory is gone when its
  function returns; it returns its numbers only;
* an array made in every pass of a loop is written into a buffer made before the
  outermost loop, which only its name may hold (a copy, a view or a tuple of it is
  refused), and reverse mode keeps such a loop's arrays as rows of a tape;
* the example's shapes are numbers in the code (``thread_shapes.known_shapes``), so a
  loop over ``range(v.shape[0])`` is bounded.

What is not one of these operations on an array, and what would take one example's
shape for another's (a slice by a value of the example, a branch the host's run did
not take giving a name another shape), is refused at the user's line, naming the
operation, rather than given to numba-cuda to fail on or computed wrong.

This module is the pass over the function's statements: which buffer each array is
written into, in and out of loops, which names may hold it, and the result written
for the kernel. The shapes it works from are ``thread_shapes.py``'s, the loops each
operation is written as ``array_loops.py``'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import gast
import numpy as np

from numbax.numba_backend.cuda.array_loops import (
    ArrayLoops,
    Indexed,
    assignment,
    cannot_run,
    loop_indices,
    nested,
    parsed,
    runtime_name,
    unparsed,
)
from numbax.numba_backend.cuda.thread_shapes import (
    ArrayValue,
    NotInThread,
    ThreadArrays,
    assigns_name,
)


def local_arrays(
    fn: gast.FunctionDef, arrays: ThreadArrays, resolve: Callable[[gast.expr], Any]
) -> gast.FunctionDef:
    """``fn`` (lowered device code) with each array it makes in local memory and each
    operation on arrays written as loops, for the arrays of ``record_arrays``. Leaf
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


class _Writer(ArrayLoops):
    """Each statement of the function as one thread's: the arrays it makes written as
    loops (:class:`ArrayLoops`) into local arrays, or into buffers made before the
    outermost loop; its result's arrays into the kernel's."""

    def __init__(
        self, fn: gast.FunctionDef, arrays: ThreadArrays, resolve: Callable[[gast.expr], Any]
    ) -> None:
        super().__init__(fn, arrays, resolve)
        # what names read and hold, from the code as it was (the blocks are rewritten
        # as they are read)
        self.fn = copy.deepcopy(fn)
        self.returned = list(arrays.returned)
        self.tuples: dict[str, gast.Tuple] = {}  # names bound to tuple displays
        self.returned_tuples: set[str] = set()  # those a return wrote out
        self.renamed: set[tuple[str, str]] = set()  # (y, t): `t = ...; y = t` made one
        self.buffers: list[gast.stmt] | None = None  # made before the outermost loop
        self.index_adds: dict[str, int] = {}  # name: its `name = index_add(name, ...)`
        for node in gast.walk(fn):
            if isinstance(node, gast.Assign) and isinstance(node.value, gast.Call):
                args = node.value.args
                if runtime_name(node.value) == "index_add" and isinstance(args[0], gast.Name):
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
        if not (assigns_name(made) and assigns_name(named)):
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
                f"{unparsed(stmt)!r} works on whole arrays in a way a GPU thread cannot run yet",
                getattr(stmt, "lineno", None),
            )
        return [stmt]

    def assign(self, name: str, value: gast.expr, stmt: gast.stmt, in_loop: bool) -> list:
        if isinstance(value, gast.Call) and runtime_name(value) == "local_tape":
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
        if isinstance(value, gast.Call) and runtime_name(value) == "index_add":
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
            return [*made, assignment(name, gast.Name(own, gast.Load(), None, None))]
        return self._make(name, value, stmt)

    def tape(self, name: str, value: gast.Call) -> list[gast.stmt]:
        """A tape of ``capacity`` arrays like ``value`` (a loop's reverse-mode tape): one
        array with a row for each, made before the outermost loop."""
        array, capacity = value.args
        if not isinstance(capacity, gast.Constant):
            raise NotInThread(cannot_run(value), getattr(value, "lineno", None))
        held = self.arrays[array.id] if isinstance(array, gast.Name) else None
        if held is None:
            raise NotInThread(cannot_run(value), getattr(value, "lineno", None))
        self.arrays[name] = ArrayValue((int(capacity.value), *held.shape), held.dtype)
        return self._allocate(name)

    def store(self, target: gast.Subscript, value: gast.expr, stmt: Any) -> list[gast.stmt]:
        """``a[k] = <array>`` (a tape's push, a row written): element by element into
        the row, which has the value's shape."""
        if not (isinstance(target.value, gast.Name) and target.value.id in self.arrays):
            raise NotInThread(cannot_run(value), getattr(stmt, "lineno", None))
        row = self._indexed_shape(target)
        if not (self._elementwise(value) and self._operation(value) is None):
            raise NotInThread(cannot_run(value), getattr(stmt, "lineno", None))
        element = Indexed(self, row).visit(value)
        index = target.slice.elts if isinstance(target.slice, gast.Tuple) else [target.slice]
        at = ", ".join([*(unparsed(i) for i in index), loop_indices(len(row))]).rstrip(", ")
        return parsed(nested(row, f"{target.value.id}[{at}] = {unparsed(element)}"))

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
                made += parsed(
                    nested(self.arrays[name].shape, _copy(own, written, self.arrays[name].rank))
                )
            else:
                made = self._make(own, value, stmt)
        finally:
            self.hoisted, self.buffers = None, saved
        return [*made, assignment(name, gast.Name(own, gast.Load(), None, None))]

    def _make(self, name: str, value: gast.expr, stmt: Any) -> list[gast.stmt]:
        """A new array ``name`` of ``value``: an operation on arrays, or elementwise."""
        operation = self._operation(value)
        if operation is not None:
            return self.array_operation(name, operation, value, stmt)
        if self._elementwise(value):
            return self.elementwise(name, value, stmt, allocate=True)
        raise NotInThread(cannot_run(value), getattr(stmt, "lineno", None))

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
        at = ", ".join([*(unparsed(i) for i in indices), *(f"_i{k}" for k in range(len(shape)))])
        element = f"{unparsed(added)}[{loop_indices(len(shape))}]" if shape else unparsed(added)
        out = [] if accumulating else [assignment(name, base)]
        return out + parsed(nested(shape, f"{name}[{at}] += {element}"))

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
                if runtime_name(node) == "keep_dtype":
                    return True
        return False

    def _result_tuples(self) -> set[str]:
        """The names of tuples the last ``return`` reads, directly or in other tuples,
        made outside any loop (a buffer they hold is not written again)."""
        displays = {
            n.targets[0].id: n.value
            for n in self.fn.body
            if assigns_name(n) and isinstance(n.value, gast.Tuple)
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
            body = f"{target}[{index}] = {unparsed(leaf)}[{index}]"
            out += parsed(nested(shape, body))
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
        if isinstance(value, gast.Call) and runtime_name(value) == "keep_dtype":
            yield from self._leaves(value.args[0])
        elif isinstance(value, gast.Name) and value.id in self.tuples:
            self.returned_tuples.add(value.id)
            yield from self._leaves(self.tuples[value.id])
        elif isinstance(value, gast.Tuple):
            for item in value.elts:
                yield from self._leaves(item)
        else:
            yield value


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


def _base(target: gast.Subscript) -> str:
    value = target.value
    return value.id if isinstance(value, gast.Name) else ""


def _copy(target: str, source: str, rank: int) -> str:
    return f"{target}[{loop_indices(rank)}] = {source}[{loop_indices(rank)}]"


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
