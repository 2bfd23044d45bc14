"""The reductions' folds: how each reduction combines elements, and the small jitted
functions that fold a run of a 1-d array, which the loops ``reduction_loops.py`` writes
call.

A reduction is an ``_Op``: its accumulator type, its first value and its combining step
as source fragments, and the 1-d algorithm that suits it: NumPy's pairwise summation for
float sums (same blocks and order as NumPy, so sums agree to the last bit), eight
independent accumulators for max and min, chunks that stop early for all and any. Each
``_Op`` compiles, once, into ``first``, ``step`` and ``fold`` (and ``argbest`` for
argmax/argmin), cached by the ``_Op``'s value.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import types
from numba.extending import register_jitable
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.caching import runtime_cache
from numbax.numba_backend.generated import define
from numbax.numba_backend.np._typing import _npt

# ---------------------------------------------------------------------------------------
# Small jitted helpers shared by the generated loops.
# ---------------------------------------------------------------------------------------


@register_jitable
def _always() -> bool:
    """True, opaque to Numba's dead-branch pruning: keeps code after a raise typed."""
    return True


@register_jitable
def _div(x, n):
    """``x / n`` with IEEE results for ``n == 0`` (NumPy warns; Numba would raise)."""
    if n == 0:
        return x * np.inf
    return x / n


@register_jitable
def _cge(u, v):
    """NumPy's ``>=`` for complex numbers (lexicographic, NaN-aware)."""
    return (u.real > v.real and u.imag == u.imag and v.imag == v.imag) or (
        u.real == v.real and u.imag >= v.imag
    )


@register_jitable
def _cle(u, v):
    """NumPy's ``<=`` for complex numbers (lexicographic, NaN-aware)."""
    return (u.real < v.real and u.imag == u.imag and v.imag == v.imag) or (
        u.real == v.real and u.imag <= v.imag
    )


@register_jitable
def _cgt(u, v):
    """Lexicographic ``>`` for complex numbers, as NumPy's argmax compares them."""
    return u.real > v.real or (u.real == v.real and u.imag > v.imag)


@register_jitable
def _clt(u, v):
    """Lexicographic ``<`` for complex numbers, as NumPy's argmin compares them."""
    return u.real < v.real or (u.real == v.real and u.imag < v.imag)


_HELPERS = {
    "np": np,
    "to_fixed_tuple": to_fixed_tuple,
    "_always": _always,
    "_div": _div,
    "_cge": _cge,
    "_cle": _cle,
    "_cgt": _cgt,
    "_clt": _clt,
}


def _compile(source: str, name: str, namespace: dict[str, Any], jit: bool = True) -> Any:
    """Define generated ``source`` with the helpers it calls and return its function
    ``name`` (jitted if ``jit``)."""
    fn = define(source, {**_HELPERS, **namespace}, f"reductions {name}", name)
    return runtime_cache.njit(error_model="numpy")(fn) if jit else fn


# ---------------------------------------------------------------------------------------
# Reduction operations, as source fragments compiled into small jitted helpers.
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Op:
    """How a reduction folds elements into an accumulator of NumPy scalar type ``acc``.

    ``elem`` turns an input element ``{x}`` (and, when ``uses_param``, the per-output
    parameter ``p``, the mean for var) into an accumulator value; ``combine`` folds
    accumulator ``{v}`` into ``{u}``; ``init`` is the starting accumulator. ``mode`` picks
    the 1-D algorithm:

    * "pairwise": NumPy's pairwise summation, in NumPy's order;
    * "blocked": 8 independent accumulators combined with ``quick``, a cheaper form of
      ``combine`` that may ignore NaN; then ``guard`` says that a NaN or an infinity may
      have been seen, and the row is folded again with ``combine``;
    * "chunked": chunks folded without a branch, stopping after one where ``stop`` holds;
    * "sequential": one element after the other.

    ``names`` are further globals the fragments use (``T`` is always ``acc``).
    """

    acc: Any
    init: Any
    elem: str
    combine: str
    mode: str = "sequential"
    quick: str | None = None
    guard: bool = False
    stop: str | None = None
    uses_param: bool = False
    names: tuple[tuple[str, Any], ...] = ()

    def at(self, x: str) -> str:
        return self.elem.format(x=x)

    def fold(self, u: str, v: str, combine: str | None = None) -> str:
        return (combine or self.combine).format(u=f"({u})", v=f"({v})")

    def tree(self, combine: str | None = None) -> str:
        """NumPy's order for combining 8 partial accumulators ``r0``..``r7``."""
        pairs = [self.fold(f"r{j}", f"r{j + 1}", combine) for j in range(0, 8, 2)]
        left, right = self.fold(*pairs[:2], combine), self.fold(*pairs[2:], combine)
        return self.fold(left, right, combine)

    def compile(self, source: str, name: str, **extra: Any) -> Any:
        scope = {"T": self.acc, "U": np.uint64, **dict(self.names), **extra}
        return _compile(source, name, scope)


def _sum_op(acc: types.Type) -> _Op:
    t = _npt(acc)
    mode = "pairwise" if isinstance(acc, types.Float | types.Complex) else "sequential"
    return _Op(t, t(0), "T({x})", "T({u} + {v})", mode)


def _prod_op(acc: types.Type) -> _Op:
    t = _npt(acc)
    return _Op(t, t(1), "T({x})", "T({u} * {v})")


def _extreme_op(dt: types.Type, maximum: bool) -> _Op:
    """NumPy's maximum (minimum): ``u`` wins when it is NaN or compares >= (<=) ``v``."""
    t, ge, gt = _npt(dt), (">=" if maximum else "<="), (">" if maximum else "<")
    if isinstance(dt, types.Complex):
        cge = "_cge" if maximum else "_cle"
        combine = f"{{u}} if ({{u}} != {{u}} or {cge}({{u}}, {{v}})) else {{v}}"
        inf = np.inf if maximum else -np.inf
        # Which of several complex NaNs wins depends on the order: keep NumPy's.
        return _Op(t, t(complex(-inf, -inf)), "{x}", combine)
    if isinstance(dt, types.Float):
        combine = f"{{u}} if (({{u}} {ge} {{v}}) | ({{u}} != {{u}})) else {{v}}"
        quick = f"{{v}} if {{v}} {gt} {{u}} else {{u}}"
        worst = t(-np.inf if maximum else np.inf)
        return _Op(t, worst, "{x}", combine, "blocked", quick=quick, guard=True)
    combine = f"{{u}} if {{u}} {ge} {{v}} else {{v}}"
    if isinstance(dt, types.Boolean):
        worst = t(not maximum)
    else:
        info = np.iinfo(t)
        worst = t(info.min if maximum else info.max)
    return _Op(t, worst, "{x}", combine, "blocked", quick=combine)


def _logical_op(conjunction: bool) -> _Op:
    """all (any): truth values folded with and (or), stopping at the first False (True)."""
    if conjunction:
        return _Op(np.bool_, np.True_, "{x} != 0", "{u} & {v}", "chunked", stop="not acc")
    return _Op(np.bool_, np.False_, "{x} != 0", "{u} | {v}", "chunked", stop="acc")


@register_jitable
def _square(d):
    return d * d


@register_jitable
def _abs_square(d):
    return d.real * d.real + d.imag * d.imag


def _sqdev_op(mean: types.Type, acc: types.Type) -> _Op:
    """Squared distance of ``x`` from the mean ``p``, summed in var's dtype ``acc``.

    As NumPy: the difference is taken in the mean's dtype; its square is real.
    """
    complex_mean, t = isinstance(mean, types.Complex), _npt(acc)
    return _Op(
        acc=t,
        init=t(0),
        elem="T(_sq(M({x}) - p))",
        combine="T({u} + {v})",
        mode="pairwise",
        uses_param=True,
        names=(("M", _npt(mean)), ("_sq", _abs_square if complex_mean else _square)),
    )


# Generated 1-D loops index with unsigned integers (``v[U(i)]``): Numba then skips its
# negative-index check, which otherwise costs as much as the arithmetic.


@functools.cache
def _first(op: _Op) -> Any:
    """Jitted ``first(x[, p])``: the accumulator value of a single element."""
    p = ", p" if op.uses_param else ""
    return op.compile(f"def first(x{p}):\n    return {op.at('x')}\n", "first")


@functools.cache
def _step(op: _Op) -> Any:
    """Jitted ``step(acc, x[, p])``: ``acc`` with one more element folded in."""
    p = ", p" if op.uses_param else ""
    return op.compile(f"def step(acc, x{p}):\n    return {op.fold('acc', op.at('x'))}\n", "step")


@functools.cache
def _pairwise(op: _Op) -> Any:
    """Jitted ``pairwise(v[, p], lo, n)``: NumPy's pairwise sum of ``v[lo:lo + n]``.

    Same blocks, same 8 accumulators and same order as NumPy's recursive C loop, so a
    float sum along a whole row usually equals NumPy's to the last bit. The recursion is
    unrolled onto small stacks: Numba's disk cache cannot reload recursive functions.
    """
    p = ", p" if op.uses_param else ""
    block = [
        f"def block(v{p}, lo, n):",
        "    if n < 8:",
        "        res = T(-0.0)",
        "        for i in range(lo, lo + n):",
        f"            res = {op.fold('res', op.at('v[U(i)]'))}",
        "        return res",
        *[f"    r{j} = {op.at(f'v[U(lo + {j})]')}" for j in range(8)],
        "    end = lo + n - n % 8",
        "    for i in range(lo + 8, end, 8):",
        *[f"        r{j} = {op.fold(f'r{j}', op.at(f'v[U(i + {j})]'))}" for j in range(8)],
        f"    res = {op.tree()}",
        "    for i in range(end, lo + n):",
        f"        res = {op.fold('res', op.at('v[U(i)]'))}",
        "    return res",
    ]
    # A stack of ranges (start, size) still to sum, where size -1 asks to add the last two
    # sums, and a stack of sums; 64 levels of halving cover any array.
    source = f"""
def pairwise(v{p}, lo, n):
    if n <= {_PAIRWISE_BLOCK}:
        return block(v{p}, lo, n)
    ranges = np.empty((192, 2), np.intp)
    sums = np.empty(64, T)
    ranges[0, 0] = lo
    ranges[0, 1] = n
    todo = 1
    done = 0
    while todo > 0:
        todo -= 1
        start = ranges[todo, 0]
        size = ranges[todo, 1]
        if size < 0:
            done -= 1
            sums[done - 1] = {op.fold("sums[done - 1]", "sums[done]")}
        elif size <= {_PAIRWISE_BLOCK}:
            sums[done] = block(v{p}, start, size)
            done += 1
        else:
            half = size // 2
            half -= half % 8
            ranges[todo, 1] = -1
            ranges[todo + 1, 0] = start + half
            ranges[todo + 1, 1] = size - half
            ranges[todo + 2, 0] = start
            ranges[todo + 2, 1] = half
            todo += 3
    return sums[0]
"""
    return op.compile(source, "pairwise", block=op.compile("\n".join(block) + "\n", "block"))


_START = "np.intp(0)"
"""The first index, spelled so that Numba types it ``intp``, not ``Literal[int](0)``: a
literal argument compiles a helper again for that value (``fold``, ``pairwise`` and
``block`` a second time, a second of a cold RNN gradient's compile)."""

_PAIRWISE_BLOCK = 128
_CHUNK = 1024


@functools.cache
def _fold1d(op: _Op) -> Any:
    """Jitted ``fold(v, lo, hi, acc[, p])``: ``acc`` with ``v[lo:hi]`` folded in (1-D ``v``).

    It takes bounds rather than a slice: a slice costs two atomic reference counts.
    """
    p = ", p" if op.uses_param else ""
    lines = [f"def fold(v, lo, hi, acc{p}):"]
    if op.mode == "pairwise":
        lines += [f"    return {op.fold('acc', f'pairwise(v{p}, lo, hi - lo)')}"]
        return op.compile("\n".join(lines) + "\n", "fold", pairwise=_pairwise(op))
    step = f"acc = {op.fold('acc', op.at('v[U(i)]'))}"
    if op.mode == "chunked":
        lines += [
            f"    for start in range(lo, hi, {_CHUNK}):",
            f"        for i in range(start, min(start + {_CHUNK}, hi)):",
            f"            {step}",
            f"        if {op.stop}:",
            "            break",
            "    return acc",
        ]
        return op.compile("\n".join(lines) + "\n", "fold")
    lines += ["    start = lo"]
    if op.mode == "blocked":
        lines += ["    if hi - lo >= 8:"]
        lines += [f"        r{j} = {op.at(f'v[U(lo + {j})]')}" for j in range(8)]
        lines += [f"        t{j} = r{j} - r{j}" for j in range(8) if op.guard]
        lines += ["        start = hi - (hi - lo) % 8", "        for i in range(lo + 8, start, 8):"]
        for j in range(8):
            lines += [f"            x = {op.at(f'v[U(i + {j})]')}"]
            lines += [f"            r{j} = {op.fold(f'r{j}', 'x', op.quick)}"]
            lines += [f"            t{j} = t{j} + (x - x)"] if op.guard else []
        if op.guard:  # a NaN or an infinity: fold the whole row again, exactly
            lines += ["        if " + " + ".join(f"t{j}" for j in range(8)) + " != 0:"]
            lines += ["            start = lo", "        else:"]
            lines += [f"            acc = {op.fold('acc', op.tree(op.quick))}"]
        else:
            lines += [f"        acc = {op.fold('acc', op.tree(op.quick))}"]
    lines += ["    for i in range(start, hi):", f"        {step}", "    return acc"]
    return op.compile("\n".join(lines) + "\n", "fold")


@functools.cache
def _arg_helpers(dt: types.Type, maximum: bool) -> tuple[Any, Any]:
    """Jitted ``better(x, b)`` and ``argbest(v)`` with NumPy's argmax/argmin rules.

    The first extreme wins; a NaN beats everything and, once found, is never replaced.
    Real values are scanned in chunks by the fast ``fold`` of max/min; only the chunk
    holding the winner is then searched for its first occurrence.
    """
    if isinstance(dt, types.Complex):
        beats = f"{'_cgt' if maximum else '_clt'}(x, b) or x != x"
    elif isinstance(dt, types.Float):
        beats = f"not (x {'<=' if maximum else '>='} b)"
    else:
        beats = f"x {'>' if maximum else '<'} b"
    better = _compile(f"def better(x, b):\n    return b == b and ({beats})\n", "better", {})
    if isinstance(dt, types.Complex):
        source = """
def argbest(v):
    b = v[0]
    r = 0
    for i in range(1, v.shape[0]):
        x = v[U(i)]
        if better(x, b):
            b = x
            r = i
    return r
"""
        return better, _compile(source, "argbest", {"better": better, "U": np.uint64})
    op = _extreme_op(dt, maximum)
    source = f"""
def argbest(v):
    n = v.shape[0]
    b = v[0]
    chunk = 0
    for start in range(0, n, {_CHUNK}):
        if b != b:
            break
        m = fold(v, start, min(start + {_CHUNK}, n), WORST)
        if better(m, b):
            b = m
            chunk = start
    for i in range(chunk, min(chunk + {_CHUNK}, n)):
        x = v[U(i)]
        if x == b or x != x:
            return i
    return 0
"""
    scope = {"better": better, "fold": _fold1d(op), "WORST": op.init, "U": np.uint64}
    return better, _compile(source, "argbest", scope)
