"""Save/restore pairs that cancel, removed: part of the cleanup pass.

Reverse mode saves a value before the primal sweep overwrites it and gives it back in
the adjoint sweep, so that each line's adjoint reads what its primal read::

    _y_old = y                          _mul = y * y
    y = _mul + x                        _y = _mul + x
    y = np.tanh(y)              →       _y = np.tanh(_y)
    _ct_y = ... y ...                   _ct_y = ... _y ...
    y = _y_old                          (y was never overwritten)
    _ct_mul = ... y ...                 _ct_mul = ... y ...

Two ways a pair cancels:

* :func:`cancel_restores`: the restore gives a variable the object it holds already on
  every path (``_x_old = x`` ... ``x = _x_old`` with neither reassigned between, also
  across branches that a second ``if`` on the same test repeats); the restore goes, and
  the save is then dead.
* :func:`rename_restored`: what the restore undoes is a rebinding in a straight-line
  region (one block, between the save and the restore, without jumps out of it). The
  values the region assigns get a name of their own, as in SSA form, so the variable is
  never overwritten: the restore goes, and the save is then dead. Tapes (saves in a
  loop body whose restores run in the reverse loop) are not such pairs and stay.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import gast

from numbax.transform.analysis.dataflow import Copies, copied_names, statements
from numbax.transform.names import Namer
from numbax.transform.walk import name_nodes, walk

_BLOCKS = ("body", "orelse")


def cancel_restores(fn: gast.FunctionDef) -> bool:
    """Remove each ``b = a`` where ``b`` holds the same object as ``a`` already, on
    every path (``_x_old = x`` ... ``x = _x_old``, with neither reassigned between),
    and ``x = x``; whether any was removed."""
    copies = Copies(fn.body)
    redundant = set()
    for stmt in statements(fn.body):
        pair = copied_names(stmt)
        if pair is not None and (pair[0] == pair[1] or frozenset(pair) in copies.before(stmt)):
            redundant.add(id(stmt))
    if redundant:
        _drop(fn.body, redundant)
    return bool(redundant)


def rename_restored(fn: gast.FunctionDef) -> bool:
    """Remove each restore ``v = a`` of a save ``a = v`` in the same block whose region
    between them rebinds ``v`` only by its own statements (not in a nested block) and
    has no ``break``, ``continue`` or ``return`` leaving it: the region's values of
    ``v`` are renamed; whether any was removed."""
    namer = Namer.for_function(fn)
    changed = False
    while True:
        # The closest pair of each variable: a rename touches only its variable's names,
        # so the pairs of different variables are removed in one scan of the function;
        # the next scan finds the pairs of a variable that one removal changed.
        closest: dict[str, tuple[list[gast.stmt], gast.stmt, gast.stmt]] = {}
        for block, save, restore in _restored_pairs(fn):
            closest.setdefault(restore.targets[0].id, (block, save, restore))
        if not closest:
            return changed
        for var, (block, save, restore) in closest.items():
            region = block[block.index(save) + 1 : block.index(restore)]
            _rename_region(region, var, namer)
            block.remove(restore)
            if not block:
                block.append(gast.Pass())
        changed = True


def _restored_pairs(fn: gast.FunctionDef) -> Iterator[tuple[list[gast.stmt], gast.stmt, gast.stmt]]:
    """``(block, save, restore)`` for each pair :func:`rename_restored` removes, the
    closest pairs first (an inner pair inside an outer one on the same variable)."""
    assigned = Counter(n.id for n in name_nodes(fn, gast.Store, gast.Param))
    found = []
    for block in _blocks(fn.body):
        saves: dict[str, int] = {}  # a saved copy's name → its position in the block
        for j, stmt in enumerate(block):
            pair = copied_names(stmt)
            if pair is None:
                continue
            target, value = pair
            i = saves.get(value) if target != value else None
            if i is not None and copied_names(block[i]) == (value, target) and assigned[value] == 1:
                region = block[i + 1 : j]
                if _renamable(region, target) and not _written_into(region, value):
                    found.append((j - i, block, block[i], stmt))
            saves[target] = j
    for _, block, save, restore in sorted(found, key=lambda f: f[0]):
        yield block, save, restore


def _blocks(stmts: list[gast.stmt]) -> Iterator[list[gast.stmt]]:
    yield stmts
    for stmt in stmts:
        for block in _BLOCKS:
            inner = getattr(stmt, block, None)
            if inner:
                yield from _blocks(inner)


def _renamable(region: list[gast.stmt], var: str) -> bool:
    """Whether ``var`` is assigned in ``region`` by its own statements only (not in a
    nested block, nor as a loop's target), and no jump leaves the region."""
    for stmt in region:
        nested = [s for block in _BLOCKS for s in getattr(stmt, block, [])]
        if isinstance(stmt, gast.For) and var in _stored(stmt.target):
            return False
        if any(var in _stored(s) for s in nested):
            return False
    return not _jumps_out(region)


def _written_into(region: list[gast.stmt], var: str) -> bool:
    """Whether ``region`` stores into ``var``'s array (``w = y; w[2] = v; y = w``, a
    write through a second name made explicit): then the restore gives ``y`` the value
    written, which later passes read as values (the jit's recomputation of ``y``), and
    stays."""
    return any(
        isinstance(node, gast.Subscript)
        and isinstance(node.ctx, gast.Store)
        and var in {n.id for n in walk(node.value) if isinstance(n, gast.Name)}
        for node in walk(gast.Module(body=region, type_ignores=[]))
    )


def _jumps_out(stmts: list[gast.stmt]) -> bool:
    """Whether a jump in ``stmts`` leaves them: a ``return``, or a ``break`` or
    ``continue`` not of a loop among them."""
    for stmt in stmts:
        if isinstance(stmt, gast.Return | gast.Break | gast.Continue):
            return True
        if isinstance(stmt, gast.For | gast.While):
            if any(isinstance(s, gast.Return) for s in statements(stmt.body + stmt.orelse)):
                return True
        elif _jumps_out([s for block in _BLOCKS for s in getattr(stmt, block, [])]):
            return True
    return False


def _stored(node: gast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _rename_region(region: list[gast.stmt], var: str, namer: Namer) -> None:
    """Give the values ``region`` assigns to ``var`` a fresh name, and each read of
    ``var`` after one of them that name."""
    fresh = namer.fresh(var)
    current = var
    for stmt in region:
        names = [node for node in name_nodes(stmt) if node.id == var]
        stores = [node for node in names if isinstance(node.ctx, gast.Store)]
        for node in names:
            node.id = fresh if isinstance(node.ctx, gast.Store) else current
        if stores and isinstance(stmt, gast.Assign):
            current = fresh


def _drop(stmts: list[gast.stmt], ids: set[int]) -> None:
    stmts[:] = [s for s in stmts if id(s) not in ids] or [gast.Pass()]
    for stmt in stmts:
        for block in _BLOCKS:
            if getattr(stmt, block, None):
                _drop(getattr(stmt, block), ids)
