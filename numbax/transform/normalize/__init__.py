"""Lower a user function to numbax's *core language*, which every later pass consumes.

Forward and reverse mode, batching, Numba lowering and the emitter each handle a few
statement shapes instead of all of Python. :func:`normalize` produces them, computing
exactly what the original computes, and :func:`check_core` (``check.py``) asserts
them. Each of the package's other modules is one of its passes.

Core language
=============

::

    function := def NAME(<the user's signature, defaults included>):
                    stmt*
                    return atom                  # the only return, always last

    atom     := Name | Constant                  # numbers (negative literals folded:
                                                 # -3, -1.5), True/False/None, str, ...
    index    := atom | slice | Tuple((atom | slice)*)
    slice    := Slice(atom?, atom?, atom?)
    callee   := Name
              | global_chain                     # np.linalg.norm, math.sqrt (whole)
              | Name(local).method               # x.sum, out.append
    call     := callee(atom*, name=atom*)
    global_chain := Name(non-local) (.attr)+     # rooted at a global/closure name

    value    := atom
              | atom binop atom | unaryop atom
              | atom cmpop atom                  # one operator: <, ==, is, in, ...
              | call
              | Name(local).attr                 # x.T, x.shape
              | global_chain                     # np.pi, np.newaxis, cfg.eps
              | Name[index]
              | (atom, ...) | [atom, ...] | {atom: atom, ...}

    stmt     := Name = value
              | Name, Name, ... = Name           # unpacking (nested targets flattened)
              | Name[index] = atom               # in-place store
              | call                             # kept for its effect: print(x)
              | raise call | raise Name
              | if Name: stmt+ [else: stmt+]
              | for Name in range(atom[, atom[, atom]]): stmt+
              | while Name: stmt+                # a computed test is recomputed at the
                                                 # end of the body and before each continue
              | break | continue
              | pass                             # only as a block's only statement

Every statement carries ``lineno`` (and ``end_lineno``): the line, in the user's file,
of the statement it was lowered from; compound statements keep their header's line.

Lowerings
=========

* One operation per assignment; nested expressions become temporaries in Python's
  evaluation order, named after what they hold (``_exp``, ``_sum``, ``_add``, ``_neg``,
  ``_gt``, ``_x_at`` for ``x[...]``, ``_x_shape`` for ``x.shape``; see ``names.py``).
  When a statement's outermost operation assigns to a user variable it assigns
  directly: ``y = np.exp(x) + 1`` is ``_exp = np.exp(x)``, ``y = _exp + 1``.
* ``x op= v`` is ``x = x op v``. This is *functional*: ``a += 1`` on an array (or a
  list) rebinds ``a`` instead of mutating the object, so a caller's array is not
  changed (and NumPy's in-place casting errors, such as adding a float to an int array
  in place, do not occur); other names of the function for the same array (``c = a``,
  a view ``b = a[:2]``) follow it as in NumPy (normalize/aliases.py). ``a[i] op= v`` is
  ``_a_at = a[i]; _add = _a_at op v; a[i] = _add``, the index computed once, and does
  mutate ``a`` exactly as Python does.
* ``and``/``or``, conditional expressions and chained comparisons become ``if``
  statements that evaluate only what Python evaluates, with Python's value semantics
  (``a or b`` is ``a`` when ``a`` is truthy); the middle operand of ``a < b < c`` is
  evaluated once. ``x := v`` is an assignment. Comprehensions (list and dict) become
  loops that append/store into a fresh container; their loop variables stay private
  (renamed when they would clash with a name of the function).
* Transformations built inside the function from known arguments are built once
  beforehand (normalize/transformations.py), and ``nx.jvp``/``nx.linearize``/``nx.vjp``
  called there become calls of the generated derivative (normalize/jvp_vjp.py).
* Functions defined inside the function are lifted out of it first (nested.py),
  methods of objects it reads from its globals bound to them (methods.py), and starred
  arguments whose length the source says spelled out (normalize/starred.py).
* A write through a name that shares memory with another (``b = a[:2]; b[0] = v``),
  or into an array that another name views, is made explicit on the names it changes
  (``a[:2] = b``, ``b = a[:2]`` again), or refused: normalize/aliases.py.
* ``assert c, msg`` is ``_not = not c; if _not: raise AssertionError(msg)``.
* Loops: see normalize/loops.py (every ``for`` becomes a ``range`` loop) and, for
  ``for/while ... else`` and early returns, normalize/exits.py.
* ``if``/``while`` on a literal test are decided now (``while True:`` loops on
  ``_forever = True``). Docstrings, ``pass``, expression statements without effect and
  statements that can never run are dropped. ``x: T = v`` is ``x = v``.
* Lowered code calls ``range``, ``len``, ``min`` and ``AssertionError`` by name, so a
  local variable with one of those names is renamed (``_range``); a parameter or global
  that hides one of them, where it is needed, is refused.

Where this differs from Python, on purpose: besides the functional ``op=`` above, a
``for`` loop reads its sequence's length once (a body that grows the list it walks
sees only the old items), and iterating needs ``len`` and indexing (arrays, lists,
tuples, ranges; not dicts, sets or iterators). ``obj.method(args)`` looks the method up
after evaluating ``args``, and ``x op= v`` reads ``x`` after ``v``: different only
when ``args``/``v`` rebind ``obj``/``x`` with ``:=``.

Rejected constructs (normalize/reject.py) raise :class:`~numbax.errors.TransformError`
before anything is rewritten; the few refusals that depend on context (a loop over
``d.items()``, a hidden builtin, ``for a, b in zip(x, y, z)``) are raised while
lowering, with the same message shape.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import gast

from numbax.errors import TransformError
from numbax.transform.analysis.dataflow import names as mentioned
from numbax.transform.methods import bind_methods
from numbax.transform.names import Namer
from numbax.transform.nested import lift_nested
from numbax.transform.nodes import (
    assign,
    at,
    block_never_completes,
    call,
    clone,
    const,
    if_,
    is_atom,
    load,
    store,
)
from numbax.transform.normalize.aliases import IN_PLACE, write_through_aliases
from numbax.transform.normalize.calls import (
    keyword_only_function,
    positional_arguments,
    positional_view,
)
from numbax.transform.normalize.check import CoreGrammarError, check_core
from numbax.transform.normalize.exits import lower_loop_else, prune, single_exit
from numbax.transform.normalize.jvp_vjp import fold_derivative_calls
from numbax.transform.normalize.loops import LoopLowering
from numbax.transform.normalize.ravel import rewrite_ravels
from numbax.transform.normalize.reject import reject_matrices, reject_unsupported, unsupported
from numbax.transform.normalize.starred import expand_starred_arguments
from numbax.transform.normalize.transformations import fold_transformations
from numbax.transform.normalize.values import rewrite_values
from numbax.transform.operations import is_transformable_function
from numbax.transform.provenance import annotate
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource, bind_in_closure
from numbax.transform.walk import walk

__all__ = ["normalize", "check_core", "CoreGrammarError"]

T = TypeVar("T")

_EMITTED_BUILTINS = ("range", "len", "min", "AssertionError")
"""Builtins that lowered code calls by name, so no local may shadow them."""

_OP_NAMES: dict[type, str] = {
    gast.Add: "add",
    gast.Sub: "sub",
    gast.Mult: "mul",
    gast.Div: "div",
    gast.FloorDiv: "floordiv",
    gast.Mod: "mod",
    gast.Pow: "pow",
    gast.MatMult: "matmul",
    gast.LShift: "lshift",
    gast.RShift: "rshift",
    gast.BitAnd: "bitand",
    gast.BitOr: "bitor",
    gast.BitXor: "bitxor",
    gast.USub: "neg",
    gast.UAdd: "pos",
    gast.Not: "not",
    gast.Invert: "invert",
    gast.Eq: "eq",
    gast.NotEq: "ne",
    gast.Lt: "lt",
    gast.LtE: "le",
    gast.Gt: "gt",
    gast.GtE: "ge",
    gast.Is: "is",
    gast.IsNot: "is_not",
    gast.In: "in",
    gast.NotIn: "not_in",
    gast.And: "and",
    gast.Or: "or",
}


def normalize(source: FunctionSource, transformation: str = "jit") -> gast.FunctionDef:
    """A new tree for ``source``'s function in the core language (``source`` is untouched,
    but for the transformations built inside the function: see normalize/transformations.py).

    ``transformation`` names the transformation being applied, for error messages.
    """
    fn = lift_nested(clone(source.tree), source, transformation)
    bind_methods(fn, source, transformation)
    expand_starred_arguments(fn, Resolver(source, local_names(fn)))
    reject_unsupported(source, transformation, fn)
    reject_matrices(source, transformation, fn, Resolver(source, local_names(fn)))
    fn = fold_transformations(fn, source)
    fn = fold_derivative_calls(fn, source, transformation)
    fn = rewrite_ravels(fn, source, transformation)
    fn = rewrite_values(fn, source, transformation)
    namer = Namer.for_function(fn)
    body = prune(_without_docstring(fn.body))
    body = lower_loop_else(body, namer)
    body = single_exit(body, namer, fn.lineno)
    fn.body = _Flattener(source, transformation, namer, fn).block(body)
    write_through_aliases(fn, source, transformation)
    annotate(fn, source.filename)
    return fn


def _without_docstring(body: list[gast.stmt]) -> list[gast.stmt]:
    first = body[0] if body else None
    if isinstance(first, gast.Expr) and isinstance(first.value, gast.Constant):
        if isinstance(first.value.value, str):
            return body[1:]
    return body


class _Scopes:
    """Which names the function binds, and which names comprehensions may keep private."""

    def __init__(self, fn: gast.FunctionDef) -> None:
        args = fn.args
        self.params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
        self.locals = set(self.params)  # bound in the function's own scope
        self.free = set(self.params)  # used outside the comprehensions that bind them
        for stmt in fn.body:
            self._visit(stmt, frozenset())

    def _visit(self, node: gast.AST, bound: frozenset[str]) -> None:
        if isinstance(node, (gast.ListComp, gast.DictComp, gast.SetComp, gast.GeneratorExp)):
            self._comprehension(node, bound)
            return
        if isinstance(node, gast.Name) and node.id not in bound:
            self.free.add(node.id)
            if isinstance(node.ctx, (gast.Store, gast.Del)):
                self.locals.add(node.id)
        for child in gast.iter_child_nodes(node):
            self._visit(child, bound)

    def _comprehension(self, node: gast.AST, bound: frozenset[str]) -> None:
        inner = bound
        for i, gen in enumerate(node.generators):
            self._visit(gen.iter, bound if i == 0 else inner)  # the first runs outside
            inner = inner | mentioned(gen.target)
            for condition in gen.ifs:
                self._visit(condition, inner)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self._visit(getattr(node, part), inner)


class _Flattener(LoopLowering):
    """Emits core statements for user statements, one user statement at a time."""

    def __init__(
        self, source: FunctionSource, transformation: str, namer: Namer, fn: gast.FunctionDef
    ) -> None:
        self.source = source
        self.transformation = transformation
        self.namer = namer
        scopes = _Scopes(fn)
        self.params = scopes.params
        self.locals = scopes.locals
        self.free = scopes.free
        self.resolver = Resolver(source, self.locals)
        # Locals that shadow a builtin the lowered code calls are renamed (_range).
        self.renames = {
            name: namer.fresh(name)
            for name in _EMITTED_BUILTINS
            if name in self.locals and name not in self.params
        }
        self.comprehension_scopes: list[dict[str, str]] = []
        self.out: list[gast.stmt] = []
        self.line = fn.lineno

    # -- plumbing ------------------------------------------------------------------
    def emit(self, stmt: gast.stmt) -> None:
        self.out.append(at(stmt, self.line))

    def block(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        """The core statements for the user statements ``stmts``."""
        saved_out, saved_line = self.out, self.line
        self.out = []
        try:
            for stmt in stmts:
                self.line = stmt.lineno
                self._statement(stmt)
            return self.out
        finally:
            self.out, self.line = saved_out, saved_line

    def block_of(self, emit_statements: Callable[[], object]) -> list[gast.stmt]:
        """The statements that ``emit_statements()`` emits, captured as a block."""
        return self.capture(emit_statements)[0]

    def capture(self, compute: Callable[[], T]) -> tuple[list[gast.stmt], T]:
        """What ``compute()`` returns, and the statements it emits, captured apart."""
        saved = self.out
        self.out = []
        try:
            result = compute()
            return self.out, result
        finally:
            self.out = saved

    def nonempty(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        """``stmts``, or ``[pass]`` where a loop body would otherwise be empty."""
        return stmts or [at(gast.Pass(), self.line)]

    def unsupported(self, construct: str, advice: str) -> TransformError:
        return unsupported(self.source, self.transformation, self.line, construct, advice)

    def computed(self, hint: str, value: gast.expr) -> gast.Name:
        """Emit ``_hint = value`` and return the new name."""
        name = self.namer.fresh(hint)
        self.emit(assign(name, value))
        return load(name)

    # -- names ---------------------------------------------------------------------
    def rename(self, name: str) -> str:
        for scope in reversed(self.comprehension_scopes):
            if name in scope:
                return scope[name]
        return self.renames.get(name, name)

    def is_local(self, name: str) -> bool:
        return name in self.locals or any(name in s for s in self.comprehension_scopes)

    def is_global_chain(self, node: gast.expr) -> bool:
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and not self.is_local(node.id)

    def resolves_to(self, node: gast.expr, obj: object) -> bool:
        """True when ``node`` denotes ``obj`` itself (identity, not spelling)."""
        return self.is_global_chain(node) and self.resolver.resolve(node) is obj

    def builtin(self, name: str) -> str:
        """``name``, after checking that it means the builtin where the code runs."""
        if name in self.params:
            raise self.unsupported(
                f"a parameter named {name!r}",
                f"numbax lowers this statement with the builtin {name}(), which the "
                "parameter hides: rename the parameter",
            )
        source = self.source
        found = source.closure.get(name, source.globals.get(name, getattr(builtins, name)))
        if found is not getattr(builtins, name):
            raise self.unsupported(
                f"a global or enclosing name {name!r} that is not the builtin",
                f"numbax lowers this statement with the builtin {name}(): rename yours",
            )
        return name

    def bind_comprehension_names(self, target: gast.expr) -> None:
        """Register a comprehension's loop variables, renaming any that would clash."""
        scope = self.comprehension_scopes[-1]
        enclosing = self.comprehension_scopes[:-1]
        for name in sorted(mentioned(target)):
            if name in scope:
                continue
            clash = (
                name in self.free or name in _EMITTED_BUILTINS or any(name in s for s in enclosing)
            )
            scope[name] = self.namer.fresh(name) if clash else name

    def hint(self, node: gast.expr) -> str:
        """What a temporary holding ``node``'s value is called."""
        if isinstance(node, (gast.BinOp, gast.UnaryOp, gast.BoolOp)):
            return _OP_NAMES[type(node.op)]
        if isinstance(node, gast.Compare):
            return _OP_NAMES[type(node.ops[0])]
        if isinstance(node, gast.Call):
            func = node.func
            if isinstance(func, gast.Name):
                return func.id
            return func.attr if isinstance(func, gast.Attribute) else "call"
        if isinstance(node, gast.Attribute):
            return f"{self._base(node.value)}_{node.attr}"
        if isinstance(node, gast.Subscript):
            return f"{self._base(node.value)}_at"
        if isinstance(node, (gast.List, gast.ListComp)):
            return "list"
        if isinstance(node, (gast.Dict, gast.DictComp)):
            return "dict"
        if isinstance(node, gast.Constant):
            return type(node.value).__name__
        return {gast.Tuple: "tuple", gast.IfExp: "ifexp"}.get(type(node), "value")

    def _base(self, node: gast.expr) -> str:
        """What the hint of ``node[...]`` and ``node.attr`` starts with."""
        if isinstance(node, gast.Name):
            return node.id.strip("_") or "value"
        return self.hint(node).strip("_")

    # -- expressions ---------------------------------------------------------------
    def atom(self, node: gast.expr) -> gast.expr:
        """A Name or Constant holding ``node``'s value, emitting what computes it."""
        if isinstance(node, gast.Name):
            return load(self.rename(node.id))
        if isinstance(node, gast.Constant):
            return const(node.value)
        folded = _folded_negative(node)
        if folded is not None:
            return folded
        if isinstance(node, gast.NamedExpr):
            name = self.rename(node.target.id)
            self.assign_user(name, node.value)
            return load(name)
        if _is_multi_statement(node):
            name = self.namer.fresh(self.hint(node))
            self.into(name, node)
            return load(name)
        value = self.value(node)  # operands first, so temporaries number in order
        return self.computed(self.hint(node), value)

    def name_of(self, node: gast.expr) -> gast.Name:
        """Like :meth:`atom`, but always a Name (for subscripted or unpacked values)."""
        value = self.atom(node)
        if isinstance(value, gast.Name):
            return value
        return self.computed("neg" if _is_negative(value) else self.hint(value), value)

    def materialize(self, value: gast.expr) -> gast.expr:
        """An atom for an already-lowered value (atom or one operation on atoms)."""
        return value if is_atom(value) else self.computed(self.hint(value), value)

    def assign_user(self, name: str, node: gast.expr) -> None:
        """``name = node`` for a user variable, assigning the last operation directly.

        Lowerings that assign their target more than once (``and``, comprehensions...)
        go through a temporary when ``node`` reads the target's old value.
        """
        multi = _is_multi_statement(node)
        if multi and any(self.rename(n) == name for n in mentioned(node)):
            self.emit(assign(name, self.atom(node)))
        else:
            self.into(name, node)

    def into(self, name: str, node: gast.expr) -> None:
        """Emit statements that leave ``node``'s value in the variable ``name``."""
        if isinstance(node, gast.BoolOp):
            self._boolean(name, node.op, node.values)
        elif isinstance(node, gast.IfExp):
            self._conditional(name, node)
        elif isinstance(node, gast.Compare) and len(node.ops) > 1:
            self._chain(name, self.atom(node.left), node.ops, node.comparators)
        elif isinstance(node, gast.ListComp):
            self._comprehension(name, gast.List([], gast.Load()), node, self._append(name, node))
        elif isinstance(node, gast.DictComp):
            self._comprehension(name, gast.Dict([], []), node, self._store_item(name, node))
        else:
            self.emit(assign(name, self.value(node)))

    def value(self, node: gast.expr) -> gast.expr:
        """``node`` as one operation on atoms (its operands are emitted first)."""
        if is_atom(node) or _is_multi_statement(node) or isinstance(node, gast.NamedExpr):
            return self.atom(node)
        if isinstance(node, gast.UnaryOp):
            return _folded_negative(node) or gast.UnaryOp(node.op, self.atom(node.operand))
        if isinstance(node, gast.BinOp):
            left, right = self.atom(node.left), self.atom(node.right)
            if isinstance(node.op, gast.Pow) and _is_negative(left):
                left = self.computed("neg", left)  # `-3 ** 2` would unparse wrongly
            return gast.BinOp(left, node.op, right)
        if isinstance(node, gast.Compare):
            left = self.atom(node.left)
            return gast.Compare(left, node.ops, [self.atom(node.comparators[0])])
        if isinstance(node, gast.Call):
            return self.call(node)
        if isinstance(node, gast.Attribute):
            if self.is_global_chain(node):
                return _load_chain(node)
            return gast.Attribute(self.name_of(node.value), node.attr, gast.Load())
        if isinstance(node, gast.Subscript):
            base = self.name_of(node.value)
            return gast.Subscript(base, self.index(node.slice), gast.Load())
        if isinstance(node, (gast.Tuple, gast.List)):
            return type(node)([self.atom(e) for e in node.elts], gast.Load())
        if isinstance(node, gast.Dict):
            keys, values = [], []
            for key, item in zip(node.keys, node.values, strict=True):
                keys.append(self.atom(key))
                values.append(self.atom(item))
            return gast.Dict(keys, values)
        raise self.unsupported(f"the expression {type(node).__name__}", "rewrite it")

    def call(self, node: gast.Call) -> gast.Call:
        func = self.callee(node.func)
        args = [self.atom(a) for a in node.args]
        keywords = [gast.keyword(k.arg, self.atom(k.value)) for k in node.keywords]
        if self.is_global_chain(node.func) and not any(isinstance(a, gast.Starred) for a in args):
            target = self.resolver.resolve(node.func)
            if is_transformable_function(target):  # a helper: its derivative takes all
                positional = positional_arguments(target, args, keywords, self.bind_value)
                if positional is not None:
                    given = (len(args), tuple(k.arg for k in keywords))
                    return call(self.by_position(func, target, given), positional)
        return call(func, args, keywords)

    def bind_value(self, value: Any, hint: str) -> str:
        """A name the transformed code reads ``value`` by (a callee's default)."""
        return bind_in_closure(self.source, value, hint, self.locals)

    def by_position(self, func: gast.expr, target: Any, given: tuple[int, tuple]) -> gast.expr:
        """What a call binding every argument by position calls: ``func``, or, for a
        callee with keyword-only parameters, its positional view, named in the closure
        (``h_by_position``): a Python function's own (:func:`positional_view`), or what
        ``target.__numbax_by_position__(n_positional, keywords)`` gives for a call with
        these (``given``) arguments (``vmap`` maps the arguments passed by keyword); for a
        call leaving parameters to their defaults, what ``__numbax_omitted__`` gives
        (``vmap`` maps no default, though the call now passes it)."""
        function = keyword_only_function(target)
        parameters = inspect.signature(target).parameters.values()
        omitted = getattr(target, "__numbax_omitted__", None)
        if function is not None:
            view = positional_view(function, self.transformation)
        elif any(p.kind is p.KEYWORD_ONLY for p in parameters):
            view = target.__numbax_by_position__(*given)
        elif omitted is not None and given[0] + len(given[1]) < len(parameters):
            view = omitted(*given)  # vmap maps no default: the call's own axes
            if view is None:
                return func
        else:
            return func
        hint = view.__name__ if function is not None else getattr(target, "name", "callee")
        return load(bind_in_closure(self.source, view, f"{hint}_by_position", self.locals))

    def callee(self, func: gast.expr) -> gast.expr:
        if isinstance(func, gast.Name):
            return load(self.rename(func.id))
        if isinstance(func, gast.Attribute):
            if self.is_global_chain(func):
                return _load_chain(func)
            return gast.Attribute(self.name_of(func.value), func.attr, gast.Load())
        return self.name_of(func)

    def index(self, node: gast.expr) -> gast.expr:
        if isinstance(node, gast.Slice):
            parts = [
                None if p is None else self.atom(p) for p in (node.lower, node.upper, node.step)
            ]
            return gast.Slice(*parts)
        if isinstance(node, gast.Tuple):
            return gast.Tuple([self.index(e) for e in node.elts], gast.Load())
        return self.atom(node)

    def negate(self, name: str) -> str:
        """Emit ``_not = not name`` (``if`` tests are names) and return ``_not``."""
        return self.computed("not", gast.UnaryOp(gast.Not(), load(name))).id

    def _boolean(self, name: str, op: gast.boolop, values: list[gast.expr]) -> None:
        """``name = a and b``: ``name = a; if name: name = b`` (``or`` tests ``not name``)."""
        self.into(name, values[0])
        if len(values) == 1:
            return
        test = name if isinstance(op, gast.And) else self.negate(name)
        rest = self.block_of(lambda: self._boolean(name, op, values[1:]))
        self.emit(if_(test, rest))

    def _conditional(self, name: str, node: gast.IfExp) -> None:
        test = self.atom(node.test)
        if isinstance(test, gast.Constant):
            self.into(name, node.body if test.value else node.orelse)
            return
        body = self.block_of(lambda: self.into(name, node.body))
        orelse = self.block_of(lambda: self.into(name, node.orelse))
        self.emit(if_(test.id, body, orelse))

    def _chain(self, name: str, left: gast.expr, ops: list, comparators: list) -> None:
        """``a < b < c``: ``name = a < b; if name: name = b < c`` (``b`` evaluated once)."""
        right = self.atom(comparators[0])
        self.emit(assign(name, gast.Compare(left, [ops[0]], [right])))
        if len(ops) > 1:
            rest = self.block_of(lambda: self._chain(name, right, ops[1:], comparators[1:]))
            self.emit(if_(name, rest))

    def _append(self, name: str, node: gast.ListComp) -> Callable[[], None]:
        def append() -> None:
            item = self.atom(node.elt)
            method = gast.Attribute(load(name), "append", gast.Load())
            self.emit(gast.Expr(call(method, [item])))

        return append

    def _store_item(self, name: str, node: gast.DictComp) -> Callable[[], None]:
        def store_item() -> None:
            key = self.atom(node.key)
            item = self.atom(node.value)
            self.emit(assign(gast.Subscript(load(name), key, gast.Store()), item))

        return store_item

    def _comprehension(
        self, name: str, empty: gast.expr, node: gast.expr, innermost: Callable[[], None]
    ) -> None:
        self.emit(assign(name, empty))
        self.comprehension_scopes.append({})
        try:
            self._generators(node.generators, innermost)
        finally:
            self.comprehension_scopes.pop()

    def _generators(self, generators: list[gast.comprehension], innermost: Callable) -> None:
        first, rest = generators[0], generators[1:]
        inner = (lambda: self._generators(rest, innermost)) if rest else innermost
        body = lambda: self._filtered(first.ifs, inner)  # noqa: E731
        self.loop(first.target, first.iter, body, comprehension=True)

    def _filtered(self, conditions: list[gast.expr], then: Callable[[], None]) -> None:
        if not conditions:
            then()
            return
        test = self.atom(conditions[0])
        if isinstance(test, gast.Constant):
            if test.value:
                self._filtered(conditions[1:], then)
            return
        body = self.block_of(lambda: self._filtered(conditions[1:], then))
        self.emit(if_(test.id, body))

    # -- targets -------------------------------------------------------------------
    def bind(self, target: gast.expr, element: gast.expr | list) -> None:
        """Assign a loop element (a value, or a tuple of values kept apart) to ``target``."""
        if isinstance(element, list):
            if isinstance(target, (gast.Tuple, gast.List)):
                if len(target.elts) != len(element):
                    raise self.unsupported(
                        f"unpacking {len(element)} values into {len(target.elts)} targets",
                        "use as many names as the loop produces values",
                    )
                for part, value in zip(target.elts, element, strict=True):
                    self.bind(part, value)
                return
            element = gast.Tuple([self._element_atom(e) for e in element], gast.Load())
        if isinstance(target, gast.Name):
            self.emit(assign(self.rename(target.id), element))
        else:
            self.store(target, self.materialize(element))

    def _element_atom(self, element: gast.expr | list) -> gast.expr:
        if isinstance(element, list):
            element = gast.Tuple([self._element_atom(e) for e in element], gast.Load())
        return self.materialize(element)

    def store(self, target: gast.expr, value: gast.expr) -> None:
        """``target = value`` for an atom ``value`` and any assignment target."""
        if isinstance(target, gast.Name):
            self.emit(assign(self.rename(target.id), value))
        elif isinstance(target, (gast.Tuple, gast.List)):
            source = value if isinstance(value, gast.Name) else self.computed("tuple", value)
            self._unpack(target, source)
        else:  # Subscript: attribute and starred targets were rejected up front
            base = self.name_of(target.value)
            index = self.index(target.slice)
            self.emit(assign(gast.Subscript(base, index, gast.Store()), value))

    def _unpack(self, target: gast.Tuple | gast.List, source: gast.Name) -> None:
        """``a, (b, c), d[i] = source``: names directly, the rest through temporaries.

        Python assigns the parts left to right, so once a part stores into a container
        (whose index may read a name), the names after it go through temporaries too.
        """
        names, later = [], []
        for part in target.elts:
            if isinstance(part, gast.Name) and not any(_stores_item(p) for p, _ in later):
                names.append(store(self.rename(part.id)))
                continue
            temp = self.namer.fresh(_unpacked_hint(part))
            names.append(store(temp))
            later.append((part, load(temp)))
        self.emit(assign(gast.Tuple(names, gast.Store()), source))
        for part, temp in later:
            self.store(part, temp)

    # -- statements ----------------------------------------------------------------
    def _statement(self, stmt: gast.stmt) -> None:
        handler = getattr(self, f"_{type(stmt).__name__}", None)
        if handler is None:
            raise self.unsupported(f"the statement {type(stmt).__name__}", "rewrite it")
        handler(stmt)

    def _Assign(self, stmt: gast.Assign) -> None:
        first, *others = stmt.targets
        if not others:
            self._assign_one(first, stmt.value)
            return
        if isinstance(first, gast.Name):
            self.assign_user(self.rename(first.id), stmt.value)
            value = load(self.rename(first.id))
        else:
            value = self.atom(stmt.value)
            self.store(first, value)
        for target in others:
            self.store(target, value)

    def _assign_one(self, target: gast.expr, value: gast.expr) -> None:
        if isinstance(target, gast.Name):
            self.assign_user(self.rename(target.id), value)
        elif isinstance(target, (gast.Tuple, gast.List)) and _same_shape_literal(target, value):
            self._parallel_assign(target.elts, value.elts)
        elif isinstance(target, (gast.Tuple, gast.List)) and _independent_parts(target, value):
            for part, element in zip(target.elts, value.elts, strict=True):
                self.store(part, self.atom(element))
        else:
            self.store(target, self.atom(value))

    def _parallel_assign(self, targets: list[gast.Name], values: list[gast.expr]) -> None:
        """``a, b = x, y``: one assignment per name when that keeps Python's meaning."""
        names = [self.rename(t.id) for t in targets]
        if not set(names) & {self.rename(n) for v in values for n in mentioned(v)}:
            for name, value in zip(names, values, strict=True):
                self.assign_user(name, value)
            return
        atoms = [self.atom(v) for v in values]
        read_later = [
            {a.id for a in atoms[i + 1 :] if isinstance(a, gast.Name)} for i in range(len(atoms))
        ]
        if all(name not in later for name, later in zip(names, read_later, strict=True)):
            for name, value in zip(names, atoms, strict=True):  # e.g. a, b = b, a + b
                self.emit(assign(name, value))
            return
        packed = self.computed("tuple", gast.Tuple(atoms, gast.Load()))  # a, b = b, a
        self.emit(assign(gast.Tuple([store(n) for n in names], gast.Store()), packed))

    def _AnnAssign(self, stmt: gast.AnnAssign) -> None:
        if stmt.value is not None:
            self._assign_one(stmt.target, stmt.value)

    def _AugAssign(self, stmt: gast.AugAssign) -> None:
        target = stmt.target
        if isinstance(target, gast.Name):
            name = self.rename(target.id)
            value = self.atom(stmt.value)
            in_place = assign(name, gast.BinOp(load(name), stmt.op, value))
            setattr(in_place, IN_PLACE, True)  # an array's own memory: see normalize/aliases.py
            self.emit(in_place)
            return
        base = self.name_of(target.value)  # a Subscript: index computed once
        index = self.index(target.slice)
        current = self.computed(self.hint(target), gast.Subscript(base, index, gast.Load()))
        value = self.atom(stmt.value)
        result = self.computed(_OP_NAMES[type(stmt.op)], gast.BinOp(current, stmt.op, value))
        stored = gast.Subscript(load(base.id), clone(index), gast.Store())
        self.emit(assign(stored, result))

    def _Expr(self, stmt: gast.Expr) -> None:
        if isinstance(stmt.value, (gast.Constant, gast.Name)):
            return  # no effect
        if isinstance(stmt.value, gast.Call):
            call = self.call(stmt.value)
            if _pops_a_list(call):  # named, so that reverse mode can put it back
                self.computed("popped", call)
            else:
                self.emit(gast.Expr(call))
        else:
            self.atom(stmt.value)

    def _If(self, stmt: gast.If) -> None:
        condition, test = self.capture(lambda: self.atom(stmt.test))
        if isinstance(test, gast.Constant):
            self.out += self.block(stmt.body if test.value else stmt.orelse)
            return
        body, orelse = self.block(stmt.body), self.block(stmt.orelse)
        if not body and not orelse:  # `if c: pass`: only the effects of c remain
            if any(isinstance(n, gast.Call) for s in condition for n in walk(s)):
                self.out += condition
            return
        self.out += condition
        if body:
            self.emit(if_(test.id, body, orelse))
        else:
            self.emit(if_(self.negate(test.id), orelse))

    def _For(self, stmt: gast.For) -> None:
        self.loop(stmt.target, stmt.iter, lambda: self.out.extend(self.block(stmt.body)))

    def _While(self, stmt: gast.While) -> None:
        condition, test = self.capture(lambda: self.atom(stmt.test))
        if isinstance(test, gast.Constant):
            if not test.value:
                return
            test, condition = self.computed("forever", const(True)), []
        self.out += condition
        body = self.block(stmt.body)
        if condition:
            _before_continues(body, condition)
            if not block_never_completes(body):
                body += clone(condition)
        self.emit(gast.While(load(test.id), self.nonempty(body), []))

    def _Return(self, stmt: gast.Return) -> None:
        value = const(None) if stmt.value is None else self.atom(stmt.value)
        self.emit(gast.Return(value))

    def _Raise(self, stmt: gast.Raise) -> None:
        exc = stmt.exc
        exc = self.call(exc) if isinstance(exc, gast.Call) else self.name_of(exc)
        self.emit(gast.Raise(exc, None))

    def _Assert(self, stmt: gast.Assert) -> None:
        test = self.atom(stmt.test)

        def fail() -> None:
            exc = load(self.builtin("AssertionError"))
            if stmt.msg is not None:
                exc = call(exc, [self.atom(stmt.msg)])
            self.emit(gast.Raise(exc, None))

        if isinstance(test, gast.Constant):
            if not test.value:
                fail()
            return
        self.emit(if_(self.negate(test.id), self.block_of(fail)))

    def _Break(self, stmt: gast.Break) -> None:
        self.emit(gast.Break())

    def _Continue(self, stmt: gast.Continue) -> None:
        self.emit(gast.Continue())

    def _Pass(self, stmt: gast.Pass) -> None:
        """Dropped: empty blocks get their ``pass`` back when they are emitted."""


def _before_continues(stmts: list[gast.stmt], condition: list[gast.stmt]) -> None:
    """Recompute a while loop's condition before each ``continue`` of that loop."""
    for i in reversed(range(len(stmts))):
        stmt = stmts[i]
        if isinstance(stmt, gast.Continue):
            stmts[i:i] = clone(condition)
        elif isinstance(stmt, gast.If):
            _before_continues(stmt.body, condition)
            _before_continues(stmt.orelse, condition)


def _is_multi_statement(node: gast.expr) -> bool:
    """Lowerings that assign their result more than once (through ``if``/loops)."""
    if isinstance(node, gast.Compare):
        return len(node.ops) > 1
    return isinstance(node, (gast.BoolOp, gast.IfExp, gast.ListComp, gast.DictComp))


def _is_negative(node: gast.expr) -> bool:
    return (
        isinstance(node, gast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
        and node.value < 0
    )


def _folded_negative(node: gast.expr) -> gast.Constant | None:
    """``-3`` / ``-1.5`` as one constant (complex literals keep their sign of zero)."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        operand = node.operand
        if isinstance(operand, gast.Constant) and type(operand.value) in (int, float):
            return const(-operand.value)
    return None


def _load_chain(node: gast.expr) -> gast.expr:
    """A copy of ``np.linalg.norm``-like chains with every context set to Load."""
    if isinstance(node, gast.Attribute):
        return gast.Attribute(_load_chain(node.value), node.attr, gast.Load())
    return load(node.id)


def _stores_item(target: gast.expr) -> bool:
    return any(isinstance(n, gast.Subscript) for n in walk(target))


def _unpacked_hint(target: gast.expr) -> str:
    """``_b_c`` for a nested ``(b, c)`` target, ``_d`` for ``d``, ``_item`` otherwise."""
    if _stores_item(target):
        return "item"
    return "_".join(n.id for n in walk(target) if isinstance(n, gast.Name))


def _independent_parts(target: gast.expr, value: gast.expr) -> bool:
    """``(x,), (t,) = primals, tangents``: nested names on the left, as many values on
    the right, and no value reads a name the left side assigns, so each part may be
    assigned on its own. Kept apart, each name depends only on its own value, which
    the derivative transformations' activity analysis sees (one packed tuple would make
    ``x`` depend on ``tangents`` too)."""
    if not isinstance(value, (gast.Tuple, gast.List)) or len(value.elts) != len(target.elts):
        return False
    stored = [n for n in walk(target) if isinstance(n, gast.Name)]
    only_names = all(
        isinstance(n, (gast.Name, gast.Tuple, gast.List, gast.Store)) for n in walk(target)
    )
    read = {n for element in value.elts for n in mentioned(element)}
    return only_names and not {n.id for n in stored} & read


def _same_shape_literal(target: gast.expr, value: gast.expr) -> bool:
    """``a, b = x, y``: plain names on the left, as many values on the right."""
    return (
        isinstance(value, (gast.Tuple, gast.List))
        and len(value.elts) == len(target.elts)
        and all(isinstance(t, gast.Name) for t in target.elts)
    )


def _pops_a_list(call: gast.Call) -> bool:
    """``l.pop()`` of a local list, its value unused: reverse mode reverses a pop by
    appending the value back (``v = l.pop()``), so it keeps the value under a name."""
    func = call.func
    return (
        isinstance(func, gast.Attribute)
        and func.attr == "pop"
        and isinstance(func.value, gast.Name)
        and not call.args
        and not call.keywords
    )
