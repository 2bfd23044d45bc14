"""Reverse mode's adjoint sweep, statement by statement, last first.

Mixed into ``reverse.py``'s ``_Reverse``. :meth:`~_StatementAdjoints.adjoint` walks a
block's records backwards, sending ``if`` and loops to ``reverse_control.py``. An
assignment's adjoint hands the cotangent of its target to its operands (what each
operation sends them is ``reverse_contributions.py``), then gives back what the statement
overwrote, so that the statements before it see the values their primal saw. Unpacking
``a, b = t`` hands the names' cotangents back to the tuple; a store ``x[i] = v`` gives
``v`` its part of ``x``'s cotangent and zeroes that part; ``l.append(v)`` and
``v = l.pop()`` move cotangents between a list's cotangent and its elements'.
"""

from __future__ import annotations

import gast

from numbax.transform.ad.common import located, runtime_call, total, zeros_like
from numbax.transform.ad.reverse_contributions import _index_expr
from numbax.transform.ad.reverse_records import _Record
from numbax.transform.analysis.dataflow import names
from numbax.transform.nodes import assign, clone, load
from numbax.transform.operations import POP, appended, classify


class _StatementAdjoints:
    """The adjoint of each statement, for :class:`~numbax.transform.ad.reverse._Reverse`
    (mixed in)."""

    def adjoint(self, records: list[_Record]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for record in reversed(records):
            stmt = record.stmt
            line = getattr(stmt, "lineno", None)
            if isinstance(stmt, gast.Assign):
                out += located(self._adjoint_assign(stmt, record, line), line, adjoint=True)
            elif isinstance(stmt, gast.If):
                out += self._adjoint_if(stmt, record, line)
            elif isinstance(stmt, gast.For):
                out += self._adjoint_for(stmt, record, line)
            elif isinstance(stmt, gast.While):
                out += self._adjoint_while(stmt, record, line)
            elif appended(stmt) is not None and appended(stmt)[0] in self.stacks:
                out += located(self._adjoint_append(*appended(stmt)), line, adjoint=True)
        return out

    def _adjoint_append(self, stack: str, value: gast.expr) -> list[gast.stmt]:
        """``stack.append(v)``: ``v`` gets the cotangent its ``pop`` pushed."""
        pop = gast.Call(gast.Attribute(load(self.cotangent(stack)), "pop", gast.Load()), [], [])
        undo = [gast.Expr(_method(stack, "pop"))]
        if self.cotangent(stack) not in self.defined:  # the value's cotangent is zero
            return undo
        if not self.activity.atom(value):
            return [gast.Expr(pop), *undo]
        part = self.namer.fresh(f"ct_{value.id.lstrip('_')}_part")
        return [assign(part, pop), *self._accumulate(value.id, load(part)), *undo]

    @staticmethod
    def _restore(record: _Record, target: gast.expr) -> list[gast.stmt]:
        """Give the variables the statement overwrote their old values back."""
        if isinstance(target, gast.Subscript):
            old = gast.Subscript(load(target.value.id), clone(target.slice), gast.Store())
            return [assign(old, save.pop()) for _, save in record.saves]
        return [stmt for name, save in reversed(record.saves) for stmt in save.give_back(name)]

    def _adjoint_assign(self, stmt: gast.Assign, record: _Record, line: int | None) -> list:
        target = stmt.targets[0]
        if isinstance(target, gast.Tuple):
            return self._adjoint_unpack(stmt, record)
        if isinstance(target, gast.Subscript):
            return self._adjoint_store(stmt, record)
        name = target.id
        ct = self.cotangent(name) if name in self.activity else None
        op = classify(stmt.value, self.resolver)
        # v = l.pop() on a user's list: the list gets v back, as the adjoint of
        # l.append(v) takes it off, so that the adjoint sweep reads the list as it was
        stack = op.node.func.value.id if op.kind == POP else None
        stack_ct = self.cotangent(stack) if stack in self.stacks else None
        undo = [] if stack_ct is None else [gast.Expr(_method(stack, "append", load(name)))]
        if ct is None or ct not in self.defined:
            out = []
            if stack_ct in self.defined:  # keep it balanced
                out.append(self._push_cotangent(stack, zeros_like(target)))
            if ct is not None:
                self.owned.discard(ct)
            return out + undo + self._restore(record, target)
        self.defined.discard(ct)  # this value of the variable gets its cotangent here
        self.owned.discard(ct)
        out: list[gast.stmt] = []
        if stack_ct is not None and stack_ct not in self.defined:  # the list as popped
            out.append(assign(stack_ct, zeros_like(load(stack))))
            self.defined.add(stack_ct)
            self.owned.add(stack_ct)
        ans = load(name)
        reads_self = name in names(stmt.value)
        if record.saves and (reads_self or self._uses_ans(op)):
            keep = self.namer.fresh(f"{name.lstrip('_')}_value")
            ans = load(keep)
        contributions = self._contributions(op, ans, load(ct), line)
        if ans.id != name and any(ans.id in names(v) for _, v in _flat(contributions)):
            out.append(assign(ans.id, load(name)))  # the new value, read by the rule
        out += undo + self._restore(record, target)
        own = []  # t = t * x: the old t's cotangent starts after the others used g
        for arg, value in contributions:
            if arg is None:
                out += value
            elif arg == name:
                own.append(value)
            else:
                out += self._accumulate(arg, value)
        if own:
            out += self._accumulate(name, total(own))
        return out

    def _adjoint_unpack(self, stmt: gast.Assign, record: _Record) -> list[gast.stmt]:
        """``a, b = t``: ``_ct_t`` gets ``(_ct_a, _ct_b)``, zeros where there is none."""
        targets = stmt.targets[0].elts
        source = stmt.value.id
        parts, any_ct = [], False
        for t in targets:
            ct = self.cotangent(t.id) if t.id in self.activity else None
            if ct is not None and ct in self.defined:
                parts.append(load(ct))
                any_ct = True
            else:
                parts.append(zeros_like(load(t.id)))
        for t in targets:
            if t.id in self.activity:
                self.defined.discard(self.cotangent(t.id))
        out: list[gast.stmt] = []
        if any_ct and self.activity.atom(stmt.value):
            out += self._accumulate(source, gast.Tuple(parts, gast.Load()))
        return out + self._restore(record, stmt.targets[0])

    def _adjoint_store(self, stmt: gast.Assign, record: _Record) -> list[gast.stmt]:
        """``x[i] = v``: ``v`` gets ``_ct_x[i]``, which is zeroed (the old ``x[i]`` no
        longer reaches the output), and ``x[i]`` gets its old value back. Where ``i``
        names an element twice, NumPy keeps the last write, and only its part of ``v``
        gets the cotangent (``nxrt.last_written``, a copy for other indices)."""
        target = stmt.targets[0]
        x = target.value.id
        ct = self.cotangent(x) if x in self.activity else None
        out: list[gast.stmt] = []
        if ct is not None and ct in self.defined:
            piece = gast.Subscript(load(ct), clone(target.slice), gast.Load())
            if self.activity.atom(stmt.value):
                if self._may_repeat(target.slice):
                    index = _index_expr(target.slice)
                    written = runtime_call("last_written", piece, load(x), index)
                else:
                    written = runtime_call("owned", piece)
                value = runtime_call("unbroadcast", written, load(stmt.value.id))
                out += self._accumulate(stmt.value.id, value)
            if ct not in self.owned:
                out.append(assign(ct, runtime_call("owned", load(ct))))
                self.owned.add(ct)
            cleared = gast.Subscript(load(ct), clone(target.slice), gast.Store())
            out.append(assign(cleared, gast.Constant(0, None)))
        return out + self._restore(record, target)

    def _may_repeat(self, index: gast.expr) -> bool:
        """Whether ``index`` may name an element twice: not when each part is a slice, a
        constant (an int, None, Ellipsis) or the index of a range loop; a name may hold
        an integer array (``nxrt.last_written`` tells when it runs)."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        return not all(
            isinstance(p, (gast.Slice, gast.Constant))
            or (isinstance(p, gast.UnaryOp) and isinstance(p.operand, gast.Constant))
            or (isinstance(p, gast.Name) and p.id in self.loop_indices)
            for p in parts
        )


def _flat(contributions: list) -> list[tuple[str | None, gast.AST]]:
    """Each contribution's expression, or each statement of one written as statements."""
    out = []
    for arg, value in contributions:
        for part in value if isinstance(value, list) else [value]:
            out.append((arg, part))
    return out


def _method(name: str, method: str, *args: gast.expr) -> gast.Call:
    """``name.method(args)``."""
    return gast.Call(gast.Attribute(load(name), method, gast.Load()), list(args), [])
