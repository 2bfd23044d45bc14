"""``np.meshgrid`` under jit, which Numba 0.68 lacks: the coordinate arrays of a grid
from one-dimensional coordinate vectors, ``indexing='xy'`` (Cartesian: the first two
axes swapped) or ``'ij'`` (matrix), each output in its input's dtype, as a tuple as
NumPy 2 returns it. ``sparse=True`` and ``copy=False`` give the same values as full
copies (compiled code has no views that broadcast).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.core import errors
from numba.extending import overload

from numbax.numba_backend.redirects import redirect

__all__ = ["meshgrid"]


@redirect(np.meshgrid)
def meshgrid(xi: tuple, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
    """``np.meshgrid(*xi, ...)``, also under jit; the lowering pass packs the vectors
    into one tuple (Numba folds no keywords after ``*args``)."""
    return np.meshgrid(*xi, copy=copy, sparse=sparse, indexing=indexing)


def _source(n: int) -> str:
    """The implementation for ``n`` coordinate vectors: output ``k`` repeats vector ``k``
    along its axis of the grid, ``k`` (``'ij'``) or, for the first two, the other one
    (``'xy'``)."""
    lines = ["def impl(xi, copy=True, sparse=False, indexing='xy'):"]
    lines += [f"    v{k} = np.asarray(xi[{k}]).ravel()" for k in range(n)]
    lines += [
        "    if indexing != 'xy' and indexing != 'ij':",
        "        raise ValueError(\"Valid values for `indexing` are 'xy' and 'ij'.\")",
        f"    cartesian = indexing == 'xy' and {n} > 1",
        "    axes = np.arange(" + str(n) + ")",
        "    if cartesian:",
        "        axes[0], axes[1] = 1, 0",
        "    sizes = np.empty(" + str(n) + ", np.intp)",
    ]
    lines += [f"    sizes[axes[{k}]] = v{k}.size" for k in range(n)]
    lines.append(f"    shape = ({', '.join(f'sizes[{k}]' for k in range(n))},)")
    lines.append("    after = np.ones(" + str(n) + ", np.intp)")
    lines.append(f"    for axis in range({n} - 2, -1, -1):")
    lines.append("        after[axis] = after[axis + 1] * sizes[axis + 1]")
    for k in range(n):
        lines += [
            f"    o{k} = np.empty(shape, v{k}.dtype)",
            f"    flat{k} = o{k}.reshape(-1)",
            f"    step{k}, size{k} = after[axes[{k}]], v{k}.size",
            f"    for i in range(flat{k}.size):",
            f"        flat{k}[i] = v{k}[(i // step{k}) % size{k}]",
        ]
    lines.append(f"    return ({''.join(f'o{k}, ' for k in range(n))})")
    return "\n".join(lines)


@overload(meshgrid)
def _meshgrid_jit(xi, copy=True, sparse=False, indexing="xy"):
    vectors = xi.types if isinstance(xi, types.BaseTuple) else ()
    if not vectors:
        return lambda xi, copy=True, sparse=False, indexing="xy": ()
    if not all(isinstance(t, (types.Array, types.Number)) for t in vectors):
        raise errors.TypingError("np.meshgrid takes arrays or numbers")
    namespace: dict[str, Any] = {"np": np}
    exec(_source(len(vectors)), namespace)  # noqa: S102
    return namespace["impl"]
