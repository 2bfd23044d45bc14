"""Forward mode (JVP): each active assignment gets its tangent right beside it.

``t = op(a, b)`` becomes ``t = op(a, b)`` plus ``_d_t = <jvp terms of op>``, written
with the rule table's templates. Control flow is kept as it is (the tangents follow
the primal through the same branches and loop iterations), so the generated function
reads as the user's function with a tangent line under each active line. The result
is ``def jvp_f(<f's parameters>, _d_x, ...)`` returning ``(out, _d_out)``.
"""

from __future__ import annotations

import gast

from numbax.transform import rules
from numbax.transform.ad.common import (
    DeriveCallee,
    derivative_name,
    located,
    no_rule_error,
    runtime_call,
    stored_into,
    total,
    zeros_like,
)
from numbax.transform.ad.sequences import (
    may_hold_sequences,
    on_sequences_as_arrays,
    sequence_operands,
)
from numbax.transform.ad.shared_tangents import SharedTangents
from numbax.transform.analysis.activity import Activity, analyze
from numbax.transform.analysis.dataflow import names
from numbax.transform.cleanup import cleanup
from numbax.transform.names import Namer
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
    UNKNOWN,
    Operation,
    appended,
    classify,
)
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource


class _Forward:
    def __init__(
        self,
        fn: gast.FunctionDef,
        source: FunctionSource,
        resolver: Resolver,
        activity: Activity,
        derive: DeriveCallee,
        transformation: str = "jvp",
    ) -> None:
        self.transformation = transformation
        self.source = source
        self.resolver = resolver
        self.activity = activity
        self.derive = derive
        self.namer = Namer.for_function(fn)
        self.tangents: dict[str, str] = {}
        self.maybe_sequences = may_hold_sequences(fn, resolver)
        self.shared = SharedTangents(fn, activity, resolver)

    def tangent(self, name: str) -> str:
        if name not in self.tangents:
            self.tangents[name] = self.namer.fresh(derivative_name(name, "d"))
        return self.tangents[name]

    def tangent_of(self, atom: gast.expr) -> gast.expr:
        """The tangent of an atom: its tangent variable, or a zero for constants and
        inactive names."""
        if self.activity.atom(atom):
            return load(self.tangent(atom.id))
        return zeros_like(atom)

    # -- statements -------------------------------------------------------------------
    def block(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for stmt in stmts:
            out += self.statement(stmt)
        return out

    def statement(self, stmt: gast.stmt) -> list[gast.stmt]:
        line = getattr(stmt, "lineno", None)
        if isinstance(stmt, gast.Assign):
            return self.assignment(stmt, line)
        if isinstance(stmt, gast.If):
            stmt.body, stmt.orelse = self.block(stmt.body), self.block(stmt.orelse)
            return [stmt]
        if isinstance(stmt, (gast.For, gast.While)):
            stmt.body = self.block(stmt.body)
            return [stmt]
        pushed = appended(stmt)
        if pushed is not None and pushed[0] in self.activity:  # stack.append(v)
            stack, value = pushed
            push = gast.Attribute(load(self.tangent(stack)), "append", gast.Load())
            tangent = gast.Expr(gast.Call(push, [self.tangent_of(value)], []))
            return [stmt, *located([tangent], line)]
        return [stmt]

    def assignment(self, stmt: gast.Assign, line: int | None) -> list[gast.stmt]:
        target = stmt.targets[0]
        if isinstance(target, gast.Tuple):  # a, b = t
            if not any(self.activity.atom(n) for n in target.elts):
                return [stmt]
            tangents = gast.Tuple([store(self.tangent(n.id)) for n in target.elts], gast.Store())
            source = self.tangent_of(stmt.value)
            if not self.activity.atom(stmt.value):
                source = gast.Tuple([zeros_like(n) for n in target.elts], gast.Load())
            return [stmt, *located([assign(tangents, source)], line)]
        if isinstance(target, gast.Subscript):  # x[i] = v
            if not self.activity.atom(target.value):
                return [stmt]
            store_tangent = gast.Subscript(
                load(self.tangent(target.value.id)), clone(target.slice), gast.Store()
            )
            return [stmt, *located([assign(store_tangent, self.tangent_of(stmt.value))], line)]
        if target.id not in self.activity:
            return [stmt]
        op = classify(stmt.value, self.resolver)
        if op.kind == CALL and self._active_args(op):
            return self.call(stmt, op, line)
        overwrites = target.id in names(stmt.value)
        if not overwrites:
            tangent = self.tangent_expression(op, target, load(target.id), line)
            return [stmt, *located([assign(self.tangent(target.id), tangent)], line)]
        # t = op(t, ...): the tangent reads the old t, and a rule may read the new one.
        new = self.namer.fresh(target.id.lstrip("_") + "_new")
        tangent = self.tangent_expression(op, target, load(new), line)
        return located(
            [
                assign(new, stmt.value),
                assign(self.tangent(target.id), tangent),
                assign(target.id, load(new)),
            ],
            line,
        )

    def _active_args(self, op: Operation) -> bool:
        return any(self.activity.atom(a) for a in op.differentiable_args())

    def tangent_expression(
        self, op: Operation, target: gast.Name, ans: gast.Name, line: int | None
    ) -> gast.expr:
        """The tangent of ``target = <op>``; ``ans`` holds the operation's result: a
        copy where it would be an operand's tangent that a write may reach (see
        shared_tangents.py)."""
        tangent = self._tangent_expression(op, target, ans, line)
        if self.shared.copies(target.id, op):
            return runtime_call("owned", tangent)
        return tangent

    def _tangent_expression(
        self, op: Operation, target: gast.Name, ans: gast.Name, line: int | None
    ) -> gast.expr:
        if op.kind == COPY:
            return self.tangent_of(op.node)
        if op.kind == PACK:
            if isinstance(op.node, gast.Dict):
                values = [self.tangent_of(v) for v in op.node.values]
                return gast.Dict([clone(k) for k in op.node.keys], values)
            kind = gast.List if isinstance(op.node, gast.List) else gast.Tuple
            return kind([self.tangent_of(e) for e in op.node.elts], gast.Load())
        if op.kind == FIELD:
            if not self.activity.atom(op.node.value):
                return zeros_like(target)
            return gast.Attribute(load(self.tangent(op.node.value.id)), op.node.attr, gast.Load())
        if op.kind == POP:
            stack = op.node.func.value
            if not self.activity.atom(stack):
                return zeros_like(target)
            pop = gast.Attribute(load(self.tangent(stack.id)), "pop", gast.Load())
            return gast.Call(pop, [], [])
        if op.kind == SUBSCRIPT:
            if not self.activity.atom(op.node.value):
                return zeros_like(target)
            return gast.Subscript(
                load(self.tangent(op.node.value.id)), clone(op.node.slice), gast.Load()
            )
        if op.kind == RULE:
            return self.rule_tangent(op, target, ans)
        if op.kind == CONSTANT or not self._active_args(op):
            return zeros_like(target)
        if op.kind == UNKNOWN:
            raise no_rule_error(op, self.source, line, self.transformation)
        return zeros_like(target)

    def rule_tangent(self, op: Operation, target: gast.Name, ans: gast.Name) -> gast.expr:
        rule = op.rule
        names = {**op.bound, rules.ANS: ans}
        for param, node in op.bound.items():
            if self.activity.atom(node):
                names[rules.tangent_name(param)] = load(self.tangent(node.id))
        terms = [
            rules.instantiate(rule.jvp[param], names)
            for param in rule.differentiable
            if param in rule.jvp and self.activity.atom(op.bound.get(param))
        ]
        if not terms:
            return zeros_like(target)
        tangent = total(terms, rule.combine)
        primals = sequence_operands(op, self.maybe_sequences)
        if primals:  # np.add(t, u) of tuples: their tangents added as arrays, not joined
            tangents = {self.tangents[a] for a in primals if a in self.tangents}
            tangent = on_sequences_as_arrays(tangent, primals | tangents, frozenset([ans.id]))
        if rule.elementwise and self._may_be_smaller(op, tangent):
            tangent = runtime_call("broadcast_like", tangent, ans)
        return tangent

    def _may_be_smaller(self, op: Operation, tangent: gast.expr) -> bool:
        """Whether an inactive operand that could be a larger array is absent from the
        tangent, so the tangent alone may not have the output's shape."""
        mentioned = names(tangent)
        return any(
            isinstance(op.bound.get(p), gast.Name)
            and not self.activity.atom(op.bound[p])
            and op.bound[p].id not in mentioned
            for p in op.rule.differentiable
        )

    def call(self, stmt: gast.Assign, op: Operation, line: int | None) -> list[gast.stmt]:
        """``t = h(a, b)`` → ``t, _d_t = jvp_h(a, b, _d_a)`` with h's own generated JVP."""
        call = op.node
        if call.keywords:
            raise no_rule_error(op, self.source, line, self.transformation)
        positions = tuple(i for i, a in enumerate(call.args) if self.activity.atom(a))
        name = self.derive(op.callee, "jvp", positions, len(call.args))
        args = [clone(a) for a in call.args] + [
            load(self.tangent(call.args[i].id)) for i in positions
        ]
        target = stmt.targets[0].id
        tangent = self.tangent(target)
        both = gast.Tuple([store(target), store(tangent)], gast.Store())
        out = [assign(both, gast.Call(load(name), args, []))]
        if self.shared.copies(target, op):  # perhaps an argument's tangent, handed back
            out.append(assign(tangent, runtime_call("owned", load(tangent))))
        return located(out, line)


def jvp_function(
    fn: gast.FunctionDef,
    source: FunctionSource,
    wrt: list[str],
    derive: DeriveCallee,
    name: str,
    transformation: str = "jvp",
) -> gast.FunctionDef:
    """``fn`` (core language) → ``name(<fn's parameters>, <tangent per wrt>)`` returning
    ``(out, tangent of out)``."""
    ret = fn.body[-1]
    out = ret.value
    resolver = Resolver(source, local_names(fn))
    outputs = [out.id] if isinstance(out, gast.Name) else []
    activity = analyze(fn, wrt, outputs, resolver, transformation)
    forward = _Forward(fn, source, resolver, activity, derive, transformation)
    tangent_params = [forward.tangent(p) for p in wrt]
    body = forward.block(fn.body[:-1])
    for p, t in zip(wrt, tangent_params, strict=True):
        # the function writes into x, or into what shares x's memory: keep the caller's
        # tangent
        if p in stored_into(fn) or forward.shared.written([p]):
            body.insert(0, assign(t, runtime_call("owned", load(t))))
    # and the caller's array: derivatives are those of the functional equivalent (JAX's)
    params = [a.id for a in fn.args.posonlyargs + fn.args.args]
    copies = [assign(p, runtime_call("owned", load(p))) for p in params if p in stored_into(fn)]
    # a parameter not differentiated that later takes active values (h = f(h, w) in a
    # loop) starts with a zero tangent
    constant_params = [p for p in params if p not in wrt and p in activity]
    zeros = [assign(forward.tangent(p), zeros_like(load(p))) for p in constant_params]
    body = copies + zeros + body
    out_tangent = forward.tangent_of(out)
    result = gast.Tuple([clone(out), out_tangent], gast.Load())
    new = clone(fn)
    new.name = name
    new.args.args = list(new.args.args) + [
        gast.Name(t, gast.Param(), None, None) for t in tangent_params
    ]
    new.body = body + located([gast.Return(result)], getattr(ret, "lineno", None))
    return cleanup(new, source)
