"""Lone operators on arrays, compiled once per installation instead of in every function.

Numba compiles each statement such as ``_neg_2 = -_ct_sub`` or ``_sub = 1.0 - y`` on
arrays into a function of its own, inside the function that holds it (its array
expressions: a compiler pipeline and an LLVM module per statement, 40-70 ms each).
Fusion (``fuse.py``) makes one loop of a run of such statements; what it leaves are
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
each element at NumPy's loop as every fused loop does (``numpy_scalars.py``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import gast
from numba import types
from numba.core.registry import cpu_target
from numba.extending import overload
from numba.np.numpy_support import from_dtype

from numbax.numba_backend.elementary import item
from numbax.numba_backend.elementwise import elementwise
from numbax.numba_backend.generated import define
from numbax.numba_backend.matrix_product import is_blas_matrix_pair, matrix_product
from numbax.numba_backend.numpy_scalars import UFUNC_OF_OPERATOR, departing_loop
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
    computes it at NumPy's loop (``numpy_scalars.py``), for the operand dtypes where
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


def call_operators(body: list[gast.stmt], in_loop: bool = False) -> None:
    """Rewrite, in place, each ``t = a <op> b``, ``t = <op> a`` and single comparison of
    ``body``'s straight-line statements (those of its ``if`` blocks included; in its
    loops, only matrix products) as a call of the operator's helper."""
    for stmt in body:
        if isinstance(stmt, gast.If):
            call_operators(stmt.body, in_loop)
            call_operators(stmt.orelse, in_loop)
        elif isinstance(stmt, gast.For | gast.While):
            call_operators(stmt.body, in_loop=True)
            call_operators(stmt.orelse, in_loop=True)
        elif isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
            matmul = isinstance(stmt.value, gast.BinOp) and isinstance(stmt.value.op, gast.MatMult)
            call = _as_call(stmt.value) if matmul or not in_loop else None
            if call is not None:
                stmt.value = call


def _as_call(value: gast.expr) -> gast.Call | None:
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
