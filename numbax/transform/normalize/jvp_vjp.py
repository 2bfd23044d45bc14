"""``nx.jvp``, ``nx.linearize`` and ``nx.vjp`` called inside a function being transformed.

JAX's Hessian-vector product evaluates a JVP inside the function it transforms::

    def hvp(x):
        return nx.jvp(nx.grad(f), (x,), (v,))[1]

Traced, that is ordinary forward mode. Read as source, ``nx.jvp`` is a call of a
Python function that runs a generated JVP, which no transformation can see into. So
when the differentiated function (``nx.grad(f)``, ``f``) is known before the function
runs, its JVP is generated here, bound to a name, and called instead::

    return _jvp_grad_f(x, v)[1]          # (primal_out, tangent_out), as JAX's jvp

``y, f_jvp = nx.linearize(F, x)`` becomes ``y = F(x)``, and each later ``f_jvp(t)`` the
JVP's tangent output ``_jvp_F(x, t)[1]``: the primal is computed again per call (JAX
keeps the linearization instead; the numbers are the same).

``y, back = nx.vjp(F, x)`` becomes ``y = F(x)``, and each later ``back(ct)`` a call of
F's VJP, ``_vjp_F(x, ct)``, the tuple of cotangents. The pullback must only be called:
a pullback returned, stored or passed along is refused (its code would have to exist
at run time as a value).

The primals a linearization or a pullback was taken at are the values of the moment:
a primal name the function assigns elsewhere is copied to a name of its own at the
``nx.vjp`` line (``_x_at_back = x``), and one it updates in place is refused.

Everything numbax cannot rewrite this way is a :class:`~numbax.errors.TransformError`
that names the construct, the user's line and what to write instead. Which functions
are ``jvp``/``vjp``/``linearize``, and how a derivative is generated, is told by the
public layer (:func:`register_derivative_calls`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gast

from numbax.errors import TransformError
from numbax.transform.nodes import clone
from numbax.transform.normalize.reject import unsupported
from numbax.transform.normalize.transformations import Folder
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import FunctionSource
from numbax.transform.walk import walk

Derive = Callable[[Any, str, int], tuple[Any, tuple]]
"""``derive(fun, mode, n)``: ``fun``'s generated JVP (``mode="jvp"``) or VJP (``"vjp"``)
w.r.t. its first ``n`` arguments, and the defaults of the parameters after them (what a
call with ``n`` arguments takes); a ``TypeError`` when ``fun`` cannot be called so."""

_calls: dict[str, Any] = {}
_derive: list[Derive] = []

_CONSTANTS = (int, float, complex, bool, str, bytes, type(None))


def register_derivative_calls(*, jvp: Any, vjp: Any, linearize: Any, derive: Derive) -> None:
    """Rewrite calls to these functions (``nx.jvp``...; matched by identity) written
    inside a function being transformed, with ``derive`` generating the derivatives."""
    _calls.update(jvp=jvp, vjp=vjp, linearize=linearize)
    _derive[:] = [derive]


@dataclass
class _Pullback:
    """A local bound by ``y, back = nx.vjp(F, x)`` (``mode="vjp"``) or by
    ``nx.linearize`` (``"jvp"``): what its calls become."""

    mode: str
    function: str  # the bound name of F's derivative
    primals: list[gast.expr]
    defaults: list[gast.expr]
    construct: str  # nx.vjp / nx.linearize, for errors


def fold_derivative_calls(
    fn: gast.FunctionDef, source: FunctionSource, transformation: str
) -> gast.FunctionDef:
    """``fn`` with its ``nx.jvp``, ``nx.linearize`` and ``nx.vjp`` calls rewritten to
    calls of generated derivatives (bound in ``source.closure``)."""
    if not _calls or not _mentions_a_derivative_call(fn, source):
        return fn
    rewriter = _Rewriter(fn, source, transformation)
    fn.body = rewriter.block(fn.body)
    return rewriter.visit(fn)


def _mentions_a_derivative_call(fn: gast.FunctionDef, source: FunctionSource) -> bool:
    resolver = Resolver(source, local_names(fn))
    wanted = list(_calls.values())
    for node in walk(fn):
        if isinstance(node, gast.Call):
            callee = resolver.resolve(node.func)
            if any(callee is call for call in wanted):
                return True
    return False


def _text(node: gast.AST) -> str:
    return ast.unparse(gast.gast_to_ast(node))


class _Rewriter(gast.NodeTransformer):
    def __init__(self, fn: gast.FunctionDef, source: FunctionSource, transformation: str) -> None:
        self.fn = fn
        self.source = source
        self.transformation = transformation
        self.resolver = Resolver(source, local_names(fn))
        self.folder = Folder(source, self.resolver)
        self.pullbacks: dict[str, _Pullback] = {}
        self.stores: dict[str, int] = {}
        self.updated: set[str] = set()  # names updated in place (x[i] = v, x.a = v)
        for node in walk(fn):
            if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
                self.stores[node.id] = self.stores.get(node.id, 0) + 1
            if isinstance(node, (gast.Subscript, gast.Attribute)) and isinstance(
                node.ctx, (gast.Store, gast.Del)
            ):
                base = node.value
                while isinstance(base, (gast.Subscript, gast.Attribute)):
                    base = base.value
                if isinstance(base, gast.Name):
                    self.updated.add(base.id)
        self.params = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        self.line = fn.lineno

    # -- errors --------------------------------------------------------------------

    def refuse(self, node: gast.AST, construct: str, advice: str) -> TransformError:
        return unsupported(
            self.source,
            self.transformation,
            getattr(node, "lineno", None) or self.line,
            construct,
            advice,
        )

    # -- statements: y, back = nx.vjp(F, x) -----------------------------------------

    def block(self, body: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for stmt in body:
            kind = self._kind(stmt.value) if isinstance(stmt, gast.Assign) else None
            if kind in ("vjp", "linearize"):
                out.extend(self._bind_pullback(stmt, kind))
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                    setattr(stmt, field, self.block(inner))
            out.append(stmt)
        return out

    def _kind(self, node: gast.AST) -> str | None:
        if not isinstance(node, gast.Call):
            return None
        callee = self.resolver.resolve(node.func)
        if callee is LOCAL or callee is UNRESOLVED:
            return None
        for kind, call in _calls.items():
            if callee is call:
                return kind
        return None

    def _bind_pullback(self, stmt: gast.Assign, kind: str) -> list[gast.stmt]:
        call = stmt.value
        construct = f"nx.{kind}"
        what = "f_jvp" if kind == "linearize" else "back"
        form = f"`y, {what} = nx.{kind}(f, x)`"
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if not (
            isinstance(target, (gast.Tuple, gast.List))
            and len(target.elts) == 2
            and all(isinstance(e, gast.Name) for e in target.elts)
        ):
            raise self.refuse(
                stmt,
                f"{construct} whose result is not unpacked into two names",
                f"inside a transformed function write {form} and call `{what}` later in the "
                "same function",
            )
        self._no_options(call, construct, allowed=())
        if not call.args or any(isinstance(a, gast.Starred) for a in call.args):
            raise self.refuse(
                stmt,
                f"{construct} with unpacked arguments",
                f"pass the function and each primal explicitly: {form}",
            )
        out_name, pullback = (e.id for e in target.elts)
        if self.stores.get(pullback, 0) != 1 or pullback in self.params:
            raise self.refuse(
                stmt,
                f"`{pullback}` assigned more than once",
                f"give the function {construct} returns a name of its own, assigned only by {form}",
            )
        fun, primals = call.args[0], list(call.args[1:])
        callee = self._function(fun, construct)
        mode = "jvp" if kind == "linearize" else "vjp"
        derivative, defaults = self._derivative(stmt, callee, fun, mode, len(primals))
        statements: list[gast.stmt] = []
        kept: list[gast.expr] = []
        for primal in primals:
            kept.append(self._frozen(stmt, primal, pullback, construct, statements))
        value = gast.Call(self._callee_expression(fun), [_copy(p) for p in kept], [])
        statements.append(gast.Assign([gast.Name(out_name, gast.Store(), None, None)], value, None))
        for s in statements:
            gast.copy_location(s, stmt)
        self.pullbacks[pullback] = _Pullback(mode, derivative, kept, defaults, construct)
        return statements

    def _frozen(
        self,
        stmt: gast.stmt,
        primal: gast.expr,
        pullback: str,
        construct: str,
        statements: list[gast.stmt],
    ) -> gast.expr:
        """The primal as the pullback reads it later: a constant, a name nothing
        reassigns, or a copy of the name made here."""
        if isinstance(primal, gast.Constant):
            return primal
        if not isinstance(primal, gast.Name):
            raise self.refuse(
                stmt,
                f"{construct} of the expression `{_text(primal)}`",
                f"assign it to a name first (`p = {_text(primal)}`) and pass the name",
            )
        name = primal.id
        if name in self.updated:
            raise self.refuse(
                stmt,
                f"{construct} at `{name}`, which the function updates in place",
                f"the linearization point must keep its value: pass a copy "
                f"(`{name}_0 = {name}.copy()`) that nothing updates",
            )
        if name not in self.resolver.locals or (
            name in self.params and self.stores.get(name, 0) == 0
        ):
            return primal
        frozen = f"_{name.lstrip('_')}_at_{pullback.lstrip('_')}"
        statements.append(
            gast.Assign(
                [gast.Name(frozen, gast.Store(), None, None)],
                gast.Name(name, gast.Load(), None, None),
                None,
            )
        )
        return gast.Name(frozen, gast.Load(), None, None)

    # -- expressions ------------------------------------------------------------------

    def visit_Call(self, node: gast.Call) -> gast.AST:
        kind = self._kind(node)
        if kind == "jvp":
            return self.generic_visit(self._jvp(node))
        if kind in ("vjp", "linearize"):
            what = "f_jvp" if kind == "linearize" else "back"
            raise self.refuse(
                node,
                f"nx.{kind} used inside an expression",
                f"write `y, {what} = nx.{kind}(f, x)` as a statement of its own and call "
                f"`{what}(...)` later in the same function",
            )
        if isinstance(node.func, gast.Name) and node.func.id in self.pullbacks:
            return self._call_pullback(node, self.pullbacks[node.func.id])
        return self.generic_visit(node)

    def visit_Name(self, node: gast.Name) -> gast.AST:
        if isinstance(node.ctx, gast.Load) and node.id in self.pullbacks:
            pullback = self.pullbacks[node.id]
            raise self.refuse(
                node,
                f"the function `{node.id}` that {pullback.construct} returned, used other "
                "than by a call",
                f"numbax rewrites each call `{node.id}(...)` into a call of the generated "
                "derivative, so it can only be called in the function that made it: "
                f"return or pass along its results (`{node.id}(ct)`), or call "
                f"{pullback.construct} where they are needed",
            )
        return node

    def _jvp(self, node: gast.Call) -> gast.expr:
        form = "`nx.jvp(f, (x, y), (tx, ty))`"
        self._no_options(node, "nx.jvp", allowed=())
        if len(node.args) != 3 or any(isinstance(a, gast.Starred) for a in node.args):
            raise self.refuse(node, "nx.jvp without three positional arguments", f"write {form}")
        fun, primals, tangents = node.args
        for what, display in (("primals", primals), ("tangents", tangents)):
            if not isinstance(display, (gast.Tuple, gast.List)) or any(
                isinstance(e, gast.Starred) for e in display.elts
            ):
                raise self.refuse(
                    node,
                    f"nx.jvp whose {what} are not written as a tuple (`{_text(display)}`)",
                    f"write them as a tuple display, {form}, so that numbax sees each argument",
                )
        if len(primals.elts) != len(tangents.elts):
            raise self.refuse(
                node,
                f"nx.jvp with {len(primals.elts)} primals and {len(tangents.elts)} tangents",
                "give one tangent per primal",
            )
        callee = self._function(fun, "nx.jvp")
        derivative, defaults = self._derivative(node, callee, fun, "jvp", len(primals.elts))
        call = gast.Call(
            gast.Name(derivative, gast.Load(), None, None),
            [*primals.elts, *defaults, *tangents.elts],
            [],
        )
        return gast.copy_location(call, node)

    def _call_pullback(self, node: gast.Call, pullback: _Pullback) -> gast.expr:
        arguments = [self.visit(a) for a in node.args]
        wanted = len(pullback.primals) if pullback.mode == "jvp" else 1
        if (
            node.keywords
            or len(arguments) != wanted
            or any(isinstance(a, gast.Starred) for a in arguments)
        ):
            given = "a tangent per primal" if pullback.mode == "jvp" else "one cotangent"
            raise self.refuse(
                node,
                f"a call of `{_text(node.func)}` with {len(arguments)} argument(s)",
                f"the function {pullback.construct} returned takes {given}, positionally",
            )
        call = gast.Call(
            gast.Name(pullback.function, gast.Load(), None, None),
            [*(_copy(p) for p in pullback.primals), *pullback.defaults, *arguments],
            [],
        )
        if pullback.mode == "jvp":  # f_jvp(t): the JVP's tangent output
            call = gast.Subscript(call, gast.Constant(1, None), gast.Load())
        return gast.copy_location(call, node)

    # -- the differentiated function --------------------------------------------------

    def _no_options(self, node: gast.Call, construct: str, allowed: tuple[str, ...]) -> None:
        for keyword in node.keywords:
            if keyword.arg in allowed:
                continue
            is_false = isinstance(keyword.value, gast.Constant) and keyword.value.value is False
            if keyword.arg == "has_aux" and is_false:
                continue
            name = f"{keyword.arg}=" if keyword.arg else "**"
            if keyword.arg in ("fun", "primals", "tangents"):
                raise self.refuse(
                    node,
                    f"{construct} with {name}{_text(keyword.value)} given by keyword",
                    f"pass the function and its arguments to {construct} by position",
                )
            raise self.refuse(
                node,
                f"{construct} with {name}{_text(keyword.value)} inside a transformed function",
                f"call {construct} without it there (return the auxiliary value from a "
                f"separate call of the function), or call {construct} outside the "
                "transformed function",
            )

    def _function(self, fun: gast.expr, construct: str) -> Any:
        """The object ``fun`` denotes, when it is known before the function runs."""
        if isinstance(fun, gast.Call):
            name = self.folder.fold(fun)
            value = self.source.closure.get(name) if name is not None else None
            if value is not None:
                fun.folded = name  # type: ignore[attr-defined]
                return value
        elif isinstance(fun, (gast.Name, gast.Attribute)):
            value = self.resolver.resolve(fun)
            if value is not LOCAL and value is not UNRESOLVED:
                return value
        raise self.refuse(
            fun,
            f"{construct} of `{_text(fun)}`, a function made while the function runs",
            f"numbax generates the derivative before the function runs, so {construct} "
            "must be given a function defined in the module (or a closure), or a "
            "transformation of one built from constants and globals, such as "
            "nx.grad(f); a parameter or a local cannot be differentiated there",
        )

    def _callee_expression(self, fun: gast.expr) -> gast.expr:
        folded = getattr(fun, "folded", None)
        if folded is not None:
            return gast.Name(folded, gast.Load(), None, None)
        return _copy(fun)

    def _derivative(
        self, node: gast.AST, callee: Any, fun: gast.expr, mode: str, n: int
    ) -> tuple[str, list[gast.expr]]:
        """The bound name of ``callee``'s ``mode`` derivative w.r.t. its first ``n``
        arguments, and the values its parameters after them default to."""
        construct = {"jvp": "nx.jvp", "vjp": "nx.vjp"}[mode]
        try:
            function, defaults = _derive[0](callee, mode, n)
        except TypeError as error:
            raise self.refuse(node, f"{construct} of `{_text(fun)}`", str(error)) from error
        hint = function.__name__.removeprefix(f"{mode}_")
        name = self.folder.bind(function, mode, hint)
        return name, [self._default(d, hint) for d in defaults]

    def _default(self, value: Any, hint: str) -> gast.expr:
        """A parameter's default, as a constant or a name bound in the closure (an array,
        a list a ``functools.partial`` binds), as a closure's value is read."""
        if type(value) in _CONSTANTS:  # a NumPy scalar (a float's subclass) is bound
            return gast.Constant(value, None)
        return gast.Name(self.folder.bind(value, "default", hint), gast.Load(), None, None)


def _copy(node: gast.expr) -> gast.expr:
    return clone(node)
