"""Writes through a second name for an array, made explicit on every name they change.

NumPy lets two names hold one array: ``c = a``, a view ``b = a[:2]``, ``r = M[i]``,
``t = a.T``. A write through one of them (``b[0] = v``, ``b *= 2.0``) changes what the
others hold. Every later pass of numbax (derivatives, batching, fusion) reads a name as
a *value*: a store into ``b`` changes ``b`` and nothing else, and ``b *= 2.0`` is
``b = b * 2.0`` (normalize/statements.py). This pass, run on the core language, brings the two
readings together: after it, the function computes the same whether a view shares its
base's memory or is a copy of it, so value semantics give NumPy's results.

The model
=========

A forward dataflow analysis gives each local name, before each statement, what it
holds as far as sharing goes (:class:`Held`):

* the *objects* it may hold or point into: an abstract object per parameter and per
  statement that makes a new value (arithmetic, ``a.copy()``, ``np.array(a)``, a NumPy
  function's result, fancy indexing);
* and, where it is known, *how it was made from another name* (its derivation): ``b =
  a[:2]`` (basic indexing: slices, ``...``, ``None``, integers that the function
  computes as integers, such as a ``range`` loop's variable), ``r = M[i]``, ``t = a.T``
  and ``c = a``. A derivation stays known while neither the base nor any name its index
  reads is assigned again.

Lists and tuples hold arrays themselves: a literal ``[x, y]`` or ``(x, y)``,
``xs.append(x)`` and a store into a list or dict literal's name (``xs[i] = x``) put
``x``'s objects among the container's *items*; unpacking ``a, b = t`` gives each name
its item's objects (all items' where they are not known one by one), and ``xs[i]``
holds the items too.

A name made some other way from another's array keeps that array among its objects but
has no derivation: a view that NumPy makes or not depending on the run (``np.reshape``,
``ravel``, ``np.asarray``, ``squeeze``, ``np.transpose``...; a subscript whose index
may be an integer or an index array; a helper of the user's, which may return a view
of its argument), a view whose base or index was assigned since, and a name that holds
different things on the paths that meet after an ``if`` or around a loop.

Each *write* — a subscript store ``x[i] = v`` (``x[i] += v`` and ``ufunc(..., out=x)``
too: normalize/values.py makes it ``x[...] = ufunc(...)``), an augmented assignment
``x op= v`` on a name, and a call of a helper of the user's for its effect, which may
write into each array it is given — changes every name that shares an object with
``x`` or holds it as an item, and is read later (liveness). Those are brought up to
date after the write:

* the value is written back along ``x``'s derivations up to the name it starts from:
  ``b = a[:2]; b[0] = v`` is followed by ``a[:2] = b`` (``t = a.T``: ``a = t.T``;
  ``c = a``: ``a = c``);
* every other name derived from that same name (directly or through others) is made
  again from it, parents first: after ``a[0] = v``, ``b = a[:2]``.

``x op= v`` changes ``x`` in place only where ``x`` is an array; where it holds a number
(``r = M[i]`` of a vector), Python rebinds the name. So unless ``x`` is certainly an
array (a slice of one), the write-back runs under ``if`` on ``nxrt.is_array(x)``,
measured before the operation: a 0-d array (``np.array(a[0])``) is an array there, a
NumPy scalar (``a[0]``, ``a[0] * 2.0``) a number.

A write that changes a later-read name which cannot be made again from where the write
goes (no derivation, or one from another array) is refused with a
:class:`~numbax.errors.TransformError` naming the line of the write, the line that made
the other name, and what to write instead (``.copy()`` where a copy is meant, or the
write on the base itself). ``x op= v`` on such a name is refused where it runs, with
the same message as a ``ValueError``, when ``x`` holds an array then (a number is
rebound, which changes nothing else). Functions numbax generated are not analysed
again: their writes go to arrays they own.

A parameter may be a list, tuple or dict of arrays (a pytree): its items count as its
own object, so ``u, v = params; u[0] = v`` changes ``params`` and is refused where
``params`` is read later, as is a write through a field (``w = p.w``: an attribute no
array has, of a NamedTuple or a registered class, which cannot take the array back). A
helper of the user's that writes into an array it is given and is called for its result
(``w = h(z)``) is refused at the call, naming the helper's write, where ``z`` or a name
sharing its array is read after the call: derivatives and batching see the helper's
writes only in what it returns (``jit`` alone runs on memory, as NumPy does, and is left
as it is).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import gast
import numpy as np

from numbax.errors import TransformError
from numbax.runtime import nxrt
from numbax.transform.analysis.dataflow import Liveness
from numbax.transform.names import Namer
from numbax.transform.nodes import assign, at, call, clone, load
from numbax.transform.normalize.reject import unsupported
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.rules.batch_kinds import text
from numbax.transform.source import FunctionSource, bind_in_closure, read_function
from numbax.transform.walk import name_ids, walk

__all__ = ["IN_PLACE", "WRITE_BACK", "write_through_aliases"]

IN_PLACE = "numbax_in_place"
"""Attribute the flattener sets on ``x = x op v`` lowered from ``x op= v``."""

WRITE_BACK = "numbax_write_back"
"""Attribute this pass sets on the statements that write a change made through a view
back into its base (``x = c``, ``params[0] = u``). The base's memory was written, so
derivative code copies a parameter that is one first (``ad_common.stored_into``); and
each puts back what the base held in memory already, so compiled code may make it on a
copy of a container (``numba_backend/container_stores.py``)."""

_VIEW_FUNCTIONS = {
    np.reshape,
    np.ravel,
    np.asarray,
    np.asanyarray,
    np.squeeze,
    np.expand_dims,
    np.swapaxes,
    np.moveaxis,
    np.atleast_1d,
    np.atleast_2d,
    np.atleast_3d,
    np.diagonal,
    np.broadcast_to,
    np.real,
    np.imag,
    np.transpose,
}
"""NumPy functions whose result may share memory with their first argument."""

_VIEW_METHODS = {"reshape", "ravel", "view", "squeeze", "swapaxes", "diagonal", "transpose"}
_VIEW_ATTRIBUTES = {"real", "imag", "flat", "mT"}


@dataclass(frozen=True)
class Derivation:
    """``name = value``, where ``value`` reads ``parent`` (and the names in ``reads``)."""

    parent: str
    value: gast.expr
    text: str  # gast.dump of value: derivations compare by it
    reads: frozenset[str]
    line: int
    array: bool  # certainly an array (a slice of one), not maybe a number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Derivation) and (self.parent, self.text) == (
            other.parent,
            other.text,
        )

    def __hash__(self) -> int:
        return hash((self.parent, self.text))


@dataclass(frozen=True)
class Held:
    """What a name holds: the abstract objects it may share, how it was derived (if
    known) and the line that made it."""

    objects: frozenset[object]
    derivation: Derivation | None
    line: int
    # a tuple or list literal's items, each one's objects (None: not known one by one)
    elements: tuple[frozenset[object], ...] | None = None
    # certainly an array, not maybe a number (what a view method or function returns)
    array: bool = False


State = dict[str, Held]


def write_through_aliases(
    fn: gast.FunctionDef, source: FunctionSource, transformation: str
) -> None:
    """Rewrite ``fn`` (core language, in place) as the module docstring says."""
    if getattr(source.func, "__numbax_identity__", None) is not None:
        return  # generated by numbax: it writes only into arrays it owns
    aliases = _Aliases(fn, source, transformation)
    statements = [s for s in walk(fn) if isinstance(s, gast.stmt)]
    if any(aliases.written(s) or aliases.helper_called(s) for s in statements):
        aliases.run()


class _Aliases:
    """The analysis of one function (what each name holds before each statement) and
    the rewrite of its writes."""

    def __init__(self, fn: gast.FunctionDef, source: FunctionSource, transformation: str):
        self.fn = fn
        self.source = source
        self.transformation = transformation
        self.resolver = Resolver(source, local_names(fn))
        self.namer = Namer.for_function(fn)
        self.integers = _integer_names(fn)
        self.index_arrays = _index_arrays(fn, self.resolver)
        self.containers = _containers(fn)
        self.before: dict[int, State] = {}

    def written(self, stmt: gast.stmt) -> list[str]:
        """The names whose arrays ``stmt`` writes into: a store's, an in-place
        operation's, and the names given to a helper of the user's called for its effect
        (``zero_first(b)``), which may write into them."""
        if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
            target = self.resolver.resolve(stmt.value.func)
            if target is LOCAL or target is UNRESOLVED or not _is_user_function(target):
                return []
            given = stmt.value.args + [k.value for k in stmt.value.keywords]
            return list(dict.fromkeys(a.id for a in given if isinstance(a, gast.Name)))
        if not isinstance(stmt, gast.Assign):
            return []
        target = stmt.targets[0]
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            return [target.value.id]
        if isinstance(target, gast.Name) and getattr(stmt, IN_PLACE, False):
            return [target.id]
        return []

    def helper_called(self, stmt: gast.stmt) -> object | None:
        """The user's function that ``stmt`` (``w = h(z)``) calls for its result."""
        if not (isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call)):
            return None
        target = self.resolver.resolve(stmt.value.func)
        if target is LOCAL or target is UNRESOLVED or not _is_user_function(target):
            return None
        return target

    # -- analysis --------------------------------------------------------------------
    def run(self) -> None:
        args = self.fn.args
        params = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
        # a parameter may be a list, tuple or dict of arrays (a pytree): its items are
        # its own object as far as sharing goes (`u, v = params` shares with params)
        state = {
            p: Held(frozenset({("param", p), ("item", ("param", p))}), None, self.fn.lineno)
            for p in params
        }
        self._block(self.fn.body, state, None)
        self.liveness = Liveness(self.fn.body)
        self.fn.body = self._rewrite(self.fn.body)

    def _block(self, stmts: list[gast.stmt], state: State, loop: list | None) -> State | None:
        """The state after ``stmts`` (None: they never complete); ``loop`` collects the
        states at each ``break`` and ``continue`` of the innermost loop."""
        for stmt in stmts:
            seen = self.before.get(id(stmt))
            self.before[id(stmt)] = state if seen is None else _join(seen, state)
            if isinstance(stmt, gast.If):
                body = self._block(stmt.body, dict(state), loop)
                orelse = self._block(stmt.orelse, dict(state), loop)
                state = _join_all([s for s in (body, orelse) if s is not None])
                if state is None:
                    return None
            elif isinstance(stmt, (gast.For, gast.While)):
                state = self._loop(stmt, state)
            elif isinstance(stmt, (gast.Break, gast.Continue)):
                loop.append((type(stmt), state))
                return None
            elif isinstance(stmt, (gast.Return, gast.Raise)):
                return None
            elif isinstance(stmt, gast.Assign):
                state = self._assign(stmt, state)
            elif isinstance(stmt, gast.Expr):
                state = self._appended(stmt, state)
        return state

    def _appended(self, stmt: gast.Expr, state: State) -> State:
        """``items.append(x)``: the list holds ``x``'s array among its items."""
        call = stmt.value
        if not (
            isinstance(call, gast.Call)
            and isinstance(call.func, gast.Attribute)
            and call.func.attr == "append"
            and isinstance(call.func.value, gast.Name)
            and call.func.value.id in state
            and len(call.args) == 1
            and isinstance(call.args[0], gast.Name)
            and call.args[0].id in state
        ):
            return state
        held = state[call.func.value.id]
        items = _as_items(state[call.args[0].id].objects)
        return {**state, call.func.value.id: replace(held, objects=held.objects | items)}

    def _loop(self, stmt: gast.For | gast.While, entry: State) -> State:
        head = dict(entry)
        if isinstance(stmt, gast.For):
            head = self._rebind(head, stmt.target.id, None)
        while True:
            jumps: list = []
            end = self._block(stmt.body, dict(head), jumps)
            continuing = [s for kind, s in jumps if kind is gast.Continue]
            back = [s for s in [end, *continuing] if s is not None]
            if isinstance(stmt, gast.For):
                back = [self._rebind(dict(s), stmt.target.id, None) for s in back]
            new = _join_all([head, *back])
            if new == head:
                breaks = [s for kind, s in jumps if kind is gast.Break]
                return _join_all([head, *breaks])
            head = new

    def _rebind(self, state: State, name: str, held: Held | None) -> State:
        """``state`` after ``name`` is assigned ``held`` (None: a value of its own that
        shares nothing, such as a loop's integer): derivations reading it are lost."""
        for other, h in list(state.items()):
            if h.derivation is not None and name in h.derivation.reads and other != name:
                state[other] = replace(h, derivation=None)
        if held is None:
            state.pop(name, None)
        else:
            state[name] = held
        return state

    def _assign(self, stmt: gast.Assign, state: State) -> State:
        target = stmt.targets[0]
        if isinstance(target, gast.Subscript):  # a store: changes values, not names
            base, value = target.value, stmt.value
            if base.id in self.containers and isinstance(value, gast.Name) and value.id in state:
                held = state[base.id]  # a list's or dict's item: the array itself
                objects = held.objects | _as_items(state[value.id].objects)
                return {**state, base.id: replace(held, objects=objects, elements=None)}
            return state
        line = stmt.lineno
        if isinstance(target, gast.Name):
            if getattr(stmt, IN_PLACE, False) and target.id in state:
                return state  # in place: the name holds the same object
            state = _made_again(state, stmt)
            return self._rebind(state, target.id, self._made(stmt.value, stmt, state, line))
        state = dict(state)
        names = [e.id if isinstance(e, gast.Name) else None for e in target.elts]
        whole = state.get(stmt.value.id) if isinstance(stmt.value, gast.Name) else None
        for i, name in enumerate(names):  # a, b = t: each the item of t it takes
            if name is None:
                continue
            parts = None
            if whole is not None and whole.elements and len(whole.elements) == len(names):
                parts = whole.elements[i]
            elif whole is not None:
                parts = _items(whole.objects)
            held = Held(parts, None, line) if parts else None
            state = self._rebind(state, name, held)
        return state

    def _made(self, value: gast.expr, stmt: gast.stmt, state: State, line: int) -> Held | None:
        fresh = frozenset({("made", id(stmt))})
        if isinstance(value, gast.Name):
            held = state.get(value.id)
            if held is None:
                return None  # a global, a number, a loop's integer
            return Held(held.objects, self._derivation(value.id, value, line, False), line)
        if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
            held = state.get(value.value.id)
            if held is None:
                return None
            kind = self._index_kind(value.slice)
            if kind == "copy":
                return Held(fresh, None, line)
            if kind is None:  # an index array or an integer: a copy or a view
                return Held(held.objects | _items(held.objects) | fresh, None, line)
            derivation = self._derivation(value.value.id, value, line, kind == "view")
            return Held(held.objects | _items(held.objects), derivation, line)
        if isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name):
            held = state.get(value.value.id)
            if held is None:
                return None
            if value.attr == "T":
                return Held(
                    held.objects, self._derivation(value.value.id, value, line, False), line
                )
            if value.attr in _VIEW_ATTRIBUTES:
                return Held(held.objects | fresh, None, line)
            if not hasattr(np.ndarray, value.attr):  # a NamedTuple's or a class's field
                return Held(held.objects | _items(held.objects), None, line)
            return None  # x.shape, x.size: numbers and tuples of them
        if isinstance(value, (gast.Tuple, gast.List)):  # holds its items' arrays
            elements = tuple(
                state[e.id].objects if isinstance(e, gast.Name) and e.id in state else frozenset()
                for e in value.elts
            )
            items = _as_items(frozenset().union(*elements))
            return Held(fresh | items, None, line, elements)
        if isinstance(value, gast.Call):
            shared = self._call_shares(value, state)
            if shared:
                return Held(shared | fresh, None, line, array=self._makes_array(value))
        return Held(fresh, None, line)

    def _derivation(self, parent: str, value: gast.expr, line: int, array: bool) -> Derivation:
        reads = frozenset(name_ids(value))
        return Derivation(parent, clone(value), gast.dump(value), reads, line, array)

    def _index_kind(self, index: gast.expr) -> str | None:
        """``"view"``: basic indexing with a slice, ``...`` or ``None`` (a view, always
        an array); ``"item"``: integers or keys only (a view, or one number or item);
        ``"copy"``: an index array among the parts (fancy indexing copies); None: a name
        that may hold an integer or an index array."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        kinds = set()
        for part in parts:
            if isinstance(part, gast.Slice):
                kinds.add("view")  # its bounds are integers, whatever computes them
            elif isinstance(part, gast.Constant):
                if part.value is Ellipsis or part.value is None:
                    kinds.add("view")
                elif type(part.value) in (int, str):
                    kinds.add("item")
                else:
                    kinds.add(None)
            elif isinstance(part, gast.Name) and part.id in self.integers:
                kinds.add("item")
            elif isinstance(part, gast.Name) and part.id in self.index_arrays:
                kinds.add("copy")
            else:
                kinds.add(None)
        for kind in ("copy", None, "view"):
            if kind in kinds:
                return kind
        return "item"

    def _makes_array(self, value: gast.Call) -> bool:
        """Whether the call returns an array whatever it is given: a view method or
        function (``x.ravel()``, ``np.reshape``), not ``np.real``/``np.imag`` or a
        helper of the user's, which may return a number."""
        func = value.func
        if isinstance(func, gast.Attribute) and func.attr in _VIEW_METHODS:
            return isinstance(func.value, gast.Name) and func.value.id in self.resolver.locals
        target = self.resolver.resolve(func)
        return any(target is f for f in _VIEW_FUNCTIONS - {np.real, np.imag})

    def _call_shares(self, value: gast.Call, state: State) -> frozenset:
        """The objects a call's result may share with the arrays it is given."""
        func = value.func
        given = [a for a in value.args if isinstance(a, gast.Name) and a.id in state]
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
            if func.value.id in state and func.attr in _VIEW_METHODS:
                return state[func.value.id].objects
            if func.value.id in state or not self.resolver.is_global_chain(func):
                return frozenset()  # x.copy(), x.sum(): a value of its own
        target = self.resolver.resolve(func)
        if target is LOCAL or target is UNRESOLVED:
            return frozenset()
        if any(target is f for f in _VIEW_FUNCTIONS):
            return (
                state[given[0].id].objects if given and given[0] is value.args[0] else frozenset()
            )
        if _is_user_function(target):
            return frozenset().union(*(state[a.id].objects for a in given))
        return frozenset()

    # -- rewriting -------------------------------------------------------------------
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


def _containers(fn: gast.FunctionDef) -> set[str]:
    """Locals that hold lists or dicts wherever they are assigned (literals): a store
    into one puts the array itself among its items (into an array, it copies values)."""
    assigned: dict[str, list[gast.AST | None]] = {}
    for node in walk(fn):
        if isinstance(node, (gast.Assign, gast.For)):
            targets = node.targets[0] if isinstance(node, gast.Assign) else node.target
            named = isinstance(node, gast.Assign) and isinstance(targets, gast.Name)
            value = node.value if named else None
            if not isinstance(targets, gast.Subscript):
                for name in name_ids(targets, gast.Store):
                    assigned.setdefault(name, []).append(value)
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        assigned.setdefault(a.id, []).append(None)
    return {
        name
        for name, values in assigned.items()
        if all(isinstance(v, (gast.List, gast.Dict)) for v in values)
    }


def _as_items(objects: frozenset[object]) -> frozenset[object]:
    """``objects`` as a container's items (an item's items are the container's too)."""
    return frozenset(o if o[0] == "item" else ("item", o) for o in objects)


def _items(objects: frozenset[object]) -> frozenset[object]:
    """The objects among ``objects`` that are a container's items, as themselves."""
    return frozenset(o[1] for o in objects if o[0] == "item")


def _made_again(state: State, stmt: gast.stmt) -> State:
    """``state`` as ``stmt`` makes a new value once more (a loop's next pass): the
    values it made before are told apart from the new one (one object for all of them,
    which may share memory with each other but not with the new one)."""
    made, old = ("made", id(stmt)), ("old", id(stmt))
    renamed = {made: old, ("item", made): ("item", old)}

    def again(objects: frozenset[object]) -> frozenset[object]:
        return frozenset(renamed.get(o, o) for o in objects)

    out = {}
    for name, held in state.items():
        if made in held.objects or ("item", made) in held.objects:
            elements = held.elements and tuple(again(e) for e in held.elements)
            held = replace(held, objects=again(held.objects), elements=elements)
        out[name] = held
    return out


def _join(a: State, b: State) -> State:
    out = dict(a)
    for name, held in b.items():
        mine = out.get(name)
        if mine is None or mine == held:
            out[name] = held
        else:
            derivation = mine.derivation if mine.derivation == held.derivation else None
            out[name] = Held(mine.objects | held.objects, derivation, min(mine.line, held.line))
    return out


def _join_all(states: list[State]) -> State | None:
    if not states:
        return None
    out = states[0]
    for other in states[1:]:
        out = _join(out, other)
    return out


def _is_user_function(target: object) -> bool:
    """A Python function of the user's (not NumPy's, nor numbax's): it may return a view
    of what it is given."""
    module = getattr(target, "__module__", None) or ""
    if module.split(".")[0] in ("numpy", "numbax", "math", "builtins", "scipy"):
        return False
    return callable(target) and hasattr(target, "__code__")


def _integer_names(fn: gast.FunctionDef) -> set[str]:
    """Locals that hold integers wherever they are assigned: ``range`` loops' variables,
    integer constants, ``len(...)`` and sums, differences, products of those."""
    assigned: dict[str, list[gast.AST]] = {}
    for node in walk(fn):
        if isinstance(node, gast.For):
            assigned.setdefault(node.target.id, []).append(_RANGE)
        elif isinstance(node, gast.Assign):
            target = node.targets[0]
            if isinstance(target, gast.Name):
                assigned.setdefault(target.id, []).append(node.value)
            else:
                for name in name_ids(target, gast.Store):
                    if not isinstance(target, gast.Subscript):
                        assigned.setdefault(name, []).append(None)
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        assigned.setdefault(a.id, []).append(None)
    integers = set(assigned)
    while True:
        kept = {n for n in integers if all(_integer(v, integers) for v in assigned[n])}
        if kept == integers:
            return integers
        integers = kept


_RANGE = gast.Constant(0, None)

_INDEX_ARRAY_FUNCTIONS = (
    np.array,
    np.asarray,
    np.arange,
    np.argsort,
    np.nonzero,
    np.flatnonzero,
    np.where,
    np.logical_and,
    np.logical_or,
    np.logical_not,
    np.isnan,
    np.isfinite,
)


def _index_arrays(fn: gast.FunctionDef, resolver: Resolver) -> set[str]:
    """Locals that hold index arrays (or tuples of them) wherever they are assigned: list
    literals, comparisons (masks) and what ``np.array``, ``np.arange``, ``np.argsort``,
    ``np.nonzero``, ``np.where``... return. Indexing with one copies."""
    assigned: dict[str, list[gast.AST | None]] = {}
    for node in walk(fn):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, (gast.Assign, gast.For)):
            targets = node.targets[0] if isinstance(node, gast.Assign) else node.target
            if not isinstance(targets, gast.Subscript):
                for name in name_ids(targets, gast.Store):
                    assigned.setdefault(name, []).append(None)
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        assigned.setdefault(a.id, []).append(None)

    def index_array(value: gast.AST | None) -> bool:
        if isinstance(value, (gast.List, gast.Compare)):
            return True
        if isinstance(value, gast.Call):
            target = resolver.resolve(value.func)
            return any(target is f for f in _INDEX_ARRAY_FUNCTIONS)
        return False

    return {n for n, values in assigned.items() if all(map(index_array, values))}


def _integer(value: gast.AST | None, integers: set[str]) -> bool:
    if value is None:
        return False
    if isinstance(value, gast.Constant):
        return type(value.value) is int
    if isinstance(value, gast.Name):
        return value.id in integers
    if isinstance(value, gast.BinOp) and isinstance(
        value.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)
    ):
        return _integer(value.left, integers) and _integer(value.right, integers)
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub):
        return _integer(value.operand, integers)
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name):
        return value.func.id in ("len", "int")
    return False
