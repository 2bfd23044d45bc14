"""What each operation sends its operands' cotangents in reverse mode, and how the
contributions add up.

Mixed into ``reverse.py``'s ``_Reverse``. By the operation's kind
(``operations.classify``): a copy passes the cotangent on, a display sends each element
its part, a subscript or field adds into its base's cotangent at that place
(``nxrt.index_add``), a ruled operation instantiates its VJP templates (``rules/``;
unbroadcast where its output may be larger than an operand), and a call of another
function calls that function's own VJP. The first contribution to a variable creates its
cotangent; later ones are added to it (with ``+``, or ``nxrt.tree_add`` for a variable
that may hold a tuple or another pytree: :func:`_tuple_valued`).
"""

from __future__ import annotations

import gast

from numbax.transform import rules
from numbax.transform.ad.common import add, no_rule_error, runtime_call, zeros_like
from numbax.transform.ad.sequences import on_sequences_as_arrays, sequence_operands
from numbax.transform.nodes import assign, clone, load, store
from numbax.transform.operations import (
    CALL,
    CONSTANT,
    COPY,
    FIELD,
    PACK,
    POP,
    RULE,
    SUBSCRIPT,
    Operation,
    classify,
)
from numbax.transform.resolve import Resolver
from numbax.transform.walk import walk


class _Contributions:
    """The cotangent contributions of :class:`~numbax.transform.ad.reverse._Reverse`
    (mixed in)."""

    def _push_cotangent(self, stack: str, value: gast.expr) -> gast.stmt:
        push = gast.Attribute(load(self.cotangent(stack)), "append", gast.Load())
        return gast.Expr(gast.Call(push, [value], []))

    def _accumulate(self, name: str, contribution: gast.expr) -> list[gast.stmt]:
        """``_ct_x = _ct_x + contribution``, or ``_ct_x = contribution`` for the first."""
        ct = self.cotangent(name)
        if isinstance(contribution, gast.Name) and contribution.id == ct:
            self.defined.add(ct)  # its own cotangent, unchanged
            return []
        if ct in self.defined:
            if name in self.maybe_tuple:
                value = runtime_call("tree_add", load(ct), contribution)
            else:
                value = add(load(ct), contribution)
            self.owned.add(ct)  # a sum is a new array
        else:
            value = contribution
            self.defined.add(ct)
            self.owned.discard(ct)
        return [assign(ct, value)]

    def _uses_ans(self, op: Operation) -> bool:
        return op.kind == RULE and op.rule.uses("vjp", rules.ANS)

    def _contributions(
        self, op: Operation, ans: gast.expr, g: gast.expr, line: int | None
    ) -> list[tuple[str | None, gast.expr | list[gast.stmt]]]:
        """(argument, cotangent contribution) pairs; (None, statements) for contributions
        already written as statements (in-place scatters, calls)."""
        active = [a for a in op.differentiable_args() if self.activity.atom(a)]
        if op.kind == COPY:
            return [(op.node.id, g)] if active else []
        if op.kind == CONSTANT or not active:
            return []
        if op.kind == PACK:
            if isinstance(op.node, gast.Dict):
                keyed = list(zip(op.node.keys, op.node.values, strict=True))
            else:
                keyed = [(gast.Constant(i, None), e) for i, e in enumerate(op.node.elts)]
            return [
                (e.id, gast.Subscript(clone(g), clone(key), gast.Load()))
                for key, e in keyed
                if self.activity.atom(e)
            ]
        if op.kind == SUBSCRIPT:
            return [self._subscript_contribution(op.node.value.id, op.node.slice, g)]
        if op.kind == FIELD:
            field = gast.Constant(op.node.attr, None)
            return [self._subscript_contribution(op.node.value.id, field, g)]
        if op.kind == POP:
            stack = op.node.func.value.id
            return [(None, [self._push_cotangent(stack, g)])] if stack in self.stacks else []
        if op.kind == RULE:
            return self._rule_contributions(op, ans, g)
        if op.kind == CALL:
            return self._call_contributions(op, g, line)
        raise no_rule_error(op, self.source, line, self.transformation)

    def _subscript_contribution(self, x: str, index: gast.expr, g: gast.expr) -> tuple:
        """``t = x[i]`` sends ``g`` into ``_ct_x`` at ``i``, in place when ``_ct_x`` is
        an array this function made (``nxrt.index_add`` is ``np.add.at``; for a pytree
        ``x``, a dict or NamedTuple, it returns the cotangent with that entry added)."""
        ct = self.cotangent(x)
        if ct not in self.defined:
            base = zeros_like(load(x))
        elif ct in self.owned:
            base = load(ct)
        else:
            base = runtime_call("owned", load(ct))
        value = runtime_call("index_add", base, _index_expr(index), g)
        self.defined.add(ct)
        self.owned.add(ct)
        return (None, [assign(ct, value)])

    def _rule_contributions(self, op: Operation, ans: gast.expr, g: gast.expr) -> list:
        rule = op.rule
        bound = {**op.bound, rules.ANS: ans, rules.COTANGENT: g}
        sequences = sequence_operands(op, self.maybe_sequences)  # np.square(t): 2 * t repeats
        out = []
        for param in rule.differentiable:
            arg = op.bound.get(param)
            if param not in rule.vjp or not self.activity.atom(arg):
                continue
            value = rules.instantiate(rule.vjp[param], bound)
            if sequences:
                made = frozenset([ans.id] if isinstance(ans, gast.Name) else [])
                value = on_sequences_as_arrays(value, sequences, made)
            if rule.elementwise and self._may_broadcast(op):
                value = runtime_call("unbroadcast", value, load(arg.id))
            out.append((arg.id, value))
        return out

    @staticmethod
    def _may_broadcast(op: Operation) -> bool:
        """Whether the output may be larger than an operand: two variables meet (a
        constant is a scalar; ``np.where``'s condition counts too); or complex where
        an operand may be real (``1j * x``: a real x's cotangent is the real part)."""
        values = op.bound.values()
        complex_constant = any(
            isinstance(a, gast.Constant) and isinstance(a.value, complex) for a in values
        )
        return complex_constant or sum(isinstance(a, gast.Name) for a in values) > 1

    def _call_contributions(self, op: Operation, g: gast.expr, line: int | None) -> list:
        call = op.node
        if call.keywords:
            raise no_rule_error(op, self.source, line, self.transformation)
        positions = tuple(i for i, a in enumerate(call.args) if self.activity.atom(a))
        name = self.derive(op.callee, "vjp", positions, len(call.args))
        parts = [self.namer.fresh(f"ct_{call.args[i].id.lstrip('_')}_part") for i in positions]
        unpack = gast.Tuple([store(p) for p in parts], gast.Store())
        args = [clone(a) for a in call.args] + [g]
        stmts: list[gast.stmt] = [assign(unpack, gast.Call(load(name), args, []))]
        for i, part in zip(positions, parts, strict=True):
            stmts += self._accumulate(call.args[i].id, load(part))
        return [(None, stmts)]


def _index_expr(index: gast.expr) -> gast.expr:
    """An index as a value: ``x[1:3, None]`` → ``(slice(1, 3, None), None)``."""
    if isinstance(index, gast.Slice):
        parts = [index.lower, index.upper, index.step]
        args = [clone(p) if p is not None else gast.Constant(None, None) for p in parts]
        return gast.Call(load("slice"), args, [])
    if isinstance(index, gast.Tuple):
        return gast.Tuple([_index_expr(e) for e in index.elts], gast.Load())
    return clone(index)


_STRUCTURED_COTANGENTS = frozenset(
    {"unarray", "split_like", "unstack_like", "unravel_pytree", "unravel_batch", "jac_unflatten"}
)
"""Runtime helpers whose result has the structure of a sequence or pytree operand: the
cotangent they give an operand that holds a tuple, list or dict is one (``np.asarray(t)``,
``np.stack(xs)``, ``ravel_pytree(params)``)."""


def _gives_structure(rule: rules.Rule, param: str) -> bool:
    """Whether the rule's VJP for ``param`` may be a tuple or list."""
    return bool(rules.vjp_helpers(rule, param) & _STRUCTURED_COTANGENTS)


def _tuple_valued(fn: gast.FunctionDef, resolver: Resolver) -> set[str]:
    """Variables that may hold tuples or other pytrees (their cotangents add up with
    ``nxrt.tree_add``: ``+`` would join two tuples): built from a display, unpacked,
    returned by a function that is differentiated by its own derivative or passed to one
    (its cotangent comes back in the argument's structure), passed where an operation's
    cotangent takes a sequence's structure (``np.asarray(t)``), popped, or read by key
    or field."""
    pytrees = set()
    for node in walk(fn):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            op = classify(node.value, resolver)
            kind = op.kind
            if isinstance(node.value, (gast.Tuple, gast.List, gast.Dict)):
                pytrees.add(node.targets[0].id)
            elif kind == RULE:
                pytrees |= {
                    arg.id
                    for param, arg in op.bound.items()
                    if isinstance(arg, gast.Name) and _gives_structure(op.rule, param)
                }
            elif kind in (CALL, POP, FIELD):
                pytrees.add(node.targets[0].id)
                if isinstance(node.value, gast.Attribute):
                    pytrees.add(node.value.value.id)
                if kind == CALL:
                    pytrees |= {a.id for a in node.value.args if isinstance(a, gast.Name)}
            elif isinstance(node.value, gast.Subscript) and isinstance(node.value.value, gast.Name):
                key = node.value.slice
                if isinstance(key, gast.Constant) and isinstance(key.value, str):
                    pytrees.add(node.value.value.id)
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Tuple):
            if isinstance(node.value, gast.Name):
                pytrees.add(node.value.id)
    # ``a = b`` (``ravel_pytree``'s ``unravel = params``): one value, both or neither
    aliases = [
        (node.targets[0].id, node.value.id)
        for node in walk(fn)
        if isinstance(node, gast.Assign)
        and isinstance(node.targets[0], gast.Name)
        and isinstance(node.value, gast.Name)
    ]
    grown = True
    while grown:
        grown = False
        for pair in aliases:
            if pytrees.intersection(pair) and not pytrees.issuperset(pair):
                pytrees.update(pair)
                grown = True
    return pytrees
