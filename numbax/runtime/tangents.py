"""Tangents and cotangents as values: zeros and ones of a value's type, fresh copies,
accumulation (``tree_add``, ``index_add``), and the checks on cotangents a user's rule or
a loop hands back.

Interpreted code keeps the user's lists, dicts and registered classes, so these accept
any pytree where they recurse; compiled code passes (named) tuples, which the Numba
versions (``numba_backend/runtime/tangents.py``) handle.

Dtypes follow NumPy's own values, not NumPy 2's weak Python scalars: under Numba a Python
float *is* a float64, so these treat it as one too wherever they derive a dtype from
several values, and both ways agree.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from numbax import tree_util
from numbax.runtime.registry import helper

SCALARS = (bool, int, float, complex, np.generic)
"""The Python and NumPy scalar types a leaf may be."""
_LEAVES = (np.ndarray, *SCALARS)


def is_leaf(x: Any) -> bool:
    """Whether ``x`` is an array or a scalar (not a container)."""
    return isinstance(x, _LEAVES)


def _leafwise(leaf: Any, x: Any, *rest: Any) -> Any:
    """``leaf`` applied to ``x`` (and ``rest``) if a leaf, else mapped over the pytree."""
    if is_leaf(x):
        return leaf(x, *rest)

    def checked(y: Any, *others: Any) -> Any:
        if not is_leaf(y):
            raise TypeError(f"expected an array or a scalar, got {type(y).__name__}")
        return leaf(y, *others)

    return tree_util.tree_map(checked, x, *rest)


def _zeros_leaf(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, x.dtype)
    return type(x)(0)


def _ones_leaf(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.ones(x.shape, x.dtype)
    return type(x)(1)


def _owned_leaf(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.array(x, copy=True, order="C")
    return x


def _add_leaf(a: Any, b: Any) -> Any:
    return a + b


@helper
def zeros_like(x: Any) -> Any:
    """Zero of ``x``'s type and shape: a scalar of its type, a C-ordered array of its dtype
    (``np.zeros_like`` would keep a Fortran layout and turn scalars into 0-d arrays), or
    the same structure of zeros for a pytree."""
    return _leafwise(_zeros_leaf, x)


@helper
def ones_like(x: Any) -> Any:
    """One of ``x``'s type and shape, like ``zeros_like`` (pytrees: leaf by leaf)."""
    return _leafwise(_ones_leaf, x)


@helper
def index_add(base: np.ndarray, index: Any, value: Any) -> np.ndarray:
    """``np.add.at(base, index, value)``, in place, returning ``base``: the adjoint of
    ``x[index]``. Repeated integer indices accumulate; ``value`` broadcasts to the
    indexed shape. Numba has no ``np.add.at``: the overload below generates the loop for
    ints, slices, None, Ellipsis and integer arrays (NumPy's rules for where the
    advanced dimensions go).

    A tuple ``base`` (the cotangent of a tuple-valued variable, such as a helper's
    results) is not changed: a new tuple is returned, with ``value`` added to its
    element ``index``, an integer constant."""
    if isinstance(base, dict):  # a pytree's cotangent: params["w"]
        return {**base, index: tree_add(base[index], value)}
    if isinstance(index, str):  # a NamedTuple's (or registered class's) field
        if hasattr(base, "_replace"):
            return base._replace(**{index: tree_add(getattr(base, index), value)})
        return _with_field(base, index, value)
    if isinstance(base, (tuple, list)):
        if isinstance(index, slice):  # layers[:-1]: value holds the slice's cotangents
            positions = range(len(base))[index]
            if len(positions) != len(value):
                raise ValueError(
                    f"index_add: {len(value)} cotangents for a slice of {len(positions)}"
                )
            added = dict(zip(positions, value, strict=True))
            items = [tree_add(e, added[i]) if i in added else e for i, e in enumerate(base)]
        else:
            position = index % len(base)
            items = [tree_add(e, value) if i == position else e for i, e in enumerate(base)]
        if isinstance(base, list):
            return items
        return type(base)(*items) if hasattr(base, "_fields") else tuple(items)
    np.add.at(base, index, value)
    return base


@helper
def field_filled(base: Any, index: str, value: Any) -> Any:
    """``index_add(base, index, value)`` where ``base``'s entry ``index`` is still the zero
    ``zeros_like`` made (``numba_backend/loops/fresh_fields.py``): compiled code puts ``value``
    in the zero's place when it has the zero's type, rather than adding the two (a
    dict of parameters' cotangent is built this way, one entry at a time); plain Python
    adds."""
    return index_add(base, index, value)


def _with_field(base: Any, name: str, value: Any) -> Any:
    """A copy of object ``base`` (a registered pytree class) with ``value`` added to
    its attribute ``name``."""
    new = copy.copy(base)
    setattr(new, name, tree_add(getattr(base, name), value))
    return new


@helper
def tree_add(a: Any, b: Any) -> Any:
    """``a + b`` for scalars and arrays, leaf by leaf for pytrees of equal structure:
    how cotangents of one variable accumulate."""
    if is_leaf(a) and is_leaf(b):
        return a + b
    if isinstance(a, np.ndarray) and type(b) in (list, tuple):
        return _added_to_sequence(b, a)
    if isinstance(b, np.ndarray) and type(a) in (list, tuple):
        return _added_to_sequence(a, b)
    if _sequence_pair(a, b):
        items = (tree_add(x, y) for x, y in zip(a, b, strict=True))
        kept = b if type(a) is tuple else a  # the argument's own type (list, NamedTuple)
        return type(kept)(*items) if hasattr(kept, "_fields") else type(kept)(items)
    return _leafwise(_add_leaf, a, b)


def _sequence_pair(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are cotangents of one sequence that came as different
    containers: a plain tuple (an unpacking's ``e1, e2 = p`` builds one) and the list or
    NamedTuple the sequence is (its other uses: ``p[0]``), or a list and a tuple. They
    add item by item, in the sequence's own type."""
    if type(a) is type(b) or not isinstance(a, tuple | list) or not isinstance(b, tuple | list):
        return False
    return (type(a) is tuple or type(b) is tuple) and len(a) == len(b)


def _added_to_sequence(sequence: list | tuple, array: np.ndarray) -> list | tuple:
    """The cotangent of a list or tuple that operations used both as it is (``a, b =
    t``, ``np.asarray(t)``: its cotangent in its structure) and as the array NumPy made
    of it (``np.sin(t)``: its cotangent an array), added in the sequence's structure."""
    if array.shape[:1] != (len(sequence),):
        raise ValueError(
            f"cannot add a cotangent of shape {array.shape} to one of a sequence of "
            f"{len(sequence)} items"
        )
    return type(sequence)(tree_add(part, array[k]) for k, part in enumerate(sequence))


@helper
def loop_cotangent(ct: Any, x: Any) -> Any:
    """The cotangent of ``x`` carried into an iteration of a reverse loop: ``ct``
    itself, or, where ``x`` has another shape in this iteration than ``ct`` has, zeros
    of x's shape. A cotangent that reaches the iteration has x's shape; one of another
    shape is the zero the iteration after it left for a variable it redefines (a loop
    over layers of different widths: ``for W, b in params``)."""
    if is_leaf(ct) and is_leaf(x):
        return ct if np.shape(ct) == np.shape(x) else zeros_like(x)
    if tree_util.tree_structure(ct) != tree_util.tree_structure(x):  # a list, grown
        return zeros_like(x)
    return tree_util.tree_map(loop_cotangent, ct, x)


@helper
def owned(x: Any) -> Any:
    """A fresh C-ordered copy of an array (scalars unchanged, pytrees leaf by leaf), for
    values the derivative code will update in place."""
    return _leafwise(_owned_leaf, x)


@helper
def kept_item(item: Any, base: Any) -> Any:
    """``base[i]`` (``item``) as reverse mode saves it before a store ``base[i] = v``: a
    copy where ``base`` is an array, whose memory the store writes; the item itself
    where ``base`` is a list, tuple or dict, where the store puts another object in its
    place: restored, the very array is back, and the caller's container is as it was."""
    if isinstance(base, (list, tuple, dict)):
        return item
    return owned(item)


@helper
def ravel(x: Any) -> np.ndarray:
    """``np.ravel(x)``: a 1-D array in C order (a copy at times), one element for scalars."""
    return np.ravel(x)


@helper
def custom_cotangents(cts: Any, primals: tuple, rule: str) -> tuple:
    """A ``custom_vjp`` rule's ``bwd`` output, checked like JAX checks it: a tuple with
    one cotangent per differentiable argument, each of its argument's shape; None
    stands for a zero cotangent."""
    if not isinstance(cts, tuple | list) or len(cts) != len(primals):
        got = f"a {type(cts).__name__}" + (
            f" of length {len(cts)}" if isinstance(cts, tuple | list) else ""
        )
        raise TypeError(
            f"custom_vjp rule {rule} must return a tuple with one cotangent per "
            f"differentiable argument of the primal function ({len(primals)}), got {got}"
        )
    out = []
    for i, (ct, primal) in enumerate(zip(cts, primals, strict=True)):
        if ct is None:
            out.append(zeros_like(primal))
            continue
        if is_leaf(primal) and np.shape(ct) != np.shape(primal):
            raise ValueError(
                f"custom_vjp rule {rule} returned a cotangent of shape {np.shape(ct)} for "
                f"argument {i}, which has shape {np.shape(primal)}"
            )
        out.append(ct)
    return tuple(out)
