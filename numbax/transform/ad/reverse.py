"""Reverse mode (VJP): a primal sweep that saves what it overwrites, then an adjoint
sweep that walks the function backwards.

Primal sweep: the user's statements, unchanged, except that a value the adjoint needs
is saved just before it is overwritten — in a variable (``_x_old = x``) outside loops,
on a per-variable tape inside them (``_tape_x.append(x)``; Python lists work both
interpreted and under Numba). A loop also records what its reverse needs: a ``for``
its range (recomputed), a ``while`` its trip count, and the loop's own temporaries,
pushed at the end of each iteration.

Adjoint sweep: each statement, last first, replaced by its VJP rule: the output's
cotangent ``_ct_t`` sends ``nxrt.unbroadcast(<template>, x)`` to each active argument
``x``, and an overwritten ``t`` is restored (``t = _tape_t.pop()``) so that every
statement's adjoint sees the values its primal saw. ``if`` runs the same branch
backwards, loops run their iterations in reverse order. Cotangents are created by the
first contribution (no zero arrays are built for straight-line code) and dropped once
their variable's definition has been reached; a statement whose output has no
cotangent emits nothing.

This module builds the VJP function (:func:`vjp_function`) and holds what the sweeps
share (``_Reverse``: the values the adjoint reads, each variable's cotangent, tape and
flag). The sweeps are mixed into ``_Reverse`` from modules of their own:
``reverse_primal.py`` (the primal sweep), ``reverse_statements.py`` (the adjoint of each
statement), ``reverse_contributions.py`` (what each operation sends its operands, and how
cotangents add up) and ``reverse_control.py`` (``if`` and loops, backwards); what the
primal sweep keeps for the adjoint is ``reverse_records.py``.
"""

from __future__ import annotations

import gast

from numbax.transform.ad.common import (
    DeriveCallee,
    derivative_name,
    located,
    refuse_made_functions,
    runtime_call,
    zeros_like,
)
from numbax.transform.ad.kept_results import fold_kept_copies, keep_results
from numbax.transform.ad.reread import freeze_reread
from numbax.transform.ad.reverse_contributions import _Contributions, _tuple_valued
from numbax.transform.ad.reverse_control import _ControlFlowAdjoints
from numbax.transform.ad.reverse_primal import _first_mentions, _PrimalSweep
from numbax.transform.ad.reverse_records import _Save, _Scope
from numbax.transform.ad.reverse_statements import _StatementAdjoints
from numbax.transform.ad.sequences import may_hold_sequences
from numbax.transform.analysis.activity import Activity, analyze
from numbax.transform.analysis.dataflow import assigned_names, names, read_names, statements
from numbax.transform.analysis.shape_sources import Shape, ShapeSources, is_elementwise_value
from numbax.transform.cleanup import cleanup
from numbax.transform.names import Namer
from numbax.transform.nodes import assign, clone, load, store
from numbax.transform.operations import POP, appended, classify, without_host_effects
from numbax.transform.provenance import mark_rerun
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource
from numbax.transform.walk import walk


class _Reverse(_PrimalSweep, _StatementAdjoints, _Contributions, _ControlFlowAdjoints):
    """One function's reverse-mode transformation: what its two sweeps share."""

    def __init__(
        self,
        fn: gast.FunctionDef,
        source: FunctionSource,
        resolver: Resolver,
        activity: Activity,
        derive: DeriveCallee,
        namer: Namer,
        transformation: str = "vjp",
    ) -> None:
        self.transformation = transformation
        self.source = source
        self.resolver = resolver
        self.activity = activity
        self.derive = derive
        self.namer = namer
        self.cotangents: dict[str, str] = {}
        self.tapes: dict[str, str] = {}
        self.needed = self._needed(fn)
        self.maybe_tuple = _tuple_valued(fn, resolver)
        self.maybe_sequences = may_hold_sequences(fn, resolver)
        self.first_mentions = _first_mentions(fn.body)
        self.loop_indices = _loop_indices(fn)
        # stacks (lists used with append/pop: a user's list, a tape of a reverse sweep
        # being differentiated again, or an adjoint's list of cotangents, only popped):
        # their cotangent is a list of the elements' cotangents, which shrinks and grows
        # backwards as the list grew and shrank
        self.stacks = {
            pushed[0]
            for node in walk(fn)
            if (pushed := appended(node)) is not None and pushed[0] in activity
        } | {
            node.value.func.value.id  # v = l.pop(), of a list perhaps never appended to
            for node in walk(fn)
            if isinstance(node, gast.Assign)
            and classify(node.value, resolver).kind == POP
            and node.value.func.value.id in activity
        }
        # stacks whose cotangent starts as zeros of the list's final value (set once the
        # primal sweep knows which exist at its end); the others get theirs as any
        # variable does, from the first contribution (zeros of the list as it is there:
        # the adjoint sweep takes appended values off and puts popped ones back, so
        # that every statement's adjoint sees the list as its primal saw it)
        self.seeded: set[str] = set()
        # adjoint-sweep state: cotangents that exist here (where their variable does),
        # and those we may update in place
        self.defined: set[str] = set()
        self.owned: set[str] = set()
        # variables that may not exist where the adjoint needs a zero cotangent of them:
        # a flag the primal sweep sets when it assigns one (see _zero)
        self.flags: dict[str, str] = {}

    # -- what the adjoint reads --------------------------------------------------------
    def _needed(self, fn: gast.FunctionDef) -> set[str]:
        """Values the adjoint sweep reads, which the primal sweep must save before
        overwriting: the active variables, every name an active statement reads, the
        tests of ``if`` statements and the bounds of ``for`` loops (both run again
        backwards). A ``while`` runs backwards by its trip count, not its test."""
        needed = set(self.activity.varied & self.activity.useful)
        for node in walk(fn):
            if isinstance(node, gast.Assign) and self._assigns_active(node):
                needed |= names(node)
            elif isinstance(node, gast.If):
                needed |= names(node.test)
            elif isinstance(node, gast.For):
                needed |= names(node.iter)
        return needed

    def _assigns_active(self, node: gast.Assign) -> bool:
        target = node.targets[0]
        if isinstance(target, gast.Subscript):
            target = target.value
        return any(n in self.activity for n in names(target))

    def cotangent(self, name: str) -> str:
        if name not in self.cotangents:
            self.cotangents[name] = self.namer.fresh(derivative_name(name, "ct"))
        return self.cotangents[name]

    def tape(self, name: str) -> _Save:
        if name not in self.tapes:
            self.tapes[name] = self.namer.fresh(f"tape_{name.lstrip('_')}")
        return _Save(self.tapes[name], tape=True)

    def _flag(self, var: str) -> str:
        """The flag that says whether ``var`` exists: False at the start, set by the
        primal sweep after each assignment to ``var``; the adjoint sweep gives it back
        its old value where it gives ``var`` its own (see _Save.give_back)."""
        if var not in self.flags:
            self.flags[var] = self.namer.fresh(f"has_{var.lstrip('_')}")
        return self.flags[var]


def _loop_indices(fn: gast.FunctionDef) -> set[str]:
    """Names that only the target of a ``for name in range(...)`` assigns: integers."""
    counters, targets = set(), set()
    for node in walk(fn):
        if (
            isinstance(node, gast.For)
            and isinstance(node.target, gast.Name)
            and isinstance(node.iter, gast.Call)
            and isinstance(node.iter.func, gast.Name)
            and node.iter.func.id == "range"
        ):
            counters.add(node.target.id)
            targets.add(id(node.target))
    assigned_otherwise = {
        n.id
        for n in walk(fn)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and id(n) not in targets
    }
    return counters - assigned_otherwise - set(_params(fn))


COTANGENT_OF = "__numbax_cotangent_of__"
"""The attribute, on a VJP's tree and on the function generated from it, that gives
the shape of each cotangent parameter as the parameters its output's shape broadcasts
from (``{"_ct_out": {"x"}}``; ``analysis/shape_sources.py``). A caller passes a
cotangent of its output's shape (``nx.vjp`` checks a user's), so compiled code may read
the parameter as having that shape: the adjoint then fuses as one loop where shapes
agree (``numba_backend/passes/kept_shapes.py``). A VJP of a VJP keeps its source's parameters,
and so their shapes, and adds its own."""


_SEEDS = {"grad": "grad_seed", "holomorphic": "holomorphic_seed"}
"""The runtime helper that checks a scalar output and gives its cotangent, one."""


def vjp_function(
    fn: gast.FunctionDef,
    source: FunctionSource,
    wrt: list[str],
    derive: DeriveCallee,
    name: str,
    *,
    seed: str = "grad",
    has_aux: bool = False,
    returns: str = "cotangents",
    tuple_cotangents: bool = False,
    transformation: str = "vjp",
) -> gast.FunctionDef:
    """``fn`` (core language) → its reverse-mode derivative, a function named ``name``.

    ``seed``: ``"grad"`` starts from ``nxrt.grad_seed(out)`` (a real scalar output's 1),
    ``"holomorphic"`` from ``nxrt.holomorphic_seed(out)`` (a complex one's);
    ``"parameter"`` adds a last parameter, the output's cotangent. ``returns``:
    ``"cotangents"`` (one, or a tuple for several ``wrt`` or ``tuple_cotangents``),
    ``"value_and_cotangents"``, or ``"tuple"`` (always a tuple).
    With ``has_aux``, ``fn`` returns ``(out, aux)`` and ``aux`` is returned beside.
    """
    namer = Namer.for_function(fn)
    body = freeze_reread(list(fn.body[:-1]), namer)
    if seed not in _SEEDS:  # the primal ran before (a helper's forward, nx.vjp's value)
        body = without_host_effects(body, Resolver(source, local_names(fn)))
    ret = fn.body[-1]
    line = getattr(ret, "lineno", None)
    out = ret.value
    aux = None
    if has_aux:
        value_name, aux_name = namer.fresh("value"), namer.fresh("aux")
        targets = gast.Tuple([store(value_name), store(aux_name)], gast.Store())
        body.append(located([assign(targets, clone(out))], line)[0])
        out, aux = load(value_name), load(aux_name)
    work = clone(fn)
    work.body = body
    resolver = Resolver(source, local_names(fn) | local_names(work))
    outputs = [out.id] if isinstance(out, gast.Name) else []
    activity = analyze(work, wrt, outputs, resolver, transformation)
    refuse_made_functions(work, activity, resolver, source, transformation)
    reverse = _Reverse(work, source, resolver, activity, derive, namer, transformation)
    top = _Scope(None, set(_params(fn)), set(_params(fn)))
    primal, records = reverse.primal(body, top)
    if seed not in _SEEDS:  # the caller ran these lines: what is unused need not run
        for stmt in statements(primal):
            mark_rerun(stmt)
    seed_stmts: list[gast.stmt] = []
    # a list that exists at the end gets zero cotangents, one per element: the adjoint
    # of ``l[k]`` adds into element k, that of ``l.append(v)`` pops v's, and that of
    # ``l = [a, b]`` hands each element its own
    # (a returned list starts from the output's cotangent, below)
    reverse.seeded = {s for s in reverse.stacks if s in top.definite}
    for s in sorted(reverse.seeded - {getattr(out, "id", None)}):
        seed_stmts.append(assign(reverse.cotangent(s), zeros_like(load(s))))
    reverse.defined |= {reverse.cotangent(s) for s in reverse.seeded}
    reverse.owned |= {reverse.cotangent(s) for s in reverse.seeded}
    ct_out_param = None
    if isinstance(out, gast.Name) and out.id in activity:
        ct = reverse.cotangent(out.id)
        if seed in _SEEDS:
            seed_stmts.append(assign(ct, runtime_call(_SEEDS[seed], load(out.id))))
        else:
            ct_out_param = namer.fresh("ct_out")
            ct_out = load(ct_out_param)
            if out.id in reverse.stacks:  # a list returned: its adjoint pops the copy
                ct_out = runtime_call("owned", ct_out)
            seed_stmts.append(assign(ct, ct_out))
        reverse.defined.add(ct)
    elif seed in _SEEDS:  # the output's checks (a real scalar), even without a derivative
        seed_stmts.append(gast.Expr(runtime_call(_SEEDS[seed], clone(out))))
    if seed not in _SEEDS and ct_out_param is None:
        ct_out_param = namer.fresh("ct_out")
    adjoint = reverse.adjoint(records)
    results = []
    for p in wrt:
        ct = reverse.cotangent(p)
        results.append(load(ct) if ct in reverse.defined else zeros_like(load(p)))
    tapes = [assign(t, gast.List([], gast.Load())) for t in reverse.tapes.values()]
    for var, flag in reverse.flags.items():
        tapes.append(assign(flag, gast.Constant(False, None)))
        _flag_assignments(primal, var, flag)
    cts = results[0] if len(results) == 1 else gast.Tuple(results, gast.Load())
    if returns == "tuple" or tuple_cotangents:
        cts = gast.Tuple(results, gast.Load())
    # the value and aux, as the primal sweep left them (the adjoint sweep restores)
    value = clone(out) if returns == "value_and_cotangents" else None
    shown = [e for e in (value, aux) if e is not None]
    kept, renamed = keep_results(
        set().union(*(read_names(e) for e in shown)), body, adjoint, resolver, namer
    )
    for node in (n for e in shown for n in walk(e)):
        if isinstance(node, gast.Name) and node.id in renamed:
            node.id = renamed[node.id]
    if value is not None and aux is not None:
        value = gast.Tuple([value, aux], gast.Load())
    if returns == "value_and_cotangents":
        result = gast.Tuple([value, cts], gast.Load())
    elif aux is not None:
        result = gast.Tuple([cts, aux], gast.Load())
    else:
        result = cts
    new = clone(fn)
    new.name = name
    if ct_out_param is not None:
        new.args.args = list(new.args.args) + [gast.Name(ct_out_param, gast.Param(), None, None)]
        new.args.defaults = []
    new.body = (
        tapes
        + primal
        + located(kept, line)
        + located(seed_stmts, line, adjoint=True)
        + adjoint
        + located([gast.Return(result)], line, adjoint=True)
    )
    cleanup(new, source)
    fold_kept_copies(new, set(renamed.values()))
    setattr(new, COTANGENT_OF, _cotangent_shapes(source, fn, primal, out, ct_out_param, resolver))
    return new


def _cotangent_shapes(
    source: FunctionSource,
    fn: gast.FunctionDef,
    primal: list[gast.stmt],
    out: gast.expr,
    ct_out_param: str | None,
    resolver: Resolver,
) -> dict[str, Shape]:
    """The shapes of the VJP's cotangent parameters (:data:`COTANGENT_OF`): those of
    ``source``'s function, if it is a VJP, and that of its own, the output's."""
    inherited = getattr(source.func, COTANGENT_OF, {})
    if ct_out_param is None or not isinstance(out, gast.Name):
        return dict(inherited)
    params = _params(fn)

    def elementwise(stmt: gast.stmt) -> bool:
        return isinstance(stmt, gast.Assign) and is_elementwise_value(stmt.value, resolver)

    shapes = ShapeSources(params, resolver, elementwise, inherited)
    for stmt in primal:
        shapes.follow(stmt)
    shape = shapes.shape_in_parameters(out.id, params)
    return {**inherited, **({ct_out_param: shape} if shape is not None else {})}


def _flag_assignments(stmts: list[gast.stmt], var: str, flag: str) -> None:
    """Set ``flag`` after each assignment to ``var`` in ``stmts``, nested blocks
    included, and in each iteration of a loop over ``var``."""
    for i in reversed(range(len(stmts))):
        stmt = stmts[i]
        for block in ("body", "orelse"):
            _flag_assignments(getattr(stmt, block, []), var, flag)
        if isinstance(stmt, gast.Assign) and var in assigned_names([stmt]):
            stmts.insert(i + 1, located([assign(flag, gast.Constant(True, None))], stmt.lineno)[0])
        elif isinstance(stmt, gast.For) and stmt.target.id == var:  # set by each iteration
            stmt.body.insert(0, located([assign(flag, gast.Constant(True, None))], stmt.lineno)[0])


def _params(fn: gast.FunctionDef) -> list[str]:
    args = fn.args
    return [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
