"""Pytrees across the jit boundary: what Numba can take in, and what users get back.

Numba compiles functions of arrays, scalars, tuples and NamedTuples, but not of dicts
or arbitrary registered classes. So at the boundary every pytree node becomes one of
those: tuples and NamedTuples stay, lists become tuples, and dicts and registered
classes become NamedTuples whose fields are their keys. Inside the generated code the
lowering pass rewrites ``params["w"]`` to ``params.w`` and dict literals to the same
NamedTuples, so the body reads fixed keys as plain fields (Numba specializes on the
structure, which is part of the argument types). Results are converted back: a
NamedTuple that stood for a dict is a dict again, a registered class is rebuilt.
"""

from __future__ import annotations

import keyword
from collections import namedtuple
from typing import Any

import numpy as np
from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax import tree_util
from numbax.numba_backend.redirects import lowering_helper

_LEAF_TYPES = (np.ndarray, np.generic, bool, int, float, complex, type(None))

# NamedTuple classes standing for dicts (by sorted fields) or registered classes (by
# treedef), and what each stands for.
_dict_records: dict[tuple[str, ...], type] = {}
_registered_records: dict[Any, type] = {}
_record_origin: dict[type, tuple[str, Any]] = {}


def field_name(key: Any) -> str:
    """The NamedTuple field that stands for dict key ``key`` (deterministic)."""
    if isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key):
        if not key.startswith("_"):
            return key
    return "k_" + "".join(c if c.isalnum() else "_" for c in repr(key))


def dict_record(keys: tuple[Any, ...]) -> type:
    """The NamedTuple class for dicts with these keys (one class per key set)."""
    fields = tuple(sorted(field_name(k) for k in keys))
    record = _dict_records.get(fields)
    if record is None:
        record = namedtuple("Dict_" + "_".join(fields), fields)
        _dict_records[fields] = record
        _record_origin[record] = ("dict", {field_name(k): k for k in keys})
    return record


def to_numba(value: Any) -> Any:
    """``value`` with every pytree node replaced by a tuple or NamedTuple."""
    if isinstance(value, _LEAF_TYPES):
        return value
    if isinstance(value, dict):
        record = dict_record(tuple(value))
        return record(**{field_name(k): to_numba(v) for k, v in value.items()})
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*(to_numba(v) for v in value))
    if isinstance(value, (tuple, list)):
        return tuple(to_numba(v) for v in value)
    return _registered_to_numba(value)


def _registered_to_numba(value: Any) -> Any:
    one_level = lambda x: x is not value  # noqa: E731 - children are leaves of this walk
    keyed, treedef = tree_util.tree_flatten_with_path(value, is_leaf=one_level)
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:
        return value  # a leaf numbax does not know: Numba decides whether it can take it
    record = _registered_records.get(treedef)
    if record is None:
        attributes = {id(v): k for k, v in getattr(value, "__dict__", {}).items()}
        fields = tuple(
            _path_field(path[-1], attributes.get(id(child)), i)
            for i, (path, child) in enumerate(keyed)
        )
        record = namedtuple(f"{type(value).__name__}_fields", fields)
        _registered_records[treedef] = record
        _record_origin[record] = ("registered", treedef)
    return record(*(to_numba(child) for _, child in keyed))


def _path_field(key: Any, attribute: str | None, index: int) -> str:
    """A field named after the child's key, or the attribute holding it, so that the
    body's ``obj.w`` keeps working on the NamedTuple that stands for ``obj``."""
    for name in (getattr(key, "name", None), attribute):
        if isinstance(name, str) and name.isidentifier() and not name.startswith("_"):
            return name
    return f"k_{index}"


def from_numba(value: Any) -> Any:
    """Undo :func:`to_numba` on a result, and turn Numba containers into Python ones."""
    if isinstance(value, _LEAF_TYPES):
        return value
    origin = _record_origin.get(type(value))
    if origin is not None:
        kind, info = origin
        if kind == "dict":
            return {info[f]: from_numba(getattr(value, f)) for f in value._fields}
        return info.unflatten([from_numba(v) for v in value])
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*(from_numba(v) for v in value))
    if isinstance(value, tuple):
        return tuple(from_numba(v) for v in value)
    if isinstance(value, list) or type(value).__name__ == "List":
        return [from_numba(v) for v in value]
    if type(value).__name__ == "Dict":
        return {k: from_numba(v) for k, v in value.items()}
    return value


# Numba returns every float scalar as a Python float and every integer as a Python int,
# so a float32 result would come back as float64. Generated functions return scalars of
# other dtypes through ``keep_dtype`` as 0-d arrays, which ``python_result`` turns into
# the NumPy scalar of the right dtype (np.float32, np.int32, ...).
_BOXED_EXACTLY = (types.float64, types.int64, types.complex128, types.boolean)


@lowering_helper
def keep_dtype(value: Any) -> Any:
    """``value`` unchanged (in Python); see :func:`python_result`."""
    return value


@overload(keep_dtype)
def _keep_dtype_numba(value):
    if isinstance(value, types.Number) and value not in _BOXED_EXACTLY:
        dtype = as_dtype(value)

        def impl(value):
            out = np.empty((), dtype)
            out[()] = value
            return out

        return impl
    return lambda value: value


def python_result(value: Any) -> Any:
    """What a compiled function's raw result is to its caller: a 0-d array made by
    :func:`keep_dtype` becomes a NumPy scalar of its dtype, and a pytree of any nesting
    (a dict of tuples, a tuple of dicts) is rebuilt by :func:`from_numba`."""
    if type(value) is np.ndarray:
        return value if value.ndim else value[()]
    return from_numba(value)
