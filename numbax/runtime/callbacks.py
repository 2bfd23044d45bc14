"""Host callbacks: Python called from transformed code (JAX's ``pure_callback``,
``io_callback``, ``debug.callback`` and ``debug.print``).

These are the functions users call. Interpreted (plain NumPy, or derivative code run
without ``jit``) they run the Python function right away; under ``nx.jit`` the jit
pipeline replaces each call by a compiled call into Python through Numba's object mode
(``numba_backend/host_calls.py``), which runs :func:`host_call` with the same checks.

``pure_callback`` and ``io_callback`` declare what they return (``result_shape_dtypes``:
a pytree of :class:`ShapeDtypeStruct` or of anything with ``.shape`` and ``.dtype``), so
that compiled code knows the types before the function runs, and the result is checked
against it: a wrong shape or dtype is an error, never a silent cast. Nothing carries a
derivative through them (the transformations cannot read the Python they call); the
``debug`` ones return nothing and print or pass along the values they are given.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax import tree_util
from numbax.runtime.registry import helper

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")
"""``vmap_method``\\ s that batch a ``pure_callback`` (JAX's names; the legacy
``legacy_vectorized`` is not taken)."""

NO_DERIVATIVE_ADVICE = (
    "{name} has no derivative: the transformations cannot read the Python function it "
    "calls, and one of its arguments carries a derivative. Wrap the call in a function "
    "decorated with nx.custom_jvp (or nx.custom_vjp) that supplies the derivative, as "
    "JAX requires for its callbacks too."
)


class ShapeDtypeStruct(namedtuple("ShapeDtypeStruct", ["shape", "dtype"])):
    """The shape and dtype of an array a callback returns (JAX's
    ``jax.ShapeDtypeStruct``): ``nx.ShapeDtypeStruct(x.shape, x.dtype)``.

    A named tuple, so that compiled code can build and pass one; a shape ``()`` stands
    for a scalar of that dtype.
    """

    __slots__ = ()

    def __new__(cls, shape: Any, dtype: Any) -> ShapeDtypeStruct:
        if isinstance(shape, (int, np.integer)):
            raise TypeError(f"ShapeDtypeStruct: shape must be a tuple of ints, got {shape!r}")
        return super().__new__(cls, tuple(int(n) for n in shape), np.dtype(dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def is_spec(value: Any) -> bool:
    """Whether ``value`` declares one array (a leaf of ``result_shape_dtypes``)."""
    return isinstance(value, ShapeDtypeStruct) or (
        hasattr(value, "shape") and hasattr(value, "dtype")
    )


def _check_vmap_method(vmap_method: str | None) -> None:
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(
            f"pure_callback: vmap_method must be one of {', '.join(map(repr, VMAP_METHODS))} "
            f"or None, got {vmap_method!r}"
        )


def checked_result(result: Any, result_shape_dtypes: Any, what: str) -> Any:
    """``result`` in the structure of ``result_shape_dtypes``, each leaf an array of the
    declared shape and dtype (a NumPy scalar for shape ``()``). Python numbers are
    weakly typed, as in JAX, and take the declared dtype; arrays must have it."""
    specs, structure = tree_util.tree_flatten(result_shape_dtypes, is_leaf=is_spec)
    try:
        leaves = structure.flatten_up_to(result)
    except (TypeError, ValueError):  # a list for a tuple: the leaves, in order, will do
        leaves = tree_util.tree_leaves(result)
        if len(leaves) != len(specs):
            raise TypeError(
                f"{what}: the callback returned {len(leaves)} arrays, but "
                f"result_shape_dtypes declares {len(specs)} ({structure})"
            ) from None
    checked = []
    for i, (leaf, spec) in enumerate(zip(leaves, specs, strict=True)):
        expected_shape, expected_dtype = tuple(spec.shape), np.dtype(spec.dtype)
        weak = isinstance(leaf, (bool, int, float, complex))
        array = np.asarray(leaf, dtype=expected_dtype if weak else None)
        where = f" (result {i})" if len(specs) > 1 else ""
        if array.shape != expected_shape:
            raise ValueError(
                f"{what}: the callback returned an array of shape {array.shape}{where}, but "
                f"result_shape_dtypes declares shape {expected_shape}"
            )
        if array.dtype != expected_dtype:
            raise TypeError(
                f"{what}: the callback returned an array of dtype {array.dtype}{where}, but "
                f"result_shape_dtypes declares dtype {expected_dtype}; convert it in the "
                f"callback (.astype(np.{expected_dtype}))"
            )
        checked.append(array[()] if array.ndim == 0 else array)
    return tree_util.tree_unflatten(structure, checked)


def pure_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding: Any = None,
    vmap_method: str | None = None,
    **kwargs: Any,
) -> Any:
    """Call the Python function ``callback(*args, **kwargs)`` from transformed code and
    return its result, declared by ``result_shape_dtypes`` (JAX's ``jax.pure_callback``).

    ``callback`` is taken to be pure: numbax may call it once per example under
    ``vmap`` (``vmap_method="sequential"``), or once for the whole batch
    (``"expand_dims"``, ``"broadcast_all"``: it must then accept a leading batch axis);
    without ``vmap_method``, ``vmap`` raises ``NotImplementedError``, as in JAX. It has no
    derivative: differentiate through it by wrapping it in ``nx.custom_jvp``. Under
    ``nx.jit`` it runs in Python (Numba's object mode), so any library may be called,
    SciPy included. ``sharding`` is accepted and ignored (one CPU).
    """
    del sharding
    _check_vmap_method(vmap_method)
    return checked_result(callback(*args, **kwargs), result_shape_dtypes, "pure_callback")


pure_callback.__numbax_advice__ = NO_DERIVATIVE_ADVICE.format(name="pure_callback")


def io_callback(
    callback: Callable[..., Any],
    result_shape_dtypes: Any,
    *args: Any,
    sharding: Any = None,
    ordered: bool = False,
    **kwargs: Any,
) -> Any:
    """Call ``callback(*args, **kwargs)``, a Python function with side effects, from
    transformed code (JAX's ``jax.experimental.io_callback``); its result is declared by
    ``result_shape_dtypes`` (``None`` for none). Under ``vmap`` it is called once per
    example, unless ``ordered=True``, which cannot be batched (``ValueError``, as in
    JAX). It has no derivative. ``sharding`` is accepted and ignored."""
    del sharding, ordered
    result = callback(*args, **kwargs)
    if result_shape_dtypes is None:
        return None
    return checked_result(result, result_shape_dtypes, "io_callback")


io_callback.__numbax_advice__ = NO_DERIVATIVE_ADVICE.format(name="io_callback")


def debug_callback(callback: Callable[..., Any], *args: Any, ordered: bool = False, **kwargs: Any):
    """Call ``callback(*args, **kwargs)`` for its effect and return None (JAX's
    ``jax.debug.callback``). Transparent to derivatives: under ``grad`` it sees the
    primal values, once, in the forward pass; under ``vmap`` it is called once per
    example; under ``nx.jit`` it runs in Python (Numba's object mode)."""
    del ordered
    callback(*args, **kwargs)


def debug_print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Print ``fmt.format(*args, **kwargs)`` when the code runs (JAX's
    ``jax.debug.print``): ``nx.debug.print("x = {x}", x=x)`` or ``"{}"`` with positional
    values, under ``jit``, ``grad`` (primal values, in the forward pass) and ``vmap`` (a
    line per example)."""
    del ordered
    print(fmt.format(*args, **kwargs))


@helper
def batch_spec(result_shape_dtypes: Any, size: int) -> Any:
    """What a callback returns for a batch of ``size`` examples, from what it returns
    for one: each declared shape with a leading batch axis (``vmap`` calling a
    ``pure_callback`` once on the whole batch)."""

    def batched(spec: Any) -> ShapeDtypeStruct:
        if is_spec(spec):
            return ShapeDtypeStruct((size, *spec.shape), spec.dtype)
        return ShapeDtypeStruct((size,), np.result_type(spec))  # a number

    return tree_util.tree_map(batched, result_shape_dtypes, is_leaf=is_spec)


def host_call(kind: str, fun: Any, spec: Any, args: tuple, names: tuple, values: tuple) -> Any:
    """What compiled code runs in Python for one callback site (Numba's object mode):
    ``kind`` the callback (``"pure_callback"``...), ``fun`` its function (the format
    string of ``debug_print``), ``names``/``values`` its keyword arguments."""
    kwargs = dict(zip(names, values, strict=True))
    if kind == "debug_print":
        debug_print(fun, *args, **kwargs)
        return None
    if kind == "debug_callback":
        debug_callback(fun, *args, **kwargs)
        return None
    result = fun(*args, **kwargs)
    if spec is None:
        return None
    return checked_result(result, spec, kind)


CALLBACKS: dict[Any, str] = {
    pure_callback: "pure_callback",
    io_callback: "io_callback",
    debug_callback: "debug_callback",
    debug_print: "debug_print",
}
"""Each callback function → its kind (what :func:`host_call` is told)."""
