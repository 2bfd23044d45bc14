"""Lone operators on arrays, compiled once per installation instead of in every function.

Numba compiles each statement such as ``_neg_2 = -_ct_sub`` or ``_sub = 1.0 - y`` on
arrays into a function of its own, inside the function that holds it (its array
expressions: a compiler pipeline and an LLVM module per statement, 40-70 ms each).
Fusion (``passes/fuse.py``) makes one loop of a run of such statements; what it leaves are
statements whose every value is read again later, and derivative code reads each value
several times: the 4th derivative of ``tanh`` kept 350 of them in one function, most of
its 27 s of compiling.

So each operator statement of the function's straight-line code (outside loops, where
values are mostly scalars; a matrix product, whose operands are arrays, inside loops
too: Numba's own product compiled in every process, 0.06 s each) calls
``nxrt.op_<name>`` (Python's ``operator`` names: ``op_sub(a, b)`` is ``a - b``). On
arrays it is a call to an implementation compiled once per argument types and kept in
the runtime cache, like numbax's other helpers; on scalars, tuples and anything else
Numba inlines it, so the code is what the operator compiled to before. Only the CPU
target does this (``parallel=True`` functions keep their array expressions, which
Numba's parallel loops run).

On arrays the helper computes what NumPy's operator does. Where NumPy's loop is a float
or complex one of the operands' own dtypes (``float32 * float32``), Numba's operator
does too and is the implementation. For other dtypes Numba's array typing departs from
NumPy's (``int64 * float32`` is float32, ``int32 * complex64`` complex64, ``int8 // 0``
raises): there the implementation is a fused loop of the one operation, which computes
each element at NumPy's loop as every fused loop does (``np/scalars.py``).

A NumPy ufunc called alone in such a statement (``t = np.fmod(a, b)``, which fusion
left) is the same case: ``nxrt.ufunc_call(np.fmod, a, b)`` computes it as NumPy does.
On arrays of the common float dtypes it is Numba's own ufunc; where Numba's departs
(``np.fmod`` and ``np.remainder`` of integers by 0 or of negative values,
``np.maximum(int64, float32)``), a fused loop of the one call; on numbers, NumPy's loop
for them (``numpy_scalars.at_numpy_loop``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import gast
import numpy as np
from numba import types
from numba.core.registry import cpu_target
from numba.extending import overload
from numba.np.numpy_support import from_dtype

from numbax.numba_backend.generated import define
from numbax.numba_backend.loops.elementwise import elementwise
from numbax.numba_backend.loops.matrix_product import is_blas_matrix_pair, matrix_product
from numbax.numba_backend.np.scalars import (
    UFUNC_OF_OPERATOR,
    at_numpy_loop,
    departing_loop,
    item,
)
from numbax.numba_backend.redirects import lowering_helper

_BINARY = {
    gast.Add: ("add", "+"),
    gast.Sub: ("sub", "-"),
    gast.Mult: ("mul", "*"),
    gast.MatMult: ("matmul", "@"),
    gast.Div: ("truediv", "/"),
    gast.FloorDiv: ("floordiv", "//"),
    gast.Mod: ("mod", "%"),
    gast.BitAnd: ("and_", "&"),
    gast.BitOr: ("or_", "|"),
    gast.BitXor: ("xor", "^"),
    gast.LShift: ("lshift", "<<"),
    gast.RShift: ("rshift", ">>"),
    gast.Lt: ("lt", "<"),
    gast.LtE: ("le", "<="),
    gast.Gt: ("gt", ">"),
    gast.GtE: ("ge", ">="),
    gast.Eq: ("eq", "=="),
    gast.NotEq: ("ne", "!="),
}
"""Binary operators and comparisons: the helper's name and the operator's symbol."""

_UNARY = {gast.USub: ("neg", "-"), gast.UAdd: ("pos", "+"), gast.Invert: ("invert", "~")}

PYTHON_OPERATORS: dict[Callable, Callable] = {}
"""Each ``nxrt.op_<name>`` → Python's ``operator.<name>`` (for typing it on arrays)."""


def _declare(name: str, expression: str, parameters: str) -> None:
    """``nxrt.op_<name>``: a Python function computing ``expression`` of ``parameters``
    and its Numba implementation, the same text.

    Two overloads share that implementation. On scalars (no array argument) Numba
    inlines it: the operator's own code, which LLVM optimizes in place. On arrays it is
    a call of the implementation compiled once and kept in the runtime cache. A single
    overload whose ``inline`` is a cost model would do both, but Numba then types the
    implementation's body on every call site before asking the model, and for ``@``
    that compiles Numba's matrix product again in every process (0.08 s a signature).
    """
    source = f"def op_{name}({parameters}):\n    return {expression}\n"
    operation = define(source, {}, f"operator {name}", name=f"op_{name}")
    operation.__module__ = __name__  # numbax's own: described by its place in the cache
    lowering_helper(operation)
    implementation = define(source, {}, f"operator {name} under Numba", name=f"op_{name}")
    ufunc = UFUNC_OF_OPERATOR.get(getattr(operator, name))
    at_numpy_loops = _at_numpy_loops(source, name, parameters) if ufunc is not None else None
    for on_arrays in (False, True):
        typer = define(  # Numba asks for the implementation's own parameters
            f"def typer({parameters}):\n"
            f"    if any_array({parameters}) is on_arrays and not declined({parameters}):\n"
            f"        if on_arrays and at_numpy_loops is not None"
            f" and departing_loop(ufunc, ({parameters},)) is not None:\n"
            f"            return at_numpy_loops({parameters})\n"
            f"        return implementation\n",
            {
                "implementation": implementation,
                "any_array": _any_array,
                "on_arrays": on_arrays,
                "declined": is_blas_matrix_pair if name == "matmul" else _never,
                "at_numpy_loops": at_numpy_loops,
                "departing_loop": departing_loop,
                "ufunc": ufunc,
            },
            f"operator {name} typing {'arrays' if on_arrays else 'scalars'}",
            name="typer",
        )
        overload(operation, target="cpu", inline="never" if on_arrays else "always")(typer)
    if name == "matmul":
        _declare_matrix_product(operation)
    PYTHON_OPERATORS[operation] = getattr(operator, name)


def result_dtype(operation: Callable, args: tuple) -> types.Type | None:
    """The dtype of ``nxrt.op_<name>`` of argument types ``args`` (some arrays) as its
    array implementation computes it, without compiling it; None where it gives no
    array (as NumPy's and Numba's operators, it gives a scalar where every array
    argument is 0-d)."""
    if not any(isinstance(a, types.Array) and a.ndim for a in args):
        return None
    python_operator = PYTHON_OPERATORS[operation]
    ufunc = UFUNC_OF_OPERATOR.get(python_operator)
    loop = departing_loop(ufunc, args) if ufunc is not None else None
    if loop is not None:
        return from_dtype(loop[-1])
    context = cpu_target.typing_context
    signature = context.resolve_function_type(python_operator, tuple(args), {})
    if signature is not None and isinstance(signature.return_type, types.Array):
        return signature.return_type.dtype
    return None


def _at_numpy_loops(source: str, name: str, parameters: str) -> Callable[..., Callable]:
    """The operator on arrays as a fused kernel of one operation (``elementwise``), which
    computes it at NumPy's loop (``np/scalars.py``), for the operand dtypes where
    Numba's array operator departs from NumPy: Numba's ``int64 * float32`` is float32,
    its ``int8 // 0`` raises, its ``int32 * complex64`` is complex64. Given the operand
    types, it returns the implementation: where every array is 0-d, the kernel of their
    values, a scalar as Numba's operator (and NumPy's) gives there, not a 0-d array
    (which Numba's own ufuncs then cannot take: their output of a 0-d array raises)."""
    kernel = define(source, {}, f"operator {name} at NumPy's loops", name=f"op_{name}")
    kernel.__module__ = __name__  # numbax's own: its machine code in the runtime cache
    applied = elementwise(kernel)
    on_arrays = define(
        f"def op_{name}({parameters}):\n    return applied({parameters})\n",
        {"applied": applied},
        f"operator {name} on arrays at NumPy's loops",
        name=f"op_{name}",
    )
    values = ", ".join(f"item({p.strip()})" for p in parameters.split(","))
    on_0d_arrays = define(
        f"def op_{name}({parameters}):\n    return applied({values})\n",
        {"applied": applied, "item": item},
        f"operator {name} on 0-d arrays at NumPy's loops",
        name=f"op_{name}",
    )

    def implementation(*operand_types: types.Type) -> Callable:
        if any(isinstance(t, types.Array) and t.ndim for t in operand_types):
            return on_arrays
        return on_0d_arrays

    return implementation


def _declare_matrix_product(operation: Callable) -> None:
    """``nxrt.op_matmul`` of two matrices that BLAS takes as they are: numbax's
    :func:`matrix_product`, which compiles nothing more, instead of Numba's ``@``
    (which compiles ``np.zeros``, ``np.empty`` and ``np.dot``). Numba tries this overload
    after the two above, which decline such a pair."""
    implementation = define(
        "def op_matmul(a, b):\n    return matrix_product(a, b)\n",
        {"matrix_product": matrix_product},
        "operator matmul of matrices under Numba",
        name="op_matmul",
    )

    def typer(a, b):
        if is_blas_matrix_pair(a, b):
            return implementation
        return None

    overload(operation, target="cpu", inline="never")(typer)


def _never(*operand_types: Any) -> bool:
    return False


def _any_array(*operand_types: Any) -> bool:
    return any(isinstance(t, types.Array) for t in operand_types)


for _name, _symbol in _BINARY.values():
    _declare(_name, f"a {_symbol} b", "a, b")
for _name, _symbol in _UNARY.values():
    _declare(_name, f"{_symbol}a", "a")


@lowering_helper
def ufunc_call(ufunc: np.ufunc, *args: Any) -> Any:
    """``ufunc(*args)``, a NumPy ufunc called alone, computed as NumPy computes it."""
    return ufunc(*args)


def is_alone_callable(ufunc: Any) -> bool:
    """Whether ``ufunc`` is one of NumPy's own ufuncs that :func:`ufunc_call` takes: one
    result, one or two operands (as fused loops take them), or ``np.divmod``."""
    return (
        isinstance(ufunc, np.ufunc)
        and getattr(np, ufunc.__name__, None) is ufunc
        and (ufunc.nout == 1 or ufunc is np.divmod)
        and ufunc.nin in (1, 2)
    )


@overload(ufunc_call, target="cpu")
def _ufunc_call_numba(ufunc, *args):  # noqa: ANN001, ANN202
    """The implementation for these argument types (called, not inlined: Numba's inliner
    takes no ``*args``; LLVM inlines the call on numbers)."""
    if args and isinstance(args[0], types.StarArgTuple):
        args = args[0].types
    found = getattr(ufunc, "typing_key", None)
    if not is_alone_callable(found) or len(args) != found.nin:
        return None
    if found is np.divmod:  # NumPy's is its floor_divide and remainder
        numba_own = departing_loop(np.floor_divide, args) is None
        return _numba_own(found) if numba_own else _divmod
    if departing_loop(found, args) is None:
        return _numba_own(found)
    of_arrays, of_numbers = _at_numpy_loops_of(found)
    return of_arrays if any(isinstance(a, types.Array) and a.ndim for a in args) else of_numbers


def _divmod(ufunc, *args):  # noqa: ANN001, ANN202
    """``ufunc_call``'s implementation for ``np.divmod`` at NumPy's loops."""
    a, b = args
    return ufunc_call(np.floor_divide, a, b), ufunc_call(np.remainder, a, b)


def _ufunc_call_source(ufunc: np.ufunc, body: str) -> str:
    """An implementation of ``ufunc_call`` for ``ufunc`` returning ``body`` of its
    operands ``x0`` (and ``x1``)."""
    parameters = ", ".join(f"x{i}" for i in range(ufunc.nin))
    unpack = "," if ufunc.nin == 1 else ""
    return f"def ufunc_call(ufunc, *args):\n    {parameters}{unpack} = args\n    return {body}\n"


@functools.cache
def _numba_own(ufunc: np.ufunc) -> Callable:
    """``ufunc_call``'s implementation for ``ufunc`` as Numba's own ufunc."""
    parameters = ", ".join(f"x{i}" for i in range(ufunc.nin))
    body = f"numba_own({parameters})"
    return define(
        _ufunc_call_source(ufunc, body),
        {"numba_own": ufunc},
        f"np.{ufunc.__name__} alone, Numba's own",
        name="ufunc_call",
    )


@functools.cache
def _at_numpy_loops_of(ufunc: np.ufunc) -> tuple[Callable, Callable]:
    """``ufunc_call``'s implementations for ``ufunc`` at NumPy's loops: on arrays, a fused
    loop of the one call (``np/scalars.py``); on numbers and 0-d arrays, NumPy's loop
    for them, which gives a number as NumPy does."""
    parameters = ", ".join(f"x{i}" for i in range(ufunc.nin))
    name = ufunc.__name__
    source = f"def {name}({parameters}):\n    return np.{name}({parameters})\n"
    kernel = define(source, {"np": np}, f"np.{name} at NumPy's loops", name=name)
    kernel.__module__ = __name__  # numbax's own: its machine code in the runtime cache
    values = ", ".join(f"item(x{i})" for i in range(ufunc.nin))
    bindings = {
        "applied": elementwise(kernel),
        "numpy_loop": at_numpy_loop(ufunc, (False,) * ufunc.nin),
        "item": item,
    }
    return tuple(
        define(
            _ufunc_call_source(ufunc, body), bindings, f"np.{name} alone, {what}", name="ufunc_call"
        )
        for body, what in (
            (f"applied({parameters})", "on arrays at NumPy's loops"),
            (f"numpy_loop({values})", "on numbers at NumPy's loop"),
        )
    )


def call_operators(
    body: list[gast.stmt], resolve: Callable[[gast.expr], Any], in_loop: bool = False
) -> None:
    """Rewrite, in place, each ``t = a <op> b``, ``t = <op> a`` and single comparison of
    ``body``'s straight-line statements (those of its ``if`` blocks included; in its
    loops, only matrix products) as a call of the operator's helper, and each
    ``t = np.<ufunc>(...)`` there (``resolve`` tells what a call calls) as one of
    :func:`ufunc_call`."""
    for stmt in body:
        if isinstance(stmt, gast.If):
            call_operators(stmt.body, resolve, in_loop)
            call_operators(stmt.orelse, resolve, in_loop)
        elif isinstance(stmt, gast.For | gast.While):
            call_operators(stmt.body, resolve, in_loop=True)
            call_operators(stmt.orelse, resolve, in_loop=True)
        elif isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
            matmul = isinstance(stmt.value, gast.BinOp) and isinstance(stmt.value.op, gast.MatMult)
            call = _as_call(stmt.value, resolve) if matmul or not in_loop else None
            if call is not None:
                stmt.value = call


def _as_call(value: gast.expr, resolve: Callable[[gast.expr], Any]) -> gast.Call | None:
    if isinstance(value, gast.Call) and not value.keywords:
        ufunc = resolve(value.func)
        if not is_alone_callable(ufunc) or len(value.args) != ufunc.nin:
            return None
        if any(isinstance(a, gast.Starred) for a in value.args):
            return None
        helper = gast.Attribute(
            gast.Name("nxrt", gast.Load(), None, None), "ufunc_call", gast.Load()
        )
        return gast.Call(helper, [value.func, *value.args], [])
    if isinstance(value, gast.BinOp) and type(value.op) in _BINARY:
        name, operands = _BINARY[type(value.op)][0], [value.left, value.right]
    elif isinstance(value, gast.UnaryOp) and type(value.op) in _UNARY:
        name, operands = _UNARY[type(value.op)][0], [value.operand]
    elif isinstance(value, gast.Compare) and len(value.ops) == 1 and type(value.ops[0]) in _BINARY:
        name, operands = _BINARY[type(value.ops[0])][0], [value.left, value.comparators[0]]
    else:
        return None
    helper = gast.Attribute(gast.Name("nxrt", gast.Load(), None, None), f"op_{name}", gast.Load())
    return gast.Call(helper, operands, [])
