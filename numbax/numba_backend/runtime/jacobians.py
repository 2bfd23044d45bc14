"""Numba versions of the Jacobians' helpers (``numbax/runtime/jacobians.py``): code
generated per argument type, one statement group per leaf of the (named) tuples that
stand for pytrees under ``jit`` (``boundary.py``), so a heterogeneous structure is
unrolled leaf by leaf, in the order ``tree_util`` flattens it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numba import types
from numba.core import errors
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.runtime.common import (
    _always,
    _define,
    _fail,
    _is_none,
    _is_scalar,
)
from numbax.runtime.jacobians import (
    DIAGONAL_SIZES,
    UNRAVEL_LENGTH,
    jac_basis,
    jac_basis_all,
    jac_buffer,
    jac_diagonal,
    jac_flatten,
    jac_size,
    jac_unflatten,
    jacobian_dtype,
    jacobian_dtype_error,
    ravel_batch,
    ravel_pytree,
    unravel_batch,
    unravel_pytree,
)


def _paths(name: str, ty: Any, path: str = "") -> list[tuple[str, Any]]:
    """(subscript path, type) of each leaf of a value of type ``ty``, in order."""
    if _is_none(ty):
        return []
    if isinstance(ty, types.BaseTuple):
        return [leaf for i in range(len(ty)) for leaf in _paths(name, ty[i], f"{path}[{i}]")]
    if isinstance(ty, types.Array) or _is_scalar(ty):
        return [(path, types.unliteral(ty))]
    raise _fail(
        name,
        f"expected arrays, numbers, None and (named) tuples of them, got {ty}"
        + (" (under jit, return a tuple instead of a list)" if isinstance(ty, types.List) else ""),
    )


def _rebuild(ty: Any, items: Iterator[str], namespace: dict[str, Any]) -> str:
    """Source building a value of ``ty``'s structure from the leaf expressions ``items``."""
    if _is_none(ty):
        return "None"
    if isinstance(ty, types.BaseTuple):
        parts = [_rebuild(ty[i], items, namespace) for i in range(len(ty))]
        if isinstance(ty, types.BaseNamedTuple):
            cls = f"_cls{len(namespace)}"
            namespace[cls] = ty.instance_class
            return f"{cls}({', '.join(parts)})"
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    return next(items)


def _dtype(ty: Any) -> np.dtype:
    return as_dtype(ty.dtype if isinstance(ty, types.Array) else ty)


def _leaf_size(expr: str, ty: Any) -> str:
    return f"{expr}.size" if isinstance(ty, types.Array) else "1"


def _leaf_shape(expr: str, ty: Any) -> str | None:
    """Source of the leaf's shape, None for a scalar."""
    return f"{expr}.shape" if isinstance(ty, types.Array) else None


def _total(name: str, var: str, ty: Any) -> str:
    sizes = [_leaf_size(f"{var}{p}", t) for p, t in _paths(name, ty)]
    return " + ".join(sizes) if sizes else "0"


@overload(jac_size)
def _jac_size_jit(x):
    return _define(f"def impl(x):\n    return {_total('jac_size', 'x', x)}\n", "impl", {})


@overload(jac_basis)
def _jac_basis_jit(x, k):
    namespace: dict[str, Any] = {}
    lines, names = ["def impl(x, k):", "    offset = 0"], []
    for i, (p, ty) in enumerate(_paths("jac_basis", x)):
        dtype = _dtype(ty)
        namespace[f"one{i}"], namespace[f"zero{i}"] = dtype.type(1), dtype.type(0)
        if isinstance(ty, types.Array):
            namespace[f"dt{i}"] = dtype.type
            lines += [
                f"    leaf{i} = np.zeros(x{p}.shape, dt{i})",
                f"    n{i} = leaf{i}.size",
                f"    if offset <= k and k < offset + n{i}:",
                f"        leaf{i}.reshape(n{i})[k - offset] = one{i}",
                f"    offset += n{i}",
            ]
        else:
            lines += [f"    leaf{i} = one{i} if k == offset else zero{i}", "    offset += 1"]
        names.append(f"leaf{i}")
    lines.append(f"    return {_rebuild(x, iter(names), namespace)}")
    return _define("\n".join(lines) + "\n", "impl", namespace)


@overload(jac_basis_all)
def _jac_basis_all_jit(x):
    namespace: dict[str, Any] = {}
    leaves = _paths("jac_basis_all", x)
    lines = ["def impl(x):", f"    n = {_total('jac_basis_all', 'x', x)}", "    offset = 0"]
    names = []
    for i, (p, ty) in enumerate(leaves):
        namespace[f"dt{i}"] = _dtype(ty).type
        shape = _leaf_shape(f"x{p}", ty)
        lines += [
            f"    size{i} = {_leaf_size(f'x{p}', ty)}",
            f"    part{i} = np.zeros((n, size{i}), dt{i})",
            f"    for k in range(size{i}):",
            f"        part{i}[offset + k, k] = 1",
            f"    offset += size{i}",
            f"    leaf{i} = part{i}.reshape((n,) + {shape})"
            if shape
            else f"    leaf{i} = part{i}[:, 0]",
        ]
        names.append(f"leaf{i}")
    lines.append(f"    return {_rebuild(x, iter(names), namespace)}")
    return _define("\n".join(lines) + "\n", "impl", namespace)


def _rows(ty: Any) -> str:
    """Source of a batch leaf's size per example."""
    return " * ".join(f"x.shape[{k}]" for k in range(1, ty.ndim)) or "1"


@overload(ravel_batch)
def _ravel_batch_jit(x):
    leaves = _paths("ravel_batch", x)
    if not leaves or not all(isinstance(t, types.Array) for _, t in leaves):
        raise _fail("ravel_batch", f"expected a batch of arrays, got {x}")
    dtype = np.result_type(*[_dtype(t) for _, t in leaves])
    sizes = [_rows(t).replace("x.", f"x{p}.") for p, t in leaves]
    if len(leaves) == 1:  # a view where the batch is contiguous, as NumPy's reshape
        p = leaves[0][0]
        batch = f"np.ascontiguousarray(x{p})"
        source = f"def impl(x):\n    return {batch}.reshape((x{p}.shape[0], {sizes[0]}))\n"
        return _define(source, "impl", {})
    lines = [
        "def impl(x):",
        f"    flat = np.empty((x{leaves[0][0]}.shape[0], {' + '.join(sizes)}), dt)",
        "    offset = 0",
    ]
    for i, (p, _) in enumerate(leaves):
        lines += [
            f"    n{i} = {sizes[i]}",
            f"    flat[:, offset : offset + n{i}] = "
            f"np.ascontiguousarray(x{p}).reshape((x{p}.shape[0], n{i}))",
            f"    offset += n{i}",
        ]
    lines.append("    return flat")
    return _define("\n".join(lines) + "\n", "impl", {"dt": dtype.type})


@overload(unravel_batch)
def _unravel_batch_jit(flat, like):
    if not isinstance(flat, types.Array) or flat.ndim != 2:
        raise _fail("unravel_batch", f"expected a matrix, got {flat}")
    leaves = _paths("unravel_batch", like)
    if not all(isinstance(t, types.Array) for _, t in leaves):
        raise _fail("unravel_batch", f"expected a batch of arrays, got {like}")
    namespace: dict[str, Any] = {}
    lines, names = ["def impl(flat, like):", "    offset = 0"], []
    for i, (p, t) in enumerate(leaves):
        size = _rows(t).replace("x.", f"like{p}.")
        lines += [
            f"    n{i} = {size}",
            f"    leaf{i} = np.ascontiguousarray(flat[:, offset : offset + n{i}])"
            f".reshape(like{p}.shape)",
            f"    offset += n{i}",
        ]
        names.append(f"leaf{i}")
    lines.append(f"    return {_rebuild(like, iter(names), namespace)}")
    return _define("\n".join(lines) + "\n", "impl", namespace)


@overload(ravel_pytree)
def _ravel_pytree_jit(x):
    leaves = _paths("ravel_pytree", x)
    dtype = np.result_type(*[_dtype(t) for _, t in leaves]) if leaves else np.dtype("f8")
    lines = ["def impl(x):", f"    flat = np.empty({_total('ravel_pytree', 'x', x)}, dt)"]
    lines.append("    offset = 0")
    for i, (p, ty) in enumerate(leaves):
        if isinstance(ty, types.Array):
            lines += [
                f"    n{i} = x{p}.size",
                f"    flat[offset : offset + n{i}] = np.ravel(x{p})",
                f"    offset += n{i}",
            ]
        else:
            lines += [f"    flat[offset] = x{p}", "    offset += 1"]
    lines.append("    return flat")
    return _define("\n".join(lines) + "\n", "impl", {"dt": dtype.type})


@overload(unravel_pytree)
def _unravel_pytree_jit(flat, like):
    if not isinstance(flat, types.Array) or flat.ndim != 1:
        raise _fail("unravel_pytree", f"expected a 1-D array to unravel, got {flat}")
    namespace: dict[str, Any] = {"message": UNRAVEL_LENGTH}
    lines, names = ["def impl(flat, like):", "    offset = 0"], []
    lines += [
        f"    if flat.size != {_total('unravel_pytree', 'like', like)}:",
        "        raise ValueError(message)",
    ]
    for i, (p, ty) in enumerate(_paths("unravel_pytree", like)):
        if isinstance(ty, types.Array):
            lines += [
                f"    n{i} = like{p}.size",
                f"    leaf{i} = np.ascontiguousarray(flat[offset : offset + n{i}])"
                f".reshape(like{p}.shape)",
                f"    offset += n{i}",
            ]
        else:
            lines += [f"    leaf{i} = flat[offset]", "    offset += 1"]
        names.append(f"leaf{i}")
    lines.append(f"    return {_rebuild(like, iter(names), namespace)}")
    return _define("\n".join(lines) + "\n", "impl", namespace)


def _literal(name: str, ty: Any, default: Any) -> Any:
    """The value of an argument that must be a constant (omitted: ``default``)."""
    if _is_none(ty) or ty is default:
        return default
    if isinstance(ty, types.Omitted):
        return ty.value
    if isinstance(ty, types.Literal):
        return ty.literal_value
    if isinstance(ty, types.Boolean | types.UnicodeType):
        raise errors.RequireLiteralValue(f"{name}: a constant")
    raise _fail(name, f"expected a constant, got {ty}")


def _checked_dtype(
    name: str, out: Any, x: Any, which: str | None, holomorphic: bool
) -> tuple[np.dtype, str | None]:
    """The dtype of a Jacobian of ``out`` w.r.t. ``x`` (types), and JAX's TypeError
    message where ``which`` transformation does not allow their dtypes."""
    outs = [_dtype(t) for _, t in _paths(name, out)]
    xs = [_dtype(t) for _, t in _paths(name, x)]
    message = which and jacobian_dtype_error(which, holomorphic, outs, xs)
    return jacobian_dtype(outs + xs), message or None


def _raising(signature: str, message: str, dtype: np.dtype) -> Any:
    """An implementation with these parameters that raises ``TypeError(message)`` (a
    constant: the dtypes are known when compiling)."""
    source = (
        f"def impl({signature}):\n"
        "    if _always():\n"
        "        raise TypeError(message)\n"
        "    return np.empty((1, 1), dt)\n"
    )
    return _define(source, "impl", {"message": message, "dt": dtype.type, "_always": _always})


@overload(jac_buffer, prefer_literal=True)
def _jac_buffer_jit(out, x, transformation=None, holomorphic=False):
    which = _literal("jac_buffer", transformation, None)
    holomorphic = _literal("jac_buffer", holomorphic, False)
    dtype, message = _checked_dtype("jac_buffer", out, x, which, holomorphic)
    if message:
        return _raising("out, x, transformation=None, holomorphic=False", message, dtype)
    rows, columns = _total("jac_buffer", "out", out), _total("jac_buffer", "x", x)
    source = (
        "def impl(out, x, transformation=None, holomorphic=False):\n"
        f"    return np.empty(({rows}, {columns}), dt)\n"
    )
    return _define(source, "impl", {"dt": dtype.type})


@overload(jac_diagonal, prefer_literal=True)
def _jac_diagonal_jit(d_out, out, x, transformation="jacfwd"):
    which = _literal("jac_diagonal", transformation, "jacfwd")
    dtype, message = _checked_dtype("jac_diagonal", out, x, which, False)
    if message:
        return _raising("d_out, out, x, transformation='jacfwd'", message, dtype)
    dt = dtype.type
    rows, columns = _total("jac_diagonal", "out", out), _total("jac_diagonal", "x", x)
    source = (
        "def impl(d_out, out, x, transformation='jacfwd'):\n"
        "    diagonal = ravel_pytree(d_out)\n"
        f"    rows, columns = {rows}, {columns}\n"
        "    if rows != columns or rows != diagonal.size:\n"
        "        raise ValueError(sizes)\n"
        "    jac = np.zeros((rows, columns), dt)\n"
        "    for k in range(rows):\n"
        "        jac[k, k] = diagonal[k]\n"
        "    return jac\n"
    )
    return _define(
        source, "impl", {"dt": dt, "ravel_pytree": ravel_pytree, "sizes": DIAGONAL_SIZES}
    )


def _offsets(name: str, var: str, ty: Any, letter: str) -> tuple[list[str], list[Any]]:
    """Lines computing each leaf's size ``<letter>size<i>`` and start ``<letter><i>``."""
    leaves = _paths(name, ty)
    lines = [f"    {letter}0 = 0"]
    for i, (p, t) in enumerate(leaves):
        lines.append(f"    {letter}size{i} = {_leaf_size(f'{var}{p}', t)}")
        lines.append(f"    {letter}{i + 1} = {letter}{i} + {letter}size{i}")
    return lines, leaves


@overload(jac_unflatten)
def _jac_unflatten_jit(jac, out, x):
    namespace: dict[str, Any] = {}
    row_lines, out_leaves = _offsets("jac_unflatten", "out", out, "r")
    column_lines, x_leaves = _offsets("jac_unflatten", "x", x, "c")
    lines = ["def impl(jac, out, x):", *row_lines, *column_lines]
    batched = isinstance(jac, types.Array) and jac.ndim == 3  # a batch of buffers
    lead, batch = (":, ", "(jac.shape[0],)") if batched else ("", None)
    blocks = []
    for i, (op, ot) in enumerate(out_leaves):
        names = []
        for j, (xp, xt) in enumerate(x_leaves):
            shapes = [s for s in (_leaf_shape(f"out{op}", ot), _leaf_shape(f"x{xp}", xt)) if s]
            if not shapes:
                value = f"jac[{lead}r{i}, c{j}]"
                if batched:
                    value = f"np.ascontiguousarray({value})"
            else:
                value = (
                    f"np.ascontiguousarray(jac[{lead}r{i} : r{i + 1}, c{j} : c{j + 1}])"
                    f".reshape({' + '.join(([batch] if batch else []) + shapes)})"
                )
            lines.append(f"    leaf{i}_{j} = {value}")
            names.append(f"leaf{i}_{j}")
        blocks.append(_rebuild(x, iter(names), namespace))
    lines.append(f"    return {_rebuild(out, iter(blocks), namespace)}")
    return _define("\n".join(lines) + "\n", "impl", namespace)


@overload(jac_flatten)
def _jac_flatten_jit(tree, out, x):
    row_lines, out_leaves = _offsets("jac_flatten", "out", out, "r")
    column_lines, x_leaves = _offsets("jac_flatten", "x", x, "c")
    dtype = jacobian_dtype([_dtype(t) for _, t in _paths("jac_flatten", tree)])
    lines = ["def impl(tree, out, x):", *row_lines, *column_lines]
    lines.append(f"    matrix = np.zeros((r{len(out_leaves)}, c{len(x_leaves)}), dt)")
    for i, (op, _) in enumerate(out_leaves):
        for j, (xp, _) in enumerate(x_leaves):
            part = f"tree{op}{xp}"
            if _is_scalar(_leaf_type(tree, op + xp)):
                lines.append(f"    matrix[r{i}, c{j}] = {part}")
            else:
                lines.append(
                    f"    matrix[r{i} : r{i + 1}, c{j} : c{j + 1}] = "
                    f"np.ascontiguousarray({part}).reshape((rsize{i}, csize{j}))"
                )
    lines.append("    return matrix")
    return _define("\n".join(lines) + "\n", "impl", {"dt": dtype.type})


def _leaf_type(ty: Any, path: str) -> Any:
    """The type at subscript ``path`` (``"[0][2]"``) inside ``ty``."""
    for index in path.strip("[]").split("]["):
        if index:
            ty = ty[int(index)]
    return ty
