"""Reverse mode's loop tapes as arrays under jit.

Reverse mode saves what a loop overwrites on a Python list per variable
(``_tape_x.append(x)`` in the loop, ``x = _tape_x.pop()`` in the loop that runs it
backwards): that works interpreted and compiled alike, for values of any type, and
needs no trip count. Compiled, though, it is a Numba list: each append checks its
capacity and may reallocate, each pop may shrink it, and a loop of scalar arithmetic
(an ODE step) spends much of its time there. This pass (the jit pipeline's last)
stores the values in arrays instead. Where the list is pushed once per iteration of a
``for`` loop over ``range(n)``, its length is known before the loop runs, and each
iteration gets its own slot:

    for _ in range(n_steps):
        if _ == 0:
            _tape_x = nxrt.tape(x, n_steps)
        _tape_x[_] = x
    ...
    for _ in range(n_steps - 1, -1, -1):
        x = _tape_x[_]

That applies where the slots provably hold what the pops would take: the list is made
empty once (``T = []``, outside any loop), pushed by one statement of a loop ``L`` over
``range(S)`` (its body, not a branch or a nested loop of it), popped by one statement
of a later loop over ``range(S - 1, -1, -1)``, used nowhere else; neither loop is inside
another (each runs at most once), ``L`` cannot ``break``, and neither body assigns its
loop's variable, nor ``L``'s ``S``, which is assigned at most once, before ``L``.

Any other tape used only by ``append`` and ``pop`` (a ``while`` loop's, whose trip count
is known only afterwards, a nested loop's, a branch's) keeps the list's every step with
an array that doubles when full and a count of the values on it:

    if _tape_x_size == 0:
        _tape_x = nxrt.tape(x, 16)
    elif _tape_x_size == len(_tape_x):
        _tape_x = nxrt.grown(_tape_x)
    _tape_x[_tape_x_size] = x
    _tape_x_size = _tape_x_size + 1
    ...
    _tape_x_size = _tape_x_size - 1
    x = _tape_x[_tape_x_size]

Either way the tape is made where its first value is pushed, from that value, so that
it has the type the loop gives it (``x = 0`` before a loop that adds floats to it is an
int there, a float in the loop). ``nxrt.tape`` (``loops/tapes.py``, with ``grown`` and
``local_tape``) makes an array of that dtype for a number, and a list of slots for
anything else (an array, whose shape may change from one iteration to the next). A list
used in any other way stays a list. This module is the pass alone: it writes the calls
and imports no Numba.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from numbax.transform.names import Namer
from numbax.transform.nodes import clone, range_arguments
from numbax.transform.walk import walk

_RUNTIME = "nxrt"

TAPE_PREFIX = "_tape_"
"""How reverse mode names its tapes (``_tape_x``). A growing tape is made only of those:
reverse mode never pops an empty one, where a user's list raises IndexError and an
array would read what is not there."""

GROWN_FROM = 16
"""The slots a tape whose length is not known in advance starts with (it doubles)."""


@dataclass
class _Place:
    """Where a statement is: its block, the loops around it (innermost last), and its
    position in the function's text."""

    block: list[gast.stmt]
    loops: tuple[gast.For | gast.While, ...]
    order: int


def array_tapes(fn: gast.FunctionDef) -> gast.FunctionDef:
    """Rewrite ``fn``'s tapes to arrays (see the module's docstring): indexed by the
    iteration where their pushes are counted before their loop runs, growing where not;
    in place."""
    places: dict[int, _Place] = {}
    _locate(fn.body, (), places)
    stmts = {id(s): s for s in walk(fn) if isinstance(s, gast.stmt)}
    rewrites = []
    for init in list(fn.body):
        name = _empty_list(init)
        if name is None:
            continue
        found = _tape_uses(fn, name, stmts, places, init)
        if found is not None:
            rewrites.append((name, init, *found))
    allocations: set[int] = set()
    for name, init, push, loop, count, pop, back in rewrites:
        fn.body.remove(init)
        value = push.value.args[0]
        index = loop.target.id
        first = gast.Compare(_load(index), [gast.Eq()], [gast.Constant(0, None)])
        make = gast.Call(_runtime_attr("tape"), [clone(value), clone(count)], [])
        alloc = _like(gast.Assign([_store(name)], make), push)
        store = gast.Subscript(_load(name), _load(index), gast.Store())
        put = _like(gast.Assign([store], clone(value)), push)
        block = places[id(push)].block
        at = block.index(push)
        allocation = _like(gast.If(first, [alloc], []), push)
        allocations.add(id(allocation))
        block[at : at + 1] = [allocation, put]
        read = gast.Subscript(_load(name), _load(back.target.id), gast.Load())
        pop.value = read
    for loop in {id(r[3]): r[3] for r in rewrites}.values():
        loop.body[:] = _merge_first_iteration(loop.body, allocations)  # places hold it
    done = {r[0] for r in rewrites}
    namer = Namer.for_function(fn)
    for init in list(fn.body):
        name = _empty_list(init)
        if name is None or name in done or not name.startswith(TAPE_PREFIX):
            continue
        uses = _stack_uses(fn, name, stmts)
        if uses is not None:
            _grow(name, init, *uses, places, namer.fresh(f"{name.lstrip('_')}_size"))
            done.add(name)
    left = [n.value.id for n in walk(fn) if _list_method(n) and n.value.id in done]
    if left:  # a push or pop not rewritten would use the array as a list: never run it
        raise AssertionError(f"numbax: tape {left[0]} was not rewritten everywhere")
    return fn


def _list_method(node: gast.AST) -> bool:
    return (
        isinstance(node, gast.Attribute)
        and node.attr in ("append", "pop")
        and isinstance(node.value, gast.Name)
    )


def _stack_uses(fn, name, stmts) -> tuple[list, list] | None:
    """(pushes, pops) when ``name`` is used only by ``name.append(v)`` (``v`` a name or
    a constant) and ``name.pop()`` statements besides its making, else None."""
    pushes = [s for s in stmts.values() if _method_of(s, name, "append", 1)]
    pops = [
        s
        for s in stmts.values()
        if _method_of(s, name, "pop", 0) or _method_of(s, name, "pop", 0, discarded=True)
    ]
    if not pushes:
        return None
    mentions = [n for n in walk(fn) if isinstance(n, gast.Name) and n.id == name]
    if len(mentions) != 1 + len(pushes) + len(pops):
        return None
    if not all(isinstance(p.value.args[0], (gast.Name, gast.Constant)) for p in pushes):
        return None
    if any(isinstance(p, gast.Assign) and not isinstance(p.targets[0], gast.Name) for p in pops):
        return None
    return pushes, pops


def device_tapes(fn: gast.FunctionDef, constant: Callable[[gast.expr], Any]) -> gast.FunctionDef:
    """Reverse mode's tapes in a device function (one GPU thread's code, which cannot
    allocate): each an array in the thread's local memory (``nxrt.local_tape``), made at
    the first push with room for every push the loops around it can make, and a count
    of the values on it. A tape pushed inside a ``while`` loop, or a ``for`` loop whose
    bounds are not known when compiling, has no such bound and stays a list; in place.

    ``constant(node)``: the value of a bound that is not a literal (a global or a
    closure variable, which compiled code freezes), or None."""
    places: dict[int, _Place] = {}
    _locate(fn.body, (), places)
    stmts = {id(s): s for s in walk(fn) if isinstance(s, gast.stmt)}
    namer = Namer.for_function(fn)
    for init in list(fn.body):
        name = _empty_list(init)
        if name is None or not name.startswith(TAPE_PREFIX):
            continue
        uses = _stack_uses(fn, name, stmts)
        if uses is None:
            continue
        bounds = [_pushes_bound(places[id(push)].loops, constant) for push in uses[0]]
        if None in bounds:
            continue
        size = namer.fresh(f"{name.lstrip('_')}_size")
        _grow(name, init, *uses, places, size, capacity=max(1, sum(bounds)))
    return fn


def _pushes_bound(loops: tuple, constant: Callable[[gast.expr], Any]) -> int | None:
    """How many times a statement inside ``loops`` can run: the product of their trip
    counts, each a ``for`` over ``range`` of integers known when compiling (None for
    any other loop)."""
    bound = 1
    for loop in loops:
        args = range_arguments(loop.iter) if isinstance(loop, gast.For) else None
        if args is None:
            return None
        values = [a.value if isinstance(a, gast.Constant) else constant(a) for a in args]
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values):
            return None
        bound *= len(range(*(int(v) for v in values)))
    return bound


def _grow(name, init, pushes, pops, places, size, capacity: int | None = None) -> None:
    """A tape whose length is known only as it runs: an array that doubles when full,
    or one of ``capacity`` slots, made at the first push, and the number of values on it
    (``size``), which each push and pop counts."""
    init.targets = [_store(size)]
    init.value = gast.Constant(0, None)
    for push in pushes:
        value = push.value.args[0]
        empty = gast.Compare(_load(size), [gast.Eq()], [gast.Constant(0, None)])
        if capacity is None:
            length = gast.Call(_load("len"), [_load(name)], [])
            full = gast.Compare(_load(size), [gast.Eq()], [length])
            first = [clone(value), gast.Constant(GROWN_FROM, None)]
            make = gast.Call(_runtime_attr("tape"), first, [])
            more = gast.Call(_runtime_attr("grown"), [_load(name)], [])
            grow = [
                _like(gast.If(full, [_like(gast.Assign([_store(name)], more), push)], []), push)
            ]
        else:
            first = [clone(value), gast.Constant(capacity, None)]
            make = gast.Call(_runtime_attr("local_tape"), first, [])
            grow = []
        start = gast.If(empty, [_like(gast.Assign([_store(name)], make), push)], grow)
        store = gast.Subscript(_load(name), _load(size), gast.Store())
        put = _like(gast.Assign([store], clone(value)), push)
        count = gast.BinOp(_load(size), gast.Add(), gast.Constant(1, None))
        block = places[id(push)].block
        at = block.index(push)
        block[at : at + 1] = [
            _like(start, push),
            put,
            _like(gast.Assign([_store(size)], count), push),
        ]
    for pop in pops:
        less = gast.BinOp(_load(size), gast.Sub(), gast.Constant(1, None))
        block = places[id(pop)].block
        at = block.index(pop)
        taken = [_like(gast.Assign([_store(size)], less), pop)]
        if isinstance(pop, gast.Assign):
            pop.value = gast.Subscript(_load(name), _load(size), gast.Load())
            taken.append(pop)
        block[at : at + 1] = taken


def _locate(stmts: list[gast.stmt], loops: tuple, places: dict[int, _Place]) -> None:
    for stmt in stmts:
        places[id(stmt)] = _Place(stmts, loops, len(places))
        inner = (*loops, stmt) if isinstance(stmt, (gast.For, gast.While)) else loops
        for block in ("body", "orelse"):
            _locate(getattr(stmt, block, None) or [], inner, places)


def _empty_list(stmt: gast.stmt) -> str | None:
    """``T`` for ``T = []``."""
    if (
        isinstance(stmt, gast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
        and isinstance(stmt.value, gast.List)
        and not stmt.value.elts
    ):
        return stmt.targets[0].id
    return None


def _tape_uses(fn, name, stmts, places, init):
    """(push, its loop, the loop's trip count, pop, its loop) when tape ``name`` may
    become an array, else None."""
    mentions = [n for n in walk(fn) if isinstance(n, gast.Name) and n.id == name]
    if len(mentions) != 3:  # made, pushed, popped: nothing else
        return None
    push = _the_statement(stmts, lambda s: _method_of(s, name, "append", 1))
    pop = _the_statement(stmts, lambda s: _method_of(s, name, "pop", 0))
    if push is None or pop is None:
        return None
    loop, back = _only_loop(places[id(push)]), _only_loop(places[id(pop)])
    if (
        loop is None
        or back is None
        or not isinstance(push.value.args[0], (gast.Name, gast.Constant))
    ):
        return None
    if not isinstance(pop.targets[0], gast.Name):
        return None
    count = _counted(fn, loop, places)
    if count is None or not _backwards(back, count, fn, places):
        return None
    if not places[id(init)].order < places[id(loop)].order < places[id(back)].order:
        return None
    return push, loop, count, pop, back


def _the_statement(stmts: dict[int, gast.stmt], test) -> gast.stmt | None:
    """The one statement that passes ``test`` (None if none or several do)."""
    found = [s for s in stmts.values() if test(s)]
    return found[0] if len(found) == 1 else None


def _method_of(
    stmt: gast.stmt, name: str, method: str, n_args: int, discarded: bool = False
) -> bool:
    """Whether ``stmt`` is ``name.method(...)`` (append, or a ``discarded`` pop: a
    statement; pop: ``v = ...``)."""
    if method == "append" or discarded:
        call = stmt.value if isinstance(stmt, gast.Expr) else None
    else:
        call = stmt.value if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 else None
    return (
        isinstance(call, gast.Call)
        and isinstance(call.func, gast.Attribute)
        and call.func.attr == method
        and isinstance(call.func.value, gast.Name)
        and call.func.value.id == name
        and len(call.args) == n_args
        and not call.keywords
    )


def _only_loop(place: _Place) -> gast.For | None:
    """The loop whose body holds the statement directly, if no other loop encloses it."""
    if len(place.loops) != 1:
        return None
    loop = place.loops[0]
    if not isinstance(loop, gast.For) or place.block is not loop.body or loop.orelse:
        return None
    if not isinstance(loop.target, gast.Name) or loop.target.id in _assigned(loop.body):
        return None
    return loop


def _counted(fn, loop: gast.For, places) -> gast.expr | None:
    """``S`` of ``for i in range(S)`` (or ``range(0, S)``), if ``S`` keeps its value
    from before the loop to the end of the function and the loop cannot be left early."""
    args = range_arguments(loop.iter)
    if args is None or len(args) > 3 or (len(args) > 1 and _int(args[0]) != 0):
        return None
    if len(args) == 3 and _int(args[2]) != 1:
        return None
    if any(isinstance(n, (gast.Break, gast.Continue, gast.Return)) for n in walk(loop)):
        return None
    count = args[-1]
    if _int(count) is not None:
        return count
    if not isinstance(count, gast.Name) or count.id in _assigned(loop.body):
        return None
    sites = _assignments(fn, count.id)
    if len(sites) > 1 or any(places[id(s)].order > places[id(loop)].order for s in sites):
        return None
    return count


def _backwards(loop: gast.For, count: gast.expr, fn, places) -> bool:
    """Whether ``loop`` runs over ``range(count - 1, -1, -1)``."""
    args = range_arguments(loop.iter)
    if args is None or len(args) != 3 or _int(args[1]) != -1 or _int(args[2]) != -1:
        return False
    if any(isinstance(n, (gast.Break, gast.Continue, gast.Return)) for n in walk(loop)):
        return False
    last = args[0]
    if isinstance(last, gast.Name):
        sites = _assignments(fn, last.id)
        if len(sites) != 1 or places[id(sites[0])].order > places[id(loop)].order:
            return False
        site = sites[0]
        if not isinstance(site, gast.Assign) or last.id in _assigned(loop.body):
            return False
        last = site.value
    if _int(count) is not None:
        return _int(last) == _int(count) - 1
    return (
        isinstance(last, gast.BinOp)
        and isinstance(last.op, gast.Sub)
        and isinstance(_unweak(last.left), gast.Name)
        and _unweak(last.left).id == count.id
        and _int(_unweak(last.right)) == 1
    )


def _merge_first_iteration(body: list[gast.stmt], allocations: set[int]) -> list[gast.stmt]:
    """Consecutive tapes' ``if i == 0:`` allocations as one ``if``, ahead of their stores
    (each store follows its own allocation or another store of the same run)."""
    out: list[gast.stmt] = []
    run: list[gast.If] = []
    stores: list[gast.stmt] = []

    def flush() -> None:
        if run:
            first = run[0]
            first.body = [s for r in run for s in r.body]
            out.append(first)
            out.extend(stores)
        run.clear()
        stores.clear()

    i = 0
    while i < len(body):
        stmt = body[i]
        if id(stmt) in allocations and i + 1 < len(body):
            run.append(stmt)
            stores.append(body[i + 1])
            i += 2
            continue
        flush()
        out.append(stmt)
        i += 1
    flush()
    return out


def _int(node: gast.expr) -> int | None:
    node = _unweak(node)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    return None


def _unweak(node: gast.expr) -> gast.expr:
    """``v`` of ``nxrt.weak(v, like)`` (the lowering's cast of a Python scalar)."""
    if (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Attribute)
        and node.func.attr == "weak"
        and isinstance(node.func.value, gast.Name)
        and node.func.value.id == _RUNTIME
        and len(node.args) == 2
    ):
        return node.args[0]
    return node


def _assigned(stmts: list[gast.stmt]) -> set[str]:
    """Names stored anywhere in ``stmts`` (loop variables included)."""
    module = gast.Module(body=stmts, type_ignores=[])
    return {
        n.id for n in walk(module) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    }


def _assignments(fn: gast.FunctionDef, name: str) -> list[gast.stmt]:
    """The statements of ``fn`` that store ``name``."""
    return [
        s
        for s in walk(fn)
        if isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For))
        and name in _stored_by(s)
    ]


def _stored_by(stmt: gast.stmt) -> set[str]:
    targets = [stmt.target] if not isinstance(stmt, gast.Assign) else stmt.targets
    return {
        n.id
        for t in targets
        for n in walk(t)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    }


def _like(new: gast.stmt, old: gast.stmt) -> gast.stmt:
    """``new`` at ``old``'s place in the user's code (its line and origin comments)."""
    gast.copy_location(new, old)
    for key, value in vars(old).items():
        if key.startswith("numbax_"):
            setattr(new, key, value)
    return new


def _load(name: str) -> gast.Name:
    return gast.Name(name, gast.Load(), None, None)


def _store(name: str) -> gast.Name:
    return gast.Name(name, gast.Store(), None, None)


def _runtime_attr(name: str) -> gast.Attribute:
    return gast.Attribute(_load(_RUNTIME), name, gast.Load())
