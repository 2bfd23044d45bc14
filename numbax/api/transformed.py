"""Functions made by a source transformation (``grad``, ``jvp``, ``jacfwd``...).

A transformation's result is a generated Python function in its own module (written to
the cache directory, so tracebacks, ``inspect`` and the next transformation can read
it). :class:`Transformed` wraps it: calling it runs the generated code with NumPy (or
the compiled code, when it is jitted), ``.source`` shows it, and any transformation
applied to it reads the generated function as its source — which is how
``grad(grad(f))`` and ``jit(grad(f))`` compose.
"""

from __future__ import annotations

import copy
import inspect
import re
import types
import weakref
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from numbax.api import generation_cache
from numbax.api.callable import NumbaxFunction
from numbax.api.jit import Jitted
from numbax.codegen.cache import cache_key
from numbax.codegen.emit import EmittedSource, emit_function, emit_module
from numbax.codegen.fingerprint import callable_identity, fingerprint
from numbax.codegen.gc_pause import fewer_full_collections
from numbax.codegen.load import live_function, load_module, module_name
from numbax.codegen.reuse import live_key
from numbax.codegen.variadic import fixed_arity
from numbax.errors import TransformError
from numbax.runtime import nxrt as runtime
from numbax.transform.ad.common import RUNTIME
from numbax.transform.ad.forward import jvp_function
from numbax.transform.ad.reverse import COTANGENT_OF, vjp_function
from numbax.transform.analysis import effects
from numbax.transform.analysis.dataflow import names as _names
from numbax.transform.cleanup import effect_free
from numbax.transform.nodes import clone
from numbax.transform.normalize import normalize
from numbax.transform.normalize.calls import keyword_only_function, positional_view
from numbax.transform.provenance import Origin, record_module, resolve
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import (
    FunctionSource,
    default_names,
    describe_file,
    display_name,
    read_function,
    refuse_variadic,
)


@dataclass
class Generated:
    """One generated function and the module text it lives in.

    ``depends`` holds what the generation relied on in the user's free names (see
    :func:`_token`), ``callees`` the generated functions it calls: when they no longer
    hold, the function is generated again (:meth:`current`)."""

    function: types.FunctionType
    text: str
    source: FunctionSource  # what it was generated from
    depends: tuple[tuple[str, Any], ...] = ()
    callees: tuple[Generated, ...] = ()

    def with_callees(self) -> list[Generated]:
        """This function and every generated function it calls, directly or not, in the
        order a reader meets them (each once)."""
        seen: dict[int, Generated] = {}
        todo = [self]
        while todo:
            generated = todo.pop(0)
            if id(generated) not in seen:
                seen[id(generated)] = generated
                todo.extend(generated.callees)
        return list(seen.values())

    def current(self) -> bool:
        """Whether the user's names still denote what this function was generated for:
        the same functions and modules, and values of the same kind (a float rebound
        to another float is read by the running code; a helper rebound to another
        function needs its own derivative)."""
        for name, token in self.depends:
            if _current_token(self.source, name) != token:
                return False
        return all(callee.current() for callee in self.callees)


NOTE = "numbax_note"
"""An attribute a builder may set on the tree it returns: a line for the header comment
that says how this function was generated (a Hessian found diagonal)."""

Builder = Callable[[gast.FunctionDef, FunctionSource, "Derivatives"], gast.FunctionDef]


class RecursiveDerivative(Exception):
    """Raised by :func:`generate` for a derivative that is being generated already: a
    recursive function's derivative calls itself, by its own name."""

    def __init__(self, key: tuple, name: str) -> None:
        super().__init__(name)
        self.key = key
        self.name = name


class Derivatives:
    """Generates the derivative functions a generated function calls (a user helper's
    JVP or VJP), and the names the generated module binds them to."""

    def __init__(self, key: tuple = (), taken: frozenset[str] = frozenset()) -> None:
        self.key = key  # of the function being generated
        self.taken = taken  # the names its source uses
        self.bindings: dict[str, Any] = {}
        self.names: dict[Any, str] = {}  # derivative function → its name here
        self.generated: list[Generated] = []  # what the bindings were generated as
        # how each binding was made: (name, callee, mode, positions, arity, derivative)
        self.recipes: list[tuple[str, Any, str, tuple[int, ...], int | None, Generated]] = []

    def __call__(
        self, callee: Any, mode: str, positions: tuple[int, ...], arity: int | None = None
    ) -> str:
        """The name of ``callee``'s derivative, for a call with ``arity`` positional
        arguments (which name the parameters of a callee taking ``*args``)."""
        try:
            derived = callee_derivative(callee, mode, positions, arity)
        except RecursiveDerivative as recursion:
            if recursion.key == self.key:  # f calls f: vjp_f calls vjp_f
                return recursion.name
            raise TransformError(
                f"{display_name(callee)!r} is mutually recursive with another function "
                f"being differentiated ({mode}); numbax differentiates a function that "
                "calls itself, but not a cycle through several functions. Merge them "
                "into one recursive function.",
                function=display_name(callee),
                transformation=mode,
            ) from None
        if derived.function in self.names:
            return self.names[derived.function]
        self.generated.append(derived)
        name = f"_{mode}_{derived.source.name.lstrip('_')}"
        if name in self.bindings:  # the same function, w.r.t. other arguments
            name += "_wrt_" + "_".join(map(str, positions))
        base, count = name, 1
        while name in self.taken or name in self.bindings:  # a local of the same name
            count += 1
            name = f"{base}_{count}"
        self.bind(name, callee, derived)
        self.recipes.append((name, callee, mode, positions, arity, derived))
        return name

    def bind(self, name: str, callee: Any, derived: Generated) -> None:
        """Bind ``callee``'s derivative ``derived`` as ``name``."""
        value = derived.function
        self.names[value] = name
        # a function the user compiled gets a compiled derivative
        self.bindings[name] = Jitted(value) if isinstance(callee, Jitted) else value


_generated: dict[tuple, Generated] = {}
_building: dict[tuple, str] = {}  # being generated → the name it will have
_of_function: weakref.WeakKeyDictionary[types.FunctionType, Generated] = (
    weakref.WeakKeyDictionary()
)  # a generated function → how it was generated


@fewer_full_collections()
def generate(
    fun: Any,
    transformation: str,
    key: tuple,
    build: Builder,
    name: Callable[[FunctionSource], str] | None = None,
    note: str = "",
    on_disk: bool = False,
) -> Generated:
    """The function ``build`` makes from ``fun``'s normalized source (cached per
    ``(fun, transformation, key)`` while the names it reads denote what they did),
    loaded from a module in the cache directory; ``note``: more lines for its header
    comment.

    ``on_disk``: also kept for later processes where what it depends on has a lasting
    description (:mod:`~numbax.api.generation_cache`), for a ``build`` whose whole
    effect is the tree it returns and the derivatives it binds through ``derive``
    (called, not written into its ``bindings``).

    ``name`` gives the generated function's name from the source, for a function that
    may call itself (:class:`RecursiveDerivative`).

    The generated function reads the user's globals and closure cells when it runs, as
    the user's function does (Python's eager semantics, and JAX's for un-jitted
    transformations); ``jit`` compiles it with the values of the moment instead."""
    cache = (cache_identity(fun), transformation, key)
    cached = _generated.get(cache)
    if cached is not None and cached.current():
        return cached
    if cache in _building:
        raise RecursiveDerivative(cache, _building[cache])
    source = read_function(fun, transformation)
    free = generation_cache.free_names(source)
    # what the generation relies on in each free name, while this process runs
    depends = tuple((name, _current_token(source, name)) for name in free)
    stored = (
        generation_cache.entry_key(source, free, transformation, key, note) if on_disk else None
    )
    if stored is not None:
        restored = _restored(cache, source, depends, stored, name)
        if restored is not None:
            return restored
    fn = normalize(source, transformation)
    normalized = clone(fn)  # as read, for its effects: building may change ``fn``
    derivatives = Derivatives(cache, frozenset(_names(fn)))
    if name is not None:
        _building[cache] = name(source)
    try:
        tree = build(fn, source, derivatives)
    finally:
        _building.pop(cache, None)
    # known once the helpers it calls are transformed (their derivatives, just built)
    pure = effect_free(normalized, source)
    notes = [n for n in (note, getattr(tree, NOTE, "")) if n]
    emitted = _emitted(tree, source, transformation, notes)
    # Names the user's function reads are read live; only what numbax binds itself is
    # part of the module (and of its key: a global's value is not baked in).
    made = _made_bindings(tree, Resolver(source, local_names(tree)))
    cotangents = getattr(tree, COTANGENT_OF, None)  # a VJP: each cotangent's output
    generated = _loaded(
        cache, source, depends, emitted.text, tree.name, pure, cotangents, derivatives, made
    )
    if stored is not None and not made:
        _store(stored, source, free, emitted, tree.name, pure, cotangents, derivatives)
    return generated


def _emitted(
    tree: gast.FunctionDef, source: FunctionSource, transformation: str, notes: list[str]
) -> EmittedSource:
    """The generated module: a header comment saying what it is, then the function."""
    user = resolve(source.filename, source.firstlineno)  # through compositions
    header = "\n".join(
        [
            f"{transformation} of {display_name(source.func)} ({describe_file(user.filename)}, "
            f"line {user.line})",
            *notes,
            "generated by numbax; edits to this file are overwritten",
        ]
    )
    return emit_module(
        [emit_function(tree, describe_line=source.line)],
        preamble="\n".join(f"# {line}" for line in header.splitlines()),
    )


def _loaded(
    cache: tuple,
    source: FunctionSource,
    depends: tuple[tuple[str, Any], ...],
    text: str,
    function_name: str,
    pure: bool,
    cotangents: dict[str, Any] | None,
    derivatives: Derivatives,
    made: dict[str, Any],
) -> Generated:
    """The generated function of module ``text``, loaded with what numbax binds in it,
    and remembered as how ``cache`` was generated."""
    effects.record(source.func, pure)
    bindings = {**made, "np": np, RUNTIME: runtime, **derivatives.bindings}
    key_text = cache_key(text, fingerprint(bindings, text))
    module = load_module(module_name(function_name, key_text), text, bindings)
    function = live_function(module, function_name, bindings, source.live)
    # Closures of one factory share the module (the text and what numbax binds) and
    # differ in what they read live: code that binds this function (vmap's loop of a
    # Jacobian's JVP) is keyed by the user's function too, closure values included.
    function.__numbax_identity__ = lambda: (
        f"{module.__name__}.{function_name} of {callable_identity(source.func)}"
    )
    setattr(function, effects.EFFECT_FREE, pure)
    if cotangents is not None:
        setattr(function, COTANGENT_OF, cotangents)
    origin = _of_function.get(source.func)  # grad(grad(f)): grad(f) must hold too
    generated = Generated(
        function,
        text,
        source,
        depends,
        tuple(derivatives.generated)
        + _generated_bound(made)
        + ((origin,) if origin is not None else ()),
    )
    _of_function[function] = generated
    _generated[cache] = generated
    return generated


def _store(
    stored: str,
    source: FunctionSource,
    free_names: list[str],
    emitted: EmittedSource,
    function_name: str,
    pure: bool,
    cotangents: dict[str, Any] | None,
    derivatives: Derivatives,
) -> None:
    """Keep the generation on disk (:mod:`~numbax.api.generation_cache`) when each
    derivative it binds is of a function one of its free names denotes."""
    by_identity = {}
    for free in free_names:
        try:
            by_identity.setdefault(id(source.live(free)), free)
        except KeyError:
            continue
    if {recipe[0] for recipe in derivatives.recipes} != set(derivatives.bindings):
        return  # a binding the builder made itself: not known how to make it again
    recipes = []
    for binding, callee, mode, positions, arity, derived in derivatives.recipes:
        free = by_identity.get(id(callee))
        if free is None:
            return
        recipe = {
            "name": binding,
            "callee": free,
            "mode": mode,
            "positions": list(positions),
            "arity": arity,
            "text": generation_cache.text_digest(derived.text),
        }
        recipes.append(recipe)
    shapes = None
    if cotangents is not None:
        shapes = generation_cache.shapes_to_json(cotangents)
        if shapes is None:
            return
    origins = [
        [line, origin.filename, origin.line, origin.adjoint]
        for line, origin in sorted(emitted.origins.items())
    ]
    entry = {
        "name": function_name,
        "text": emitted.text,
        "origins": origins,
        "pure": bool(pure),
        "cotangents": shapes,
        "derivatives": recipes,
    }
    generation_cache.save(stored, entry)


def _restored(
    cache: tuple,
    source: FunctionSource,
    depends: tuple[tuple[str, Any], ...],
    stored: str,
    name: Callable[[FunctionSource], str] | None,
) -> Generated | None:
    """The generation an earlier process kept as ``stored``, or None (none kept, or a
    callee's derivative is no longer the one it was made with: generated again)."""
    entry = generation_cache.load(stored)
    if entry is None:
        return None
    derivatives = Derivatives(cache)
    if name is not None:
        _building[cache] = name(source)
    try:
        for recipe in entry["derivatives"]:
            callee = source.live(recipe["callee"])
            derived = callee_derivative(
                callee, recipe["mode"], tuple(recipe["positions"]), recipe["arity"]
            )
            if generation_cache.text_digest(derived.text) != recipe["text"]:
                return None
            derivatives.generated.append(derived)
            derivatives.bind(recipe["name"], callee, derived)
    except Exception:  # noqa: BLE001  (generated again, which raises what is wrong)
        return None
    finally:
        _building.pop(cache, None)
    # the user's line of each line, for what transforms this module again
    record_module(entry["text"], {line: Origin(*where) for line, *where in entry["origins"]})
    cotangents = entry["cotangents"]
    return _loaded(
        cache,
        source,
        depends,
        entry["text"],
        entry["name"],
        entry["pure"],
        None if cotangents is None else generation_cache.shapes_from_json(cotangents),
        derivatives,
        {},
    )


def generated_of(function: Any) -> Generated | None:
    """How ``function`` was generated, if numbax generated it."""
    return _of_function.get(function) if isinstance(function, types.FunctionType) else None


def _generated_bound(made: dict[str, Any]) -> tuple[Generated, ...]:
    """The generated functions the normalizer bound in the function's module (the JVP
    of ``nx.jvp(nx.grad(f), ...)`` written inside it): shown with its source, and
    generated again when they no longer hold."""
    found = []
    for value in made.values():
        generated = generated_of(value.fun if isinstance(value, Jitted) else value)
        if generated is not None:
            found.append(generated)
    return tuple(found)


def callee_derivative(
    callee: Any, mode: str, positions: tuple[int, ...], arity: int | None = None
) -> Generated:
    """The JVP (``mode="jvp"``) or VJP (``"vjp"``; ``"vjp_aux"`` for a function with
    aux) of a function called from generated code, w.r.t. its arguments at
    ``positions``: ``jvp_h(<args>, <tangents>) -> (out, tangent)`` and
    ``vjp_h(<args>, ct) -> (cotangents...)``. ``arity``: how many positional arguments
    the call passes, which names the parameters of a callee taking ``*args``."""
    if arity is not None:
        callee = fixed_arity(callee, arity, mode)
    target = getattr(callee, "fun", callee) if hasattr(callee, "nested_dispatcher") else callee
    if hasattr(target, "__numbax_derivative__"):  # custom_jvp, custom_vjp, checkpoint
        return target.__numbax_derivative__(mode, positions)

    def name(source: FunctionSource) -> str:
        return f"{'jvp' if mode == 'jvp' else 'vjp'}_{source.name}"

    def build(fn: gast.FunctionDef, source: FunctionSource, derive: Derivatives):
        wrt = [params(fn)[i] for i in positions]
        fn.args.defaults = []  # call sites pass every argument, keyword-only ones in order
        fn.args.args += fn.args.kwonlyargs
        fn.args.kwonlyargs, fn.args.kw_defaults = [], []
        if mode == "jvp":
            return jvp_function(fn, source, wrt, derive, name(source))
        return vjp_function(
            fn,
            source,
            wrt,
            derive,
            name(source),
            seed="parameter",
            returns="tuple",
            has_aux=mode == "vjp_aux",
        )

    return generate(target, mode, positions, build, name, on_disk=True)


def params(fn: gast.FunctionDef) -> list[str]:
    """The positional parameters of a generated function's tree."""
    return [a.id for a in fn.args.posonlyargs + fn.args.args]


def cache_identity(fun: Any) -> Any:
    """``fun`` in the cache of generated functions: by :func:`live_key` (a lambda made
    anew with the same code and cells shares its derivative), else by itself."""
    key = live_key(fun)
    try:
        hash(key)
    except TypeError:
        return id(fun)
    return key


def _made_bindings(fn: gast.FunctionDef, resolver: Resolver) -> dict[str, Any]:
    """Names the transformation bound itself (``nx.vmap(model)`` built once, as
    ``_vmap_model``; a default's value, ``_default_k``): free names of ``fn`` that the
    user's function cannot read, and those its signature's defaults read (they run
    with the module's ``def``, never live)."""
    source = resolver.source
    defaults = default_names(fn)
    return {
        name: value
        for name, value in resolver.free_bindings(fn).items()
        if name in source.closure and (name in defaults or not _readable(source, name))
    }


def _readable(source: FunctionSource, name: str) -> bool:
    try:
        source.live(name)
    except KeyError:
        return False
    return True


class _Same:
    """A token equal to another only for the very same object."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value

    __hash__ = None  # type: ignore[assignment]


_UNDEFINED = ("undefined",)
_VALUED = (int, bool, str, bytes, type(None), np.integer, np.bool_)


def _current_token(source: FunctionSource, name: str) -> Any:
    try:
        return _token(source.live(name))
    except KeyError:
        return _UNDEFINED


def _token(value: Any) -> Any:
    """What a transformation may rely on in a value its function reads: of arrays and
    floats their kind only (generated code reads them when it runs), of integers,
    strings and flags their value (they may be axes, shapes or indices), of containers
    their elements', of anything else (functions, modules, objects) its identity."""
    if isinstance(value, np.ndarray):
        return (np.ndarray, value.dtype, value.ndim)
    if isinstance(value, (float, complex, np.inexact)):
        return type(value)
    if isinstance(value, _VALUED):
        return (type(value), value)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(map(_token, value)))
    if type(value) is dict:
        return (dict, tuple((k, _token(v)) for k, v in value.items()))
    return _Same(value)


class Transformed(NumbaxFunction):
    """A function produced by a source transformation (``grad``, ``jacfwd``...): its
    generated code is cached per function, transformation and :meth:`_key` while the
    names it reads denote what they did (:func:`generate`)."""

    @abstractmethod
    def _build(
        self, fn: gast.FunctionDef, source: FunctionSource, derive: Derivatives
    ) -> gast.FunctionDef:
        """The generated function's tree, from ``fn``'s normalized tree."""

    def generated(self) -> Generated:
        return generate(self.fun, self.transformation, self._key(), self._build, on_disk=True)

    def __numbax_function__(self) -> types.FunctionType:
        """The generated function, which other transformations read as source."""
        return self.generated().function

    def __numbax_by_position__(self, n_positional: int, keywords: tuple[str, ...]) -> Any:
        """This transformation of the function's positional view (its keyword-only
        parameters taken by position after the others), which code calling it with
        keyword-only arguments calls instead (``numbax.transform.normalize.calls``)."""
        function = keyword_only_function(self.fun)
        if function is not None:
            inner = positional_view(function, self.transformation)
        elif hasattr(self.fun, "__numbax_by_position__"):  # hessian: jacfwd(jacrev(f))
            inner = self.fun.__numbax_by_position__(n_positional, keywords)
        else:
            refuse_variadic(self.fun, self.transformation, keyword_only=True)
            return self
        return self._cached(("by_position", inner), lambda: self._of(inner))

    def _of(self, fun: Callable) -> Transformed:
        """The same transformation (options and all) of ``fun``."""
        twin = copy.copy(self)
        twin.fun = fun
        twin._specializations = {}
        return twin

    @property
    def source(self) -> str:
        """The generated source, followed by that of each generated function it calls
        (a Hessian's inner derivatives, a helper's derivative, the ``vmap`` of a JVP that
        ``jacfwd`` calls), each once."""
        return "\n\n".join(self.source_parts())

    def source_parts(self) -> list[str]:
        """The generated module texts :attr:`source` shows: this function's first, then
        those of the generated functions it calls."""
        return shown_texts(self.generated())

    @property
    def __signature__(self) -> inspect.Signature:
        """The generated function's parameters (``inspect.signature`` reads this)."""
        return inspect.signature(self.generated().function)


def shown_texts(first: Generated) -> list[str]:
    """The module texts of ``first`` and of the generated functions it runs, directly or
    not, each once, in the order a reader meets them (``vmap``s: the code their last
    call ran)."""
    texts: dict[str, None] = {}
    todo = [first]
    while todo:
        generated = todo.pop(0)
        if generated.text not in texts:
            texts[generated.text] = None
            todo.extend(c for c in generated.callees if _calls(generated, c))
            todo.extend(batched.shown() for batched in _vmaps_called(generated))
    return list(texts)


def _calls(caller: Generated, callee: Generated) -> bool:
    """Whether ``caller``'s code names ``callee``. A function a derivative was derived
    from is among its callees, to be generated again when it changes, but the derivative
    runs its own code: ``jacfwd(jacrev(f))`` calls ``vmap`` of the JVP of ``jacrev(f)``,
    never ``jacrev(f)`` itself, and shows only what it runs."""
    names = [k for k, v in dict.items(caller.function.__globals__) if v is callee.function]
    return any(re.search(rf"(?<![\w.]){re.escape(k)}(?!\w)", caller.text) for k in names)


def _vmaps_called(generated: Generated) -> list[Any]:
    """The ``vmap`` objects ``generated``'s code calls (``_vmap_<name>``, bound when
    ``jacfwd`` batches its JVP over the basis), whose code is generated at their first
    call for the arguments' ranks: each shows the code its last call ran."""
    namespace = generated.function.__globals__
    return [
        value
        for name, value in dict.items(namespace)
        if name.startswith("_vmap") and getattr(value, "transformation", None) == "vmap"
    ]
