"""Runtime helpers of numbax's Jacobians, for arguments and outputs that are pytrees.

``jacfwd``/``jacrev`` generate a loop over basis vectors (``transform/jacobians.py``)
that fills a flat ``(size(out), size(x))`` buffer and then cuts it into the result: as
in JAX, the output's structure holding, at each output leaf, the input's structure,
with leaves shaped ``out_leaf.shape + x_leaf.shape``. These helpers see a value as the
concatenation of its leaves in flattening order (C order inside each leaf); a value
that is an array or a scalar is a pytree of one leaf, so they also serve plain arrays.

As in ``ad_runtime.py``, each helper exists twice: the public function does it with
NumPy and ``tree_util`` (generated code run interpreted keeps the user's dicts, lists
and registered classes); a ``numba.extending.overload`` generates, per argument type,
straight-line code over the leaves of the (named) tuples that stand for pytrees under
``jit`` (``boundary.py``), so a heterogeneous structure is unrolled leaf by leaf.
Leaves are visited in the same order both ways: a dict's NamedTuple has its keys'
fields sorted, as ``tree_util`` sorts the keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numba import types
from numba.core import errors
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax import tree_util
from numbax.numba_backend.ad_runtime import _define as define_generated
from numbax.numba_backend.ad_runtime import _is_none, _is_scalar

# ---------------------------------------------------------------------------------------
# Interpreted helpers.
# ---------------------------------------------------------------------------------------


def _jacobian_dtype(dtypes: list[np.dtype]) -> np.dtype:
    """The promotion of ``dtypes``, at least floating (ints and bools give float64)."""
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    return np.dtype(np.float64) if dtype.kind in "biu" else dtype


def _dtypes(leaves: list[Any]) -> list[np.dtype]:
    """Each leaf's own dtype (a Python float is a float64, as Numba sees it)."""
    return [np.result_type(leaf) for leaf in leaves]


def jac_size(x: Any) -> int:
    """The number of elements of all of ``x``'s leaves (a scalar counts one)."""
    return sum(int(np.size(leaf)) for leaf in tree_util.tree_leaves(x))


def jac_basis(x: Any, k: int) -> Any:
    """The ``k``-th standard basis vector in ``x``'s space: zeros of x's structure,
    leaf types and shapes, with element ``k`` of the leaves' concatenation set to one.
    Seeds one Jacobian column (forward mode) or row (reverse mode)."""
    leaves, treedef = tree_util.tree_flatten(x)
    parts, offset = [], 0
    for leaf in leaves:
        n = int(np.size(leaf))
        if isinstance(leaf, np.ndarray):
            part = np.zeros(leaf.shape, leaf.dtype)
            if offset <= k < offset + n:
                part.flat[k - offset] = 1
        else:
            part = type(leaf)(1 if k == offset else 0)
        parts.append(part)
        offset += n
    return tree_util.tree_unflatten(treedef, parts)


def jac_ravel(x: Any) -> np.ndarray:
    """The concatenation of ``x``'s leaves, each raveled in C order: a 1-D array."""
    leaves = tree_util.tree_leaves(x)
    if len(leaves) == 1:
        return np.ravel(leaves[0])
    if not leaves:
        return np.zeros(0)
    return np.concatenate([np.ravel(leaf) for leaf in leaves])


def jac_unravel(flat: np.ndarray, like: Any) -> Any:
    """The inverse of :func:`jac_ravel`: 1-D ``flat`` cut into ``like``'s structure and
    leaf shapes (a scalar leaf gets a scalar), in ``flat``'s dtype."""
    leaves, treedef = tree_util.tree_flatten(like)
    parts, offset = [], 0
    for leaf in leaves:
        n = int(np.size(leaf))
        if isinstance(leaf, np.ndarray):
            parts.append(flat[offset : offset + n].reshape(leaf.shape))
        else:
            parts.append(flat[offset])
        offset += n
    return tree_util.tree_unflatten(treedef, parts)


def jac_buffer(out: Any, x: Any) -> np.ndarray:
    """An uninitialised ``(jac_size(out), jac_size(x))`` Jacobian buffer. The dtype
    promotes every leaf's, at least to floating: float32 only when no leaf is float64,
    as in JAX. Python scalars count as float64 / int64, as Numba sees them."""
    leaves = tree_util.tree_leaves(out) + tree_util.tree_leaves(x)
    return np.empty((jac_size(out), jac_size(x)), _jacobian_dtype(_dtypes(leaves)))


def jac_unflatten(jac: np.ndarray, out: Any, x: Any) -> Any:
    """The flat Jacobian ``jac`` as JAX gives it: ``out``'s structure holding, at each
    of its leaves, ``x``'s structure, each leaf ``jac``'s block of that output leaf's
    rows and that input leaf's columns shaped ``shape(out_leaf) + shape(x_leaf)``;
    a scalar where both leaves are scalars (not 0-d arrays)."""
    out_leaves, out_tree = tree_util.tree_flatten(out)
    x_leaves, x_tree = tree_util.tree_flatten(x)
    rows, r = [], 0
    for o in out_leaves:
        m, row, c = int(np.size(o)), [], 0
        for leaf in x_leaves:
            n = int(np.size(leaf))
            if not isinstance(o, np.ndarray) and not isinstance(leaf, np.ndarray):
                row.append(jac[r, c])
            else:
                row.append(jac[r : r + m, c : c + n].reshape(np.shape(o) + np.shape(leaf)))
            c += n
        rows.append(tree_util.tree_unflatten(x_tree, row))
        r += m
    return tree_util.tree_unflatten(out_tree, rows)


def jac_flatten(tree: Any, out: Any, x: Any) -> np.ndarray:
    """The inverse of :func:`jac_unflatten`: the ``(jac_size(out), jac_size(x))`` matrix
    of a Jacobian-shaped pytree (``out``'s structure of ``x``'s structure)."""
    blocks = tree_util.tree_structure(out).flatten_up_to(tree)
    out_leaves, x_leaves = tree_util.tree_leaves(out), tree_util.tree_leaves(x)
    dtype = _jacobian_dtype(_dtypes(tree_util.tree_leaves(tree)))
    matrix = np.zeros((jac_size(out), jac_size(x)), dtype)
    r = 0
    for o, block in zip(out_leaves, blocks, strict=True):
        m, c = int(np.size(o)), 0
        for leaf, part in zip(x_leaves, tree_util.tree_leaves(block), strict=True):
            n = int(np.size(leaf))
            matrix[r : r + m, c : c + n] = np.reshape(part, (m, n))
            c += n
        r += m
    return matrix


# ---------------------------------------------------------------------------------------
# Overloads: code generated per argument type, one statement group per leaf.
# ---------------------------------------------------------------------------------------


def _define(source: str, namespace: dict[str, Any]) -> Any:
    """Exec generated ``source`` and return its function ``impl`` (for Numba to compile)."""
    return define_generated(source, "impl", namespace)


def _fail(name: str, message: str) -> errors.NumbaTypeError:
    return errors.NumbaTypeError(f"numbax ad_jacobians.{name}: {message}")


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
    return _define(f"def impl(x):\n    return {_total('jac_size', 'x', x)}\n", {})


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
    return _define("\n".join(lines) + "\n", namespace)


@overload(jac_ravel)
def _jac_ravel_jit(x):
    leaves = _paths("jac_ravel", x)
    dtype = np.result_type(*[_dtype(t) for _, t in leaves]) if leaves else np.dtype("f8")
    lines = ["def impl(x):", f"    flat = np.empty({_total('jac_ravel', 'x', x)}, dt)"]
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
    return _define("\n".join(lines) + "\n", {"dt": dtype.type})


@overload(jac_unravel)
def _jac_unravel_jit(flat, like):
    namespace: dict[str, Any] = {}
    lines, names = ["def impl(flat, like):", "    offset = 0"], []
    for i, (p, ty) in enumerate(_paths("jac_unravel", like)):
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
    return _define("\n".join(lines) + "\n", namespace)


@overload(jac_buffer)
def _jac_buffer_jit(out, x):
    leaves = _paths("jac_buffer", out) + _paths("jac_buffer", x)
    dtype = _jacobian_dtype([_dtype(t) for _, t in leaves])
    rows, columns = _total("jac_buffer", "out", out), _total("jac_buffer", "x", x)
    source = f"def impl(out, x):\n    return np.empty(({rows}, {columns}), dt)\n"
    return _define(source, {"dt": dtype.type})


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
    blocks = []
    for i, (op, ot) in enumerate(out_leaves):
        names = []
        for j, (xp, xt) in enumerate(x_leaves):
            shapes = [s for s in (_leaf_shape(f"out{op}", ot), _leaf_shape(f"x{xp}", xt)) if s]
            if not shapes:
                value = f"jac[r{i}, c{j}]"
            else:
                value = (
                    f"np.ascontiguousarray(jac[r{i} : r{i + 1}, c{j} : c{j + 1}])"
                    f".reshape({' + '.join(shapes)})"
                )
            lines.append(f"    leaf{i}_{j} = {value}")
            names.append(f"leaf{i}_{j}")
        blocks.append(_rebuild(x, iter(names), namespace))
    lines.append(f"    return {_rebuild(out, iter(blocks), namespace)}")
    return _define("\n".join(lines) + "\n", namespace)


@overload(jac_flatten)
def _jac_flatten_jit(tree, out, x):
    row_lines, out_leaves = _offsets("jac_flatten", "out", out, "r")
    column_lines, x_leaves = _offsets("jac_flatten", "x", x, "c")
    dtype = _jacobian_dtype([_dtype(t) for _, t in _paths("jac_flatten", tree)])
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
    return _define("\n".join(lines) + "\n", {"dt": dtype.type})


def _leaf_type(ty: Any, path: str) -> Any:
    """The type at subscript ``path`` (``"[0][2]"``) inside ``ty``."""
    for index in path.strip("[]").split("]["):
        if index:
            ty = ty[int(index)]
    return ty


__all__ = [
    "jac_basis",
    "jac_buffer",
    "jac_flatten",
    "jac_ravel",
    "jac_size",
    "jac_unflatten",
    "jac_unravel",
]
