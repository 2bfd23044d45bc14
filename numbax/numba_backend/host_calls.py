"""Host callbacks under ``nx.jit``: compiled code calling Python through Numba's object
mode.

Each callback site (``nx.pure_callback(scipy.special.j0, spec, x)``) becomes, when the
jit pipeline lowers it (``lower.py``), a call to a stub of its own that holds the
Python function and the names of its keyword arguments:

    _j0 = _pure_callback_j0(spec, (x,), ())

While Numba types that call, the stub's overload reads the result's type off the type
of ``result_shape_dtypes`` (a ``ShapeDtypeStruct``'s dtype and number of dimensions,
an array's, a number's; tuples of them) and compiles::

    def implementation(spec, args, values):
        with numba.objmode(out=<that type>):
            out = host_call(kind, fun, spec, args, names, values)
        return out

``host_call`` (``runtime/callbacks.py``) runs the function and checks its result
against the declared shapes and dtypes, as the interpreted call does. Numbers reach
the object-mode block as Python numbers (Numba boxes a float64 as a ``float``); the
stub makes them NumPy scalars of their compiled dtype again, so that the callback sees
``x.dtype`` and ``x.shape`` as it does interpreted and in JAX. The stub refers
to a live Python object, so code calling it is compiled per process (Numba's disk cache
could not bring the object back).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.core import errors, types
from numba.extending import overload

from numbax.codegen.fingerprint import callable_identity
from numbax.numba_backend.generated import define
from numbax.runtime.callbacks import ShapeDtypeStruct, host_call

_STUBS: dict[tuple, Any] = {}
_KEEP_ALIVE: list[Any] = []  # the functions the stubs are keyed on by id


def host_stub(kind: str, fun: Any, names: tuple[str, ...], label: str) -> Any:
    """The function compiled code calls for one kind of callback to ``fun`` (the format
    string of ``debug_print``) with keyword arguments ``names``:
    ``stub(result_shape_dtypes, args, values)``."""
    key = (kind, id(fun) if not isinstance(fun, str) else fun, names)
    if key not in _STUBS:
        _KEEP_ALIVE.append(fun)
        _STUBS[key] = _make_stub(kind, fun, names, label)
    return _STUBS[key]


def _make_stub(kind: str, fun: Any, names: tuple[str, ...], label: str) -> Any:
    stub = define(
        "def stub(spec, args, values):\n    raise RuntimeError('called by compiled code only')\n",
        {},
        f"host call {kind}",
        "stub",
    )
    stub.__name__ = stub.__qualname__ = label
    what = repr(fun) if isinstance(fun, str) else callable_identity(fun)
    stub.__numbax_identity__ = lambda: f"numbax host call {kind}({what}, keywords={names})"
    stub.__numbax_typed_per_process__ = True  # see cpu.typed_per_process

    def typing(spec: Any, args: Any, values: Any) -> Any:
        result = None if kind.startswith("debug") else _result_type(spec, kind)
        arg_dtypes, value_dtypes = _scalar_dtypes(args), _scalar_dtypes(values)
        spec_dtype = _scalar_dtypes(types.Tuple([spec]))
        if result is None:

            def effect(spec: Any, args: Any, values: Any) -> None:
                with numba.objmode():
                    host_call(
                        kind,
                        fun,
                        spec,
                        _as_numpy(args, arg_dtypes),
                        names,
                        _as_numpy(values, value_dtypes),
                    )

            return effect

        def implementation(spec: Any, args: Any, values: Any) -> Any:
            with numba.objmode(out=result):
                out = host_call(
                    kind,
                    fun,
                    _as_numpy((spec,), spec_dtype)[0],
                    _as_numpy(args, arg_dtypes),
                    names,
                    _as_numpy(values, value_dtypes),
                )
            return out

        return implementation

    overload(stub)(typing)
    return stub


def _scalar_dtypes(items: types.Type) -> tuple[np.dtype | None, ...]:
    """For each item of a tuple type, its NumPy dtype if it is a number (None if not)."""
    if not isinstance(items, types.BaseTuple):
        return ()
    return tuple(
        np.dtype(str(t)) if isinstance(t, (types.Number, types.Boolean)) else None
        for t in items.types
    )


def _as_numpy(items: tuple, dtypes: tuple[np.dtype | None, ...]) -> tuple:
    """``items`` with the numbers Numba boxed as Python numbers made NumPy scalars of the
    dtypes they had in compiled code."""
    if not dtypes:
        return items
    return tuple(
        item if dtype is None else dtype.type(item)
        for item, dtype in zip(items, dtypes, strict=True)
    )


def _result_type(spec: types.Type, kind: str) -> types.Type | None:
    """The Numba type of what a callback declared by a ``result_shape_dtypes`` of type
    ``spec`` returns (None: nothing)."""
    if spec is None or isinstance(spec, (types.NoneType, types.Omitted)):
        return None
    if isinstance(spec, types.BaseNamedTuple) and spec.instance_class is ShapeDtypeStruct:
        shape, dtype = spec.types
        return _array_type(_dtype_of(dtype, kind), len(shape.types) if shape.types else 0)
    if isinstance(spec, types.Array):
        return _array_type(spec.dtype, spec.ndim)
    if isinstance(spec, (types.Number, types.Boolean)):
        return spec
    if isinstance(spec, types.BaseTuple) and not isinstance(spec, types.BaseNamedTuple):
        return types.Tuple([_result_type(t, kind) for t in spec.types])
    raise errors.NumbaTypeError(
        f"numbax: {kind} under nx.jit takes as result_shape_dtypes an nx.ShapeDtypeStruct, "
        f"an array or a number (or a tuple of them), not {spec}"
    )


def _array_type(dtype: types.Type, ndim: int) -> types.Type:
    return dtype if ndim == 0 else types.Array(dtype, ndim, "C")


def _dtype_of(dtype: types.Type, kind: str) -> types.Type:
    if isinstance(dtype, types.DType):
        return dtype.dtype
    if isinstance(dtype, types.NumberClass):
        return dtype.instance_type
    raise errors.NumbaTypeError(
        f"numbax: {kind} under nx.jit needs a NumPy dtype in ShapeDtypeStruct (x.dtype, "
        f"np.float64), not {dtype}"
    )
