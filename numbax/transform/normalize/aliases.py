"""Writes through a second name for an array, made explicit on every name they change.

NumPy lets two names hold one array: ``c = a``, a view ``b = a[:2]``, ``r = M[i]``,
``t = a.T``. A write through one of them (``b[0] = v``, ``b *= 2.0``) changes what the
others hold. Every later pass of numbax (derivatives, batching, fusion) reads a name as
a *value*: a store into ``b`` changes ``b`` and nothing else, and ``b *= 2.0`` is
``b = b * 2.0`` (normalize/statements.py). This pass, run on the core language, brings the two
readings together: after it, the function computes the same whether a view shares its
base's memory or is a copy of it, so value semantics give NumPy's results.

The model
=========

A forward dataflow analysis gives each local name, before each statement, what it
holds as far as sharing goes (:class:`Held`):

* the *objects* it may hold or point into: an abstract object per parameter and per
  statement that makes a new value (arithmetic, ``a.copy()``, ``np.array(a)``, a NumPy
  function's result, fancy indexing);
* and, where it is known, *how it was made from another name* (its derivation): ``b =
  a[:2]`` (basic indexing: slices, ``...``, ``None``, integers that the function
  computes as integers, such as a ``range`` loop's variable), ``r = M[i]``, ``t = a.T``
  and ``c = a``. A derivation stays known while neither the base nor any name its index
  reads is assigned again.

Lists and tuples hold arrays themselves: a literal ``[x, y]`` or ``(x, y)``,
``xs.append(x)`` and a store into a list or dict literal's name (``xs[i] = x``) put
``x``'s objects among the container's *items*; unpacking ``a, b = t`` gives each name
its item's objects (all items' where they are not known one by one), and ``xs[i]``
holds the items too.

A name made some other way from another's array keeps that array among its objects but
has no derivation: a view that NumPy makes or not depending on the run (``np.reshape``,
``ravel``, ``np.asarray``, ``squeeze``, ``np.transpose``...; a subscript whose index
may be an integer or an index array; a helper of the user's, which may return a view
of its argument), a view whose base or index was assigned since, and a name that holds
different things on the paths that meet after an ``if`` or around a loop.

Each *write* — a subscript store ``x[i] = v`` (``x[i] += v`` and ``ufunc(..., out=x)``
too: normalize/values.py makes it ``x[...] = ufunc(...)``), an augmented assignment
``x op= v`` on a name, and a call of a helper of the user's for its effect, which may
write into each array it is given — changes every name that shares an object with
``x`` or holds it as an item, and is read later (liveness). Those are brought up to
date after the write:

* the value is written back along ``x``'s derivations up to the name it starts from:
  ``b = a[:2]; b[0] = v`` is followed by ``a[:2] = b`` (``t = a.T``: ``a = t.T``;
  ``c = a``: ``a = c``);
* every other name derived from that same name (directly or through others) is made
  again from it, parents first: after ``a[0] = v``, ``b = a[:2]``.

``x op= v`` changes ``x`` in place only where ``x`` is an array; where it holds a number
(``r = M[i]`` of a vector), Python rebinds the name. So unless ``x`` is certainly an
array (a slice of one), the write-back runs under ``if`` on ``nxrt.is_array(x)``,
measured before the operation: a 0-d array (``np.array(a[0])``) is an array there, a
NumPy scalar (``a[0]``, ``a[0] * 2.0``) a number.

A write that changes a later-read name which cannot be made again from where the write
goes (no derivation, or one from another array) is refused with a
:class:`~numbax.errors.TransformError` naming the line of the write, the line that made
the other name, and what to write instead (``.copy()`` where a copy is meant, or the
write on the base itself). ``x op= v`` on such a name is refused where it runs, with
the same message as a ``ValueError``, when ``x`` holds an array then (a number is
rebound, which changes nothing else). Functions numbax generated are not analysed
again: their writes go to arrays they own.

A parameter may be a list, tuple or dict of arrays (a pytree): its items count as its
own object, so ``u, v = params; u[0] = v`` changes ``params`` and is refused where
``params`` is read later, as is a write through a field (``w = p.w``: an attribute no
array has, of a NamedTuple or a registered class, which cannot take the array back). A
helper of the user's that writes into an array it is given and is called for its result
(``w = h(z)``) is refused at the call, naming the helper's write, where ``z`` or a name
sharing its array is read after the call: derivatives and batching see the helper's
writes only in what it returns (``jit`` alone runs on memory, as NumPy does, and is left
as it is).

The pass in parts
=================

This module decides whether a function needs the pass and runs it (``_Aliases``); the
analysis is ``alias_analysis.py`` (what each name holds: :class:`Held`, and how states
join), the rewrite of each write ``alias_writes.py`` (write-backs, names made again,
refusals), and what kind of value each local holds wherever it is assigned (integers,
index arrays, lists and dicts), which both read, ``alias_kinds.py``.
"""

from __future__ import annotations

import gast

from numbax.transform.analysis.dataflow import Liveness
from numbax.transform.names import Namer
from numbax.transform.normalize.alias_analysis import IN_PLACE, Held, State, _SharingAnalysis
from numbax.transform.normalize.alias_kinds import (
    _containers,
    _index_arrays,
    _integer_names,
    _is_user_function,
)
from numbax.transform.normalize.alias_writes import WRITE_BACK, _WriteRewrite
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import FunctionSource
from numbax.transform.walk import walk

__all__ = ["IN_PLACE", "WRITE_BACK", "write_through_aliases"]


def write_through_aliases(
    fn: gast.FunctionDef, source: FunctionSource, transformation: str
) -> None:
    """Rewrite ``fn`` (core language, in place) as the module docstring says."""
    if getattr(source.func, "__numbax_identity__", None) is not None:
        return  # generated by numbax: it writes only into arrays it owns
    aliases = _Aliases(fn, source, transformation)
    statements = [s for s in walk(fn) if isinstance(s, gast.stmt)]
    if any(aliases.written(s) or aliases.helper_called(s) for s in statements):
        aliases.run()


class _Aliases(_SharingAnalysis, _WriteRewrite):
    """The analysis of one function (what each name holds before each statement) and
    the rewrite of its writes."""

    def __init__(self, fn: gast.FunctionDef, source: FunctionSource, transformation: str):
        self.fn = fn
        self.source = source
        self.transformation = transformation
        self.resolver = Resolver(source, local_names(fn))
        self.namer = Namer.for_function(fn)
        self.integers = _integer_names(fn)
        self.index_arrays = _index_arrays(fn, self.resolver)
        self.containers = _containers(fn)
        self.before: dict[int, State] = {}

    def written(self, stmt: gast.stmt) -> list[str]:
        """The names whose arrays ``stmt`` writes into: a store's, an in-place
        operation's, and the names given to a helper of the user's called for its effect
        (``zero_first(b)``), which may write into them."""
        if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
            target = self.resolver.resolve(stmt.value.func)
            if target is LOCAL or target is UNRESOLVED or not _is_user_function(target):
                return []
            given = stmt.value.args + [k.value for k in stmt.value.keywords]
            return list(dict.fromkeys(a.id for a in given if isinstance(a, gast.Name)))
        if not isinstance(stmt, gast.Assign):
            return []
        target = stmt.targets[0]
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            return [target.value.id]
        if isinstance(target, gast.Name) and getattr(stmt, IN_PLACE, False):
            return [target.id]
        return []

    def helper_called(self, stmt: gast.stmt) -> object | None:
        """The user's function that ``stmt`` (``w = h(z)``) calls for its result."""
        if not (isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call)):
            return None
        target = self.resolver.resolve(stmt.value.func)
        if target is LOCAL or target is UNRESOLVED or not _is_user_function(target):
            return None
        return target

    # -- analysis --------------------------------------------------------------------
    def run(self) -> None:
        args = self.fn.args
        params = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
        # a parameter may be a list, tuple or dict of arrays (a pytree): its items are
        # its own object as far as sharing goes (`u, v = params` shares with params)
        state = {
            p: Held(frozenset({("param", p), ("item", ("param", p))}), None, self.fn.lineno)
            for p in params
        }
        self._block(self.fn.body, state, None)
        self.liveness = Liveness(self.fn.body)
        self.fn.body = self._rewrite(self.fn.body)
