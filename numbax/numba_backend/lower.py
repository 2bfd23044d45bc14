"""Lower core-language source to what Numba compiles fast and right.

Normalized source already runs under Numba; this pass makes it run *well* and *the
same as NumPy*:

* calls that resolve (by identity) to a NumPy function numbax re-implements are
  redirected to ``nxrt.<name>``: SIMD-friendly ``exp``/``log``/``tanh``..., and
  reductions with ``axis=``/``keepdims=`` that Numba lacks; the same for the array
  methods of those reductions (``x.sum(axis=0)``);
* values that may be Python scalars are wrapped in ``nxrt.weak(value, like)`` where
  they meet another operand, so NumPy 2's promotion (float32 array * 1.5 is float32)
  holds under Numba too (see ``np/weak.py``);
* plain Python functions the code calls are compiled too (Numba can only call compiled
  functions) and bound under their own names;
* host callbacks (``nx.pure_callback``, ``nx.debug.print``...) become calls into Python
  through Numba's object mode, one stub per callback site (``host_calls.py``).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import astor
import gast
import numpy as np

from numbax.codegen.variadic import fixed_arity, takes_star_args
from numbax.errors import TransformError
from numbax.numba_backend import registered as runtime
from numbax.numba_backend.boundary import dict_record, field_name
from numbax.numba_backend.host_calls import host_stub
from numbax.numba_backend.passes.stand_ins import RESULT_TYPE_ONLY
from numbax.runtime import nxrt
from numbax.runtime.callbacks import CALLBACKS, VMAP_METHODS
from numbax.runtime.shapes import array_operand
from numbax.transform.operations import held_globals, is_transformable_function
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import display_name
from numbax.transform.walk import walk

RUNTIME_ALIAS = "nxrt"

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)
_SCALAR_ATTRIBUTES = {"shape", "size", "ndim"}
_SCALAR_BUILTINS = {len, int, float, complex, bool, round, abs, min, max}


_PYTHON_TYPES = (int, float, complex, bool)
_BOUND_DATA = (np.ndarray, np.generic, *_PYTHON_TYPES)


def _numpy_random(target: Any) -> bool:
    """Whether ``target`` is a function of ``numpy.random`` (``np.random.normal`` is a
    method of NumPy's global RandomState) or makes a random state of its own."""
    owner = getattr(target, "__self__", None)
    if isinstance(owner, (np.random.RandomState, np.random.Generator)):
        return True
    if isinstance(target, type) and issubclass(
        target, (np.random.RandomState, np.random.Generator, np.random.BitGenerator)
    ):
        return True
    module = getattr(target, "__module__", None) or ""
    return callable(target) and module.startswith("numpy.random")


def _loads(node: gast.Subscript) -> bool:
    return isinstance(node.ctx, gast.Load)


def _runtime_attr(name: str) -> gast.Attribute:
    return gast.Attribute(gast.Name(RUNTIME_ALIAS, gast.Load(), None, None), name, gast.Load())


class _PossiblyWeak:
    """Which names may hold Python scalars (parameters, literals, ints from shapes...)."""

    def __init__(
        self, fn: gast.FunctionDef, resolver: Resolver, weak_params: frozenset[str] | None
    ) -> None:
        self.resolver = resolver
        params = fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs
        # Parameters known to receive Python scalars, or (None) all that might.
        self.names = {a.id for a in params} if weak_params is None else set(weak_params)
        self.shapes = {
            node.targets[0].id
            for node in walk(fn)
            if isinstance(node, gast.Assign)
            and isinstance(node.targets[0], gast.Name)
            and isinstance(node.value, gast.Attribute)
            and node.value.attr == "shape"
        }
        assigns = [n for n in walk(fn) if isinstance(n, (gast.Assign, gast.For))]
        changed = True
        while changed:
            changed = False
            for node in assigns:
                if isinstance(node, gast.For):
                    targets, weak = [node.target], True  # range() yields Python ints
                else:
                    targets, weak = node.targets, self._value_is_weak(node.value)
                if not weak:
                    continue
                for target in targets:
                    for name in walk(target):
                        if isinstance(name, gast.Name) and name.id not in self.names:
                            self.names.add(name.id)
                            changed = True

    def atom(self, node: gast.AST) -> bool:
        if isinstance(node, gast.Constant):
            return isinstance(node.value, (int, float, complex)) and node.value is not None
        return isinstance(node, gast.Name) and node.id in self.names

    def _value_is_weak(self, value: gast.AST) -> bool:
        if isinstance(value, (gast.Constant, gast.Name)):
            return self.atom(value)
        if isinstance(value, gast.BinOp):
            arithmetic = isinstance(value.op, _ARITHMETIC)
            return arithmetic and self.atom(value.left) and self.atom(value.right)
        if isinstance(value, gast.UnaryOp):
            return self.atom(value.operand)
        if isinstance(value, gast.Attribute):
            return value.attr in _SCALAR_ATTRIBUTES
        if isinstance(value, gast.Subscript):  # x.shape[0] is a Python int; x[0] is not
            return isinstance(value.value, gast.Name) and value.value.id in self.shapes
        if isinstance(value, gast.Call):
            function = self.resolver.resolve(value.func)
            if function is array_operand:  # a sequence as its array, a scalar as it is
                return len(value.args) == 1 and self.atom(value.args[0])
            return function in _SCALAR_BUILTINS
        return False


class _Recursive:
    """What a ``compile_helper`` returns for a function being compiled already: it
    calls itself, which Numba compiles through the module's binding of its own name."""

    def __repr__(self) -> str:
        return "RECURSIVE"


RECURSIVE = _Recursive()


class _Lowerer(gast.NodeTransformer):
    def __init__(
        self,
        fn: gast.FunctionDef,
        resolver: Resolver,
        compile_helper: Callable[..., Any],
        kernels: frozenset[str] = frozenset(),
        weak_params: frozenset[str] | None = None,
    ) -> None:
        self.fn = fn
        self.resolver = resolver
        self.weak = _PossiblyWeak(fn, resolver, weak_params)
        self.compile_helper = compile_helper
        self.kernels = kernels
        self.kernel_weak: dict[str, list[str]] = {}
        self.bindings: dict[str, Any] = {}
        self.host_holders: set[str] = set()  # locals naming a callback's function
        self.returned_lists = _returned_lists(fn)

    # -- weak scalars ------------------------------------------------------------
    def _wrap(self, value: gast.AST, like: gast.AST) -> gast.AST:
        return gast.Call(_runtime_attr("weak"), [value, like], [])

    def _weaken(self, operands: list[gast.AST]) -> list[gast.AST]:
        """Wrap each possibly-weak operand next to the first one that is not."""
        flags = [self.weak.atom(op) for op in operands]
        if not any(flags):
            return operands
        strong = [op for op, weak in zip(operands, flags, strict=True) if not weak]
        if strong:
            like = strong[0]
            return [
                self._wrap(op, like) if w else op for op, w in zip(operands, flags, strict=True)
            ]
        # All may be scalars (parameters, literals): each adapts to another name, so a
        # literal next to a float32 array parameter is float32; a lone name stays.
        names = [op for op in operands if isinstance(op, gast.Name)]
        wrapped = []
        for op in operands:
            others = [n for n in names if not (isinstance(op, gast.Name) and n.id == op.id)]
            wrapped.append(self._wrap(op, others[0]) if others else op)
        return wrapped

    def visit_BinOp(self, node: gast.BinOp) -> gast.AST:
        self.generic_visit(node)
        if isinstance(node.op, gast.Pow):
            return self._power(node)
        if isinstance(node.op, _ARITHMETIC):
            node.left, node.right = self._weaken([node.left, node.right])
        return node

    def _power(self, node: gast.BinOp) -> gast.AST:
        """``x ** 3`` stays (Numba multiplies, keeping x's dtype); any other exponent
        goes to the SIMD-friendly ``nxrt.power`` (Numba's is a scalar libm call)."""
        exponent = node.right
        if isinstance(exponent, gast.Constant) and type(exponent.value) is int:
            return node
        return gast.Call(_runtime_attr("power"), self._weaken([node.left, exponent]), [])

    # -- pytrees: dicts are NamedTuples under Numba (see boundary.py) ---------------
    def visit_Subscript(self, node: gast.Subscript) -> gast.AST:
        self.generic_visit(node)
        key = node.slice
        if isinstance(key, gast.Constant) and isinstance(key.value, str):
            return gast.Attribute(node.value, field_name(key.value), node.ctx)
        if isinstance(key, gast.Constant) and key.value is Ellipsis and _loads(node):
            # x[...]: the whole array, a view (Numba lowers no lone Ellipsis index)
            return gast.Call(_runtime_attr("whole"), [node.value], [])
        return node

    def visit_Dict(self, node: gast.Dict) -> gast.AST:
        self.generic_visit(node)
        keys = [k.value if isinstance(k, gast.Constant) else None for k in node.keys]
        if None in keys or not all(isinstance(k, str) for k in keys):
            return node
        record = dict_record(tuple(keys))
        name = record.__name__
        self.bindings[name] = record
        by_field = {field_name(k): v for k, v in zip(keys, node.values, strict=True)}
        args = [by_field[f] for f in record._fields]
        return gast.Call(gast.Name(name, gast.Load(), None, None), args, [])

    def visit_Assign(self, node: gast.Assign) -> gast.AST:
        """A list literal that only the result holds is made by ``nxrt.list_of``: a
        list where its items share one type, else a NamedTuple standing for one
        (``boundary.list_record``), which Numba can return, as it can no list of arrays of
        different ranks, or of numbers and arrays; Python callers get a list either way."""
        self.generic_visit(node)
        target = node.targets[0]
        if isinstance(target, gast.Name) and target.id in self.returned_lists:
            node.value = gast.Call(_runtime_attr("list_of"), node.value.elts, [])
        return node

    def visit_Attribute(self, node: gast.Attribute) -> gast.AST:
        """``self.w``, ``cfg.eps``: data read from an object the function reads from its
        globals (a method's own object among them), which Numba cannot type, is bound
        by value instead, as a global array is (a constant of the compiled code)."""
        if not isinstance(node.ctx, gast.Load) or not self.resolver.is_global_chain(node):
            return self.generic_visit(node)
        root = node
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(self.resolver.resolve(root), types.ModuleType):
            return node
        value = self.resolver.resolve(node)
        if not isinstance(value, _BOUND_DATA):
            return node
        base = "_" + astor.to_source(gast.gast_to_ast(node)).strip().replace(".", "_")
        name, count = base, 1
        while name in self.resolver.locals or (
            name in self.bindings and self.bindings[name] is not value
        ):
            count += 1
            name = f"{base}_{count}"
        self.bindings[name] = value
        return gast.Name(name, gast.Load(), None, None)

    # -- calls -------------------------------------------------------------------
    def visit_Call(self, node: gast.Call) -> gast.AST:
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id in self.kernels:
            # The kernel casts those of these that turn out to be scalars (elementwise.py).
            self.kernel_weak[node.func.id] = [
                arg.id for arg in node.args if isinstance(arg, gast.Name) and self.weak.atom(arg)
            ]
            return node
        target = self.resolver.resolve(node.func)
        if target is LOCAL and isinstance(node.func, gast.Attribute):
            return self._method_call(node)
        if _numpy_random(target):
            raise self._numpy_random_error(node)
        kind = next((k for f, k in CALLBACKS.items() if f is target), None)
        if kind is not None:
            return self._host_call(node, target, kind)
        replacement = runtime.replacement_for(target)
        if replacement is not None:
            node.func = _runtime_attr(replacement)
            if target is np.meshgrid:  # its vectors as one tuple (see grids.py)
                node.args = [gast.Tuple(node.args, gast.Load())]
        elif (
            takes_star_args(target)
            and (hasattr(target, "for_arity") or is_transformable_function(target))
            and not any(isinstance(a, gast.Starred) for a in node.args)
        ):
            # One compiled function per number of arguments it is called with (a NumPy
            # function taking *args, np.broadcast_shapes, is Numba's to compile).
            fixed = fixed_arity(target, len(node.args))
            name = node.func.id if isinstance(node.func, gast.Name) else fixed.__name__
            node.func = self._bind_helper(
                gast.Name(f"{name}_{len(node.args)}", gast.Load(), None, None), fixed
            )
        elif is_transformable_function(target):
            node.func = self._bind_helper(node.func, target, getattr(node, RESULT_TYPE_ONLY, False))
        value_args = runtime.elementwise_value_args(target)
        if value_args:
            chosen = [node.args[i] for i in value_args if i < len(node.args)]
            weakened = iter(self._weaken(chosen))
            for i in value_args:
                if i < len(node.args):
                    node.args[i] = next(weakened)
        return node

    def _method_call(self, node: gast.Call) -> gast.AST:
        """``x.sum(axis=0)`` → ``nxrt.sum(x, axis=0)`` for methods Numba lacks options of;
        ``x.reshape(...)`` → ``nxrt.reshape(x, ...)``, which reshapes any layout."""
        name = node.func.attr
        if name == "astype" and node.args:
            node.args[0] = self._numpy_dtype(node.args[0])
        if name in runtime.ARRAY_METHODS:
            return gast.Call(_runtime_attr(name), [node.func.value, *node.args], node.keywords)
        if name == "reshape":  # x.reshape(2, 3): the shape given as separate numbers
            shape = node.args if len(node.args) == 1 else [gast.Tuple(node.args, gast.Load())]
            return gast.Call(_runtime_attr("reshape"), [node.func.value, *shape], node.keywords)
        return node

    def _host_call(self, node: gast.Call, target: Any, kind: str) -> gast.Call:
        """``nx.pure_callback(fun, spec, x, vmap_method=...)`` →
        ``_pure_callback_fun(spec, (x,), ())``: a stub that calls ``fun`` in Python
        (``host_calls.py``); the callback's own options (``vmap_method``, ``ordered``,
        ``sharding``) are dropped, its other keywords passed on to ``fun``."""
        try:
            bound = inspect.signature(target).bind(
                *node.args, **{k.arg: k.value for k in node.keywords}
            )
        except TypeError as error:
            raise self._host_error(node, kind, f"{kind}: {error}") from None
        arguments = bound.arguments
        method = arguments.get("vmap_method")
        if isinstance(method, gast.Constant) and method.value not in (None, *VMAP_METHODS):
            raise self._host_error(
                node, kind, f"pure_callback: vmap_method must be one of {VMAP_METHODS}"
            )
        if kind == "debug_print":
            fmt = arguments["fmt"]
            if not (isinstance(fmt, gast.Constant) and isinstance(fmt.value, str)):
                raise self._host_error(
                    node, kind, "debug.print under nx.jit needs its format as a string literal"
                )
            fun, label = fmt.value, "_debug_print"
        else:
            fun = self.resolver.resolve(arguments["callback"])
            if fun is LOCAL and isinstance(arguments["callback"], gast.Name):
                # normalize names an attribute chain first: _special_j0 = scipy.special.j0
                fun = held_globals(self.fn, self.resolver).get(arguments["callback"].id, LOCAL)
                self.host_holders.add(arguments["callback"].id)
            if fun is LOCAL or fun is UNRESOLVED:
                raise self._host_error(
                    node,
                    kind,
                    f"{kind} under nx.jit calls a function known before the function runs "
                    "(a module-level function, or a value of its closure), not one made "
                    "while it runs",
                )
            name = getattr(fun, "__name__", type(fun).__name__)
            label = "".join(c if c.isalnum() else "_" for c in f"_{kind}_{name}")
        keywords = arguments.get("kwargs", {})
        names = tuple(keywords)
        stub = host_stub(kind, fun, names, label)
        base, count = label, 1
        while self.bindings.get(label, stub) is not stub:  # two sites, two stubs
            count += 1
            label = f"{base}_{count}"
        self.bindings[label] = stub
        spec = arguments.get("result_shape_dtypes", gast.Constant(None, None))
        if kind == "debug_print":  # shown where it is printed (the stub holds it too)
            spec = arguments["fmt"]
        args = gast.Tuple(list(arguments.get("args", ())), gast.Load())
        values = gast.Tuple([keywords[n] for n in names], gast.Load())
        return gast.Call(gast.Name(label, gast.Load(), None, None), [spec, args, values], [])

    def _host_error(self, node: gast.Call, kind: str, message: str) -> TransformError:
        return TransformError(
            message,
            function=display_name(self.resolver.source.func),
            transformation="jit",
            filename=self.resolver.source.filename,
            lineno=getattr(node, "lineno", None),
            construct=kind,
        )

    def _numpy_random_error(self, node: gast.Call) -> TransformError:
        what = f"{astor.to_source(gast.gast_to_ast(node.func)).strip()}()"
        return TransformError(
            f"{what} draws from NumPy's global random state (or a RandomState or "
            "Generator), which compiled code cannot share with Python. Use numbax.random "
            "with an explicit key (key = nx.random.key(0); nx.random.normal(key, shape)), "
            "or draw the numbers outside the jitted function and pass them in.",
            function=display_name(self.resolver.source.func),
            transformation="jit",
            filename=self.resolver.source.filename,
            lineno=getattr(node, "lineno", None),
            construct=what,
        )

    def _numpy_dtype(self, dtype: gast.expr) -> gast.expr:
        """A Python type as the NumPy scalar type NumPy takes it for (``x.astype(int)``
        is ``x.astype(np.int64)`` on Linux); Numba accepts only the latter."""
        target = self.resolver.resolve(dtype)
        if target in _PYTHON_TYPES:
            name = np.dtype(target).type.__name__
            return gast.Attribute(gast.Name("np", gast.Load(), None, None), name, gast.Load())
        return dtype

    def _bind_helper(
        self, func_node: gast.AST, target: types.FunctionType, result_type_only: bool = False
    ) -> gast.Name:
        """Bind the compiled ``target`` in the generated module; call it by plain name.
        ``result_type_only``: the call's result is read only for its shape and dtype, so
        the variant with a stand-in result serves, where it differs (``passes/stand_ins.py``)."""
        if not isinstance(func_node, gast.Name):  # `mod.helper(x)` becomes `helper(x)`
            func_node = gast.Name(target.__name__, gast.Load(), None, None)
        if result_type_only:
            compiled = self.compile_helper(target, result_type_only=True)
        else:
            compiled = self.compile_helper(target)
        if compiled is RECURSIVE:  # f calls f: by its own name, bound to its dispatcher
            self.bindings[self.fn.name] = RECURSIVE
            return gast.Name(self.fn.name, gast.Load(), None, None)
        name = func_node.id
        if getattr(compiled, RESULT_TYPE_ONLY, False):
            name += "_type"
        clashes = (
            name == self.fn.name  # f calls f: the definition would replace the binding
            or name in self.resolver.locals  # `Dense.__call__(x)` beside a local `__call__`
            or self.bindings.get(name, compiled) is not compiled
        )
        if clashes:  # bind the callee apart
            taken = {n.id for n in walk(self.fn) if isinstance(n, gast.Name)}
            name = f"{name}_compiled"
            while name in taken or name in self.bindings:
                name += "_"
        self.bindings[name] = compiled
        return gast.Name(name, gast.Load(), None, None)


def _elementwise_decorator(weak: list[str] | None, kernel: gast.FunctionDef) -> gast.expr:
    """``@nxrt.elementwise``, naming the parameters that may be Python scalars, how the
    loop sums its values, if it does, and whether its arguments have one shape
    (``passes/fuse.py``)."""
    options = dict(getattr(kernel, "numbax_sum", {}))
    if weak:
        options["weak"] = gast.Tuple([gast.Constant(name, None) for name in weak], gast.Load())
    if getattr(kernel, "numbax_same_shapes", False):
        options["same_shapes"] = gast.Constant(True, None)
    if not options:
        return _runtime_attr("elementwise")
    keywords = [gast.keyword(name, value) for name, value in options.items()]
    return gast.Call(_runtime_attr("elementwise"), [], keywords)


def _keep_result_dtype(fn: gast.FunctionDef) -> None:
    """``return x`` → ``return nxrt.keep_dtype(x)`` so a float32 scalar stays float32."""
    last = fn.body[-1] if fn.body else None
    if isinstance(last, gast.Return) and isinstance(last.value, gast.Name):
        last.value = gast.Call(_runtime_attr("keep_dtype"), [last.value], [])


def lower_for_numba(
    fn: gast.FunctionDef,
    resolver: Resolver,
    compile_helper: Callable[..., Any],
    kernels: list[gast.FunctionDef] = (),
    weak_params: frozenset[str] | None = None,
) -> tuple[gast.FunctionDef, dict[str, Any]]:
    """Rewrite ``fn`` (core language) and its elementwise ``kernels`` (see fuse.py) for
    Numba, in place; also return the names the generated module must bind.

    ``weak_params`` are the parameters that receive Python scalars in this
    specialization; ``None`` (a helper called from compiled code) means any might.
    """
    runtime.load_libraries()
    bindings = {RUNTIME_ALIAS: nxrt}
    for kernel in kernels:
        # A kernel's parameters are array elements, or scalars it casts itself
        # (elementwise.py): inside, only literals are weak.
        kernel_resolver = Resolver(resolver.source, local_names(kernel))
        lowerer = _Lowerer(kernel, kernel_resolver, compile_helper, weak_params=frozenset())
        kernel.body = [lowerer.visit(stmt) for stmt in kernel.body]
        bindings.update(lowerer.bindings)
    names = frozenset(k.name for k in kernels)
    lowerer = _Lowerer(fn, resolver, compile_helper, kernels=names, weak_params=weak_params)
    fn.body = [lowerer.visit(stmt) for stmt in fn.body]
    for kernel in kernels:
        weak = lowerer.kernel_weak.get(kernel.name) if len(kernel.args.args) > 1 else None
        kernel.decorator_list = [_elementwise_decorator(weak, kernel)]
    _keep_result_dtype(fn)
    _drop_unread(fn, lowerer.host_holders)
    bindings.update(lowerer.bindings)
    return fn, bindings


def _returned_lists(fn: gast.FunctionDef) -> set[str]:
    """The names of list literals (``_list = [a, b]``) that nothing but the result reads:
    the returned name, or an item of a returned tuple or list literal, each assigned
    once and read once."""
    made: dict[str, list[gast.expr]] = {}
    reads: dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, gast.Assign):
            for name in (n.id for n in walk(node.targets[0]) if isinstance(n, gast.Name)):
                made.setdefault(name, []).append(node.value)
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            reads[node.id] = reads.get(node.id, 0) + 1
    last = fn.body[-1] if fn.body else None
    if not (isinstance(last, gast.Return) and isinstance(last.value, gast.Name)):
        return set()
    found, todo = set(), [last.value.id]
    while todo:
        name = todo.pop()
        values = made.get(name, [])
        if len(values) != 1 or reads.get(name) != 1 or name in found:
            continue
        value = values[0]
        if isinstance(value, (gast.List, gast.Tuple)):
            if isinstance(value, gast.List):
                found.add(name)
            todo += [e.id for e in value.elts if isinstance(e, gast.Name)]
    return found


def _drop_unread(fn: gast.FunctionDef, candidates: set[str]) -> None:
    """Remove the assignments to ``candidates`` that nothing reads any more (a local
    that named a callback's function, ``_special_j0 = scipy.special.j0``, which Numba
    could not type)."""
    read = {n.id for n in walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    unread = candidates - read
    if not unread:
        return

    def kept(stmts: list[gast.stmt]) -> list[gast.stmt]:
        out = []
        for stmt in stmts:
            targets = stmt.targets if isinstance(stmt, gast.Assign) else []
            if len(targets) == 1 and isinstance(targets[0], gast.Name) and targets[0].id in unread:
                continue
            for name in ("body", "orelse"):
                block = getattr(stmt, name, None)
                if isinstance(block, list) and block:
                    setattr(stmt, name, kept(block) or [gast.Pass()])
            out.append(stmt)
        return out

    fn.body = kept(fn.body)
