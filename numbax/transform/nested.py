"""Functions defined inside the function being transformed, lifted out of it.

JAX code defines its helpers where they are used::

    def simulate(x, v, k, dt):
        def energy(x):
            return 0.5 * k * np.sum(x ** 2)      # k: a variable of simulate
        force = nx.grad(energy)
        for _ in range(100):
            v = v - dt * force(x)
            x = x + dt * v
        return x

numbax transforms functions it can name, so each nested ``def``, and each ``lambda``, is
*lifted*: made a function of its own whose extra parameters are the variables of the
enclosing function it reads (``energy(x, k)``), and every call passes their values of
the moment (``energy(x, k=k)``), which is what Python's closure would read when the call
runs. The lifted function is then an ordinary user function: the transformations call,
differentiate and compile it as any helper defined at module level, and its lines are
the user's. A transformation of it built inside the function (``nx.grad(energy)``)
takes the same extra arguments at the end (``force(x, k)``); ``nx.vmap``'s ``in_axes``
gets ``None`` for each, so they are shared by the examples.

The enclosing function's tree loses the definitions, and its namespace (``closure``, as
for the transformations built inside it) gains the lifted functions under their names.
A lifted function reads the rest of its names (globals, the enclosing function's own
closure) through the enclosing function when it runs, as the nested one would.

Refused, with the function, file and line (:class:`~numbax.errors.TransformError`): a
nested function that reads the enclosing variables and is used other than called or
transformed (returned, stored, passed on: the values it captured would escape), one
whose defaults read them, a decorated one, and a name defined twice. A ``nonlocal``
statement is refused when the lifted function is read (``normalize/reject.py``).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import types
import weakref
from dataclasses import dataclass, field
from typing import Any

import gast

from numbax.errors import TransformError
from numbax.transform.nodes import clone
from numbax.transform.normalize.transformations import builds_transformation
from numbax.transform.resolve import Resolver
from numbax.transform.source import FunctionSource, LiveNamespace, function_from_tree
from numbax.transform.walk import walk

_FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)


@dataclass
class _Nested:
    """One function defined in the enclosing function's own scope."""

    name: str
    node: gast.FunctionDef  # a lambda is made a def returning its expression
    free: set[str]  # names it (or a function inside it) reads from enclosing scopes
    captured: list[str] = field(default_factory=list)  # the enclosing variables among them

    @property
    def arity(self) -> int:
        return len(self.node.args.posonlyargs) + len(self.node.args.args)


def lift_nested(
    fn: gast.FunctionDef, source: FunctionSource, transformation: str
) -> gast.FunctionDef:
    """``fn`` without the functions defined inside it, which are bound in
    ``source.closure`` as lifted functions; ``fn`` itself when it defines none."""
    if not any(isinstance(n, _FUNCTIONS) for s in fn.body for n in walk(s)):
        return fn
    return _Lifter(fn, source, transformation).lift()


class _Lifter:
    def __init__(self, fn: gast.FunctionDef, source: FunctionSource, transformation: str) -> None:
        self.fn = fn
        self.source = source
        self.transformation = transformation
        self.nested: dict[str, _Nested] = {}
        self.line = fn.lineno

    def refuse(self, line: int | None, construct: str, advice: str) -> TransformError:
        where = f" (line {line}: `{self.source.line(line)}`)" if line else ""
        return TransformError(
            f"{construct} is not supported{where}; {advice}",
            function=getattr(self.source.func, "__qualname__", self.source.name),
            transformation=self.transformation,
            filename=self.source.filename,
            lineno=line,
            construct=construct,
        )

    # -- finding the definitions ---------------------------------------------------
    def lift(self) -> gast.FunctionDef:
        self.fn.body = self._collect(self.fn.body)
        enclosing = _scope_locals(self.fn)
        for name in enclosing & set(self.nested):
            raise self.refuse(
                self.nested[name].node.lineno,
                f"the nested function {name!r} also assigned as a variable",
                "give the function and the variable different names",
            )
        for nested in self.nested.values():
            nested.captured = sorted(nested.free & enclosing)
        self._close_over_callees()
        rewriter = _CallRewriter(self)
        rewriter.scope(self.fn)
        for nested in self.nested.values():
            rewriter.scope(nested.node)
        functions = {name: self._made(nested) for name, nested in self.nested.items()}
        self.source.closure.update(functions)
        return self.fn

    def _collect(self, body: list[gast.stmt]) -> list[gast.stmt]:
        """``body`` without its definitions (recorded), lambdas named."""
        kept = []
        for stmt in body:
            self.line = getattr(stmt, "lineno", self.line)
            if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef)):
                self._define(stmt.name, stmt)
                continue
            if (
                isinstance(stmt, gast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], gast.Name)
                and isinstance(stmt.value, gast.Lambda)
            ):
                self._define(stmt.targets[0].id, _lambda_def(stmt.value, stmt.targets[0].id))
                continue
            for block in ("body", "orelse"):
                inner = getattr(stmt, block, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                    setattr(stmt, block, self._collect(inner) or [_pass(stmt)])
            kept.append(_LambdaNamer(self).visit(stmt))
        return kept

    def _define(self, name: str, node: gast.FunctionDef) -> None:
        if isinstance(node, gast.AsyncFunctionDef):
            raise self.refuse(node.lineno, "a nested async def", "define a plain def")
        if node.decorator_list:
            raise self.refuse(
                node.lineno,
                "a decorated nested function",
                "define it without the decorator and apply the transformation where it "
                "is used (force = nx.grad(energy)), or define it at module level",
            )
        rebinding = next((n for n in walk(node) if isinstance(n, gast.Nonlocal)), None)
        if rebinding is not None:
            raise self.refuse(
                rebinding.lineno,
                "a nonlocal statement (a nested function rebinding the enclosing "
                "function's variables)",
                "return the new value from the nested function and assign it in the enclosing one",
            )
        if name in self.nested:
            raise self.refuse(
                node.lineno,
                f"a second definition of the nested function {name!r}",
                "give each nested function its own name",
            )
        self.nested[name] = _Nested(name, node, _free_names(node))

    def name_lambda(self, node: gast.Lambda) -> gast.Name:
        base = name = "_lambda"
        count = 1
        taken = _scope_locals(self.fn) | set(self.nested)
        while name in taken:
            count += 1
            name = f"{base}_{count}"
        self._define(name, _lambda_def(node, name))
        return gast.Name(name, gast.Load(), None, None)

    def _close_over_callees(self) -> None:
        """A nested function calling another passes that one's captured values too."""
        changed = True
        while changed:
            changed = False
            for nested in self.nested.values():
                for other in nested.free & set(self.nested):
                    extra = set(self.nested[other].captured) - set(nested.captured)
                    if extra:
                        nested.captured = sorted(set(nested.captured) | extra)
                        changed = True

    # -- making the lifted functions -----------------------------------------------
    def _made(self, nested: _Nested) -> types.FunctionType:
        node = nested.node
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            read = {n.id for n in walk(default) if isinstance(n, gast.Name)}
            if read & _scope_locals(self.fn):
                raise self.refuse(
                    node.lineno,
                    "a default value that reads the enclosing function's variables",
                    "pass the value as an argument at each call",
                )
        lifted = clone(node)
        lifted.args.args += [gast.Name(c, gast.Param(), None, None) for c in nested.captured]
        if lifted.args.defaults:  # parameters after one with a default need one too
            lifted.args.defaults += [gast.Constant(None, None) for _ in nested.captured]
        key = (node.lineno, node.col_offset, nested.name, ast.dump(gast.gast_to_ast(lifted)))
        made = _made.setdefault(self.source.func, {})
        if key not in made:
            made[key] = self._function(lifted)
        return made[key]

    def _function(self, lifted: gast.FunctionDef) -> types.FunctionType:
        """A Python function of ``lifted``, reading its free names through the enclosing
        function."""
        outer = getattr(self.source.func, "__qualname__", self.source.name)
        return function_from_tree(
            lifted,
            self.source,
            LiveNamespace({"__builtins__": builtins}, self._read),
            f"{outer}.<locals>.{lifted.name}",
            tuple(self._value(d) for d in lifted.args.defaults),
            {
                a.id: self._value(d)
                for a, d in zip(lifted.args.kwonlyargs, lifted.args.kw_defaults, strict=True)
                if d is not None
            },
        )

    def _read(self, name: str) -> Any:
        """A free name of a lifted function: another lifted one, else what the
        enclosing function reads by that name."""
        if name in self.source.closure and _lifted_here(self.source.closure[name]):
            return self.source.closure[name]
        return self.source.live(name)

    def _value(self, node: gast.expr) -> Any:
        expression = ast.fix_missing_locations(
            ast.Expression(gast.gast_to_ast(gast.Expression(node)).body)
        )
        code = compile(expression, self.source.filename, "eval", dont_inherit=True)
        return eval(code, LiveNamespace({}, self.source.live))  # noqa: S307 - the user's own


_made: weakref.WeakKeyDictionary[Any, dict[tuple, types.FunctionType]] = weakref.WeakKeyDictionary()
"""Per enclosing function, its lifted functions: the same objects at every reading, so
that what is generated and compiled for them is found again."""


def _lifted_here(value: Any) -> bool:
    return isinstance(value, types.FunctionType) and ".<locals>." in value.__qualname__


class _LambdaNamer(gast.NodeTransformer):
    """Lifts the lambdas of one statement of the enclosing scope, naming each."""

    def __init__(self, lifter: _Lifter) -> None:
        self.lifter = lifter

    def visit_Lambda(self, node: gast.Lambda) -> gast.AST:
        return self.lifter.name_lambda(node)

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.AST:
        return node  # a def nested in a block: collected by its own statement


class _CallRewriter(gast.NodeTransformer):
    """Passes the captured values at each call of a lifted function (or of a
    transformation of one), and refuses any other use of one that captures."""

    def __init__(self, lifter: _Lifter) -> None:
        self.lifter = lifter
        self.nested = lifter.nested
        self.resolver = Resolver(lifter.source, _scope_locals(lifter.fn) - set(lifter.nested))
        self.shadowed: list[set[str]] = []  # the locals of the functions being visited
        self.functions: list[gast.AST] = []  # those functions
        self.aliases: list[dict[str, _Nested]] = []  # force = nx.grad(energy), per function

    def scope(self, fn: gast.FunctionDef) -> None:
        """Rewrite the body of ``fn``: the enclosing function or a lifted one."""
        self._function_scope(fn, shadows=fn is not self.lifter.fn)

    def _capturing(self, name: str) -> _Nested | None:
        for aliases, shadowed in zip(reversed(self.aliases), reversed(self.shadowed), strict=True):
            if name in aliases:
                return aliases[name]
            if name in shadowed:
                return None
        nested = self.nested.get(name)
        return nested if nested is not None and nested.captured else None

    def _function_scope(self, node: gast.AST, shadows: bool = True) -> gast.AST:
        self.shadowed.append(_scope_locals(node) if shadows else set())
        self.functions.append(node)
        self.aliases.append({})
        try:
            return self.generic_visit(node)
        finally:
            self.shadowed.pop()
            self.functions.pop()
            self.aliases.pop()

    visit_FunctionDef = _function_scope
    visit_Lambda = _function_scope

    def visit_Assign(self, node: gast.Assign) -> gast.AST:
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, gast.Name):
            built = self._transformation_of(node.value)
            if built is not None:
                if _store_count(self.functions[-1], target.id) != 1:
                    raise self.lifter.refuse(
                        node.lineno,
                        f"rebinding {target.id!r}, a transformation of a nested function "
                        "that reads the enclosing function's variables",
                        "assign it once",
                    )
                self.aliases[-1][target.id] = built
        return self.generic_visit(node)

    def visit_Call(self, node: gast.Call) -> gast.AST:
        func = node.func
        if isinstance(func, gast.Name) and func.id in self.nested and self._capturing(func.id):
            nested = self.nested[func.id]
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            node.keywords += [gast.keyword(c, _load(c)) for c in nested.captured]
            return node
        called = self._transformation_of(func) or (
            self._capturing(func.id) if isinstance(func, gast.Name) else None
        )
        if called is not None:
            self._check_positional(node, called)
            node.func = self.visit(func) if isinstance(func, gast.Call) else func
            node.args = [self.visit(a) for a in node.args] + [_load(c) for c in called.captured]
            return node
        built = self._transformation_of(node)
        if built is not None:  # nx.grad(energy): energy is transformed, not escaping
            self._share_captured(node, built)
            node.args[1:] = [self.visit(a) for a in node.args[1:]]
            node.keywords = [self.visit(k) for k in node.keywords]
            if isinstance(node.args[0], gast.Call):
                node.args[0] = self.visit(node.args[0])
            return node
        return self.generic_visit(node)

    def visit_Name(self, node: gast.Name) -> gast.AST:
        if isinstance(node.ctx, gast.Load) and self._capturing(node.id):
            nested = self._capturing(node.id)
            raise self.lifter.refuse(
                getattr(node, "lineno", None) or self.lifter.line,
                f"using the nested function {node.id!r} as a value (returned, stored or "
                f"passed on) while it reads the enclosing function's "
                f"{_listed(nested.captured)}",
                "call it, or transform it in place (nx.grad(...), nx.vmap(...)), or pass "
                f"{_listed(nested.captured, 'it as an argument', 'them as arguments')}",
            )
        return node

    def _transformation_of(self, node: gast.expr) -> _Nested | None:
        """The capturing nested function ``node`` transforms (``nx.grad(energy)``,
        ``nx.vmap(nx.grad(energy))``), if any."""
        if not isinstance(node, gast.Call) or not node.args:
            return None
        if not builds_transformation(self.resolver.resolve(node.func)):
            return None
        first = node.args[0]
        if isinstance(first, gast.Name):
            return self._capturing(first.id)
        return self._transformation_of(first)

    def _check_positional(self, node: gast.Call, nested: _Nested) -> None:
        if node.keywords or any(isinstance(a, gast.Starred) for a in node.args):
            advice = "pass every argument by position"
        elif len(node.args) != nested.arity:
            advice = f"pass all {nested.arity} of its arguments"
        else:
            return
        raise self.lifter.refuse(
            getattr(node, "lineno", None) or self.lifter.line,
            f"this call of a transformation of the nested function {nested.name!r}, which "
            f"reads the enclosing function's {_listed(nested.captured)}",
            f"{advice}: numbax passes {_listed(nested.captured, 'that value', 'those values')}"
            " after them",
        )

    def _share_captured(self, node: gast.Call, nested: _Nested) -> None:
        """``nx.vmap(energy, in_axes)``: the captured values are shared (``None``)."""
        constructor = self.resolver.resolve(node.func)
        try:
            params = list(inspect.signature(constructor).parameters.values())
        except (TypeError, ValueError):
            return
        names = [p.name for p in params]
        if "in_axes" not in names:
            return
        position = names.index("in_axes")
        keyword = next((k for k in node.keywords if k.arg == "in_axes"), None)
        if keyword is not None:
            given = keyword.value
        elif len(node.args) > position:
            given = node.args[position]
        else:
            given = gast.Constant(params[position].default, None)
        shared = [gast.Constant(None, None) for _ in nested.captured]
        if isinstance(given, (gast.Tuple, gast.List)) and len(given.elts) == nested.arity:
            axes = gast.Tuple(list(given.elts) + shared, gast.Load())
        elif isinstance(given, gast.Constant) and isinstance(given.value, (int, type(None))):
            axes = gast.Tuple([clone(given) for _ in range(nested.arity)] + shared, gast.Load())
        else:
            raise self.lifter.refuse(
                getattr(node, "lineno", None) or self.lifter.line,
                f"in_axes written other than as a literal for the nested function "
                f"{nested.name!r}, which reads the enclosing function's "
                f"{_listed(nested.captured)}",
                f"write in_axes as a number or a tuple of {nested.arity} entries in the call",
            )
        if keyword is not None:
            keyword.value = axes
        elif len(node.args) > position:
            node.args[position] = axes
        else:
            node.keywords.append(gast.keyword("in_axes", axes))


def _listed(names: list[str], one: str = "", many: str = "") -> str:
    if one:
        return one if len(names) == 1 else many
    quoted = ", ".join(repr(n) for n in names)
    return f"variable {quoted}" if len(names) == 1 else f"variables {quoted}"


def _load(name: str) -> gast.Name:
    return gast.Name(name, gast.Load(), None, None)


def _pass(stmt: gast.stmt) -> gast.Pass:
    return gast.copy_location(gast.Pass(), stmt)


def _lambda_def(node: gast.Lambda, name: str) -> gast.FunctionDef:
    body = gast.copy_location(gast.Return(node.body), node.body)
    fn = gast.FunctionDef(name, node.args, [body], [], None, None, [])
    return gast.copy_location(fn, node)


def _params(args: gast.arguments) -> set[str]:
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.id for a in names if a is not None}


def _own_nodes(node: gast.AST, functions: list | None = None):
    """The nodes of ``node``'s own scope: not those inside the functions it defines
    (their defaults and decorators are evaluated in this scope, so they are included),
    which are appended to ``functions``."""
    for child in gast.iter_child_nodes(node):
        if isinstance(child, _FUNCTIONS):
            if functions is not None:
                functions.append(child)
            yield from walk(child.args)  # defaults (parameter names are Param)
            for decorator in getattr(child, "decorator_list", []):
                yield from walk(decorator)
            if isinstance(child, gast.FunctionDef):
                yield gast.Name(child.name, gast.Store(), None, None)
            continue
        yield child
        yield from _own_nodes(child, functions)


def _scope_locals(fn: gast.AST) -> set[str]:
    """The names ``fn`` binds in its own scope: parameters and assigned names."""
    names = _params(fn.args) if isinstance(fn, _FUNCTIONS) else set()
    for node in _own_nodes(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            names.add(node.id)
    return names


def _free_names(fn: gast.AST) -> set[str]:
    """The names ``fn`` reads from enclosing scopes, functions defined in it included."""
    inner: list[gast.AST] = []
    read = {
        node.id
        for node in _own_nodes(fn, inner)
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load)
    }
    for function in inner:
        read |= _free_names(function)
    return read - _scope_locals(fn)


def _store_count(fn: gast.FunctionDef, name: str) -> int:
    return sum(
        1
        for n in walk(fn)
        if isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store)
    )
