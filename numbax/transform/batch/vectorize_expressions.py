"""``vmap``'s vectorized method, expression by expression: each assignment's value
rewritten for the batch by its operation's batching rule (``vectorize.py``).

Mixed into ``vectorize.py``'s ``_Vectorizer``. :meth:`~_VectorizeExpressions.expression`
says what a value gives (a :class:`Value`: rank per example, batched or not) and its
batched form: a ruled operation by its batching rule (``rules/batch_kinds.py``), a
subscript past the batch axis (or a gather by a mapped integer), a call of another
function with batched arguments by that function's own vectorized version, a
collective (``psum``...) as a reduction over the batch, a ``pure_callback`` by its
``vmap_method``. What a global, a constant or an argument is known to be starts from
:func:`rank_of`.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import gast
import numpy as np

from numbax import lax
from numbax.runtime.callbacks import pure_callback
from numbax.transform import rules
from numbax.transform.batch.collectives import (
    NotStatic,
    arguments_of,
    over_batch,
    rank_over_batch,
    static_arguments,
    static_definitions,
)
from numbax.transform.nodes import clone, expression, load, template
from numbax.transform.operations import (
    CALL,
    CONSTANT,
    COPY,
    FIELD,
    PACK,
    POP,
    RULE,
    SUBSCRIPT,
    classify,
)
from numbax.transform.operations import UNKNOWN as UNKNOWN_OP
from numbax.transform.resolve import LOCAL, UNRESOLVED
from numbax.transform.rules.batch_kinds import (
    SCALAR,
    UNKNOWN,
    BatchOp,
    Decline,
    Value,
    elementwise,
    text,
)

_SCALARS = (bool, int, float, complex, np.number, np.bool_)


def rank_of(value: Any) -> Any:
    """The rank of a value the vectorized code may meet; for a tuple or list, a tuple of
    its elements' (None: neither an array nor a number)."""
    if isinstance(value, np.ndarray):
        return value.ndim
    if isinstance(value, _SCALARS):
        return 0
    if isinstance(value, (tuple, list)):
        return tuple(rank_of(v) for v in value)
    return None


def _rank(value: Value) -> Any:
    """The rank :func:`rank_of` gives the value (a tuple's: its elements')."""
    if value.elements is not None:
        return tuple(_rank(e) for e in value.elements)
    return value.rank


class _VectorizeExpressions:
    """The expressions of ``vectorize.py``'s ``_Vectorizer`` (mixed into it)."""

    def _value(self, atom: gast.expr) -> Value:
        if isinstance(atom, gast.Name):
            found = self.resolver.lookup(atom.id)
            listed = self._listed(atom) if found is LOCAL else None
            if listed is not None and listed.batched:  # a list of batches: no array's rank
                return Value(None, True)
            if found is LOCAL:
                return self.env.get(atom.id, UNKNOWN)
            return self._global(found)
        if isinstance(atom, gast.Constant):
            return SCALAR if isinstance(atom.value, _SCALARS) else UNKNOWN
        if isinstance(atom, gast.Attribute):
            return self._global(self.resolver.resolve(atom))
        if isinstance(atom, (gast.Tuple, gast.List)):
            elements = tuple(self._value(e) for e in atom.elts)
            return Value(None, any(e.batched for e in elements), elements)
        if self._mentions_batched(atom):
            return Value(None, True)
        return UNKNOWN

    def _global(self, value: Any) -> Value:
        if value is LOCAL or value is UNRESOLVED:
            return UNKNOWN
        if isinstance(value, (tuple, list)):  # a global list of weights reads as a tuple
            return Value(None, False, tuple(self._global(v) for v in value))
        return Value(rank_of(value))

    def _elements(self, node: gast.expr) -> list[gast.expr] | None:
        """The element atoms of a tuple written here or packed into a name."""
        if isinstance(node, gast.Tuple):
            return list(node.elts)
        if isinstance(node, gast.Name):
            return self.packed.get(node.id)
        return None

    def _constant(self, node: gast.expr) -> Any:
        if isinstance(node, gast.Constant):
            return node.value
        if isinstance(node, gast.Tuple):
            return tuple(self._constant(e) for e in node.elts)
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
            return -self._constant(node.operand)
        if isinstance(node, (gast.Name, gast.Attribute)):
            value = self.resolver.resolve(node)
            if value is not LOCAL and value is not UNRESOLVED:
                return value
        raise Decline(f"{text(node)} is not a constant")

    def expression(self, node: gast.expr, target: str) -> tuple[Value, gast.expr | None]:
        """What an assignment's right-hand side gives, and its batched form (None:
        unchanged)."""
        if isinstance(node, gast.Call):
            callee = self.resolver.resolve(node.func)
            if callee in lax.POSITIONAL or callee in lax.COLLECTIVES:
                return self._collective(node, callee)
            if callee is pure_callback:
                return self._pure_callback(node)
        op = classify(node, self.resolver)
        if op.kind == COPY:
            if node.id in self.packed:
                self.packed[target] = self.packed[node.id]
            if node.id in self.stacks:  # a second name of a list filled by append
                if self.changed_lists & {node.id, target}:
                    raise Decline(f"{target!r} names the list {node.id!r}, which appends change")
                self.stacks[target] = self.stacks[node.id]
            return self._value(node), None
        if op.kind == CONSTANT:
            return self._constant_op(node)
        if op.kind == PACK:
            if isinstance(node, gast.Dict):
                if self._mentions_batched(node):
                    raise Decline("a dict of batched values")
                return UNKNOWN, None
            if isinstance(node, gast.List) and not node.elts:  # a tape, filled by append
                self.stacks[target] = None
                return UNKNOWN, None
            self.packed[target] = list(node.elts)
            elements = tuple(self._value(e) for e in node.elts)
            if isinstance(node, gast.List) and any(e.batched for e in elements):
                # a list of the values an operation takes (np.array([a, b]), np.select's
                # lists) made a tuple: its elements differ in shape once some are
                # batches, which compiled code holds in a tuple only. A list the
                # function changes (append, a store) has no batching rule and loops.
                if target in self.changed_lists:
                    raise Decline("a list of batched values that the function changes")
                tuple_node = gast.Tuple([clone(e) for e in node.elts], gast.Load())
                return Value(None, True, elements), tuple_node
            return Value(None, any(e.batched for e in elements), elements), None
        if op.kind == SUBSCRIPT:
            return self._subscript(node)
        if op.kind == RULE:
            return self._rule(op, node)
        if op.kind == POP and node.func.value.id in self.stacks:
            return self.stacks[node.func.value.id] or UNKNOWN, None
        if op.kind == FIELD and not self._mentions_batched(node):
            return UNKNOWN, None
        if op.kind == CALL and self.call_batched is not None and self._mentions_batched(node):
            return self._call(node)
        if op.kind in (CALL, UNKNOWN_OP, POP, FIELD):
            if not self._mentions_batched(node):
                return UNKNOWN, None
            what = {CALL: "a call to another function", FIELD: "a field of a batched value"}
            raise Decline(what.get(op.kind, f"{text(node)}, which has no batching rule"))
        raise Decline(f"{text(node)}, which has no batching rule")

    def _call(self, call: gast.Call) -> tuple[Value, gast.expr]:
        """A call to another function with batched arguments: a call to its vectorized
        version, mapped over the arguments that are batched."""
        if call.keywords or any(isinstance(a, gast.Starred) for a in call.args):
            raise Decline(f"a call to {text(call.func)} with keyword or starred arguments")
        callee = self.resolver.resolve(call.func)
        if callee is LOCAL or callee is UNRESOLVED:
            raise Decline(f"a call to {text(call.func)}, a function made while it runs")
        values = [self._value(a) for a in call.args]
        if any(v.batched and (v.rank is None or v.elements is not None) for v in values):
            raise Decline(f"a call to {text(call.func)} with a batched argument of unknown rank")
        axes = tuple(0 if v.batched else None for v in values)
        ranks = tuple(_rank(v) for v in values)
        name, value = self.call_batched(callee, axes, ranks)
        return value, gast.Call(load(name), [clone(a) for a in call.args], [])

    def _pure_callback(self, call: gast.Call) -> tuple[Value, gast.expr | None]:
        """``pure_callback(fun, spec, *args, vmap_method=...)`` on batched arguments:
        one call on the whole batch for ``"expand_dims"`` (the shared arguments get a
        leading axis of size 1) and ``"broadcast_all"`` (repeated over the batch), the
        declared result given the batch axis; any other method calls it per example."""
        keywords = {k.arg: k.value for k in call.keywords}
        try:
            bound = inspect.signature(pure_callback).bind(*call.args, **keywords).arguments
        except TypeError as error:  # the loop's call says so again, for the user
            raise Decline(f"pure_callback: {error}") from None
        spec, args = bound["result_shape_dtypes"], list(bound.get("args", ()))
        declared = self._value(spec)
        if not any(self._value(a).batched for a in args + list(bound.get("kwargs", {}).values())):
            if declared.batched:
                raise Decline("a pure_callback of shared values declared by a batched one")
            return Value(declared.rank), None
        method = self._constant(keywords["vmap_method"]) if "vmap_method" in keywords else None
        if method not in ("expand_dims", "broadcast_all"):
            raise Decline(f"a pure_callback with vmap_method={method!r} (one call per example)")
        if any(self._value(v).batched for v in bound.get("kwargs", {}).values()):
            raise Decline("a pure_callback with a batched keyword argument")
        if declared.rank is None or declared.elements is not None:
            raise Decline("a pure_callback whose result's rank is not known")
        shared = (
            "np.expand_dims(np.asarray(a), 0)"
            if method == "expand_dims"
            else "np.broadcast_to(a, (_size,) + np.shape(a))"
        )
        batched_args = [a if self._value(a).batched else template(shared, a=a) for a in args]
        batched_spec = spec if declared.batched else template("nxrt.batch_spec(s, _size)", s=spec)
        batched = gast.Call(
            clone(call.func),
            [clone(bound["callback"]), batched_spec, *batched_args],
            [clone(k) for k in call.keywords if k.arg not in ("callback", "result_shape_dtypes")],
        )
        return Value(declared.rank, True), batched

    def _collective(self, call: gast.Call, target: Any) -> tuple[Value, gast.expr]:
        """``psum(x, name)`` and the other collectives: an operation on the whole batch
        (``lax.COLLECTIVES``), the same for every example or a batch of one value each;
        ``axis_index(name)``: each example's position; ``axis_size(name)``: the size."""
        try:
            bound = arguments_of(call, target)
            statics = static_arguments(call, target, self._definitions, self.resolver)
        except (TypeError, NotStatic) as error:
            raise Decline(f"{text(call)}: {error}") from None
        if self._constant(bound["axis_name"]) != self.axis_name or self.axis_name is None:
            raise Decline(
                f"{text(call)}: the collective is over an axis other than this vmap's "
                f"(axis_name={self.axis_name!r})"
            )
        if target is lax.axis_index:
            return Value(0, True), template("np.arange(_size)")
        if target is lax.axis_size:
            return SCALAR, load("_size")
        operand = bound["x"]
        value = self._value(operand)
        rank = rank_over_batch(target, value.rank, statics)
        batched = over_batch(target, operand, 0 if value.batched else None, statics)
        return Value(rank, lax.COLLECTIVES[target].varying), batched

    @functools.cached_property
    def _definitions(self) -> dict[str, gast.expr]:
        """The function's names assigned once to constants (a collective's ``perm``)."""
        return static_definitions(self.fn)

    def _constant_op(self, node: gast.expr) -> tuple[Value, gast.expr | None]:
        if isinstance(node, gast.Compare):  # elementwise, like the operators
            operands = [node.left, *node.comparators]
            bound = {f"x{k}": a for k, a in enumerate(operands)}
            return self._apply(elementwise, "a comparison", node, bound)
        if isinstance(node, gast.Constant):
            return self._value(node), None
        if isinstance(node, gast.Attribute):
            return self._global(self.resolver.resolve(node)), None
        if isinstance(node, gast.Call) and self.resolver.resolve(node.func) is len:
            argument = node.args[0] if node.args else None
            if argument is not None and self._listed(argument) is not None:
                return SCALAR, None  # a list of batches is as long as each example's
            if argument is not None and self._value(argument).batched:
                return SCALAR, template("x.shape[1]", x=argument)
            return SCALAR, None
        if self._mentions_batched(node):
            raise Decline(f"{text(node)} of a batched value")
        return UNKNOWN, None

    def _subscript(self, node: gast.Subscript) -> tuple[Value, gast.expr | None]:
        listed = self._listed(node.value)
        if listed is not None and listed.batched:  # lst[i]: one of the batches it holds
            if isinstance(node.slice, (gast.Slice, gast.Tuple)) or self._mentions_batched(
                node.slice
            ):
                raise Decline("a list of batched values indexed by a slice or a mapped index")
            return listed, None
        base = self._value(node.value)
        index = node.slice
        if base.elements is not None:  # a tuple's element
            position = self._constant(index)
            if not isinstance(position, int):
                raise Decline("a tuple indexed by a slice")
            return base.elements[position], None
        parts = list(index.elts) if isinstance(index, gast.Tuple) else [index]
        if any(self._mentions_batched(p) for p in parts):
            return self._gather(node, base, parts)
        rank = base.rank
        for part in parts:
            if isinstance(part, gast.Slice):
                continue
            if isinstance(part, gast.Constant) and part.value is None:
                rank = None if rank is None else rank + 1
            elif self._value(part).rank == 0:
                rank = None if rank is None else rank - 1
            else:
                if base.batched:
                    raise Decline("indexing a batch by an array or an ellipsis")
                rank = None
        if not base.batched:
            return Value(rank), None
        every = gast.Slice(None, None, None)
        index = gast.Tuple([every, *clone(parts)], gast.Load())
        return Value(rank, True), gast.Subscript(clone(node.value), index, gast.Load())

    def _gather(
        self, node: gast.Subscript, base: Value, parts: list[gast.expr]
    ) -> tuple[Value, gast.expr | None]:
        """``table[i]`` with ``i`` an integer per example and ``table`` shared (an
        embedding lookup): NumPy's integer-array indexing puts the batch first, as it
        is. Other gathers by mapped values are left to the loop."""
        first = self._value(parts[0])
        rest = [self._value(p) for p in parts[1:] if not isinstance(p, gast.Slice)]
        if base.batched or not first.batched or first.rank != 0 or base.rank is None:
            raise Decline("indexing by a mapped value (a gather; vmap loops)")
        if any(v.batched or v.rank != 0 for v in rest):
            raise Decline("indexing by a mapped value and by arrays (a gather; vmap loops)")
        return Value(base.rank - 1 - len(rest), True), None

    def _rule(self, op: Any, node: gast.expr) -> tuple[Value, gast.expr | None]:
        if isinstance(node, gast.Attribute) and node.attr in ("shape", "ndim"):
            value = self._value(node.value)
            if not value.batched:  # the shape's length is the rank
                elements = None if value.rank is None else (SCALAR,) * value.rank
                return (SCALAR if node.attr == "ndim" else Value(None, False, elements)), None
            if node.attr == "ndim":
                return SCALAR, template("x.ndim - 1", x=node.value)
            elements = None if value.rank is None else (SCALAR,) * value.rank
            return Value(None, False, elements), template("x.shape[1:]", x=node.value)
        bound = {}
        for param, atom in op.bound.items():
            kind = op.rule.signature.parameters[param].kind
            if kind is kind.VAR_POSITIONAL and isinstance(atom, gast.Tuple):
                bound.update({f"{param}{k}": a for k, a in enumerate(atom.elts)})
            elif kind is not kind.VAR_KEYWORD:
                bound[param] = atom
        batch_rule = rules.batching_rule(op.rule)
        if batch_rule is None:
            if any(self._value(a).batched for a in bound.values()):
                raise Decline(f"{op.rule.name}, which has no batching rule")
            return UNKNOWN, None
        return self._apply(batch_rule, op.rule.name, node, bound)

    def _apply(
        self, batch_rule: Any, name: str, node: gast.expr, bound: dict[str, gast.expr]
    ) -> tuple[Value, gast.expr | None]:
        values = {param: self._value(atom) for param, atom in bound.items()}
        batch_op = BatchOp(name, node, bound, values, self._constant, self._elements)
        result = batch_rule(batch_op)
        source, rank = result[0], result[1]
        if isinstance(rank, Value):  # a structured result (a tuple of pieces)
            return rank, expression(source) if batch_op.batched else None
        batched = result[2] if len(result) > 2 else batch_op.batched
        if not batch_op.batched:
            return Value(rank), None
        return Value(rank, batched), expression(source)
