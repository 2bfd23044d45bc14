"""Values NumPy users build in forms the rules do not read directly, rewritten into
calls that have rules, before the function is flattened:

* ``a.sort(axis)`` on an array the function made: ``a = nxrt.sorted_in_place(a, axis)``,
  a rebinding (as ``a += v`` is), so that the sorted value carries its derivative;
* ``np.put_along_axis(a, indices, values, axis)`` on an array the function made: ``a =
  nxrt.put_along_axis(a, indices, values, axis)``, the same rebinding;
* ``np.array([[a, b], [c, d]])``: each nested literal list becomes an array of its own,
  row by row (``np.array([np.array([a, b]), np.array([c, d])])``), so ``np.array``
  always takes a flat list of scalars or of arrays of one shape (its rule's input);
* ``np.block`` of literal lists one or two deep, written in the call or assigned once
  to a name (``rows = [[a, b], [c, d]]``): concatenations of the blocks made at least
  1-D or 2-D (deeper nesting, or a list built step by step, keeps the call, which has
  no rule);
* ``np.r_[a, 0:3, b]`` and ``np.c_[a, b]``: ``np.concatenate`` of the items made
  1-D (slices as ``np.arange``, or ``np.linspace`` for a complex step), and for
  ``np.c_`` made columns and joined along the last axis;
  a directive string first (``np.r_['0,2,0', ...]``, ``'-1'``, ``'r'``, ``'c'``) sets the
  axis, the least number of dimensions of each item and where its own axes go
  (``nxrt.concatenated_item``), as NumPy reads it; ``'r'``/``'c'``, which ask NumPy for
  an ``np.matrix``, give the 2-D array it holds;
* ``np.add.at(a, indices, b)`` (and ``np.subtract.at``, adding ``-b``): ``a[...] =
  nxrt.add_at(a, indices, b)``, the scatter-add stored back into ``a`` in place;
* ufunc methods as the functions they equal: ``np.add.reduce(x, axis)`` →
  ``np.sum(x, axis)`` (``multiply``: ``np.prod``, ``maximum``/``minimum``: ``np.max``/
  ``np.min``), ``np.add.accumulate`` → ``np.cumsum`` (``multiply``: ``np.cumprod``,
  ``maximum``/``minimum``: ``nxrt.cummax``/``nxrt.cummin``), and ``ufunc.outer(a, b)`` →
  ``ufunc(nxrt.outer_operand(a, b), b)``;
* Python's ``max``/``min`` of several numbers as pairs (``max(max(a, b), c)``), and of
  one sequence as the loop ``compositions.builtins.maximum_of`` (its rule is of two
  numbers);
* ``np.linalg.multi_dot`` of a literal list: the products from the left; every other
  operation declared a composition (``np.kron``, ``cond`` with ``p``, ``lstsq``,
  ``scipy.stats.norm.logpdf``...: ``transform/compositions/``) as a call of the
  function that writes it with ruled operations (other methods of ``scipy.stats``'
  distributions keep the call, which has no rule);
* ``ufunc(x, ..., out=y)`` called for its effect: ``y[...] = ufunc(x, ...)``, a
  store into ``y``;
* ``functools.partial``: a partial object from the globals or closure, or one built in
  the function from known arguments (``normalize/transformations.py`` builds those once),
  is called as the function it wraps with its stored arguments in front
  (``_cat(xs)`` → ``np.concatenate(xs, axis=0)``).

Objects the rewritten code names (``np.sum``, the function a partial wraps, a stored
argument that is no literal) are found under a global name of the user's when there is
one (``np.sum`` where ``np`` is numpy), else bound to a fresh name in the function's
closure, as ``normalize/transformations.py`` binds what it builds.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

import gast
import numpy as np

from numbax.errors import TransformError
from numbax.runtime import nxrt
from numbax.transform.compositions import Composition, composition_for
from numbax.transform.compositions.builtins import maximum_of, minimum_of
from numbax.transform.nodes import assign, clone
from numbax.transform.normalize.reject import unsupported
from numbax.transform.normalize.transformations import register_transformations
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import FunctionSource, bind_in_closure
from numbax.transform.walk import walk

# A partial built in the function from known arguments is built once beforehand.
register_transformations(functools.partial)

_REDUCE = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min}
_ACCUMULATE = {
    np.add: np.cumsum,
    np.multiply: np.cumprod,
    np.maximum: nxrt.cummax,
    np.minimum: nxrt.cummin,
}
_NO_VALUE = object()  # ufunc.reduce's initial has no default value
_REDUCE_SIGNATURE = inspect.Signature(
    [
        inspect.Parameter("array", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *(
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
            for name, default in [
                ("axis", 0),
                ("dtype", None),
                ("out", None),
                ("keepdims", False),
                ("initial", _NO_VALUE),
                ("where", True),
            ]
        ),
    ]
)
_LITERALS = (bool, int, float, complex, str, type(None))
_NAMESPACES = (("", np), ("linalg.", np.linalg), ("fft.", np.fft))


def rewrite_values(
    fn: gast.FunctionDef, source: FunctionSource, transformation: str
) -> gast.FunctionDef:
    """``fn`` with the forms of the module docstring rewritten (in place)."""
    rewriter = _Rewriter(source, transformation, Resolver(source, local_names(fn)))
    rewriter.fixed_lists = _fixed_lists(fn)
    rewriter.own_arrays = _own_arrays(fn)
    return rewriter.visit(fn)


def _own_arrays(fn: gast.FunctionDef) -> set[str]:
    """Locals that only ever hold values the function made (``y = x * 2.0``,
    ``y = x.copy()``): no parameter, and never assigned a bare name or a piece of one
    (``y = x``, ``y = x[1:]``: another name for an array, maybe the caller's). Changing
    one in place changes nothing the caller sees, so it may be read as a rebinding."""
    params = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    assigned: dict[str, bool] = {}
    for node in walk(fn):
        targets = []
        if isinstance(node, gast.Assign):
            targets = [(t, node.value) for t in node.targets]
        elif isinstance(node, (gast.AugAssign, gast.AnnAssign)) and node.value is not None:
            targets = [(node.target, node.value)]
        elif isinstance(node, (gast.For, gast.With, gast.NamedExpr)):
            stored = getattr(node, "target", None)
            for n in walk(stored) if stored is not None else ():
                if isinstance(n, gast.Name):
                    assigned[n.id] = False
        for target, value in targets:
            made = not isinstance(value, (gast.Name, gast.Subscript, gast.Attribute))
            for n in walk(target):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                    direct = n is target
                    assigned[n.id] = assigned.get(n.id, True) and made and direct
    return {name for name, made in assigned.items() if made and name not in params}


def _fixed_lists(fn: gast.FunctionDef) -> dict[str, gast.expr]:
    """Locals that hold one literal list of lists for the whole call: assigned once,
    never changed in place (``rows.append``, ``rows[0] = ``), made of names that are
    themselves assigned at most once, and constants. Reading the literal in place of
    the name computes the same (``np.block(rows)``)."""
    stores: dict[str, int] = {}
    changed: set[str] = set()
    values: dict[str, gast.expr] = {}
    for node in walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, gast.Subscript) and isinstance(node.ctx, (gast.Store, gast.Del)):
            changed |= {n.id for n in walk(node.value) if isinstance(n, gast.Name)}
        elif isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name):
            changed.add(node.value.id)  # rows.append(...), and any other method
        if isinstance(node, gast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, gast.Name) and isinstance(value, gast.List):
                values[target.id] = value
    for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
        stores[a.id] = stores.get(a.id, 0) + 1

    def fixed(value: gast.expr) -> bool:
        if isinstance(value, gast.List):
            return all(fixed(e) for e in value.elts)
        if isinstance(value, gast.Name):
            return stores.get(value.id, 0) <= 1
        return isinstance(value, gast.Constant)

    return {
        name: value
        for name, value in values.items()
        if stores.get(name) == 1 and name not in changed and fixed(value)
    }


def _call(func: gast.expr, args: list[gast.expr], keywords: list[gast.keyword] = ()):
    return gast.Call(func, list(args), list(keywords))


def _literal(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(map(_literal, value))
    return type(value) in _LITERALS


def _constant(value: Any) -> gast.expr:
    if isinstance(value, tuple):
        return gast.Tuple([_constant(v) for v in value], gast.Load())
    return gast.Constant(value, None)


def _computed(value: gast.expr) -> bool:
    """Whether a literal list nests lists and holds a computed value (a table of
    constants is left as written: NumPy and Numba build it as it is)."""
    nests = any(isinstance(e, (gast.List, gast.Tuple)) for e in getattr(value, "elts", ()))
    leaves = [n for n in walk(value) if isinstance(n, (gast.Name, gast.Call))]
    return nests and bool(leaves)


def _depth(value: gast.expr) -> int | None:
    """How deep literal lists nest, the same in each branch (None if not)."""
    if not isinstance(value, gast.List):
        return 0
    depths = {_depth(e) for e in value.elts}
    if len(depths) != 1 or None in depths:
        return None
    return depths.pop() + 1


@dataclasses.dataclass(frozen=True)
class _Directive:
    """How ``np.r_``/``np.c_`` join their items: along ``axis``, each made at least
    ``ndmin``-dimensional with its own axes from ``trans1d`` on (-1: last), and for
    ``matrix`` ``'r'`` or ``'c'`` the result made a row or a column."""

    axis: int
    ndmin: int
    trans1d: int
    matrix: str | None = None


class _Rewriter(gast.NodeTransformer):
    def __init__(self, source: FunctionSource, transformation: str, resolver: Resolver) -> None:
        self.source = source
        self.transformation = transformation
        self.resolver = resolver
        self.line: int | None = None
        self.fixed_lists: dict[str, gast.expr] = {}
        self.own_arrays: set[str] = set()

    # -- plumbing ------------------------------------------------------------------
    def visit(self, node: gast.AST) -> Any:
        saved = self.line
        self.line = getattr(node, "lineno", None) or self.line
        try:
            return super().visit(node)
        finally:
            self.line = saved

    def refuse(self, construct: str, advice: str) -> TransformError:
        return unsupported(self.source, self.transformation, self.line, construct, advice)

    def target(self, node: gast.expr) -> Any:
        """The object a global name or chain denotes (None for anything else)."""
        if not self.resolver.is_global_chain(node):
            return None
        found = self.resolver.resolve(node)
        return None if found is LOCAL or found is UNRESOLVED else found

    def reference(self, obj: Any, hint: str) -> gast.expr:
        """An expression that denotes ``obj`` in the function: ``np.sum`` under the
        user's own name for numpy (or ``nxrt``), else a fresh closure name."""
        namespace = {**self.source.globals, **self.source.closure}
        own = getattr(obj, "__name__", None)
        if own and namespace.get(own) is obj and own not in self.locals:
            return gast.Name(own, gast.Load(), None, None)  # the user's own function
        helper = getattr(nxrt, getattr(obj, "__name__", ""), None) is obj
        if helper and "nxrt" not in namespace and "nxrt" not in self.locals:
            self.source.closure["nxrt"] = nxrt  # as generated code names the helpers
            namespace["nxrt"] = nxrt
        for module, prefix_items in ((np, _NAMESPACES), (nxrt, (("", nxrt),))):
            names = [k for k, v in namespace.items() if v is module and k not in self.locals]
            for prefix, space in prefix_items:
                attr = getattr(obj, "__name__", None)
                if names and attr and getattr(space, attr, None) is obj:
                    chain: gast.expr = gast.Name(names[0], gast.Load(), None, None)
                    for part in (*prefix.split(".")[:-1], attr):
                        chain = gast.Attribute(chain, part, gast.Load())
                    return chain
        return gast.Name(self.bind(obj, hint), gast.Load(), None, None)

    @property
    def locals(self) -> set[str]:
        return self.resolver.locals

    def bind(self, value: Any, hint: str) -> str:
        return bind_in_closure(self.source, value, f"_{hint}", self.locals)

    # -- calls ---------------------------------------------------------------------
    def visit_Expr(self, node: gast.Expr) -> gast.stmt:
        """``a.sort(...)`` as ``a = nxrt.sorted_in_place(a, ...)``, and
        ``np.put_along_axis(a, ...)`` as ``a = nxrt.put_along_axis(a, ...)``, for an
        array ``a`` the function made (:func:`_own_arrays`): the values they leave in
        ``a``, which have derivatives (calls made for their effect have none). On a
        parameter, or another name for an array, the call stays: the caller sees it.

        ``ufunc(x, ..., out=y)`` as ``y[...] = ufunc(x, ...)``: a store into ``y``, the
        same whatever else holds ``y``'s array (normalize/aliases.py follows it); and
        ``np.add.at(a, ...)`` as a store into ``a`` too (:meth:`ufunc_at`)."""
        node = self.generic_visit(node)
        call = node.value
        stored = self.ufunc_out(call)
        if stored is not None:
            return gast.copy_location(stored, node)
        if (
            isinstance(call, gast.Call)
            and isinstance(call.func, gast.Attribute)
            and call.func.attr == "at"
            and isinstance(self.target(call.func.value), np.ufunc)
        ):
            return gast.copy_location(self.ufunc_at(call, self.target(call.func.value)), node)
        if (
            isinstance(call, gast.Call)
            and self.target(call.func) is np.put_along_axis
            and call.args
            and isinstance(call.args[0], gast.Name)
            and call.args[0].id in self.own_arrays
        ):
            helper = self.reference(nxrt.put_along_axis, "put_along_axis")
            value = _call(helper, call.args, call.keywords)
            return gast.copy_location(assign(call.args[0].id, value), node)
        if not (
            isinstance(call, gast.Call)
            and isinstance(call.func, gast.Attribute)
            and call.func.attr == "sort"
            and isinstance(call.func.value, gast.Name)
            and call.func.value.id in self.own_arrays
            and len(call.args) <= 3
            and all(k.arg in ("axis", "kind", "order") for k in call.keywords)
        ):
            return node  # lst.sort(key=...), a parameter's: Python's own, for its effect
        name = call.func.value.id
        helper = self.reference(nxrt.sorted_in_place, "sorted_in_place")
        value = _call(helper, [gast.Name(name, gast.Load(), None, None), *call.args], call.keywords)
        return gast.copy_location(assign(name, value), node)

    def ufunc_out(self, call: gast.expr) -> gast.Assign | None:
        """``y[...] = ufunc(args)`` for ``ufunc(args, out=y)`` (or ``out=(y,)``) on a
        local ``y``, a NumPy ufunc called with no ``where=``; None for any other call."""
        if not isinstance(call, gast.Call) or not isinstance(self.target(call.func), np.ufunc):
            return None
        out = [k for k in call.keywords if k.arg == "out"]
        if len(out) != 1 or any(k.arg == "where" for k in call.keywords):
            return None
        array = out[0].value
        if isinstance(array, gast.Tuple) and len(array.elts) == 1:
            array = array.elts[0]
        if not isinstance(array, gast.Name) or array.id not in self.locals:
            return None
        keywords = [k for k in call.keywords if k.arg != "out"]
        value = _call(call.func, call.args, keywords)
        whole = gast.Constant(Ellipsis, None)
        target = gast.Subscript(gast.Name(array.id, gast.Load(), None, None), whole, gast.Store())
        return assign(target, value)

    def ufunc_at(self, call: gast.Call, ufunc: np.ufunc) -> gast.stmt:
        """``np.add.at(a, indices, b)`` as ``a[...] = nxrt.add_at(a, indices, b)``: the
        scatter-add as a value stored back into ``a`` in place (the caller, and any
        other name for ``a``, sees it, as in NumPy); ``np.subtract.at`` adds ``-b``."""
        what = f"np.{ufunc.__name__}.at"
        if ufunc not in (np.add, np.subtract):
            raise self.refuse(
                what,
                "numbax reads np.add.at and np.subtract.at; write the loop over the "
                f"indices (for k in range(len(idx)): a[idx[k]] = np.{ufunc.__name__}"
                "(a[idx[k]], b[k])), which has its derivative",
            )
        if len(call.args) != 3 or call.keywords or not isinstance(call.args[0], gast.Name):
            raise self.refuse(
                f"{what} called so",
                f"pass a name for the array, the indices and the values: {what}(a, idx, b)",
            )
        array, indices, values = call.args
        if ufunc is np.subtract:
            values = gast.UnaryOp(gast.USub(), values)
        helper = self.reference(nxrt.add_at, "add_at")
        added = _call(helper, [clone(array), indices, values])
        whole = gast.Subscript(clone(array), gast.Constant(Ellipsis, None), gast.Store())
        return assign(whole, added)

    def visit_Call(self, node: gast.Call) -> gast.expr:
        node = self.generic_visit(node)
        target = self.target(node.func)
        if isinstance(target, functools.partial):
            return self.partial(node, target)
        if (target is max or target is min) and not node.keywords and node.args:
            if not any(isinstance(a, gast.Starred) for a in node.args):
                return self.extremum(node, target)
        if target is np.linalg.multi_dot and len(node.args) == 1 and not node.keywords:
            if isinstance(node.args[0], (gast.List, gast.Tuple)) and node.args[0].elts:
                return self.products(node.args[0].elts)
        composition = composition_for(target, len(node.args) + len(node.keywords))
        if composition is not None:
            return self.composition(node, composition)
        if target is np.block and len(node.args) == 1 and not node.keywords:
            blocks = node.args[0]
            if isinstance(blocks, gast.Name) and blocks.id in self.fixed_lists:
                blocks = clone(self.fixed_lists[blocks.id])
            depth = _depth(blocks)
            if depth in (1, 2):
                return self.block(blocks, depth, depth)
        if (target is np.array or target is np.asarray) and node.args and _computed(node.args[0]):
            dtypes = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "dtype")]
            if not any(isinstance(d, (gast.List, gast.Dict)) for d in dtypes):  # not records
                node.args[0] = self.rows(node.func, node.args[0])
            return node
        if isinstance(node.func, gast.Attribute):
            ufunc = self.target(node.func.value)
            if isinstance(ufunc, np.ufunc) and node.func.attr in ("reduce", "accumulate"):
                return self.scan(node, ufunc, node.func.attr)
            if isinstance(ufunc, np.ufunc) and node.func.attr == "outer":
                return self.outer(node, ufunc)
        return node

    def rows(self, func: gast.expr, value: gast.expr) -> gast.expr:
        """A literal list's nested literal lists as arrays of their own (inside out)."""
        if not isinstance(value, (gast.List, gast.Tuple)):
            return value
        elts = [
            _call(func, [self.rows(func, e)]) if isinstance(e, (gast.List, gast.Tuple)) else e
            for e in value.elts
        ]
        return type(value)(elts, gast.Load())

    def extremum(self, node: gast.Call, builtin: Any) -> gast.expr:
        """Python's ``max(a, b, c)`` as ``max(max(a, b), c)`` (the rule is of two
        numbers); ``max(items)`` of one sequence as :func:`builtins.maximum_of`."""
        if len(node.args) == 1:
            if not isinstance(node.args[0], (gast.Name, gast.List, gast.Tuple)):
                return node  # a generator, a call's result: read by Python as written
            of = maximum_of if builtin is max else minimum_of
            return _call(self.reference(of, of.__name__), node.args)
        result = node.args[0]
        for item in node.args[1:]:
            result = _call(clone(node.func), [result, item])
        return result

    def products(self, factors: list[gast.expr]) -> gast.expr:
        """``np.linalg.multi_dot`` of a literal list as the products from the left."""
        dot = self.reference(np.dot, "dot")
        product = factors[0]
        for factor in factors[1:]:
            product = _call(clone(dot), [product, factor])
        return product

    def block(self, value: gast.expr, depth: int, level: int) -> gast.expr:
        """``np.block`` of literal lists ``depth`` deep as concatenations: the innermost
        along the last axis, the next along the one before; each block promoted to at
        least ``depth`` dimensions with leading ones (np.atleast_1d/2d), as NumPy does."""
        if level == 0:
            promote = np.atleast_1d if depth == 1 else np.atleast_2d
            return _call(self.reference(promote, promote.__name__), [value])
        parts = [self.block(e, depth, level - 1) for e in value.elts]
        join = self.reference(np.concatenate, "concatenate")
        axis = gast.keyword("axis", gast.Constant(-level, None))
        return _call(join, [gast.List(parts, gast.Load())], [axis])

    def partial(self, node: gast.Call, wrapped: functools.partial) -> gast.Call:
        hint = getattr(wrapped.func, "__name__", "partial")
        func = self.reference(wrapped.func, hint)
        stored = [
            _constant(v)
            if _literal(v)
            else gast.Name(self.bind(v, f"{hint}_arg"), gast.Load(), None, None)
            for v in wrapped.args
        ]
        given = {k.arg for k in node.keywords}
        keywords = [
            gast.keyword(
                k,
                _constant(v)
                if _literal(v)
                else gast.Name(self.bind(v, f"{hint}_{k}"), gast.Load(), None, None),
            )
            for k, v in wrapped.keywords.items()
            if k not in given
        ]
        return self.visit_Call(_call(func, [*stored, *node.args], [*keywords, *node.keywords]))

    def composition(self, node: gast.Call, composition: Composition) -> gast.Call:
        """A call of an operation declared a composition as a call of the function
        that writes it (``transform/compositions/``), with the same arguments, which
        must be the function's."""
        function, what = composition.function, composition.name
        unpacked = any(isinstance(a, gast.Starred) for a in node.args)
        if not unpacked and all(k.arg is not None for k in node.keywords):
            try:
                inspect.signature(function).bind(
                    *node.args, **{k.arg: k.value for k in node.keywords}
                )
            except TypeError as err:
                params = ", ".join(inspect.signature(function).parameters)
                raise self.refuse(
                    f"{what} called so ({err})", f"numbax reads {what}({params})"
                ) from None
        node.func = self.reference(function, function.__name__)
        return node

    def scan(self, node: gast.Call, ufunc: np.ufunc, method: str) -> gast.expr:
        """``ufunc.reduce``/``ufunc.accumulate`` as the NumPy function it equals."""
        table = _REDUCE if method == "reduce" else _ACCUMULATE
        replacement = table.get(ufunc)
        what = f"np.{ufunc.__name__}.{method}"
        if replacement is None:
            known = ", ".join(f"np.{u.__name__}.{method}" for u in table)
            raise self.refuse(what, f"numbax reads {known}")
        try:
            bound = _REDUCE_SIGNATURE.bind(*node.args, **{k.arg: k.value for k in node.keywords})
        except TypeError as err:
            raise self.refuse(f"{what} called so ({err})", "pass the array and axis") from None
        extra = set(bound.arguments) - {"array", "axis", "dtype", "keepdims"}
        if method == "accumulate":
            extra |= set(bound.arguments) & {"keepdims"}
        if replacement in (nxrt.cummax, nxrt.cummin, np.max, np.min):
            extra |= set(bound.arguments) & {"dtype"}
        if extra:
            raise self.refuse(
                f"{what} with {', '.join(sorted(extra))}=",
                f"call {getattr(replacement, '__name__', '')} with the array and axis",
            )
        axis = bound.arguments.get("axis", gast.Constant(0, None))
        keywords = [gast.keyword("axis", axis)] + [
            gast.keyword(k, bound.arguments[k])
            for k in ("dtype", "keepdims")
            if k in bound.arguments
        ]
        array = bound.arguments["array"]
        if replacement in (nxrt.cummax, nxrt.cummin):
            return _call(self.reference(replacement, replacement.__name__), [array, axis])
        return _call(self.reference(replacement, replacement.__name__), [array], keywords)

    def outer(self, node: gast.Call, ufunc: np.ufunc) -> gast.expr:
        """``ufunc.outer(a, b)`` as ``ufunc(nxrt.outer_operand(a, b), b)``: ``b`` is read
        twice, so it may be no call (whose effects would happen twice)."""
        if ufunc.nin != 2 or len(node.args) != 2 or node.keywords:
            raise self.refuse(
                f"np.{ufunc.__name__}.outer called so", "pass the two arrays, and no keywords"
            )
        a, b = node.args
        if any(isinstance(n, (gast.Call, gast.NamedExpr)) for n in walk(b)):
            raise self.refuse(
                f"np.{ufunc.__name__}.outer of a call's result",
                "assign the second array to a name first (numbax reads it twice)",
            )
        operand = _call(self.reference(nxrt.outer_operand, "outer_operand"), [a, b])
        return _call(node.func.value, [operand, clone(b)])

    # -- np.r_[...], np.c_[...] -------------------------------------------------------
    def visit_Subscript(self, node: gast.Subscript) -> gast.expr:
        node = self.generic_visit(node)
        if not isinstance(node.ctx, gast.Load):
            return node
        base = self.target(node.value)
        if base is not np.r_ and base is not np.c_:
            return node
        name = "np.r_" if base is np.r_ else "np.c_"
        index = node.slice
        items = list(index.elts) if isinstance(index, gast.Tuple) else [index]
        # NumPy's defaults (np.c_ is np.r_['-1,2,0', ...]), which a directive overrides
        directive = _Directive(0, 1, -1) if base is np.r_ else _Directive(-1, 2, 0)
        if items and isinstance(items[0], gast.Constant) and isinstance(items[0].value, str):
            directive = self.directive(items.pop(0).value, directive, name)
        for item in items:
            if isinstance(item, gast.Constant) and isinstance(item.value, str):
                raise self.refuse(
                    f"a directive string after the first item of {name}[...]",
                    "give the directive first, as NumPy requires",
                )
        parts = [self.concatenated_item(item, name, directive) for item in items]
        concatenate = self.reference(np.concatenate, "concatenate")
        keywords = [] if directive.axis == 0 else [gast.keyword("axis", _constant(directive.axis))]
        joined = _call(concatenate, [gast.Tuple(parts, gast.Load())], keywords)
        if directive.matrix is None:
            return joined
        # 'r' and 'c' ask for np.matrix, which numbax writes as the 2-D array it holds:
        # a 1-D result as one row ('r') or one column ('c')
        trans1d = 0 if directive.matrix == "c" else -1
        return self.item_made(joined, 2, trans1d)

    def directive(self, text: str, defaults: _Directive, name: str) -> _Directive:
        """NumPy's directive string: ``'r'``/``'c'`` (a matrix), ``'axis'``, or
        ``'axis,ndmin[,trans1d]'``."""
        if text in ("r", "c"):
            return dataclasses.replace(defaults, matrix=text)
        try:
            numbers = [int(part) for part in text.split(",")]
        except ValueError:
            numbers = []
        if not 1 <= len(numbers) <= 3:
            raise self.refuse(
                f"the directive {text!r} in {name}[...]",
                "write 'r', 'c', 'axis', 'axis,ndmin' or 'axis,ndmin,trans1d' "
                "(a matrix expression such as '1 2; 3 4' is np.bmat's, not numbax's)",
            )
        if len(numbers) == 1:
            return dataclasses.replace(defaults, axis=numbers[0])
        return _Directive(numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else -1)

    def concatenated_item(self, item: gast.expr, name: str, directive: _Directive) -> gast.expr:
        """One item made what NumPy joins: a slice its range, each at least
        ``ndmin``-dimensional, its own axes from ``trans1d`` on."""
        if isinstance(item, gast.Slice):
            if item.upper is None:
                raise self.refuse(f"a slice without an end in {name}[...]", "give its end")
            start = item.lower or gast.Constant(0, None)
            step = item.step
            if isinstance(step, gast.Constant) and isinstance(step.value, complex):
                count = gast.Constant(int(abs(step.value)), None)
                item = _call(self.reference(np.linspace, "linspace"), [start, item.upper, count])
            else:
                rest = [item.upper] if step is None else [item.upper, step]
                item = _call(self.reference(np.arange, "arange"), [start, *rest])
        return self.item_made(item, directive.ndmin, directive.trans1d)

    def item_made(self, item: gast.expr, ndmin: int, trans1d: int) -> gast.expr:
        """``item`` with at least ``ndmin`` dimensions as NumPy's index tricks make it:
        ``np.atleast_1d``, or ``nxrt.concatenated_item`` (a reshape with a batching rule,
        so that vmap's vectorized method joins the items as one array)."""
        if ndmin <= 1:
            return _call(self.reference(np.atleast_1d, "atleast_1d"), [item])
        helper = self.reference(nxrt.concatenated_item, "concatenated_item")
        return _call(helper, [item, _constant(ndmin), _constant(trans1d)])
