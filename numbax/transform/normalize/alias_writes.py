"""The alias pass's rewrite (``aliases.py``): each write brings the names it changes
up to date, or is refused.

After a write into a name's array, read later through another name: the value is
written back along the name's derivations up to the one it starts from (``a[:2] = b``,
``a = t.T``, ``a = c``), and the other names derived from that one are made again from
it, parents first. ``x op= v`` where ``x`` may hold a number does so only where ``x``
held an array (``nxrt.is_array``). A name that cannot be made again from where the write
goes makes the write a refusal, at transformation time or, for ``x op= v``, where it
runs. A call of the user's helper that writes into an array it is given, and is called
for its result while a name sharing that array is read later, is refused too.
"""

from __future__ import annotations

import gast

from numbax.errors import TransformError
from numbax.runtime import nxrt
from numbax.transform.nodes import assign, at, call, clone, load
from numbax.transform.normalize.alias_analysis import (
    _VIEW_ATTRIBUTES,
    _VIEW_METHODS,
    IN_PLACE,
    Derivation,
    State,
    _as_items,
)
from numbax.transform.normalize.reject import unsupported
from numbax.transform.rules.batch_kinds import text
from numbax.transform.source import bind_in_closure, read_function
from numbax.transform.walk import name_ids, walk

WRITE_BACK = "numbax_write_back"
"""Attribute this pass sets on the statements that write a change made through a view
back into its base (``x = c``, ``params[0] = u``). The base's memory was written, so
derivative code copies a parameter that is one first (``stored_into`` in ``ad/common.py``);
and each puts back what the base held in memory already, so compiled code may make it on
a copy of a container (``numba_backend/loops/container_stores.py``)."""


class _WriteRewrite:
    """The rewriting part of the alias pass's ``_Aliases`` (mixed into it)."""

    def _rewrite(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for stmt in stmts:
            for block in ("body", "orelse"):
                if getattr(stmt, block, None):
                    setattr(stmt, block, self._rewrite(getattr(stmt, block)))
            state = self.before.get(id(stmt))
            if state is not None and self.transformation != "jit":
                self._refuse_helper_writes(stmt, state)
            names = [n for n in self.written(stmt) if state is not None and n in state]
            if not names:
                out.append(stmt)
                continue
            out += self._write(stmt, names[0], state)
            for name in names[1:]:  # a helper given several arrays
                out += self._write(stmt, name, state)[1:]
        return out

    def _refuse_helper_writes(self, stmt: gast.stmt, state: State) -> None:
        """Refuse ``w = h(z)`` where the user's helper ``h`` writes into the array it is
        given as ``z`` and ``z`` (or a name sharing its array) is read after the call:
        derivatives and batching read the helper's writes only in what it returns, and
        the caller's ``z`` would keep its old value. (Compiled alone, the helper writes
        into the caller's memory, as NumPy does: ``jit`` is left as it is.)"""
        target = self.helper_called(stmt)
        if target is None:
            return
        written = _parameters_written(target)
        if not written:
            return
        params = _parameter_names(target)
        given = dict(zip(params, stmt.value.args, strict=False))
        given.update((k.arg, k.value) for k in stmt.value.keywords if k.arg)
        live = self.liveness.after(stmt) - name_ids(stmt.targets[0], gast.Store)
        for param, (line, source_line) in written.items():
            arg = given.get(param)
            if not (isinstance(arg, gast.Name) and arg.id in state):
                continue
            held = state[arg.id]
            reach = held.objects | _as_items(held.objects)
            readers = sorted(o for o in live if o in state and state[o].objects & reach)
            if not readers:
                continue
            helper = text(stmt.value.func)
            read = readers[0]
            construct = (
                f"a call of `{helper}` that writes into `{arg.id}` (its parameter "
                f"`{param}`, at line {line}: `{source_line}`), while `{read}` is read after the "
                "call and would not see the write"
            )
            advice = (
                f"pass `{arg.id}.copy()` where the helper should not change `{arg.id}`; "
                f"where it should, bind its result to that name (`{arg.id} = "
                f"{helper}({arg.id}, ...)`) and read it from there"
            )
            raise unsupported(self.source, self.transformation, stmt.lineno, construct, advice)

    def _write(self, stmt: gast.stmt, name: str, state: State) -> list[gast.stmt]:
        """``stmt``, a write into ``name``'s array, and what brings the names it changes
        up to date (or a refusal)."""
        line = stmt.lineno
        held = state[name]
        live = self.liveness.after(stmt)
        reach = held.objects | _as_items(held.objects)  # and the lists that hold it
        changed = sorted(
            other
            for other, h in state.items()
            if other != name and other in live and h.objects & reach
        )
        if not changed:
            return [stmt]
        in_place = getattr(stmt, IN_PLACE, False)
        chain = self._chain(name, state)
        top = chain[-1]
        blocked = [o for o in changed if o not in chain and self._chain(o, state)[-1] != top]
        certain = held.array or (held.derivation is not None and held.derivation.array)
        if blocked and not (in_place and not certain):
            raise self._refusal(name, blocked[0], state, line)
        if blocked:  # x op= v: refused when it runs, where x holds an array
            construct, advice = self._refused(name, blocked[0], state)
            text = f"{construct} (line {line}: `{self.source.line(line)}`), where `{name}` "
            text += f"holds an array; {advice}"
            error = call(load("ValueError"), [gast.Constant(text, None)])
            return self._where_array(name, stmt, [at(gast.Raise(error, None), line)], line)
        # the names between top and the changed ones, made again parents first
        again: list[str] = []
        for other in changed:
            for link in reversed(self._chain(other, state)):
                if link not in chain and link not in again:
                    again.append(link)
        again.sort(key=lambda n: len(self._chain(n, state)))
        # x op= v on a name that may hold a number rebinds it to x op v, a number where x
        # was a 0-d array: c = s is written back as s = nxrt.as_kind_of(c, s), which
        # keeps s a 0-d array (and c is left as it is: Numba types both branches)
        rebound = in_place and not certain and isinstance(held.derivation.value, gast.Name)
        after: list[gast.stmt] = []
        for child, parent in zip(chain, chain[1:], strict=False):
            into = rebound and child == name
            after.append(self._write_back(child, parent, state[child].derivation, into))
        if in_place and len(chain) > 1 and not rebound:
            again.insert(0, name)  # in place: the name holds its base's part again
        for other in again:
            after.append(assign(other, clone(state[other].derivation.value)))
        after = [at(s, line) for s in after]
        if not in_place or certain:
            return [stmt, *after]
        return self._where_array(name, stmt, after, line)

    def _where_array(
        self, name: str, stmt: gast.stmt, then: list[gast.stmt], line: int
    ) -> list[gast.stmt]:
        """``stmt`` (``x op= v``), with ``then`` after it where ``x`` held an array before
        it (a number is rebound: nothing else changes)."""
        is_array = self.namer.fresh(f"{name.lstrip('_')}_is_array")
        test = gast.Attribute(load(self._nxrt()), "is_array", gast.Load())
        measure = assign(is_array, call(test, [load(name)]))
        guarded = gast.If(load(is_array), then, [])
        return [at(s, line) for s in [measure, stmt, guarded]]

    def _chain(self, name: str, state: State) -> list[str]:
        """``name``, the name it was derived from, and so on up to one not derived."""
        chain = [name]
        while True:
            derivation = state[chain[-1]].derivation
            if derivation is None or derivation.parent not in state or derivation.parent in chain:
                return chain
            chain.append(derivation.parent)

    def _write_back(
        self, child: str, parent: str, derivation: Derivation, into: bool = False
    ) -> gast.stmt:
        value = derivation.value
        if into:  # parent keeps its kind: a 0-d array stays one
            kind_of = gast.Attribute(load(self._nxrt()), "as_kind_of", gast.Load())
            store = assign(parent, call(kind_of, [load(child), load(parent)]))
        elif isinstance(value, gast.Subscript):
            target = gast.Subscript(load(parent), clone(value.slice), gast.Store())
            store = assign(target, load(child))
        elif isinstance(value, gast.Attribute):  # .T
            store = assign(parent, gast.Attribute(load(child), "T", gast.Load()))
        else:
            store = assign(parent, load(child))  # c = a
        setattr(store, WRITE_BACK, True)
        return store

    def _nxrt(self) -> str:
        """A name for ``nxrt`` in the function (bound in its closure if needed)."""
        return bind_in_closure(self.source, nxrt, "nxrt", set(self.resolver.locals))

    def _refusal(self, name: str, other: str, state: State, line: int) -> TransformError:
        """The write at ``line`` into ``name`` changes ``other``, which is read later and
        cannot be made again from where the write goes."""
        construct, advice = self._refused(name, other, state)
        return unsupported(self.source, self.transformation, line, construct, advice)

    def _refused(self, name: str, other: str, state: State) -> tuple[str, str]:
        """What a refusal of a write into ``name`` that changes ``other`` says."""
        params = self._params()
        # the name made in a way numbax cannot follow: the other one, unless it is a
        # parameter, derived, or made before this one (b = M.ravel(): b, not M)
        later = state[name].derivation is None and state[name].line > state[other].line
        unknown = other not in params and state[other].derivation is None
        view = other if unknown and not later else name
        made = state[view].line
        construct = (
            f"a write into `{name}` that may also change `{other}` (they may share memory: "
            f"`{view}` was made at line {made}: `{self.source.line(made)}`, in a way whose "
            "sharing numbax cannot follow)"
        )
        advice = (
            f"write `.copy()` at line {made} where a copy is meant; where the write should "
            "reach the other array, write into it directly, or make the view by basic "
            "indexing (slices, `...`, integers the function computes) or `.T` rather than "
            "np.reshape/np.asarray, an index array, a helper's result or a branch"
        )
        return construct, advice

    def _params(self) -> set[str]:
        args = self.fn.args
        return {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}


def _parameter_names(func: object) -> list[str]:
    code = func.__code__
    return list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])


def _parameters_written(func: object) -> dict[str, tuple[int, str]]:
    """The parameters of the user's function ``func`` that it writes into (``p[i] = v``,
    ``p op= v``, ``out=p``), directly or through a name it makes from one by indexing,
    an attribute (``.T``), a method (``p.reshape(...)``) or plain rebinding; each with
    the line and text of its first such write."""
    try:
        source = read_function(func)
    except (TransformError, OSError, TypeError):
        return {}
    tree = source.tree
    owner = {a.id: a.id for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs}
    changed = True
    while changed:  # names made from a parameter's array, as views of it
        changed = False
        for node in walk(tree):
            if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
                base, name = _viewed(node.value), node.targets[0].id
                if base in owner and name not in owner:
                    owner[name] = owner[base]
                    changed = True
    written: dict[str, tuple[int, str]] = {}
    for node in walk(tree):
        into: list[gast.expr] = []
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Subscript):
            into = [node.targets[0].value]
        elif isinstance(node, gast.AugAssign):
            target = node.target
            into = [target.value if isinstance(target, gast.Subscript) else target]
        elif isinstance(node, gast.Call):
            into = [k.value for k in node.keywords if k.arg == "out"]
        for base in into:
            param = owner.get(base.id) if isinstance(base, gast.Name) else None
            if param is not None and param not in written:
                written[param] = (node.lineno, source.line(node.lineno))
    return written


def _viewed(value: gast.expr) -> str | None:
    """The name whose array ``value`` is, or is a view of (``p``, ``p[1:]``, ``p.T``,
    ``p.reshape(3, 2)``); None for anything else."""
    while True:
        if isinstance(value, gast.Name):
            return value.id
        if isinstance(value, gast.Subscript):
            value = value.value
        elif isinstance(value, gast.Attribute) and value.attr in _VIEW_ATTRIBUTES | {"T"}:
            value = value.value
        elif (
            isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute)
            and value.func.attr in _VIEW_METHODS
        ):
            value = value.func.value
        else:
            return None
