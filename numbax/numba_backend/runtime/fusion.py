"""Numba versions of the fused kernels' helpers (``numbax/runtime/fusion.py``): ``first``
compiles as it is; ``cotangent_as`` converts a scalar (typed and lowered in place);
``seed_of_sum``, ``seed_of_total`` and ``seed_of_mean`` are decided by types
alone, and so are the stand-ins (``gradient_stand_in``'s check, the zeros of
``loop_stand_in`` and ``reduction_stand_in``, the unset array of ``shape_stand_in``);
``expand_reduced`` is a reshape for its constant axes."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.core import types
from numba.core.registry import cpu_target
from numba.extending import lower_builtin, overload, register_jitable, type_callable
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.loops.array_operators import PYTHON_OPERATORS
from numbax.numba_backend.loops.array_operators import result_dtype as operator_result_dtype
from numbax.numba_backend.np._typing import _keepdims
from numbax.numba_backend.np.reduction_loops import _axes
from numbax.numba_backend.runtime.common import _always, _define, _fail, _tuple
from numbax.runtime.fusion import (
    cotangent_as,
    expand_reduced,
    first,
    gradient_stand_in,
    loop_stand_in,
    reduction_stand_in,
    seed_of_mean,
    seed_of_sum,
    seed_of_total,
    shape_stand_in,
)
from numbax.runtime.seeds import INTEGER_INPUT, grad_seed

register_jitable(first)


@type_callable(cotangent_as)
def _cotangent_as_typer(context):
    """On scalars, as ``unbroadcast`` converts: to like's dtype when it is inexact (the
    real part of a complex value for a real like), else value's own.

    A typing and a lowering of their own rather than an ``@overload``: a fused kernel of
    a high-order derivative calls this on half its statements, and each call of an
    overload is a call of a function compiled apart, about three times what this
    costs to compile (300 calls: 0.57 s against 0.16 s)."""

    def typer(value, like):
        scalars = (types.Number, types.Boolean)
        if not (isinstance(value, scalars) and isinstance(like, scalars)):
            return None
        if not isinstance(like, types.Float | types.Complex) or like == value:
            return value
        return like

    return typer


@lower_builtin(cotangent_as, types.Any, types.Any)
def _cotangent_as_lowered(context, builder, signature, args):
    value, from_type, to_type = args[0], signature.args[0], signature.return_type
    if from_type == to_type:
        return value
    if isinstance(from_type, types.Complex) and not isinstance(to_type, types.Complex):
        value = context.make_complex(builder, from_type, value=value).real
        from_type = from_type.underlying_float
    return context.cast(builder, value, from_type, to_type)


def _reduced_scalar(values: types.Type, reduction: Any = np.sum) -> type | None:
    """The scalar type of ``reduction`` (``np.sum``, ``np.mean``) of ``values`` (an
    array or a number), as NumPy gives it: asked of NumPy, which answers at once, rather
    than of Numba's typing of the reduction, which compiles its implementation (0.07 s
    the first time)."""
    if isinstance(values, types.Array):
        values = values.dtype
    if not isinstance(values, types.Number | types.Boolean):
        return None
    return np.asarray(reduction(np.zeros(1, as_dtype(values)))).dtype.type


@overload(seed_of_sum)
def _seed_of_sum_jit(kernel, *args):
    """One of the type of ``np.sum(kernel(*args))``, with ``grad_seed``'s checks; neither
    the loop nor the sum runs."""
    if args and isinstance(args[0], types.StarArgTuple):
        args = args[0].types
    typing = cpu_target.typing_context
    values = typing.resolve_function_type(kernel, tuple(args), {})
    scalar = None if values is None else _reduced_scalar(values.return_type)
    if scalar is None:
        return None

    def impl(kernel, *args):
        return grad_seed(scalar(0))

    return impl


def _seed_of_reduction(value: types.Type, reduction: Any) -> Any:
    """The implementation of one of the type of ``reduction(value)`` (``np.sum``,
    ``np.mean``), with ``grad_seed``'s checks; nothing is reduced."""
    scalar = _reduced_scalar(value, reduction)
    if scalar is None:
        return None

    def impl(value):
        return grad_seed(scalar(0))

    return impl


@overload(seed_of_total)
def _seed_of_total_jit(value):
    return _seed_of_reduction(value, np.sum)


@overload(seed_of_mean)
def _seed_of_mean_jit(value):
    return _seed_of_reduction(value, np.mean)


@overload(gradient_stand_in)
def _gradient_stand_in_jit(argument):
    """The argument itself, or ``grad``'s TypeError for an integer or boolean one (the
    message a constant: one built at run time does not survive nested compiled calls)."""
    dtype = argument.dtype if isinstance(argument, types.Array) else argument
    if isinstance(dtype, types.Integer | types.Boolean):
        message = INTEGER_INPUT.format(as_dtype(dtype).name)

        def refuse(argument):
            if _always():
                raise TypeError(message)
            return argument

        return refuse
    return lambda argument: argument


@overload(loop_stand_in)
def _loop_stand_in_jit(kernel, *args):
    """A zero of the type of the fused loop's values, from its scalar kernel's types
    (compiling the kernel alone, not the loop)."""
    if args and isinstance(args[0], types.StarArgTuple):
        args = args[0].types
    fused = getattr(getattr(kernel, "typing_key", None), "__numbax_scalar__", None)
    if fused is None:
        return None
    scalar = as_dtype(fused.element_types(tuple(args))[2]).type

    def impl(kernel, *args):
        return scalar(0)

    return impl


@overload(shape_stand_in)
def _shape_stand_in_jit(operation, *args):
    """An array of the broadcast shape of ``args`` and the dtype of ``operation``'s
    values: a fused loop's from its scalar kernel's types (typing the kernel alone,
    not compiling it), an operator's as its helper computes it on the arrays. Its values are
    never set: only their shape and dtype are read. NumPy's ValueError where the shapes
    do not broadcast, as the operation would raise. Without an array argument (the
    names were scalars), the operation itself, on its values."""
    if args and isinstance(args[0], types.StarArgTuple):
        args = args[0].types
    arrays = [i for i, a in enumerate(args) if isinstance(a, types.Array)]
    key = getattr(operation, "typing_key", None)
    fused = getattr(key, "__numbax_scalar__", None)
    dtype = None
    if arrays and fused is not None:
        dtype = as_dtype(fused.result_type(tuple(args)))
    elif arrays and key in PYTHON_OPERATORS:
        found = operator_result_dtype(key, tuple(args))
        dtype = as_dtype(found) if found is not None else None
    names = ", ".join(f"a{i}" for i in range(len(args)))
    unpacked = f"def impl(operation, *args):\n    {names}{',' if len(args) == 1 else ''} = args\n"
    if dtype is None:
        source = unpacked + f"    return operation({names})\n"
        return _define(source, "impl", {})
    ndim = max(args[i].ndim for i in arrays)
    lengths = []
    for d in range(ndim):  # NumPy aligns the shapes at their last dimension
        each = [
            f"a{i}.shape[{d - ndim + args[i].ndim}]" for i in arrays if args[i].ndim > ndim - d - 1
        ]
        length = each[0]
        for other in each[1:]:
            length = f"_bdim({length}, {other})"
        lengths.append(length)
    shape = ", ".join(lengths) + ("," if ndim == 1 else "")
    source = unpacked + f"    return new_arrays.empty(({shape}), _dtype)\n"
    return _define(source, "impl", {"_dtype": dtype})


@overload(reduction_stand_in, prefer_literal=True)
def _reduction_stand_in_jit(value, reduction):
    """A zero of the type of ``np.<reduction>(value)``; nothing is reduced."""
    if not isinstance(reduction, types.StringLiteral):
        return None
    scalar = _reduced_scalar(value, getattr(np, reduction.literal_value))
    if scalar is None:
        return None

    def impl(value, reduction):
        return scalar(0)

    return impl


@overload(expand_reduced, prefer_literal=True)
def _expand_reduced_jit(value, axis, keepdims):
    keep = _keepdims("expand_reduced", keepdims)
    if keep or not isinstance(value, types.Array):
        return lambda value, axis, keepdims: value
    ndim = value.ndim + (len(axis.types) if isinstance(axis, types.BaseTuple) else 1)
    ax = _axes("expand_reduced", axis, ndim)
    if ax.static is None or ax.error:
        raise _fail("expand_reduced", f"axis must be constant and valid, got {axis}")
    shape, j = [], 0
    for d in range(ndim):
        if d in ax.static:
            shape.append("1")
        else:
            shape.append(f"value.shape[{j}]")
            j += 1
    source = (
        "def impl(value, axis, keepdims):\n"
        f"    return np.ascontiguousarray(value).reshape({_tuple(shape)})\n"
    )
    return _define(source, "impl", {})
