"""Methods of the user's objects, called by the function being transformed.

Code ported from autograd or object-style JAX keeps its parameters in objects::

    layer = Dense(w, b)                       # a global (or closure) object
    def predict(x):
        return layer.forward(x)               # or layer(x), through Dense.__call__

``layer.forward`` is a bound method: the object and a function of the class. numbax
reads it as that function with ``self`` bound to the object (a *bound-method function*,
made once per object and method): ``self.w`` inside is then a value read from a global
object, like ``np.pi`` or a global array, and ``self.other(x)`` is a method of the same
object again. So the object's arrays are constants of the derivative, as any global
array is (JAX's rule for values a function closes over): derivatives with respect to
parameters come from passing them as arguments (a dict, a NamedTuple, or an object of a
class registered with ``nx.tree_util.register_pytree_node_class``, whose fields carry
derivatives), and calling the method through its class: ``Dense.forward(layer, x)``.

A method of a *value of the function* (``model.forward(x)`` with ``model`` a parameter)
cannot be resolved before the function runs, since only then is the object's class
known; :func:`method_of_value_error` says so and what to write instead.
"""

from __future__ import annotations

import builtins
import inspect
import types
from typing import Any

import gast

from numbax.errors import TransformError
from numbax.transform.nodes import clone
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import (
    FunctionSource,
    LiveNamespace,
    display_name,
    function_from_tree,
    read_function,
)
from numbax.transform.walk import walk


def bind_methods(fn: gast.FunctionDef, source: FunctionSource, transformation: str) -> None:
    """Replace, in ``fn``, each call of a method of an object the function reads from its
    globals or closure (``layer.forward(x)``, ``layer(x)``) by a call of that method's
    bound-method function, named in ``source.closure``."""
    resolver = Resolver(source, local_names(fn))
    fn.body = _unroll_object_loops(fn.body, fn, source, resolver)
    for node in walk(fn):
        if not isinstance(node, gast.Call):
            continue
        method = _user_method(_static_value(node.func, resolver))
        if method is None:
            continue
        function = bound_method_function(method, transformation)
        name = _free_name(source, resolver, f"_{display_name(method.__func__)}", function)
        source.closure[name] = function
        node.func = gast.Name(name, gast.Load(), None, None)


def _unroll_object_loops(
    body: list[gast.stmt], fn: gast.FunctionDef, source: FunctionSource, resolver: Resolver
) -> list[gast.stmt]:
    """``for layer in layers: x = layer(x)`` over a global list of objects whose methods
    the body calls: one copy of the body per object, which is then a global of its own
    (``_layers_0``), so that its methods are read as the object's."""
    out = []
    for stmt in body:
        for block in ("body", "orelse"):
            inner = getattr(stmt, block, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                setattr(stmt, block, _unroll_object_loops(inner, fn, source, resolver))
        items = _objects_looped_over(stmt, fn, resolver)
        if items is None:
            out.append(stmt)
            continue
        base = "_" + "_".join(_chain(stmt.iter))
        for i, item in enumerate(items):
            name = _free_name(source, resolver, f"{base}_{i}", item)
            source.closure[name] = item
            for copied in clone(stmt.body):
                out.append(_Renamer(stmt.target.id, name).visit(copied))
    return out


def _objects_looped_over(stmt: gast.stmt, fn: gast.FunctionDef, resolver: Resolver) -> list | None:
    """The objects a ``for`` loop walks, when it can be unrolled over them: a global
    list or tuple of objects with methods of the user's, whose method the body calls on
    the loop variable, which nothing else assigns nor reads after the loop."""
    if not isinstance(stmt, gast.For) or stmt.orelse or not isinstance(stmt.target, gast.Name):
        return None
    if not resolver.is_global_chain(stmt.iter):
        return None
    items = resolver.resolve(stmt.iter)
    if not isinstance(items, (list, tuple)) or not items:
        return None
    var = stmt.target.id
    called = False
    for node in walk(gast.Module(stmt.body, [])):
        if isinstance(node, (gast.Break, gast.Continue)):
            return None
        if isinstance(node, gast.Name) and node.id == var and not isinstance(node.ctx, gast.Load):
            return None
        if isinstance(node, gast.Call):
            func = node.func
            receiver = func.value if isinstance(func, gast.Attribute) else func
            called = called or (isinstance(receiver, gast.Name) and receiver.id == var)
    if not called:
        return None
    for item in items:
        if _user_method(item) is None and not any(
            _user_method(getattr(item, a, None)) for a in dir(type(item)) if not a.startswith("__")
        ):
            return None
    uses = [n for n in walk(fn) if isinstance(n, gast.Name) and n.id == var]
    inside = {id(n) for n in walk(gast.Module(stmt.body, [])) if isinstance(n, gast.Name)}
    if any(id(n) not in inside and n is not stmt.target for n in uses):
        return None  # the name is used outside the loop too
    return list(items)


def _chain(node: gast.expr) -> list[str]:
    if isinstance(node, gast.Attribute):
        return [*_chain(node.value), node.attr]
    return [node.id]


class _Renamer(gast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: gast.Name) -> gast.AST:
        if node.id == self.old:
            return gast.copy_location(gast.Name(self.new, node.ctx, None, None), node)
        return node


def _static_value(node: gast.expr, resolver: Resolver) -> Any:
    """What ``node`` denotes before the function runs: a global chain, indexed by
    constants and followed by attributes (``LAYERS[0].forward``); else LOCAL."""
    if isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant):
        base = _static_value(node.value, resolver)
        if isinstance(base, (list, tuple, dict)):
            try:
                return base[node.slice.value]
            except (IndexError, KeyError, TypeError):
                return UNRESOLVED
        return LOCAL
    if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Subscript):
        base = _static_value(node.value, resolver)
        if base is LOCAL or base is UNRESOLVED:
            return base
        return getattr(base, node.attr, UNRESOLVED)
    if resolver.is_global_chain(node):
        return resolver.resolve(node)
    return LOCAL


def _user_method(target: Any) -> types.MethodType | None:
    """The bound method a call of ``target`` runs, when it is a Python function of the
    user's (not NumPy's, Numba's or numbax's): ``obj.method`` or ``obj`` with a
    ``__call__`` of its own."""
    if target is LOCAL or target is UNRESOLVED or isinstance(target, (type, types.ModuleType)):
        return None
    if not isinstance(target, types.MethodType):
        call = inspect.getattr_static(type(target), "__call__", None)
        if not isinstance(call, types.FunctionType) or hasattr(target, "__numbax_function__"):
            return None
        target = types.MethodType(call, target)
    function = target.__func__
    if not isinstance(function, types.FunctionType) or isinstance(target.__self__, type):
        return None  # a classmethod: its class is a global already
    module = getattr(function, "__module__", "") or ""
    if module.startswith(("numpy", "numba", "numbax", "scipy")) and not module.startswith(
        "numbax_generated_"
    ):
        return None
    return target


_bound: dict[tuple[Any, int], tuple[Any, types.FunctionType]] = {}
"""(method function, id of the object) → (the object, its bound-method function): the
same function at every reading, so that what is generated for it is found again."""


def bound_method_function(method: types.MethodType, transformation: str) -> types.FunctionType:
    """``method``'s function without its first parameter, which reads as the object."""
    key = (method.__func__, id(method.__self__))
    found = _bound.get(key)
    if found is not None and found[0] is method.__self__:
        return found[1]
    source = read_function(method.__func__, transformation)
    tree = clone(source.tree)
    positional = tree.args.posonlyargs or tree.args.args
    if not positional:
        raise TransformError(
            f"the method {display_name(method.__func__)!r} takes no positional parameter "
            "for its object",
            function=display_name(method.__func__),
            transformation=transformation,
            filename=source.filename,
            lineno=source.firstlineno,
        )
    this = positional.pop(0).id
    original = method.__func__
    defaults = original.__defaults__ or ()
    if len(defaults) > len(tree.args.posonlyargs) + len(tree.args.args):
        defaults = defaults[1:]  # the object's own parameter had one
        tree.args.defaults.pop(0)
    function = function_from_tree(
        tree,
        source,
        LiveNamespace({"__builtins__": builtins, this: method.__self__}, source.live),
        original.__qualname__,
        defaults,
        original.__kwdefaults__,
    )
    _bound[key] = (method.__self__, function)
    return function


def _free_name(source: FunctionSource, resolver: Resolver, base: str, value: Any) -> str:
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
    name, count = base, 1
    while True:
        bound = source.closure.get(name, source.globals.get(name))
        if bound is value or (bound is None and name not in resolver.locals):
            return name
        count += 1
        name = f"{base}_{count}"


def method_of_value_error(
    call: gast.Call, source: FunctionSource, line: int | None, transformation: str
) -> TransformError:
    """The refusal of ``value.method(...)`` on a value of the function whose method has
    no rule: its class, and with it the method, is known only when the function runs."""
    func = call.func
    owner = func.value.id if isinstance(func.value, gast.Name) else "the object"
    return TransformError(
        f"`{owner}.{func.attr}(...)` calls a method of {owner!r}, a value of the function "
        "whose class numbax cannot know before it runs, so it cannot read that method. "
        f"Call it through its class (`MyClass.{func.attr}({owner}, ...)`, read like any "
        "function: a class registered with nx.tree_util.register_pytree_node_class carries "
        f"derivatives through its fields), or read {owner!r} from a global.",
        function=display_name(source.func),
        transformation=transformation,
        filename=source.filename,
        lineno=line,
        construct=f".{func.attr}()",
    )
