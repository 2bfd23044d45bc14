"""``jit``: compile a function with Numba by way of numbax's generated source, one
specialization per static-argument values, generated on first use and cached."""

from __future__ import annotations

import functools
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numbax.api.callable import NumbaxFunction, refuse_matrices
from numbax.api.devices import platform_of
from numbax.api.gpu import GpuJitted
from numbax.api.per_arity import PerArity
from numbax.api.result_containers import rebuilt_from_arguments
from numbax.api.stages import Lowered
from numbax.codegen.locks import generation_lock
from numbax.codegen.reuse import part, reuse_key
from numbax.codegen.variadic import takes_star_args
from numbax.errors import CompileError
from numbax.numba_backend.boundary import from_numba, to_numba
from numbax.numba_backend.cpu import (
    CALL_ERRORS,
    NUMBA_OPTIONS,
    Compiled,
    compile_function,
    explain_failure,
)
from numbax.numba_backend.loops.container_stores import may_store_into_containers
from numbax.numba_backend.loops.threads import one_thread
from numbax.numba_backend.passes.captured import Captured
from numbax.transform.analysis.ranks import rank_parameters
from numbax.transform.container_checks import asks_container_types
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.returned_arguments import Template, returned_arguments
from numbax.transform.source import FunctionSource, read_function
from numbax.tree_util import is_flat, tree_structure

_PYTHON_SCALARS = frozenset([bool, int, float, complex])
_RANK_DECIDING_VALUES = frozenset([bool, int, str, type(None)])


def _array_or_scalar(value: Any) -> bool:
    """Whether ``value``'s type and dtype are all a check of its dtype can read."""
    return (
        type(value) is np.ndarray or type(value) in _PYTHON_SCALARS or isinstance(value, np.generic)
    )


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Iterable[int] | None = None,
    static_argnames: str | Iterable[str] | None = None,
    donate_argnums: int | Iterable[int] | None = None,
    keep_unused: bool = False,
    device: Any = None,
    backend: str | None = None,
    inline: bool = False,
    **numba_options: Any,
) -> Jitted | PerArity | Callable[[Callable], Jitted | PerArity]:
    """Compile ``fun`` with Numba by way of numbax's generated source (JAX's ``jax.jit``).

    ``static_argnums``/``static_argnames`` are baked into the generated source as
    constants; each new value compiles a new specialization. ``donate_argnums`` and
    ``keep_unused`` are accepted for JAX compatibility and have no effect on the CPU
    (NumPy buffers are never donated; Numba ignores unused arguments). ``inline=True``
    inlines this function into compiled callers. Other keyword arguments are Numba's:
    ``fastmath``, ``parallel``, ``boundscheck``, ``error_model``, ``nogil``, ``cache``.
    An index out of bounds raises NumPy's ``IndexError``, as without ``jit``: numbax
    checks the function's own subscripts (once before a loop, where the index is the
    loop's variable); ``boundscheck=False`` leaves those checks out, ``boundscheck=True``
    adds Numba's own on every subscript. ``cache=True`` (the default) keeps the machine
    code in numbax's disk cache, so a new process loads it instead of compiling;
    ``cache=False`` compiles in every process
    (the generated source is cached either way). ``jit(f).lower(*args).compile()``
    compiles ahead of the first call (JAX's ahead-of-time API).
    Usable as ``@jit``, ``@jit(static_argnames="n")`` and ``partial(jit, ...)``.
    """
    options = dict(
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
        keep_unused=keep_unused,
        device=device,
        backend=backend,
        inline=inline,
        **numba_options,
    )
    if fun is None:
        return functools.partial(jit, **options)
    target = device if backend is None else backend
    if target is not None and platform_of(target) == "gpu":
        return GpuJitted(fun, **options)
    if takes_star_args(fun):  # compiled per number of positional arguments, as JAX does
        return PerArity(fun, lambda f: Jitted(f, **options), "jit")
    return Jitted(fun, **options)


def _as_tuple(value: Any, kind: type) -> tuple:
    if value is None:
        return ()
    if isinstance(value, kind):
        return (value,)
    return tuple(value)


@dataclass
class _Compilations:
    """What every ``jit`` object of one function (by :func:`reuse_key`) with the same
    options shares: its specializations, generated and compiled once."""

    key: Hashable
    signature: inspect.Signature
    static_argnames: tuple[str, ...]
    specializations: dict = field(default_factory=dict)
    fast: dict = field(default_factory=dict)
    source: FunctionSource | None = None
    # by (positional count, keywords): jit of what a call omitting defaults runs instead
    omitting: dict = field(default_factory=dict)
    # what calls from Python pass of the captured values (``numba_backend/passes/captured.py``):
    # INEXACT once the function needed its captured integers as constants to compile
    captured: Captured = Captured.NUMBERS


_KEPT = 512
"""How many functions' compilations stay reachable for new ``jit`` objects (the least
recently wrapped go first; ``jit`` objects that hold theirs keep them)."""
_compilations: OrderedDict[Hashable, _Compilations] = OrderedDict()
_compilations_lock = threading.Lock()


def _shared(key: Hashable) -> _Compilations | None:
    with _compilations_lock:
        found = _compilations.get(key)
        if found is not None:
            _compilations.move_to_end(key)
        return found


def _share(compilations: _Compilations) -> _Compilations:
    """Publish ``compilations`` for new ``jit`` objects (or what another published under
    its key first)."""
    with _compilations_lock:
        found = _compilations.setdefault(compilations.key, compilations)
        _compilations.move_to_end(compilations.key)
        while len(_compilations) > _KEPT:
            _compilations.popitem(last=False)
        return found


def _structures(containers: dict[str, Any]) -> tuple:
    """The pytree structures (container types included) of arguments by parameter."""
    return tuple((name, tree_structure(value)) for name, value in containers.items())


class Jitted(NumbaxFunction):
    """A function compiled by numbax. Call it like the original; read ``.source``."""

    transformation = "jit"

    def __init__(
        self,
        fun: Callable,
        *,
        static_argnums: Any = None,
        static_argnames: Any = None,
        donate_argnums: Any = None,
        keep_unused: bool = False,
        device: Any = None,
        backend: str | None = None,
        inline: bool = False,
        **numba_options: Any,
    ) -> None:
        if isinstance(fun, Jitted):  # jit(jit(f)): the inner jit adds nothing
            fun = fun.fun
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {type(fun).__name__}: {fun!r}")
        super().__init__(fun)  # jit(np.exp): compiles a wrapper that calls it
        self._check_backend(device if backend is None else backend)
        unknown = set(numba_options) - NUMBA_OPTIONS
        if unknown:
            raise TypeError(
                f"jit got unexpected keyword argument(s) {sorted(unknown)}; Numba options "
                f"numbax passes through are {sorted(NUMBA_OPTIONS - {'inline'})}"
            )
        self.options = dict(numba_options)
        # grad(f)'s checks of its arguments' dtypes, made by jit(grad(f)) too, once for
        # each key of types and dtypes (_fast_key) of arguments without a pytree
        self._check_arguments = getattr(self.fun, "__numbax_check_arguments__", None)
        self._checked: set[tuple] = set()
        # parallel=False: one thread for numbax's loops too (``numba_backend/loops/threads.py``)
        self._one_thread = numba_options.get("parallel") is False
        if inline:
            self.options["inline"] = "always"
        self.donate_argnums = _as_tuple(donate_argnums, int)
        self.keep_unused = keep_unused
        self._static_spec = (_as_tuple(static_argnums, int), _as_tuple(static_argnames, str))
        self._latest: Compiled | None = None
        self._rank_parameters: tuple[str, ...] | None = None
        self._asks_container_types: bool | None = None
        # which parts of the result are arguments' (``transform/returned_arguments.py``)
        self._returned_arguments: tuple[Template] | None = None
        # Another jit object of the same function and options compiled already: its
        # specializations serve this one (a jit made anew in a loop costs a lookup).
        key = self._reuse_key()
        compilations = _shared(key)
        if compilations is None:
            signature = inspect.signature(self.fun)
            self._signature = signature
            self._positional = self._positional_names()
            statics = self._static_names(*self._static_spec)
            compilations = _Compilations(key, signature, statics)
        self._adopt(compilations)

    def _reuse_key(self) -> Hashable:
        options = tuple(sorted((k, part(v)) for k, v in self.options.items()))
        return (reuse_key(self.fun), self._static_spec, options)

    def _adopt(self, compilations: _Compilations) -> None:
        """Use (and add to) these compilations."""
        self._compilations = compilations
        self._signature = compilations.signature
        self._positional = self._positional_names()
        self.static_argnames = compilations.static_argnames
        self._specializations = compilations.specializations
        # Specializations by the exact types of a call's positional arguments, for calls
        # whose types alone determine it (no statics, no keywords, no pytrees), with the
        # defaults to pass after them and the captured values to pass ahead of them
        # (``numba_backend/passes/captured.py``).
        self._fast: dict[tuple[type, ...], tuple[Compiled, tuple, Any]] = compilations.fast

    def _positional_names(self) -> list[str]:
        return [
            p.name
            for p in self._signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]

    def _current_compilations(self) -> None:
        """Before compiling: make sure the compilations this object adds to are those of
        what its function reads now. A global or captured value rebound since the object
        was made (or since the compilations it adopted were made) compiles into another
        entry, under the key of the values the new code freezes."""
        key = self._reuse_key()
        if key != self._compilations.key:
            compilations = _shared(key) or _Compilations(key, self._signature, self.static_argnames)
            self._adopt(compilations)
        published = _share(self._compilations)
        if published is not self._compilations:  # another object made them first
            self._adopt(published)

    # -- construction helpers ------------------------------------------------------
    @staticmethod
    def _check_backend(backend: Any) -> None:
        """The CPU's jit; ``nx.jit(..., backend="gpu")`` makes a :class:`GpuJitted`."""
        if backend is not None and platform_of(backend) != "cpu":
            raise RuntimeError(
                f"Jitted compiles for the CPU; for backend {backend!r} use "
                "nx.jit(nx.vmap(f), backend='gpu')"
            )

    def _static_names(self, argnums: tuple[int, ...], argnames: tuple[str, ...]) -> tuple[str, ...]:
        """Static parameters by name (JAX infers names from numbers and vice versa)."""
        names = []
        n = len(self._positional)
        for num in argnums:
            if not -n <= num < n:
                raise ValueError(
                    f"jitted function {self.fun.__name__!r} has static_argnums={argnums} but "
                    f"only accepts {n} positional arguments (valid: {-n} to {n - 1})"
                )
            names.append(self._positional[num % n])
        for name in argnames:
            if name not in self._signature.parameters:
                raise ValueError(
                    f"jitted function {self.fun.__name__!r} has static_argnames={argnames} but "
                    f"has no parameter named {name!r}; its parameters are "
                    f"{list(self._signature.parameters)}"
                )
            names.append(name)
        return tuple(dict.fromkeys(names))

    # -- calling -------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._one_thread:
            with one_thread():
                return self._call(args, kwargs)
        return self._call(args, kwargs)

    def _fast_key(self, args: tuple) -> tuple:
        """What finds a call's specialization among those by types (:attr:`_fast`): the
        arguments' types, and the arrays' dtypes where the function checks them (a call
        with integers then goes through :meth:`_call_general`, which raises)."""
        if self._check_arguments is None:
            return tuple(map(type, args))
        return tuple((type(a), a.dtype) if type(a) is np.ndarray else type(a) for a in args)

    def _call(self, args: tuple, kwargs: dict) -> Any:
        if not kwargs:
            if self._check_arguments is None:  # _fast_key, inlined: this path is per call
                found = self._fast.get(tuple(map(type, args)))
            else:
                found = self._fast.get(self._fast_key(args))
            if found is not None:  # Compiled.__call__, inlined: this path is per call
                fast, defaults, captured = found
                if captured:
                    args = (*captured, *args)
                try:
                    out = fast.dispatcher(*args, *defaults)
                except CALL_ERRORS as err:
                    explain_failure(err, fast, (*args, *defaults))
                if type(out) is np.ndarray:
                    return out if out.ndim else out[()]
                return from_numba(out)  # a pytree result of any nesting, rebuilt
        return self._call_general(args, kwargs)

    def _bind(self, args: tuple, kwargs: dict) -> tuple[dict[str, Any], frozenset[str], tuple]:
        """A call's static values, the parameters given Python scalars, and the dynamic
        arguments in order (defaults filled in)."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{self.fun.__name__}(): {err}") from None
        bound.apply_defaults()
        statics = {name: bound.arguments.pop(name) for name in self.static_argnames}
        for name in self._deciding_ranks():  # a Python constant that decides a rank: static
            if type(bound.arguments.get(name, ())) in _RANK_DECIDING_VALUES:
                statics[name] = bound.arguments.pop(name)
        weak = frozenset(n for n, v in bound.arguments.items() if type(v) in _PYTHON_SCALARS)
        return statics, weak, tuple(bound.arguments.values())

    def _check(self, args: tuple, kwargs: dict) -> None:
        """The function's own check of its arguments (``grad``'s of their dtypes), once
        per :meth:`_fast_key` where that key says all it checks: on the slow path of a
        call with static arguments (Lorenz's ``n_steps``), checking each time took 14 µs
        of its 87."""
        if kwargs or not all(map(_array_or_scalar, args)):
            self._check_arguments(args, kwargs)
            return
        key = self._fast_key(args)
        if key not in self._checked:
            self._check_arguments(args, kwargs)
            self._checked.add(key)

    def _call_general(self, args: tuple, kwargs: dict) -> Any:
        refuse_matrices(self.fun, "jit", args, kwargs)  # never among _fast's types
        omitting = self._omitting(args, kwargs)
        if omitting is not None:
            out = omitting(*args, **kwargs)
            found = None if kwargs else omitting._fast.get(omitting._fast_key(args))
            if found is not None:  # the next such call goes there at once
                self._fast[self._fast_key(args)] = found
            return out
        if self._check_arguments is not None:
            self._check(args, kwargs)
        captured = self._compilations.captured
        compiled, dynamic = self.specialization_for(args, kwargs, captured)
        try:
            return self._run(compiled, args, kwargs, dynamic)
        except CompileError:
            if not compiled.generated.captures_integers:
                raise
        # Numba needs a captured integer as a constant (a tuple indexed by it, a branch
        # whose sides have other types): compiled in, from now on for this function
        self._compilations.captured = Captured.INEXACT
        compiled, dynamic = self.specialization_for(args, kwargs, Captured.INEXACT)
        return self._run(compiled, args, kwargs, dynamic)

    def _run(self, compiled: Compiled, args: tuple, kwargs: dict, dynamic: tuple) -> Any:
        """Call a specialization (compiled at its first call) with a call's dynamic
        arguments; once it ran, calls of the same types find it by them (:attr:`_fast`)."""
        if not is_flat(dynamic):
            result = from_numba(compiled(*(to_numba(a) for a in dynamic)))
            return self._rebuilt(args, kwargs, result)
        out = compiled(*dynamic)
        static = self.static_argnames or self._deciding_ranks()
        if not kwargs and not static and self._positional_only_signature():
            # The types of the given arguments decide the specialization; the defaults
            # are passed too, because Numba's dispatcher finds machine code by the types
            # of every argument in C only when none is omitted (an omitted one costs a
            # trip through its Python compile path on every call).
            self._fast[self._fast_key(args)] = (compiled, dynamic[len(args) :], compiled.captured)
        return out

    def _omitting(self, args: tuple, kwargs: dict) -> Jitted | None:
        """For a call leaving parameters to their defaults, where the function treats
        those apart from given ones (``vmap`` maps no default, but compiled code passes
        every argument): ``jit`` of what the function says such a call runs instead
        (``__numbax_omitted__``); None otherwise."""
        omitted = getattr(self.fun, "__numbax_omitted__", None)
        if omitted is None or len(args) + len(kwargs) >= len(self._signature.parameters):
            return None
        view = omitted(len(args), tuple(kwargs))
        if view is None:
            return None
        key = (len(args), tuple(kwargs))
        views = self._compilations.omitting
        if key not in views:
            argnums, argnames = self._static_spec
            views[key] = Jitted(
                view, static_argnums=argnums, static_argnames=argnames, **self.options
            )
        return views[key]

    def _rebuilt(self, args: tuple, kwargs: dict, result: Any) -> Any:
        """A compiled call's result as the function itself returns it for pytree
        arguments: a transformation rebuilds its derivatives in their arguments'
        structures (a list, which compiled code holds as a tuple, is a list again), and a
        result that is statically an argument, or a part of one, comes back in that
        argument's container types."""
        rebuild = getattr(self.fun, "__numbax_result__", None)
        if rebuild is not None:
            return rebuild(args, kwargs, result)
        if self._returned_arguments is None:
            with generation_lock:  # reading the source parses it (see _deciding_ranks)
                compilations = self._compilations
                if compilations.source is None:
                    compilations.source = read_function(self.fun, "jit")
                self._returned_arguments = (returned_arguments(compilations.source.tree),)
        template = self._returned_arguments[0]
        if template is None:
            return result
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return rebuilt_from_arguments(template, bound.arguments, result)

    def specialization_for(
        self, args: tuple, kwargs: dict, capture: Captured = Captured.NUMBERS
    ) -> tuple[Compiled, tuple]:
        """The specialization a call with these arguments runs (its source generated,
        compiled by Numba at its first call), and the arguments it is passed: the
        dynamic ones, defaults filled in (``capture``: see :meth:`specialize`)."""
        statics, weak, dynamic = self._bind(args, kwargs)
        containers = self._containers(args, kwargs, statics, dynamic)
        return self.specialize(statics, weak, containers, capture), dynamic

    def _containers(
        self, args: tuple, kwargs: dict, statics: dict[str, Any], dynamic: tuple
    ) -> dict[str, Any]:
        """The call's pytree arguments by parameter, where the function asks about their
        container types (``isinstance(p, list)``: ``transform/container_checks.py``),
        which compiled code holds only as tuples and NamedTuples, or may store into them
        (``numba_backend/loops/container_stores.py``): their structures are then part of the
        specialization's key, and its checks constants."""
        if self._asks_container_types is None:
            with generation_lock:  # reading the source parses it (see _deciding_ranks)
                compilations = self._compilations
                if compilations.source is None:
                    compilations.source = read_function(self.fun, "jit")
                tree = compilations.source.tree
                resolver = Resolver(compilations.source, local_names(tree))
                self._asks_container_types = asks_container_types(
                    tree, resolver
                ) or may_store_into_containers(tree)
        if not self._asks_container_types or is_flat(dynamic):  # no pytree argument
            return {}
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return {
            name: value
            for name, value in bound.arguments.items()
            if name not in statics and not is_flat((value,))
        }

    def _container_key(self, args: tuple, kwargs: dict) -> tuple:
        """What of a call's pytree arguments its specialization is for (see
        :meth:`_containers`): their structures, container types included."""
        statics, _, dynamic = self._bind(args, kwargs)
        return _structures(self._containers(args, kwargs, statics, dynamic))

    def specialize(
        self,
        statics: dict[str, Any] | None = None,
        weak: frozenset[str] | None = None,
        containers: dict[str, Any] | None = None,
        capture: Captured = Captured.NUMBERS,
    ) -> Compiled:
        """The compiled specialization for these static values and these parameters
        holding Python scalars (generated on first use), and for the container types of
        ``containers`` (pytree arguments by parameter; see :meth:`_containers`).
        ``capture``: which of the values the function captures are parameters its calls
        pass (``numba_backend/passes/captured.py``); compiled callers and exported files, which
        pass only the function's own arguments, have them compiled in (``NOTHING``).

        Python scalars are weakly typed in NumPy 2 (a float32 array times 1.5 stays
        float32) and NumPy scalars are not, so which arguments are Python scalars is
        part of the specialization. Without ``weak``, parameters whose default is a
        Python scalar are assumed to get one.
        """
        statics = statics or {}
        if weak is None:
            weak = self._weak_by_default()
        key = (self._static_key(statics), weak, capture)
        if containers:
            key += (_structures(containers),)
        found = self._specializations.get(key)
        if found is None:
            self._current_compilations()
            found = self._cached(key, lambda: self._compile(statics, weak, containers, capture))
        self._latest = found
        return found

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The generated source for arguments like these (JAX's ``jit(f).lower``): its
        ``.compile()`` compiles now, ahead of the first call, for their dtypes, ranks and
        pytree structures (shapes do not matter); ``.as_text()`` is the source. Arguments
        left to their defaults are lowered as a call leaving them runs (see
        :meth:`_omitting`: ``vmap`` maps no default)."""
        omitting = self._omitting(args, kwargs)
        if omitting is not None:
            return omitting.lower(*args, **kwargs)
        statics, weak, dynamic = self._bind(args, kwargs)
        return Lowered(
            self.fun.__name__,
            # captured integers compiled in: compile() has no second try without them
            self.specialize(
                statics,
                weak,
                self._containers(args, kwargs, statics, dynamic),
                Captured.INEXACT,
            ),
            self._bind,
            args,
            kwargs,
            self._rebuilt,
            self._container_key,
        )

    def _deciding_ranks(self) -> tuple[str, ...]:
        """Parameters, not marked static, whose value decides the rank of a result
        (``keepdims=keep``, ``keep`` chosen from a parameter): when a call passes a
        Python constant there, it is compiled as a static value (``analysis/ranks.py``)."""
        if self._rank_parameters is None:
            # reading the source parses it: Python's AST constructors are not safe to run
            # in two threads at once, so this waits for any code generation in progress
            with generation_lock:
                compilations = self._compilations
                if compilations.source is None:
                    compilations.source = read_function(self.fun, "jit")
                found = rank_parameters(compilations.source.tree)
            self._rank_parameters = tuple(p for p in found if p not in self.static_argnames)
        return self._rank_parameters

    def _compile(
        self,
        statics: dict[str, Any],
        weak: frozenset[str],
        containers: dict[str, Any] | None,
        capture: Captured,
    ) -> Compiled:
        compilations = self._compilations
        if compilations.source is None:
            compilations.source = read_function(self.fun, "jit")
        return compile_function(
            compilations.source,
            statics,
            self.options,
            weak_params=weak,
            containers=containers,
            capture=capture,
        )

    def _weak_by_default(self) -> frozenset[str]:
        return frozenset(
            p.name
            for p in self._signature.parameters.values()
            if type(p.default) in _PYTHON_SCALARS and p.name not in self.static_argnames
        )

    def _positional_only_signature(self) -> bool:
        return all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            for p in self._signature.parameters.values()
        )

    def _static_key(self, statics: dict[str, Any]) -> tuple:
        key = []
        for name, value in statics.items():
            try:
                hash(value)
            except TypeError as err:
                position = (
                    f"argument {name!r} (position {self._positional.index(name)})"
                    if name in self._positional
                    else f"argument {name!r}"
                )
                raise TypeError(
                    f"Non-hashable static arguments are not supported: static {position} of "
                    f"{self.fun.__name__!r} is a {type(value).__name__} ({value!r}), which "
                    f"cannot be hashed ({err}). Pass a tuple instead of a list, or make the "
                    "argument non-static."
                ) from None
            key.append((name, type(value), value))
        return tuple(key)

    def _key(self) -> tuple:
        return (tuple(sorted(self.options.items())), self.static_argnames)

    # -- inspection ----------------------------------------------------------------
    @property
    def source(self) -> str:
        """The generated source of the most recent specialization (or the only one),
        followed by that of each generated function it calls when it compiles a
        transformation (``jit(hessian(f))``: the inner derivatives, the ``vmap`` of a
        JVP), as the transformation generated them."""
        if self._latest is None:
            if self.static_argnames:
                raise ValueError(
                    f"{self.fun.__name__!r} has static arguments {self.static_argnames}: its "
                    "source depends on their values. Call it once, then read .source."
                )
            self.specialize({}, capture=self._compilations.captured)
        signatures = getattr(self._latest.dispatcher, "signatures", None)
        if signatures and hasattr(self.fun, "called_with"):  # jit(vmap(f))
            self.fun.called_with(tuple(signatures[-1]))
        parts = getattr(self.fun, "source_parts", None)
        called = parts()[1:] if parts is not None else []
        if not called:
            return self._latest.text
        note = (
            "# The generated functions it calls, as generated; each is compiled as it is "
            "called,\n# specialized for Numba as the function above is."
        )
        return "\n\n".join([self._latest.text, note, *called])

    def _dispatcher(self) -> Any:
        if self._latest is None:
            raise ValueError(f"{self.fun.__name__!r} has not been called yet: nothing compiled")
        return self._latest.dispatcher

    @property
    def signatures(self) -> list:
        """Numba's compiled type signatures of the most recent specialization."""
        return self._dispatcher().signatures

    def inspect_types(self, *args: Any, **kwargs: Any) -> Any:
        return self._dispatcher().inspect_types(*args, **kwargs)

    def inspect_llvm(self, *args: Any, **kwargs: Any) -> Any:
        return self._dispatcher().inspect_llvm(*args, **kwargs)

    def inspect_asm(self, *args: Any, **kwargs: Any) -> Any:
        return self._dispatcher().inspect_asm(*args, **kwargs)

    def nested_dispatcher(self) -> Any:
        """The Numba dispatcher other compiled code calls (no static arguments allowed)."""
        if self.static_argnames:
            raise ValueError(
                f"{self.fun.__name__!r} has static arguments and cannot be called from "
                "compiled code; call its undecorated Python function instead"
            )
        # Compiled callers may pass Python-typed scalars in any parameter.
        parameters = frozenset(self._signature.parameters)
        return self.specialize({}, parameters, capture=Captured.NOTHING).dispatcher

    def __numbax_dispatcher__(self, options: dict[str, Any]) -> Any:
        """What compiled code calls: this function compiled with its own options."""
        return self.nested_dispatcher()
