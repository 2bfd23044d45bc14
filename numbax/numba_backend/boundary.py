"""Pytrees across the jit boundary: what Numba can take in, and what users get back.

Numba compiles functions of arrays, scalars, tuples and NamedTuples, but not of dicts
or arbitrary registered classes. So at the boundary every pytree node becomes one of
those: tuples and NamedTuples stay, lists become tuples, and dicts and registered
classes become NamedTuples whose fields are their keys. Inside the generated code the
lowering pass rewrites ``params["w"]`` to ``params.w`` and dict literals to the same
NamedTuples, so the body reads fixed keys as plain fields (Numba specializes on the
structure, which is part of the argument types). Results are converted back: a
NamedTuple that stood for a dict is a dict again, a registered class is rebuilt, and one
that stood for a returned list literal (``list_record``) is a list again.
"""

from __future__ import annotations

import hashlib
import keyword
import re
from collections import namedtuple
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax import tree_util
from numbax.numba_backend.generated import define
from numbax.numba_backend.redirects import lowering_helper

_LEAF_TYPES = (np.ndarray, np.generic, bool, int, float, complex, type(None))

# NamedTuple classes standing for dicts (by sorted fields) or registered classes (by
# treedef), and what each stands for.
_records: dict[str, type] = {}
_registered_records: dict[Any, type] = {}
_record_origin: dict[type, tuple[str, Any]] = {}


def field_name(key: Any) -> str:
    """The NamedTuple field that stands for dict key ``key`` (deterministic)."""
    if isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key):
        if not key.startswith("_"):
            return key
    return "k_" + "".join(c if c.isalnum() else "_" for c in repr(key))


# The record classes are attributes of this module, named after what they hold, so that
# Numba's disk cache pickles them by reference: a signature naming ``Dict_2b1_2w1`` in a
# cache index then means the same class in the next process, which rebuilds it from its
# name (see ``__getattr__``). A class pickled by value would be a new class there, and
# every signature holding a pytree would miss the cache.


def _record_name(prefix: str, fields: tuple[str, ...]) -> str:
    """``prefix`` and each field preceded by ``_`` and its length: names are identifiers
    and fields never start with a digit, so the fields can be read back."""
    return prefix + "".join(f"_{len(f)}{f}" for f in fields)


def _fields_of(name: str) -> tuple[str, ...] | None:
    """The fields a record name spells (None: not a record name)."""
    match = _RECORD_NAME.fullmatch(name)
    if match is None:
        return None
    fields, rest = [], match[2]
    while rest:
        length = _LENGTH.match(rest)
        if length is None:
            return None
        start = length.end()
        fields.append(rest[start : start + int(length[1])])
        rest = rest[start + int(length[1]) :]
    return tuple(fields) if all(f.isidentifier() for f in fields) else None


_RECORD_NAME = re.compile(r"(Dict|List|Node_[0-9a-f]{16})((?:_\d+\w+)*)")
_LENGTH = re.compile(r"_(\d+)")


def _record(name: str, fields: tuple[str, ...]) -> type:
    record = _records.get(name)
    if record is None:
        record = namedtuple(name, fields, module=__name__)
        _records[name] = record
        globals()[name] = record
    return record


def __getattr__(name: str) -> type:
    """A record class another process named in Numba's cache, made again."""
    fields = _fields_of(name)
    if fields is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _record(name, fields)


def dict_record(keys: tuple[Any, ...]) -> type:
    """The NamedTuple class for dicts with these keys (one class per key set)."""
    fields = tuple(sorted(field_name(k) for k in keys))
    record = _record(_record_name("Dict", fields), fields)
    _record_origin.setdefault(record, ("dict", {field_name(k): k for k in keys}))
    return record


def list_record(length: int) -> type:
    """The NamedTuple class standing for a list of ``length`` items that compiled code
    returns (``return [total, x * 2.0, np.outer(x, x)]``): Numba holds a list of one
    type only, and returns none made of arrays of different ranks or of an array and a
    number, but a NamedTuple holds anything and comes back as the list it stands for."""
    fields = tuple(f"k{i}" for i in range(length))
    record = _record(_record_name("List", fields), fields)
    _record_origin.setdefault(record, ("list", length))
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


def numba_types(values: tuple) -> tuple:
    """The Numba types compiled code sees for ``values`` (already through :func:`to_numba`):
    what a compiled signature is made of."""
    return tuple(numba.typeof(v) for v in values)


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
        # named by the treedef's text: a treedef that prints differently in another
        # process (an object's address in it) only misses the cache there
        tag = hashlib.sha256(repr(treedef).encode()).hexdigest()[:16]
        record = _record(_record_name(f"Node_{tag}", fields), fields)
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
        if kind == "list":
            return [from_numba(v) for v in value]
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


@lowering_helper
def list_of(*items: Any) -> list:
    """``[*items]`` (in Python); compiled, a list where the items share one type, else
    a NamedTuple standing for a list (:func:`list_record`)."""
    return list(items)


@overload(list_of)
def _list_of_numba(*items):
    if items and isinstance(items[0], types.StarArgTuple):  # how Numba passes *items
        items = items[0].types
    names = [f"items[{i}]" for i in range(len(items))]
    kinds = {types.unliteral(t) for t in items}
    if len(kinds) == 1:
        made, scope = f"[{', '.join(names)}]", {}
    else:
        made, scope = f"cls({', '.join(names)})", {"cls": list_record(len(items))}
    return define(f"def impl(*items):\n    return {made}\n", scope, "list_of")


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
