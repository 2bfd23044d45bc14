"""numbax's transformations by finite differences: the reference for programs that call
transformations themselves (the ``nested`` family of ``tests/fuzz/families.py``).

The checker loads such a program twice: as written, and with ``import numbax as nx``
replaced by an import of this module, so each ``nx.jacrev(h)(x, s)`` inside it becomes
a five-point central difference in float64 (truncation error of order ``h**4``, rounding
of order ``1e-16 / h``: accurate enough that differences of it, the outer derivative the
checker takes, still resolve to about ``1e-9``). Arguments are float arrays or floats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

STEP = 1e-3


def _as_tuple(argnums: int | Sequence[int]) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def five_point(fun: Callable[[float], Any], h: float = STEP) -> np.ndarray:
    """d fun(t) / dt at t = 0 by the five-point central stencil."""
    values = [np.asarray(fun(k * h), dtype=np.float64) for k in (2, 1, -1, -2)]
    return (-values[0] + 8 * values[1] - 8 * values[2] + values[3]) / (12 * h)


def _jacobian(fun: Callable, args: tuple, argnum: int, step: float = STEP) -> np.ndarray:
    """d fun(*args) / d args[argnum], shape out.shape + arg.shape."""
    base = np.asarray(args[argnum], dtype=np.float64)
    columns = []
    for k in range(base.size):

        def moved(t: float, k: int = k) -> Any:
            shifted = base.copy().reshape(-1)
            shifted[k] += t
            value = shifted.reshape(base.shape)
            changed = list(args)
            changed[argnum] = float(value) if isinstance(args[argnum], float) else value
            return fun(*changed)

        columns.append(five_point(moved, step))
    out_shape = np.shape(fun(*args))
    if not columns:
        return np.zeros(out_shape + base.shape)
    return np.stack(columns, axis=-1).reshape(out_shape + base.shape)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, step: float = STEP) -> Callable:
    def jac(*args: Any) -> Any:
        result = tuple(_jacobian(fun, args, i, step) for i in _as_tuple(argnums))
        return result[0] if isinstance(argnums, int) else result

    return jac


jacrev = jacobian = grad = jacfwd


def hessian(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    return jacfwd(jacfwd(fun, argnums), argnums)


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    def both(*args: Any) -> Any:
        return fun(*args), grad(fun, argnums)(*args)

    return both


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    def along(t: float) -> Any:
        return fun(*(p + t * np.asarray(d) for p, d in zip(primals, tangents, strict=True)))

    return fun(*primals), five_point(along)


def vjp(fun: Callable, *primals: Any) -> tuple[Any, Callable]:
    jacobians = [_jacobian(fun, primals, i) for i in range(len(primals))]

    def pullback(cotangent: Any) -> tuple[Any, ...]:
        ct = np.asarray(cotangent, dtype=np.float64)
        return tuple(np.tensordot(ct, j, axes=ct.ndim) for j in jacobians)

    return fun(*primals), pullback
