"""One example's array operations as loops over a GPU thread's local memory.

Inside a thread (see ``local_arrays.py``) every array has the shape one example's run on
the host gave it (``thread_shapes.py``). :class:`ArrayLoops` knows those shapes and
writes each operation on them as the loops it is, into a ``cuda.local.array`` of the
result's shape: elementwise lines element by element, with NumPy's broadcasting
(:class:`Indexed`); products (``@``, ``np.dot``, ``np.outer``), sums, means, extrema and
reverse mode's adjoints of them (``unbroadcast``, ``broadcast_reduced``, the products'
cotangents) as the sums they are. What it cannot write, or what would take one
example's shape for another's, raises ``NotInThread`` at the user's line. Walking the
function's statements, and which buffer each array is written into, is
``local_arrays.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from numbax.numba_backend.cuda.thread_shapes import ArrayValue, NotInThread, ThreadArrays
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


class ArrayLoops:
    """The arrays of one example's names (the host's run's shapes and dtypes), and each
    operation on them written as loops over local arrays."""

    def __init__(
        self, fn: gast.FunctionDef, arrays: ThreadArrays, resolve: Callable[[gast.expr], Any]
    ) -> None:
        self.resolve = resolve  # the object a call's function names
        self.arrays = dict(arrays.arrays)
        self.varying = set(arrays.varying)
        self.numbers = set(arrays.numbers)
        self.lists: dict[str, gast.List] = {}  # names bound to list displays
        self.listed: set[str] = set()  # those made into local arrays
        self.namer = Namer.for_function(fn)
        self.locals = {a.id for a in fn.args.args} | {
            n.id
            for n in gast.walk(fn)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
        }
        self.made: set[str] = set()  # names holding arrays made here (not an argument's)
        self.hoisted: list[gast.stmt] | None = None  # where _allocate puts them now

    # -- numbers from arrays -----------------------------------------------------------
    def to_number(self, name: str, value: gast.expr, stmt: gast.stmt) -> list:
        """``name = <a number computed from arrays>``: a sum or a product of vectors."""
        operation = self._operation(value)
        if operation is None:
            raise NotInThread(cannot_run(value), getattr(stmt, "lineno", None))
        args = _arguments(value)
        if isinstance(value, gast.Call) and value.keywords:
            raise NotInThread(cannot_run(value), getattr(stmt, "lineno", None))
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
            return [parsed(f"{name} = {_dtype_text(dtype)}({size})")[0]]
        raise NotInThread(cannot_run(value), getattr(stmt, "lineno", None))

    def extremum(self, name: str, array: gast.expr, compare: str) -> list[gast.stmt]:
        """``name = np.max(array)`` (``compare`` ``>``) or ``np.min`` (``<``): a NaN
        wins, as in NumPy."""
        shape = self._shape(array)
        if 0 in shape:
            raise NotInThread(
                f"the {'maximum' if compare == '>' else 'minimum'} of {unparsed(array)!r}, "
                "which has no elements",
                getattr(array, "lineno", None),
            )
        element = f"{unparsed(array)}[{loop_indices(len(shape))}]"
        first = f"{unparsed(array)}[{', '.join('0' for _ in shape)}]"
        body = f"if {element} {compare} {name} or {element} != {element}:\n    {name} = {element}"
        return parsed(f"{name} = {first}\n" + nested(shape, body))

    def mean_or_product(self, name: str, operation: str, array: gast.expr) -> list[gast.stmt]:
        shape = self._shape(array)
        dtype = self._dtype([array])
        element = f"{unparsed(array)}[{loop_indices(len(shape))}]"
        if operation == "prod":
            start, step = f"{_dtype_text(dtype)}(1)", f"{name} *= {element}"
            return parsed(f"{name} = {start}\n" + nested(shape, step))
        start = f"{_dtype_text(_inexact(dtype))}(0)"
        size = int(np.prod(shape))
        text = f"{name} = {start}\n" + nested(shape, f"{name} += {element}")
        return parsed(text + f"\n{name} = {name} / {_dtype_text(_inexact(dtype))}({size})")

    # -- operations ------------------------------------------------------------------
    def _operation(self, value: gast.expr) -> str | None:
        if isinstance(value, gast.BinOp) and isinstance(value.op, gast.MatMult):
            return "matmul"
        if isinstance(value, gast.Call):
            name = runtime_name(value)
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
                f"{unparsed(value)!r} makes an array whose shape is a value of the example, "
                "and a GPU thread's arrays have one shape: give the shape as constants "
                "(or np.zeros_like), or run it on the CPU (backend='cpu')",
                getattr(stmt, "lineno", None),
            )
        if operation in ("zeros_like", "zeros"):
            return self.elementwise(name, gast.Constant(0, None), stmt, True, fill=True)
        if operation in ("ones_like", "ones"):
            return self.elementwise(name, gast.Constant(1, None), stmt, True, fill=True)
        raise NotInThread(cannot_run(value), getattr(stmt, "lineno", None))

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
        at = f"{unparsed(array)}[{loop_indices(len(shape))}] == {unparsed(extremum)}"
        counted = f"{count} = 0\n" + nested(shape, f"if {at}:\n    {count} += 1")
        share = f"(1.0 / {count} if {at} else 0.0) if {count} else np.nan"
        weight = f"{name}[{loop_indices(len(shape))}] = {share}"
        return parsed(counted) + self._allocate(name) + parsed(nested(shape, weight))

    def prod_others(self, name: str, array: gast.expr) -> list[gast.stmt]:
        """Each element's product of the others: the products before it, then after it
        (exact with zeros, never a quotient)."""
        (n,) = self.arrays[name].shape
        before, after = self.namer.fresh("before"), self.namer.fresh("after")
        one = f"{_dtype_text(self.arrays[name].dtype)}(1)"
        a = unparsed(array)
        text = (
            f"{before} = {one}\n"
            f"for _i0 in range({n}):\n    {name}[_i0] = {before}\n    {before} *= {a}[_i0]\n"
            f"{after} = {one}\n"
            f"for _i0 in range({n - 1}, -1, -1):\n    {name}[_i0] *= {after}\n"
            f"    {after} *= {a}[_i0]"
        )
        return self._allocate(name) + parsed(text)

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
            f"{unparsed(op)}[{', '.join(f'_{c}' for c in letters)}]" if letters else unparsed(op)
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
        return (self._allocate(name) if output else []) + parsed(inner)

    def unbroadcast(self, name: str, value: gast.expr, stmt: Any) -> list[gast.stmt]:
        """The cotangent ``value`` summed down to ``name``'s shape (``like``'s)."""
        shape, source = self.arrays[name].shape, self._shape(value)
        if source == shape and self.hoisted is None:
            return [assignment(name, value)]  # the same shape: the same values
        if source == shape:  # in a loop: a copy, so that no two names hold one buffer
            return self.elementwise(name, value, stmt, allocate=True)
        extra = len(source) - len(shape)
        letters = _letters(len(source))
        kept = "".join(
            c for k, c in enumerate(letters) if k >= extra and shape[k - extra] == source[k]
        )
        if len(kept) != len(shape):  # axes of size 1 kept: summed into index 0
            out = self._allocate(name)
            out += parsed(nested(shape, f"{name}[{loop_indices(len(shape))}] = 0"))
            target = ", ".join(
                f"_i{k}" if shape[k] == source[k + extra] else "0" for k in range(len(shape))
            )
            body = f"{name}[{target}] += {unparsed(value)}[{loop_indices(len(source))}]"
            return out + parsed(nested(source, body))
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
        body = f"{name}[{loop_indices(len(shape))}] = {unparsed(value)}[{', '.join(index)}]"
        return self._allocate(name) + parsed(nested(shape, body))

    def elementwise(
        self, name: str, value: gast.expr, stmt: Any, allocate: bool, fill: bool = False
    ) -> list[gast.stmt]:
        """``name = value`` element by element, each array read with broadcasting;
        ``fill``: ``value`` is a number each element takes."""
        shape = self.arrays[name].shape
        read = [self._shape(leaf) for leaf in Indexed(self, shape).leaves(value)]
        if not (fill or (read and np.broadcast_shapes(*read) == shape)):
            raise _other_shape(name, shape, stmt)
        element = Indexed(self, shape).visit(value)
        body = f"{name}[{loop_indices(len(shape))}] = {unparsed(element)}"
        return (self._allocate(name) if allocate else []) + parsed(nested(shape, body))

    # -- what values are -------------------------------------------------------------
    def _allocate(self, name: str) -> list[gast.stmt]:
        """``name = cuda.local.array(<its shape>, <its dtype>)``: where it is written, or
        before the outermost loop when it is written in one (its buffer is then the
        same in every pass)."""
        self.made.add(name)
        array = self.arrays[name]
        shape = f"({array.shape[0]},)" if array.rank == 1 else str(array.shape)
        made = parsed(f"{name} = cuda.local.array({shape}, {_dtype_text(array.dtype)})")
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
                        f"{unparsed(view)!r} slices by a value of the example, so the view's "
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
            raise NotInThread(cannot_run(node), getattr(node, "lineno", None))
        return ()

    def _indexed_shape(self, node: gast.Subscript) -> tuple[int, ...]:
        base = self.arrays[node.value.id].shape
        index = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        if any(isinstance(i, gast.Slice) for i in index):
            raise NotInThread(
                f"{unparsed(node)!r} slices an array inside a GPU thread; index it element "
                "by element",
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
                name = runtime_name(node)
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


class Indexed(gast.NodeTransformer):
    """An elementwise expression on one element of a result of ``shape``: each array
    read at the element's index, broadcast as NumPy does."""

    def __init__(self, writer: ArrayLoops, shape: tuple[int, ...]) -> None:
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
        return _parse_expression(f"{unparsed(node)}[{', '.join(index)}]")

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


def runtime_name(call: gast.Call) -> str | None:
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


def cannot_run(value: gast.expr) -> str:
    return (
        f"{unparsed(value)!r} is an operation on arrays a GPU thread cannot run yet (a thread "
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
        f"{unparsed(node)!r}: an axis a GPU thread needs as a constant",
        getattr(node, "lineno", None),
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


def loop_indices(rank: int) -> str:
    return ", ".join(f"_i{k}" for k in range(rank))


def nested(shape: tuple[int, ...], body: str) -> str:
    """``body`` inside one loop per axis of ``shape`` (``_i0``, ``_i1``...)."""
    for k in reversed(range(len(shape))):
        body = f"for _i{k} in range({shape[k]}):\n" + _indent(body)
    return body


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _dtype_text(dtype: np.dtype) -> str:
    return f"np.{np.dtype(dtype).name}"


def unparsed(node: gast.AST) -> str:
    return gast.unparse(node).strip()


def parsed(text: str) -> list[gast.stmt]:
    return gast.parse(text).body


def _parse_expression(text: str) -> gast.expr:
    return gast.parse(text).body[0].value


def assignment(name: str, value: gast.expr) -> gast.Assign:
    return gast.Assign([gast.Name(name, gast.Store(), None, None)], value, None)


def _assign_element(name: str, index: int, value: gast.expr) -> gast.Assign:
    target = gast.Subscript(
        gast.Name(name, gast.Load(), None, None), gast.Constant(index, None), gast.Store()
    )
    return gast.Assign([target], value, None)
