"""JAX's ``jax.tree_util`` for numbax: the pytrees that jit, grad and vmap accept.

Users port JAX code, so names, argument orders, flattening order and key paths follow
JAX: tuples, lists, dicts (sorted keys), ``None`` (a node with no leaves), namedtuples,
``OrderedDict`` (insertion order), ``defaultdict`` (sorted keys) and registered classes
are nodes; everything else, NumPy arrays and scalars included, is a leaf.

optree does the work in C++ in its own registry namespace (:data:`NAMESPACE`), so a
class registered here is a pytree for numbax only. optree's path entries are translated
into JAX's key classes (:class:`SequenceKey`, :class:`DictKey`, :class:`GetAttrKey`,
:class:`FlattenedIndexKey`) so that ``keystr`` prints what JAX prints.

Known differences from JAX, both inherited from optree's built-in node types: a
``collections.deque`` and a structseq (e.g. ``time.struct_time``) are nodes, not leaves.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import optree

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]

# -- the jit boundary's fast path: the check runs on every call. Most calls pass only
# arrays and scalars, which compiled code takes as they are; only calls with real
# pytrees pay for converting them (numba_backend/boundary.py). Every walk uses optree's
# registry namespace NAMESPACE, so that types registered here change nothing for other
# optree users in the process.

NAMESPACE = "numbax"

# Exact types that are always pytree leaves. A subclass (np.matrix, an IntEnum) misses the
# fast path and takes the full walk, which still treats it as a leaf: only the speed differs.
_FLAT_TYPES: frozenset[type] = frozenset(
    {
        np.ndarray,
        bool,
        int,
        float,
        complex,
        *(t for t in np.sctypeDict.values() if issubclass(t, (np.number, np.bool_))),
    }
)


def is_flat(args: tuple) -> bool:
    """Whether every argument is an ndarray, a Python scalar or a NumPy scalar.

    Such arguments are their own leaves, so the caller can skip flattening. A plain loop
    with an early exit is the cheapest form in CPython (cheaper than ``all(map(...))``).
    """
    for arg in args:
        if type(arg) not in _FLAT_TYPES:
            return False
    return True


T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)
IsLeaf = Callable[[Any], bool] | None

#: The structure of a pytree: hashable, comparable, with ``num_leaves``, ``num_nodes``,
#: ``unflatten(leaves)``, ``flatten_up_to(tree)`` and ``children()``.
PyTreeDef = optree.PyTreeSpec


# --- key paths --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The position of a child in a tuple or list: prints as ``[0]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The key of a child in a dict, ``OrderedDict`` or ``defaultdict``: prints as ``['a']``."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The attribute holding a child (namedtuple field, dataclass field): prints as ``.x``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The position of a child among a keyless custom node's flattened children."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = Hashable
KeyPath = tuple[KeyEntry, ...]


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Render a key path as JAX does: ``"['a'][0].x"``, or ``"a/0/x"`` when simple."""
    return separator.join(map(_simple_key_str if simple else str, keys))


def _simple_key_str(key: KeyEntry) -> str:
    """A key without its brackets or dot, for ``keystr(..., simple=True)``."""
    if isinstance(key, SequenceKey):
        return str(key.idx)
    if isinstance(key, (DictKey, FlattenedIndexKey)):
        return str(key.key)
    if isinstance(key, GetAttrKey):
        return key.name
    return str(key)


class _KeyEntry(optree.PyTreeEntry):
    """An optree path entry whose ``entry`` is already a key, from a keyed registration."""

    __slots__ = ()


def _jax_key(entry: optree.PyTreeEntry) -> KeyEntry:
    """The JAX key for one optree path entry.

    Subclasses come before their bases: a namedtuple entry is a sequence entry to optree,
    but JAX names namedtuple children by field.
    """
    if isinstance(entry, _KeyEntry):
        return entry.entry
    if isinstance(entry, (optree.NamedTupleEntry, optree.StructSequenceEntry)):
        return GetAttrKey(entry.field)
    if isinstance(entry, optree.SequenceEntry):
        return SequenceKey(entry.entry)
    if isinstance(entry, optree.MappingEntry):
        return DictKey(entry.entry)
    if isinstance(entry, optree.GetAttrEntry):
        return GetAttrKey(entry.name)
    return FlattenedIndexKey(entry.entry)


def _key_path(accessor: optree.PyTreeAccessor) -> KeyPath:
    return tuple(map(_jax_key, accessor))


# --- flattening -------------------------------------------------------------------------


def tree_flatten(tree: Any, is_leaf: IsLeaf = None) -> tuple[list[Any], PyTreeDef]:
    """Split ``tree`` into its leaves (depth first, dict keys sorted) and its structure."""
    return optree.tree_flatten(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_leaves(tree: Any, is_leaf: IsLeaf = None) -> list[Any]:
    """The leaves of ``tree`` in flattening order."""
    return optree.tree_leaves(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_structure(tree: Any, is_leaf: IsLeaf = None) -> PyTreeDef:
    """The structure of ``tree`` without its leaves."""
    return optree.tree_structure(tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree of structure ``treedef`` from ``leaves`` (inverse of flatten)."""
    return treedef.unflatten(leaves)


def tree_flatten_with_path(
    tree: Any, is_leaf: IsLeaf = None
) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes paired with its key path."""
    accessors, leaves, treedef = optree.tree_flatten_with_accessor(
        tree, is_leaf, none_is_leaf=False, namespace=NAMESPACE
    )
    return list(zip(map(_key_path, accessors), leaves, strict=True)), treedef


def tree_leaves_with_path(tree: Any, is_leaf: IsLeaf = None) -> list[tuple[KeyPath, Any]]:
    """The ``(key_path, leaf)`` pairs of ``tree`` in flattening order."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def all_leaves(iterable: Iterable[Any], is_leaf: IsLeaf = None) -> bool:
    """Whether every element of ``iterable`` is a leaf (``None`` is not: it is a node)."""
    return optree.all_leaves(iterable, is_leaf, none_is_leaf=False, namespace=NAMESPACE)


# --- mapping and reducing ---------------------------------------------------------------


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None) -> Any:
    """Apply ``f`` leafwise; each of ``rest`` must have ``tree``'s structure as a prefix.

    A structure mismatch raises ``ValueError`` naming what differs (type, arity, keys).
    """
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, none_is_leaf=False, namespace=NAMESPACE)


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: IsLeaf = None) -> Any:
    """Like :func:`tree_map`, but ``f`` gets each leaf's key path first: ``f(path, x, *xs)``."""
    path_leaves, treedef = tree_flatten_with_path(tree, is_leaf)
    rest_leaves = [treedef.flatten_up_to(other) for other in rest]
    return treedef.unflatten(
        f(path, leaf, *xs) for (path, leaf), *xs in zip(path_leaves, *rest_leaves, strict=True)
    )


_NO_INITIALIZER = object()


def tree_reduce(
    function: Callable[[T, Any], T],
    tree: Any,
    initializer: Any = _NO_INITIALIZER,
    is_leaf: IsLeaf = None,
) -> T:
    """``functools.reduce`` over the leaves of ``tree``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, *, is_leaf: IsLeaf = None) -> bool:
    """Whether every leaf of ``tree`` is truthy."""
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    """Turn an outer-of-inner pytree into an inner-of-outer one (e.g. list of tuples into
    tuple of lists); ``inner_treedef=None`` takes it from the first outer leaf."""
    if inner_treedef is None:
        first = outer_treedef.flatten_up_to(pytree_to_transpose)[0]
        inner_treedef = tree_structure(first)
    return optree.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


# --- treedefs ---------------------------------------------------------------------------


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` is a single node: a leaf, or an empty node such as ``None``."""
    return treedef.num_nodes == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The structures of the root's immediate children."""
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose children have the given structures."""
    return optree.treespec_tuple(treedefs, none_is_leaf=False, namespace=NAMESPACE)


# --- registration -----------------------------------------------------------------------


def _register(
    nodetype: type,
    flatten: Callable[[Any], tuple],
    unflatten: Callable[[Any, Iterable[Any]], Any],
    path_entry_type: type[optree.PyTreeEntry],
) -> None:
    """Register in numbax's namespace; a second registration is a ``ValueError``, as in JAX."""
    try:
        optree.register_pytree_node(
            nodetype,
            flatten,
            unflatten,
            path_entry_type=path_entry_type,
            namespace=NAMESPACE,
        )
    except ValueError as exc:
        raise ValueError(
            f"Duplicate custom PyTreeDef type registration for {nodetype!r}: {exc}"
        ) from exc


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Any, Iterable[Any]], Any],
    flatten_with_keys_func: Callable[[Any], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]]
    | None = None,
) -> None:
    """Make ``nodetype`` a pytree node.

    ``flatten_func(node) -> (children, aux_data)``; ``unflatten_func(aux_data, children)``
    rebuilds the node. ``aux_data`` must be hashable: it is part of the structure, and so
    of jit's cache key. Without ``flatten_with_keys_func`` the key paths of the children
    are :class:`FlattenedIndexKey`.
    """
    if flatten_with_keys_func is not None:
        register_pytree_with_keys(nodetype, flatten_with_keys_func, unflatten_func)
        return
    _register(nodetype, flatten_func, unflatten_func, optree.FlattenedEntry)


def register_pytree_node_class(cls: Typ) -> Typ:
    """Class decorator: register ``cls`` through its ``tree_flatten`` method and its
    ``tree_unflatten(aux_data, children)`` classmethod."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys(
    nodetype: type,
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]],
    unflatten_func: Callable[[Any, Iterable[Any]], Any],
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Make ``nodetype`` a pytree node whose children carry the given keys in key paths.

    ``flatten_with_keys(node) -> ([(key, child), ...], aux_data)``. ``flatten_func`` is
    accepted for JAX compatibility and not used: optree walks a node once for both plain
    and keyed flattening, so the keyed function serves both.
    """
    del flatten_func

    def flatten(node: Any) -> tuple[tuple, Hashable, tuple]:
        keyed_children, aux_data = flatten_with_keys(node)
        pairs = tuple(keyed_children)
        return tuple(child for _, child in pairs), aux_data, tuple(key for key, _ in pairs)

    _register(nodetype, flatten, unflatten_func, _KeyEntry)


def register_pytree_with_keys_class(cls: Typ) -> Typ:
    """Class decorator: register ``cls`` through its ``tree_flatten_with_keys`` method and
    its ``tree_unflatten(aux_data, children)`` classmethod."""
    register_pytree_with_keys(
        cls, operator.methodcaller("tree_flatten_with_keys"), cls.tree_unflatten
    )
    return cls


def register_static(cls: Typ) -> Typ:
    """Class decorator: instances become leafless nodes, so they travel in the structure
    (and jit's cache key) instead of as leaves. Instances must be hashable."""
    register_pytree_with_keys(cls, lambda node: ((), node), lambda node, _: node)
    return cls


def register_dataclass(
    nodetype: Typ,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> Typ:
    """Make a dataclass-like ``nodetype`` a node whose children are its ``data_fields``.

    ``meta_fields`` go into the structure (hashable, static). With neither list given,
    ``nodetype`` must be a dataclass: fields with ``metadata={"static": True}`` are meta,
    the other ``init`` fields are data. Key paths name children by :class:`GetAttrKey`.
    Returns ``nodetype``, so ``functools.partial`` of this works as a decorator.
    """
    data, meta = _dataclass_fields(nodetype, data_fields, meta_fields, drop_fields)

    def flatten(node: Any) -> tuple[tuple, tuple, tuple[str, ...]]:
        return (
            tuple(getattr(node, name) for name in data),
            tuple(getattr(node, name) for name in meta),
            data,
        )

    def unflatten(meta_values: tuple, children: Iterable[Any]) -> Any:
        return nodetype(
            **dict(zip(meta, meta_values, strict=True)), **dict(zip(data, children, strict=True))
        )

    _register(nodetype, flatten, unflatten, optree.GetAttrEntry)
    return nodetype


def _dataclass_fields(
    nodetype: type,
    data_fields: Sequence[str] | None,
    meta_fields: Sequence[str] | None,
    drop_fields: Sequence[str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``(data, meta)`` field names for :func:`register_dataclass`, checked as JAX does."""
    if (data_fields is None) != (meta_fields is None):
        raise TypeError("register_dataclass: give both data_fields and meta_fields, or neither")
    is_dataclass = dataclasses.is_dataclass(nodetype)
    if data_fields is None and not is_dataclass:
        raise TypeError(
            f"register_dataclass: {nodetype!r} is not a dataclass, so data_fields and "
            "meta_fields are required"
        )
    init_fields = (
        [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        if is_dataclass
        else []
    )
    if data_fields is None:
        data_fields = [f.name for f in init_fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in init_fields if f.metadata.get("static", False)]
    elif is_dataclass and {*data_fields, *meta_fields} != {f.name for f in init_fields}:
        raise ValueError(
            "register_dataclass: data_fields and meta_fields must name exactly the "
            f"dataclass's init fields not in drop_fields; got data_fields={data_fields}, "
            f"meta_fields={meta_fields}, init fields={[f.name for f in init_fields]}"
        )
    return tuple(data_fields), tuple(meta_fields)
