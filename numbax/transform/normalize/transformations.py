"""Transformations built inside the function being transformed, built once beforehand.

JAX style builds transformed functions where they are used::

    def loss(w):
        return np.sum(nx.vmap(model, (None, 0))(w, xs))

Traced, that is an ordinary call. Read as source, ``nx.vmap(model, (None, 0))`` is a
call whose result is called, and the transformations need to see the batched function
itself to differentiate or compile the call. So when every argument of ``nx.vmap``,
``nx.grad``, ``nx.jit``... is known before the function runs (functions and values
from its globals or closure, and constants), the transformed function is built here,
once, and bound to a name the generated code refers to: ``_vmap_model(w, xs)``. A local
assigned once from such a call (``batched = nx.vmap(model)``) becomes that name too.

The built objects are remembered per call text and argument objects, so transforming
the function again finds the same ones (and the caches keyed by them).

Which functions build transformations is told by the public layer above
(:func:`register_transformations`); a call is matched to them by identity.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import gast

from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import FunctionSource
from numbax.transform.walk import walk

_built: dict[tuple, Any] = {}
_constructors: list[Callable[..., Any]] = []


def register_transformations(*constructors: Callable[..., Any]) -> None:
    """Fold calls to these functions (``nx.vmap``, ``nx.grad``, ``nx.jit``...) that are
    written inside a function being transformed (matched by identity)."""
    for constructor in constructors:
        if not any(constructor is known for known in _constructors):
            _constructors.append(constructor)


def builds_transformation(obj: Any) -> bool:
    """Whether ``obj`` is one of the registered constructors (``nx.grad``, ``nx.vmap``...)."""
    return any(obj is constructor for constructor in _constructors)


def fold_transformations(fn: gast.FunctionDef, source: FunctionSource) -> gast.FunctionDef:
    """``fn`` with each transformation built from known arguments replaced by a name
    bound (in ``source.closure``) to the built object."""
    resolver = Resolver(source, local_names(fn))
    folder = Folder(source, resolver)
    stores: dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    params = {a.id for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    kept = []
    for stmt in fn.body:  # batched = nx.vmap(model): an alias of the built object
        if (
            isinstance(stmt, gast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name)
            and stores.get(stmt.targets[0].id) == 1
            and stmt.targets[0].id not in params
        ):
            name = folder.fold(stmt.value, stmt.targets[0].id)
            if name is not None:
                folder.aliases[stmt.targets[0].id] = name
                continue
        kept.append(stmt)
    fn.body = kept
    return folder.visit(fn)


def _defined(value: Any) -> bool:
    """Whether a resolved value is known before the function runs: compared by identity,
    since a value (an array) may not compare with ``==``."""
    return value is not LOCAL and value is not UNRESOLVED


class Folder(gast.NodeTransformer):
    def __init__(self, source: FunctionSource, resolver: Resolver) -> None:
        self.source = source
        self.resolver = resolver
        self.aliases: dict[str, str] = {}

    def visit_Name(self, node: gast.Name) -> gast.AST:
        if isinstance(node.ctx, gast.Load) and node.id in self.aliases:
            return gast.Name(self.aliases[node.id], gast.Load(), None, None)
        return node

    def visit_Call(self, node: gast.Call) -> gast.AST:
        name = self.fold(node.func)
        if name is not None:  # nx.vmap(model)(w, xs)
            node.func = gast.Name(name, gast.Load(), None, None)
        return self.generic_visit(node)

    def fold(self, node: gast.expr, hint: str | None = None) -> str | None:
        """The name of the object ``node`` builds, if it builds a transformation from
        known arguments (else None)."""
        if not isinstance(node, gast.Call):
            return None
        constructor = self.resolver.resolve(node.func)
        if not builds_transformation(constructor):
            return None
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if any(k.arg is None for k in node.keywords) or not all(map(self._known, arguments)):
            return None
        namespace = {  # what the names read denote (a lifted function's globals are live)
            n.id: self.resolver.lookup(n.id)
            for n in walk(node)
            if isinstance(n, gast.Name) and _defined(self.resolver.lookup(n.id))
        }
        expression = ast.Expression(gast.gast_to_ast(gast.Expression(node)).body)
        referenced = tuple(
            id(namespace.get(n.id))
            for n in walk(node)
            if isinstance(n, gast.Name) and n.id in namespace
        )
        key = (ast.dump(expression), referenced)
        if key not in _built:
            code = compile(ast.fix_missing_locations(expression), self.source.filename, "eval")
            _built[key] = eval(code, namespace)  # noqa: S307 - the user's own expression
        return self.bind(_built[key], constructor.__name__, hint)

    def _known(self, node: gast.expr) -> bool:
        """Whether the value is known before the function runs."""
        if isinstance(node, gast.Constant):
            return True
        if isinstance(node, (gast.Tuple, gast.List)):
            return all(map(self._known, node.elts))
        if isinstance(node, gast.Dict):
            return all(k is not None and self._known(k) for k in node.keys) and all(
                map(self._known, node.values)
            )
        if isinstance(node, gast.UnaryOp):
            return self._known(node.operand)
        if isinstance(node, (gast.Name, gast.Attribute)):
            return _defined(self.resolver.resolve(node))
        if isinstance(node, gast.Call):  # nx.vmap(nx.grad(f)): built inside out
            return self.fold(node) is not None
        return False

    def bind(self, value: Any, kind: str, hint: str | None) -> str:
        """A name for `value` in the function's closure, `_<kind>_<hint>` (numbered
        when that name is taken by something else)."""
        base = f"_{kind}_{hint or getattr(value, '__name__', 'function')}"
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
        name, count = base, 1
        while True:
            bound = self.source.closure.get(name, self.source.globals.get(name))
            if bound is value or (bound is None and name not in self.resolver.locals):
                break
            count += 1
            name = f"{base}_{count}"
        self.source.closure[name] = value
        return name
