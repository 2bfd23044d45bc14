"""Numba versions of the host callbacks' helpers (``runtime/callbacks.py``); the calls
into Python themselves are compiled per call site (``numba_backend/host_calls.py``)."""

from __future__ import annotations

from typing import Any

from numba.core import errors, types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax.runtime.callbacks import ShapeDtypeStruct, batch_spec


@overload(batch_spec)
def _batch_spec(result_shape_dtypes: Any, size: Any) -> Any:
    spec = result_shape_dtypes
    declared = isinstance(spec, types.BaseNamedTuple) and spec.instance_class is ShapeDtypeStruct
    if declared or isinstance(spec, types.Array):

        def batched(result_shape_dtypes: Any, size: Any) -> Any:
            return ShapeDtypeStruct((size,) + result_shape_dtypes.shape, result_shape_dtypes.dtype)

        return batched
    if isinstance(spec, (types.Number, types.Boolean)):
        dtype = as_dtype(spec)

        def of_number(result_shape_dtypes: Any, size: Any) -> Any:
            return ShapeDtypeStruct((size,), dtype)

        return of_number
    raise errors.NumbaTypeError(
        f"numbax: vmap of a pure_callback under nx.jit takes as result_shape_dtypes an "
        f"nx.ShapeDtypeStruct, an array or a number, not {spec}"
    )
