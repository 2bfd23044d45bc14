"""Reverse mode's sums around fused loops: the seed of a sum, and loops that sum.

After fusion (``fuse.py``, ``fused_loops.py``) has made its loops, what reverse mode
writes around them is rewritten so that no value is summed or stored for nothing:

* ``grad`` of a sum (or a mean) seeds its reverse pass with ones of the sum's dtype,
  known when compiling: the loop that makes the summed values and the sum need not run
  (:func:`seeds_without_sums`);
* two loops that sum their values into a like's shape, from the same arguments, are one
  loop (:func:`in_one_loop`), after their spread reduced values are expanded once
  (:func:`one_expansion_each`);
* a summing loop into the shape of a value it computes itself is a plain loop and the
  ``unbroadcast`` after it (:func:`summed_after_the_loop`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import gast
import numpy as np

from numbax.numba_backend.passes.fused_loops import read_ids, runtime_assign
from numbax.runtime import nxrt as runtime
from numbax.transform.resolve import Resolver
from numbax.transform.walk import name_nodes, walk


def seeds_without_sums(
    stmts: list[gast.stmt],
    fn: gast.FunctionDef,
    resolver: Resolver,
    kernels: list[gast.FunctionDef],
) -> list[gast.stmt]:
    """``_k = _kernel(x)``, ``_sum = nxrt.sum(_k)``, ``_ct = nxrt.grad_seed(_sum)``,
    with ``_k`` and ``_sum`` read nowhere else, become ``_ct =
    nxrt.seed_of_sum(_kernel, x)``: ``grad`` of a sum needs only its dtype, known
    when compiling, so neither the fused loop nor the sum runs (the reverse pass
    computes what it needs of them again, ``rematerialize.py``). Without the loop
    (``_k`` read again, or made otherwise), ``_ct = nxrt.seed_of_total(_k)``: the sum
    does not run. A mean read by its adjoint's ``reduced_count`` too is not taken
    either (``_seed_of_mean``)."""
    return _Seeds(fn, resolver, kernels).without_sums(stmts)


class _Seeds:
    """The seeds of sums in ``fn``, whose fused loops are ``kernels``."""

    def __init__(
        self, fn: gast.FunctionDef, resolver: Resolver, kernels: list[gast.FunctionDef]
    ) -> None:
        self.fn = fn
        self.resolver = resolver
        self.kernels = kernels

    def without_sums(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        kernels = {kernel.name for kernel in self.kernels}
        reads = Counter(read_ids(self.fn))
        out: list[gast.stmt] = []
        index = 0
        while index < len(stmts):
            window = stmts[index : index + 3]
            merged = self._seed_of_sum(window, kernels, reads) if len(window) == 3 else None
            if merged is not None:
                out.append(merged)
                index += 3
                continue
            merged = self._seed_of_total(window[:2], reads)
            if merged is not None:
                out.append(merged)
                index += 2
                continue
            merged = self._seed_of_mean(stmts, index, reads)
            if merged is not None:
                out.append(merged)
                index += 2
                continue
            out.append(stmts[index])
            index += 1
        return out

    def _reduced_then_seeded(
        self, window: list[gast.stmt], reduction: Any
    ) -> tuple[str, list[gast.expr]] | None:
        """``_r = reduction(v)``, ``_ct = nxrt.grad_seed(_r)`` (``window``'s two
        statements): the reduction's target and its argument list ``[v]``; else None."""
        if len(window) < 2:
            return None
        reduced, seed = (self._single_call(stmt) for stmt in window[:2])
        if reduced is None or seed is None:
            return None
        if self.resolver.resolve(reduced[1].func) is not reduction or reduced[1].keywords:
            return None
        if self.resolver.resolve(seed[1].func) is not runtime.grad_seed:
            return None
        args = reduced[1].args
        if len(args) != 1 or not isinstance(args[0], gast.Name):
            return None
        return (reduced[0], args) if _is_name(seed[1].args, reduced[0]) else None

    def _seed_of_total(self, window: list[gast.stmt], reads: Counter) -> gast.Assign | None:
        matched = self._reduced_then_seeded(window, np.sum)
        if matched is None or reads[matched[0]] != 1:
            return None
        return runtime_assign(window[1], "seed_of_total", matched[1])

    def _seed_of_mean(
        self, stmts: list[gast.stmt], index: int, reads: Counter
    ) -> gast.Assign | None:
        """``_mean = np.mean(v)``, ``_ct = nxrt.grad_seed(_mean)`` at ``index``, with
        ``_mean`` read again only as ``like`` of the adjoint's ``nxrt.reduced_count(a,
        _mean)`` (its size, which the seed has), as ``_ct = nxrt.seed_of_mean(v)``; those
        counts then read ``_ct``. In place for the counts."""
        matched = self._reduced_then_seeded(stmts[index : index + 2], np.mean)
        if matched is None:
            return None
        mean, seed = matched[0], stmts[index + 1].targets[0].id
        counts = [
            call
            for stmt in stmts[index + 2 :]
            if (found := self._single_call(stmt)) is not None
            and self.resolver.resolve((call := found[1]).func) is runtime.reduced_count
            and len(call.args) == 2
            and _is_name(call.args[1:], mean)
            and mean not in read_ids(call.args[0])
        ]
        if reads[mean] != 1 + len(counts):
            return None
        stores = Counter(n.id for n in name_nodes(self.fn, gast.Store))
        if stores[mean] != 1 or stores[seed] != 1:  # each count reads these values
            return None
        for call in counts:
            call.args[1] = gast.Name(seed, gast.Load(), None, None)
        return runtime_assign(stmts[index + 1], "seed_of_mean", matched[1])

    def _seed_of_sum(
        self, window: list[gast.stmt], kernels: set[str], reads: Counter
    ) -> gast.Assign | None:
        loop = self._single_call(window[0])
        matched = self._reduced_then_seeded(window[1:], np.sum)
        if loop is None or matched is None:
            return None
        values, call = loop
        if not (isinstance(call.func, gast.Name) and call.func.id in kernels):
            return None
        total, summed = matched
        if not _is_name(summed, values) or reads[values] != 1 or reads[total] != 1:
            return None
        return runtime_assign(window[2], "seed_of_sum", [call.func, *call.args])

    @staticmethod
    def _single_call(stmt: gast.stmt) -> tuple[str, gast.Call] | None:
        """``name = f(args)`` without keywords, as its target and call."""
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1):
            return None
        target, value = stmt.targets[0], stmt.value
        if not (isinstance(target, gast.Name) and isinstance(value, gast.Call)) or value.keywords:
            return None
        return target.id, value


def _is_name(args: list[gast.expr], name: str) -> bool:
    """Whether ``args`` is the one name ``name``."""
    return len(args) == 1 and isinstance(args[0], gast.Name) and args[0].id == name


def one_expansion_each(stmts: list[gast.stmt], kernels: list[gast.FunctionDef]) -> list[gast.stmt]:
    """``stmts`` without a second ``y = nxrt.expand_reduced(g, axis, keepdims)`` of a ``g``
    not assigned since the first, ``x``; what reads ``y`` reads ``x``, and the parameter
    of a loop named after ``y`` is named ``x``. Two loops that spread one reduced value
    then read the same arguments (see :func:`in_one_loop`)."""
    made: dict[str, tuple[str, str]] = {}  # expansion's name: (its key, g)
    renamed: dict[str, str] = {}
    out = []
    for stmt in stmts:
        for node in walk(stmt):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                node.id = renamed.get(node.id, node.id)
        value = getattr(stmt, "value", None)
        is_expansion = (
            isinstance(stmt, gast.Assign)
            and isinstance(stmt.targets[0], gast.Name)
            and isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute)
            and value.func.attr == "expand_reduced"
            and isinstance(value.args[0], gast.Name)
        )
        if is_expansion:
            key = gast.dump(value)
            earlier = next((name for name, (k, _) in made.items() if k == key), None)
            if earlier is not None:
                renamed[stmt.targets[0].id] = earlier
                continue
        assigned = {
            n.id for n in walk(stmt) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
        }
        made = {
            name: (k, g)
            for name, (k, g) in made.items()
            if name not in assigned and g not in assigned
        }
        if is_expansion:
            made[stmt.targets[0].id] = (gast.dump(value), value.args[0].id)
        out.append(stmt)
    for node in (n for kernel in kernels for n in walk(kernel) if isinstance(n, gast.Name)):
        node.id = renamed.get(node.id, node.id)  # expansions' names are fresh: no clash
    return out


def summed_after_the_loop(
    stmts: list[gast.stmt], kernels: dict[str, gast.FunctionDef]
) -> list[gast.stmt]:
    """Each call ``t = kernel(like, *args)`` of a loop that would sum its values into the
    shape of a value it computes itself, alone in its loop (not declared ``also=``), as
    the plain loop's values and the ``unbroadcast`` of them after it.

    That value (``out`` in ``(out - y) ** 2``) usually has the loop's shape, which
    ``unbroadcast`` sees and returns the values as they are; the summing loop would be
    compiled for every program and seldom run. ``jit(grad)`` of the MLP of a dict (a
    squared error) took 0.5 s less on an empty cache: the loop nest, its machine code in
    the caller, and the call choosing between it and the plain loop. The ``unbroadcast``
    of the same values into ``like``'s shape after the loop shares its compiled code with
    the other ``unbroadcast`` calls of those types. Two loops into one (``also=``, the
    cotangents of ``f(x) * w`` into ``f(x)``'s shape and ``w``'s) stay one."""
    out: list[gast.stmt] = []
    for stmt in stmts:
        call = _unbroadcasting_call(stmt, kernels)
        kernel = kernels[call[1]] if call is not None else None
        summed = getattr(kernel, "numbax_summed_after", None)
        if summed is None or "also" in kernel.numbax_sum:
            out.append(stmt)
            continue
        del kernel.numbax_sum  # a plain loop
        stmt.targets[0].id = summed.value.args[0].id  # what the kernel returns
        stmt.value.args = stmt.value.args[1:]
        out += [stmt, summed]
    return out


def in_one_loop(stmts: list[gast.stmt], kernels: dict[str, gast.FunctionDef]) -> list[gast.stmt]:
    """Two consecutive calls of loops that sum their values into a like's shape, given
    the same arguments, as one loop (the second declared ``also=`` the first): the
    arguments are read and the shared values computed once (the two cotangents of
    ``pos[:, None, :] - pos[None, :, :]``, summed onto the particles from both sides)."""
    out: list[gast.stmt] = []
    for stmt in stmts:
        merged = _merged(out[-1], stmt, kernels) if out else None
        if merged is None:
            out.append(stmt)
        else:
            out[-1] = merged
    return out


def _merged(
    first: gast.stmt, second: gast.stmt, kernels: dict[str, gast.FunctionDef]
) -> gast.Assign | None:
    calls = [_unbroadcasting_call(stmt, kernels) for stmt in (first, second)]
    if None in calls:
        return None
    (target_a, kernel_a, like_a, args_a), (target_b, kernel_b, like_b, args_b) = calls
    if args_a != args_b or target_a in args_a or target_a == like_b or target_a == target_b:
        return None
    if "also" in kernels[kernel_b].numbax_sum or "also" in kernels[kernel_a].numbax_sum:
        return None
    kernels[kernel_b].numbax_sum = {
        **kernels[kernel_b].numbax_sum,
        "also": gast.Name(kernel_a, gast.Load(), None, None),
    }
    targets = gast.Tuple(
        [gast.Name(t, gast.Store(), None, None) for t in (target_a, target_b)], gast.Store()
    )
    names = [like_a, like_b, *args_b]
    call = gast.Call(
        gast.Name(kernel_b, gast.Load(), None, None),
        [gast.Name(n, gast.Load(), None, None) for n in names],
        [],
    )
    assign = gast.Assign([targets], call, None)
    assign.lineno = getattr(first, "lineno", None)
    return assign


def _unbroadcasting_call(
    stmt: gast.stmt, kernels: dict[str, gast.FunctionDef]
) -> tuple[str, str, str, list[str]] | None:
    """``t = kernel(like, *args)`` of a loop declared ``unbroadcast=True``, all names: its
    target, kernel, like and arguments."""
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name)):
        return None
    call = stmt.value
    if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Name)):
        return None
    kernel = kernels.get(call.func.id)
    if kernel is None or "unbroadcast" not in getattr(kernel, "numbax_sum", {}):
        return None
    if not call.args or not all(isinstance(a, gast.Name) for a in call.args):
        return None
    like, *args = [a.id for a in call.args]
    return stmt.targets[0].id, call.func.id, like, args
