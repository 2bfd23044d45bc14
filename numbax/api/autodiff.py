"""Automatic differentiation's public entry points, with JAX's names and conventions.

``grad``, ``value_and_grad``, ``jacfwd``, ``jacrev`` (= ``jacobian``) and ``hessian``
return :class:`~numbax.api.transformed.Transformed` functions whose generated source is the
derivative (readable with ``nx.show``, compiled by ``nx.jit``, differentiable again);
``jvp``, ``vjp`` and ``linearize`` evaluate at given primals, as in JAX.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Sequence
from typing import Any

import gast
import numpy as np

from numbax import tree_util
from numbax.api.callable import callable_target, refuse_matrices
from numbax.api.jit import Jitted
from numbax.api.per_arity import PerArity
from numbax.api.transformed import (
    NOTE,
    Derivatives,
    Generated,
    Transformed,
    callee_derivative,
    params,
)
from numbax.api.vmap import Batched
from numbax.codegen.reuse import part
from numbax.codegen.variadic import fixed_arity, takes_star_args
from numbax.errors import TransformError
from numbax.runtime.seeds import grad_dtype_check
from numbax.transform.ad.jacobians import jacobian_function
from numbax.transform.ad.reverse import vjp_function
from numbax.transform.ad.separable import is_separable
from numbax.transform.normalize import normalize
from numbax.transform.normalize.calls import keyword_only_function, positional_view
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource, display_name, read_function, refuse_variadic

Argnums = int | Sequence[int]


# -- helpers ---------------------------------------------------------------------------


def _positional(fun: Callable) -> list[str]:
    try:
        signature = inspect.signature(callable_target(fun))
    except (TypeError, ValueError):
        return ["x"]
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]


_validated: dict[tuple, tuple[tuple[int, ...], bool]] = {}
""":func:`_argnums`' answers for plain functions, by code object (what they depend on):
``grad(f)`` made anew in a loop skips reading the signature again."""


def _argnums(fun: Callable, argnums: Argnums, transformation: str) -> tuple[tuple[int, ...], bool]:
    """(positions, whether the user gave a tuple), validated like JAX."""
    key = None
    if type(fun) is types.FunctionType and not hasattr(fun, "__wrapped__"):
        key = (fun.__code__, part(argnums), transformation)
    found = _validated.get(key) if key is not None else None
    if found is None:
        found = _validate_argnums(fun, argnums, transformation)
        if key is not None:
            _validated[key] = found
    return found


def _validate_argnums(
    fun: Callable, argnums: Argnums, transformation: str
) -> tuple[tuple[int, ...], bool]:
    refuse_variadic(callable_target(fun), transformation)
    is_tuple = not isinstance(argnums, int)
    numbers = tuple(argnums) if is_tuple else (argnums,)
    n = len(_positional(fun))
    for k in numbers:
        if not isinstance(k, int) or not -n <= k < n:
            raise ValueError(
                f"{transformation} of {display_name(fun)!r}: argnums={argnums!r} is out of "
                f"range; the function takes {n} positional argument(s), so valid argnums "
                f"are {-n} to {n - 1}"
            )
    return tuple(k % n for k in numbers), is_tuple


def _inexact(value: Any) -> bool:
    return np.result_type(value).kind in "fc"


def _like_input(derivative: Any, primal: Any) -> Any:
    """A derivative in its input's dtype, as JAX gives (float32 in, float32 out), and
    in its structure when the input is a pytree (a dict, list, NamedTuple...). A list
    or tuple that operations only used as the array NumPy makes of it (``np.sin(t)``)
    has an array derivative: it is split back into the sequence's items, and theirs
    (a list of lists: ``np.asarray(rows)``)."""
    if type(primal) in (list, tuple) and isinstance(derivative, (np.ndarray, list, tuple)):
        array = isinstance(derivative, np.ndarray)
        if (derivative.shape[:1] if array else (len(derivative),)) == (len(primal),):
            return type(primal)(_like_input(derivative[k], p) for k, p in enumerate(primal))
    if not _is_leaf(primal):
        leaves, treedef = tree_util.tree_flatten(primal)
        parts = tree_util.tree_leaves(derivative)
        if len(parts) != len(leaves):
            return derivative
        fixed = [_like_input(d, p) for d, p in zip(parts, leaves, strict=True)]
        return tree_util.tree_unflatten(treedef, fixed)
    dtype = np.result_type(primal)
    if dtype.kind not in "fc":
        return derivative
    if isinstance(derivative, np.ndarray):
        if derivative.dtype != dtype:
            derivative = derivative.astype(dtype)
        return derivative[()] if derivative.ndim == 0 else derivative
    if isinstance(primal, float) and isinstance(derivative, np.generic):
        return derivative
    return dtype.type(derivative)


def _is_leaf(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic, int, float, complex, bool))


_MISMATCH = object()
_LEAVES = object()


def _in_kinds_of(value: Any, like: Any, inner: Any = _LEAVES) -> Any:
    """``value`` with the container types of ``like``, a tree of the same structure but
    for the kinds of its sequences (compiled code returns a list as a tuple: Numba has
    no heterogeneous lists), or ``_MISMATCH``. ``inner``: what ``value`` holds in place
    of each leaf of ``like``, a tree whose kinds it takes too (a Hessian is a tree of its
    argument's structure of trees of that structure)."""
    if isinstance(like, (list, tuple)) and not _is_leaf(like):
        if not isinstance(value, (list, tuple)) or len(value) != len(like):
            return _MISMATCH
        items = [_in_kinds_of(v, k, inner) for v, k in zip(value, like, strict=True)]
        if any(item is _MISMATCH for item in items):
            return _MISMATCH
        if isinstance(like, list):
            return items
        return type(like)(*items) if hasattr(like, "_fields") else tuple(items)
    if type(like) is dict:
        if type(value) is not dict or value.keys() != like.keys():
            return _MISMATCH
        items = {key: _in_kinds_of(value[key], like[key], inner) for key in like}
        return _MISMATCH if any(item is _MISMATCH for item in items.values()) else items
    if inner is not _LEAVES:
        return _in_kinds_of(value, inner)
    if (like is None) != (value is None) or isinstance(value, (list, tuple, dict)):
        return _MISMATCH
    return value


def _jacobian_like(jacobian: Any, primal: Any, outer_is_primal: bool) -> Any:
    """A Jacobian (the output's tree of trees of ``primal``'s structure) with ``primal``'s
    container types in each of its trees of the input's structure, as JAX and numbax's
    own eager code give it; ``outer_is_primal``: the output's tree is ``primal``'s too
    (the Jacobian of a gradient: a Hessian)."""
    if outer_is_primal:
        both = _in_kinds_of(jacobian, primal, inner=primal)
        if both is not _MISMATCH:
            return both
    exact = _in_kinds_of(jacobian, primal)
    if exact is not _MISMATCH:
        return exact
    if isinstance(jacobian, (list, tuple)):
        parts = [_jacobian_like(part, primal, False) for part in jacobian]
        if isinstance(jacobian, list):
            return parts
        return type(jacobian)(*parts) if hasattr(jacobian, "_fields") else tuple(parts)
    if type(jacobian) is dict:
        return {key: _jacobian_like(part, primal, False) for key, part in jacobian.items()}
    return jacobian


def _bound_arguments(fun: Callable, args: tuple, kwargs: dict) -> list[Any]:
    if not kwargs:
        return list(args)
    signature = inspect.signature(fun)
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return list(bound.arguments.values())


# -- grad ------------------------------------------------------------------------------


class Grad(Transformed):
    """``grad(f)`` and ``value_and_grad(f)``: reverse mode from a scalar output."""

    def __init__(
        self,
        fun: Callable,
        argnums: Argnums = 0,
        has_aux: bool = False,
        holomorphic: bool = False,
        allow_int: bool = False,
        with_value: bool = False,
    ) -> None:
        super().__init__(fun)
        self.transformation = "value_and_grad" if with_value else "grad"
        self.positions, self.as_tuple = _argnums(self.fun, argnums, self.transformation)
        self.has_aux = has_aux
        self.holomorphic = holomorphic
        self.allow_int = allow_int
        self.with_value = with_value

    def _key(self) -> tuple:
        return (
            self.positions,
            self.as_tuple,
            self.has_aux,
            self.with_value,
            self.holomorphic,
            self.allow_int,
        )

    def _build(self, fn: gast.FunctionDef, source: FunctionSource, derive: Derivatives):
        wrt = [params(fn)[i] for i in self.positions]
        return vjp_function(
            fn,
            source,
            wrt,
            derive,
            f"{self.transformation}_{source.name.lstrip('_')}",
            seed="holomorphic" if self.holomorphic else "grad",
            has_aux=self.has_aux,
            returns="value_and_cotangents" if self.with_value else "cotangents",
            tuple_cotangents=self.as_tuple,
            transformation=self.transformation,
        )

    def __numbax_gradient_of__(self) -> int | None:
        """The position of the argument whose shape and dtype this function's value
        has: ``grad(f)``'s, of one real argument and without ``aux``; None for the rest
        of the family (a pair, a tuple, integers allowed, holomorphic)."""
        plain = not (self.with_value or self.has_aux or self.as_tuple)
        if plain and not (self.holomorphic or self.allow_int):
            return self.positions[0]
        return None

    def __numbax_check_arguments__(self, args: tuple, kwargs: dict) -> list[Any]:
        """Raise JAX's TypeError for an argument ``grad`` cannot differentiate with
        respect to (integers, unless ``allow_int``; real ones, with ``holomorphic``); the
        arguments bound to the parameters. ``jit(grad(f))`` checks as ``grad(f)`` does."""
        values = _bound_arguments(self.fun, args, kwargs)
        if self.holomorphic or not self.allow_int:
            for k in self.positions:
                if k < len(values):
                    grad_dtype_check(values[k], k, self.holomorphic)
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        refuse_matrices(self.fun, self.transformation, args, kwargs)
        values = self.__numbax_check_arguments__(args, kwargs)
        return self._finished(values, self.generated().function(*args, **kwargs))

    def __numbax_result__(self, args: tuple, kwargs: dict, result: Any) -> Any:
        """What a call returns, from what the generated code returned (compiled, under
        ``jit``): each gradient in its argument's structure and dtype."""
        return self._finished(_bound_arguments(self.fun, args, kwargs), result)

    def _finished(self, values: list[Any], result: Any) -> Any:
        if self.with_value:
            value, grads = result
        elif self.has_aux:
            grads, aux = result
        else:
            grads = result
        if self.as_tuple:
            grads = tuple(
                _like_input(g, values[k]) for g, k in zip(grads, self.positions, strict=True)
            )
        else:
            grads = _like_input(grads, values[self.positions[0]])
        if self.with_value:
            if isinstance(value, np.ndarray) and value.ndim == 0 and not self.has_aux:
                value = value[()]
            return value, grads
        return (grads, aux) if self.has_aux else grads


def grad(
    fun: Callable,
    argnums: Argnums = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Grad | PerArity:
    """The gradient of scalar-valued ``fun`` w.r.t. argument(s) ``argnums`` (JAX's
    ``jax.grad``), by reverse mode on ``fun``'s source. ``nx.show`` prints it."""
    if takes_star_args(fun):
        return PerArity(fun, lambda f: grad(f, argnums, has_aux, holomorphic, allow_int), "grad")
    return Grad(fun, argnums, has_aux, holomorphic, allow_int)


def value_and_grad(
    fun: Callable,
    argnums: Argnums = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Grad | PerArity:
    """``(fun(*args), grad(fun)(*args))`` in one sweep (JAX's ``jax.value_and_grad``)."""
    if takes_star_args(fun):
        return PerArity(
            fun,
            lambda f: value_and_grad(f, argnums, has_aux, holomorphic, allow_int),
            "value_and_grad",
        )
    return Grad(fun, argnums, has_aux, holomorphic, allow_int, with_value=True)


# -- Jacobians -------------------------------------------------------------------------


class Jacobian(Transformed):
    """``jacfwd(f)`` / ``jacrev(f)``: ``f(x).shape + x.shape``, by ``vmap`` of the JVP
    over the input's whole basis or a loop of VJPs over the output's basis, in generated
    source."""

    def __init__(
        self, fun: Callable, argnums: Argnums, has_aux: bool, forward: bool, holomorphic: bool
    ) -> None:
        super().__init__(fun)
        self.transformation = "jacfwd" if forward else "jacrev"
        self.positions, self.as_tuple = _argnums(self.fun, argnums, self.transformation)
        self.has_aux = has_aux
        self.forward = forward
        self.holomorphic = holomorphic

    def _key(self) -> tuple:
        return (self.positions, self.as_tuple, self.has_aux, self.forward, self.holomorphic)

    def _build(self, fn: gast.FunctionDef, source: FunctionSource, derive: Derivatives):
        callee = callable_target(self.fun)
        separable_in = self._separable_in()
        tree, name = jacobian_function(
            fn,
            callee,
            self.positions,
            derive,
            f"{self.transformation}_{source.name.lstrip('_')}",
            forward=self.forward,
            batch=_vmap_binding(derive),
            has_aux=self.has_aux,
            callee_name=f"_{source.name.lstrip('_')}",
            as_tuple=self.as_tuple,
            holomorphic=self.holomorphic,
            diagonal=separable_in is not None,
        )
        if separable_in is not None:
            note = _DIAGONAL_NOTES[self.forward].format(display_name(self.fun.fun), separable_in)
            setattr(tree, NOTE, note)
        keyword_only = keyword_only_function(callee)  # called with every argument in order
        derive.bindings[name] = (
            callee if keyword_only is None else positional_view(keyword_only, self.transformation)
        )
        return tree

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        refuse_matrices(self.fun, self.transformation, args, kwargs)
        return self.generated().function(*args, **kwargs)

    def __numbax_result__(self, args: tuple, kwargs: dict, result: Any) -> Any:
        """What a call returns, from what the compiled code returned: each tree of an
        argument's structure in that argument's container types (a list stays a list)."""
        values = _bound_arguments(self.fun, args, kwargs)
        jacobian, aux = result if self.has_aux else (result, None)
        inner = self.fun  # a Hessian's: the output's tree is the argument's too
        of_gradient = (
            isinstance(inner, Grad | Jacobian)
            and not (inner.has_aux or getattr(inner, "with_value", False))
            and (inner.positions, inner.as_tuple) == (self.positions, self.as_tuple)
        )
        if self.as_tuple:  # the Jacobian of ``f`` as a function of the tuple of those
            primal = tuple(values[k] for k in self.positions)
        else:
            primal = values[self.positions[0]]
        jacobian = _jacobian_like(jacobian, primal, of_gradient)
        return (jacobian, aux) if self.has_aux else jacobian

    def _separable_in(self) -> str | None:
        """The argument, where this is the Jacobian of the gradient (``jacrev``,
        ``grad``) of a sum of elementwise terms of that one argument
        (``transform/ad/separable.py``): a Hessian known to be diagonal."""
        inner = self.fun
        if self.has_aux or self.as_tuple or self.holomorphic:
            return None
        if isinstance(inner, Jacobian):
            gradient = not inner.forward and not inner.has_aux and not inner.holomorphic
        elif isinstance(inner, Grad):
            gradient = not (inner.with_value or inner.has_aux or inner.holomorphic)
        else:
            return None
        if not gradient or inner.as_tuple or inner.positions != self.positions:
            return None
        try:
            source = read_function(inner.fun, "hessian")
            fn = normalize(source, "hessian")
        except TransformError:  # the gradient's own generation says what is wrong
            return None
        names = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        param = names[self.positions[0]]
        return param if is_separable(fn, param, Resolver(source, local_names(fn))) else None


_DIAGONAL_NOTES = {
    True: "diagonal: {0} is a sum of elementwise terms of {1}, so its Hessian is diagonal:\n"
    "the JVP of its gradient along ones_like({1}), written on the diagonal",
    False: "diagonal: {0} is a sum of elementwise terms of {1}, so its Hessian is diagonal:\n"
    "the VJP of ones through its gradient, written on the diagonal",
}


def _vmap_binding(derive: Derivatives) -> Callable[[str, tuple, Any], str]:
    """Binds ``vmap`` of a function the module binds already (a Jacobian's JVP) as
    ``_vmap_<name>``."""

    def batch(name: str, in_axes: tuple, out_axes: Any) -> str:
        base = vmapped = f"_vmap{name}"
        count = 1
        while vmapped in derive.taken or vmapped in derive.bindings:
            count += 1
            vmapped = f"{base}_{count}"
        jvp = derive.bindings[name]
        derive.bindings[vmapped] = Batched(jvp, in_axes, out_axes, per_example_callbacks=True)
        return vmapped

    return batch


def jacfwd(
    fun: Callable, argnums: Argnums = 0, has_aux: bool = False, holomorphic: bool = False
) -> Jacobian | PerArity:
    """The Jacobian by forward mode (JAX's ``jax.jacfwd``): ``vmap`` of the JVP over the
    input's basis (vectorized where the JVP's body batches: the primal then runs once).
    Inputs are real unless ``holomorphic`` (then inputs and outputs are complex), as JAX."""
    if takes_star_args(fun):
        return PerArity(fun, lambda f: jacfwd(f, argnums, has_aux, holomorphic), "jacfwd")
    return Jacobian(fun, argnums, has_aux, forward=True, holomorphic=holomorphic)


def jacrev(
    fun: Callable,
    argnums: Argnums = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Jacobian | PerArity:
    """The Jacobian by reverse mode (JAX's ``jax.jacrev``): one VJP per output element.
    Outputs are real unless ``holomorphic`` (then inputs and outputs are complex), as JAX."""
    if takes_star_args(fun):
        return PerArity(
            fun, lambda f: jacrev(f, argnums, has_aux, holomorphic, allow_int), "jacrev"
        )
    return Jacobian(fun, argnums, has_aux, forward=False, holomorphic=holomorphic)


jacobian = jacrev


def hessian(
    fun: Callable, argnums: Argnums = 0, has_aux: bool = False, holomorphic: bool = False
) -> Jacobian | PerArity:
    """``jacfwd(jacrev(fun))``: forward over reverse, as JAX's ``jax.hessian``."""
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


# -- jvp, vjp, linearize -----------------------------------------------------------------


def _jvp_generated(fun: Callable, n: int) -> Generated:
    return callee_derivative(callable_target(fun), "jvp", tuple(range(n)))


def _defaults_after_primals(
    fun: Callable, generated: Generated, n: int, trailing: int | None = None
) -> tuple:
    """The values of ``fun``'s parameters after its ``n`` primals (keyword-only ones
    included), as a call of ``fun`` with ``n`` arguments would take them: their defaults.
    The generated JVP takes every parameter, then the tangents of the first ``n``; the
    VJP every parameter, then the cotangent (``trailing``: how many come after them)."""
    trailing = n if trailing is None else trailing
    unpassed = len(inspect.signature(generated.function).parameters) - n - trailing
    if unpassed <= 0:
        return ()
    # the parameters of the function the derivative was generated from (a partial's:
    # those its wrapper takes, not the partial's signature, which lists bound keywords)
    rest = list(inspect.signature(callable_target(fun)).parameters.values())[n : n + unpassed]
    missing = [p.name for p in rest if p.default is inspect.Parameter.empty]
    if missing or len(rest) != unpassed:
        raise TypeError(
            f"{display_name(fun)!r} was given {n} primal argument(s), and its parameter(s) "
            f"{', '.join(missing)} have no default: pass a primal for each, or bind it "
            "first (functools.partial(f, scale=...) for a keyword-only parameter)"
        )
    return tuple(p.default for p in rest)


def _shape_of(x: Any) -> Any:
    """``x``'s shape, or a pytree's shapes leaf by leaf (its leaves may differ in shape:
    a layer's ``(W, b)``), in ``x``'s structure."""
    leaves, treedef = tree_util.tree_flatten(x)
    if tree_util.treedef_is_leaf(treedef):
        return np.shape(x)
    return tree_util.tree_unflatten(treedef, [np.shape(leaf) for leaf in leaves])


def _same_shapes(a: Any, b: Any) -> bool:
    """Whether a primal and its tangent (or an output and its cotangent) agree: the same
    pytree structure with leaves of the same shapes, or arrays of one shape (a nested list
    of numbers against an array, as NumPy reads it)."""
    a_leaves, a_def = tree_util.tree_flatten(a)
    b_leaves, b_def = tree_util.tree_flatten(b)
    if a_def == b_def:
        return all(np.shape(x) == np.shape(y) for x, y in zip(a_leaves, b_leaves, strict=True))
    try:
        return np.shape(a) == np.shape(b)
    except ValueError:  # ragged: containers of different structures
        return False


def jvp(
    fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False
) -> tuple:
    """``(fun(*primals), J·tangents)`` by forward mode (JAX's ``jax.jvp``)."""
    primals, tangents = tuple(primals), tuple(tangents)
    fun = fixed_arity(fun, len(primals), "jvp")
    refuse_matrices(fun, "jvp", primals, {})
    if len(primals) != len(tangents):
        raise TypeError(
            f"jvp of {display_name(fun)!r}: primal and tangent arguments must be sequences "
            f"of the same length, got {len(primals)} primals and {len(tangents)} tangents"
        )
    for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        if not _same_shapes(p, t):
            raise ValueError(
                f"jvp of {display_name(fun)!r}: primal {i} has shape {_shape_of(p)} but its "
                f"tangent has shape {_shape_of(t)}; they must be equal"
            )
    generated = _jvp_generated(fun, len(primals))
    defaults = _defaults_after_primals(fun, generated, len(primals))
    out, tangent_out = generated.function(*primals, *defaults, *tangents)
    if has_aux:
        (value, aux), (tangent_value, _) = out, tangent_out
        return value, tangent_value, aux
    return out, tangent_out


def linearize(fun: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the JVP at ``primals``
    (JAX's ``jax.linearize``; numbax re-runs the forward sweep per call)."""
    fun = fixed_arity(fun, len(primals), "linearize")
    refuse_matrices(fun, "linearize", primals, {})
    generated = _jvp_generated(fun, len(primals))
    defaults = _defaults_after_primals(fun, generated, len(primals))

    def f_jvp(*tangents: Any) -> Any:
        return generated.function(*primals, *defaults, *tangents)[1]

    return _call(fun, primals), f_jvp


def _call(fun: Callable, args: tuple) -> Any:
    """``fun(*args)`` on copies of the arrays in ``args``: a function that writes into
    its arguments, as NumPy lets it, must not change the primals that its derivative
    (``vjp_fun``, ``f_jvp``) is taken at afterwards."""
    target = fun if hasattr(fun, "nested_dispatcher") else callable_target(fun)
    copied = tree_util.tree_map(lambda a: a.copy() if isinstance(a, np.ndarray) else a, args)
    return target(*copied)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(fun(*primals), vjp_fun)`` with ``vjp_fun(ct)`` the tuple of cotangents, one per
    primal (JAX's ``jax.vjp``); with ``has_aux``, ``(out, vjp_fun, aux)``."""
    fun = fixed_arity(fun, len(primals), "vjp")
    refuse_matrices(fun, "vjp", primals, {})
    result = _call(fun, primals)
    out, aux = result if has_aux else (result, None)
    mode = "vjp_aux" if has_aux else "vjp"
    generated = callee_derivative(callable_target(fun), mode, tuple(range(len(primals))))
    defaults = _defaults_after_primals(fun, generated, len(primals), trailing=1)

    def vjp_fun(cotangent: Any) -> tuple:
        if not _same_shapes(cotangent, out):
            raise ValueError(
                f"vjp of {display_name(fun)!r}: the cotangent has shape "
                f"{_shape_of(cotangent)} but the output has shape {_shape_of(out)}"
            )
        cts = generated.function(*primals, *defaults, cotangent)
        if has_aux:
            cts = cts[0]
        return tuple(_like_input(c, p) for c, p in zip(cts, primals, strict=True))

    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


def inline_derivative(fun: Callable, mode: str, n: int) -> tuple[Any, tuple]:
    """``fun``'s generated JVP or VJP w.r.t. its first ``n`` arguments, for a call of
    ``nx.jvp``/``nx.vjp``/``nx.linearize`` written inside a function being transformed
    (``numbax.transform.normalize.jvp_vjp``), and the defaults of its later parameters.
    A compiled ``fun`` gets a compiled derivative."""
    fun = fixed_arity(fun, n, mode)
    generated = callee_derivative(callable_target(fun), mode, tuple(range(n)))
    defaults = _defaults_after_primals(fun, generated, n, trailing=1 if mode == "vjp" else None)
    function = generated.function
    return (Jitted(function) if isinstance(fun, Jitted) else function), defaults
