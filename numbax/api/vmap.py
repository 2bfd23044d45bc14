"""``vmap``: a function of one example made a function of a batch (JAX's ``jax.vmap``).

numbax batches in one of two ways, chosen at each call for the arguments' ranks:

* **vectorized** (``transform/batch/vectorize.py``): the body rewritten to run on the whole
  batch, each operation by its batching rule (``np.dot(m, v)`` becomes ``v @ m.T``).
  Used when every operation has a rule and no branch or loop depends on a mapped value.
* **loop** (``transform/batch/loop.py``): a generated loop over the batch calling the
  function once per example. It needs nothing of the function's body: control flow on
  the mapped values, in-place updates and calls to anything numbax can run all batch,
  and under ``nx.jit(..., parallel=True)`` the examples run on all cores.

``method="vectorized"`` or ``"loop"`` forces one; forcing the vectorized method on a
body it cannot batch raises a ``TransformError`` naming the line and why. ``nx.show``
prints the code the last call ran.

Derivatives commute with batching: the JVP of ``vmap(f)`` is ``vmap`` of ``f``'s JVP,
and its VJP is ``vmap`` of ``f``'s VJP, with the cotangents of unmapped arguments
summed over the batch. That is what a transformation gets for a call to a batched
function, so ``grad`` of a loss that calls ``vmap``, per-example gradients
``vmap(grad(loss), in_axes=(None, 0, 0))`` and their Hessians compose.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import gast
import numpy as np

from numbax.api.callable import refuse_matrices
from numbax.api.jit import Jitted
from numbax.api.per_arity import PerArity
from numbax.api.rewritten import Rewritten, load_generated, tangent_name, user_origin, where
from numbax.api.transformed import (
    Derivatives,
    Generated,
    cache_identity,
    callee_derivative,
    generate,
    generated_of,
    shown_texts,
)
from numbax.codegen.emit import emit_function
from numbax.codegen.load import GENERATED_PREFIX
from numbax.codegen.variadic import takes_star_args
from numbax.errors import TransformError
from numbax.numba_backend.cpu import compile_helper, typed_per_process
from numbax.numba_backend.typed_calls import (
    PRANGE,
    compiled_calling,
    rank_of_type,
    typed_per_call,
)
from numbax.transform.ad.common import RUNTIME
from numbax.transform.batch.callbacks import refuse_unbatchable_callbacks
from numbax.transform.batch.collectives import (
    Part,
    has_collectives,
    part_function,
    split,
    split_loop_function,
)
from numbax.transform.batch.derivatives import (
    BATCHED_JVP,
    BATCHED_VJP,
    COTANGENTS,
    jvp_function,
    vjp_function,
)
from numbax.transform.batch.loop import loop_function
from numbax.transform.batch.vectorize import KEEP, OUTPUT, rank_of, vectorize
from numbax.transform.names import Namer
from numbax.transform.normalize import normalize
from numbax.transform.normalize.calls import keyword_only_function, positional_view
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.rules.batch_kinds import Decline, Value
from numbax.transform.source import FunctionSource, display_name, read_function

__all__ = ["vmap"]

_METHODS = (None, "loop", "vectorized")


def _check_axes_spec(in_axes: Any) -> Any:
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if in_axes is None or isinstance(in_axes, int | tuple):
        return in_axes
    raise TypeError(
        "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
        f"positional arguments passed to the function, but got {in_axes!r}."
    )


class Batched(Rewritten):
    """``vmap(fun, ...)``: call it on a batch; ``.source`` shows the generated loop."""

    transformation = "vmap"

    def __init__(
        self,
        fun: Callable,
        in_axes: Any = 0,
        out_axes: Any = 0,
        axis_name: Any = None,
        axis_size: int | None = None,
        method: str | None = None,
        *,
        per_example_callbacks: bool = False,
    ) -> None:
        """``per_example_callbacks``: a ``pure_callback`` without ``vmap_method`` is
        called once per example (the loop), where ``vmap`` itself refuses it as JAX does
        (``jacfwd``'s columns call it one by one)."""
        if method not in _METHODS:
            raise ValueError(
                f"vmap(method={method!r}): method is None (choose for each call), "
                "'vectorized' or 'loop'"
            )
        super().__init__(fun, (), "")  # vmap(np.dot): a wrapper numbax can call and read
        self.in_axes = _check_axes_spec(in_axes)
        self.out_axes = out_axes
        self.axis_size = axis_size
        self.axis_name = axis_name
        self.method = method
        self.per_example_callbacks = per_example_callbacks
        self._loops: dict[str, Generated] = {}
        self._vectorized: dict[tuple, Generated | Decline] = {}
        self._dispatchers: dict[tuple, Any] = {}
        self._last: Generated | None = None
        self._by_position_calls: dict[tuple, Batched] = {}
        # made by __numbax_omitted__: called with every argument, its axes are per parameter
        self._takes_all = False

    @property
    def keyword_only(self) -> bool:
        """Keyword-only parameters are taken where numbax reads them by position: a
        Python function's (or ``jit`` of one), not a transformation's."""
        return keyword_only_function(self.fun) is not None

    @property
    def name(self) -> str:
        return f"vmap_{super().name}"

    @functools.cached_property
    def by_position(self) -> Callable:
        """What the generated code batches and calls: the function, or, when it has
        keyword-only parameters, its view taking them by position after the others
        (calls bind them by name first: :meth:`__call__`)."""
        keyword_only = keyword_only_function(self.fun)
        return self.fun if keyword_only is None else positional_view(keyword_only, "vmap")

    def __numbax_by_position__(self, n_positional: int, keywords: tuple[str, ...]) -> Batched:
        """This ``vmap`` for a call with ``n_positional`` arguments and these keywords,
        as a ``vmap`` of the function's positional view taking every argument by
        position, with the axes the call gives (keywords mapped over axis 0, defaults
        not): what code calling it with keyword-only arguments calls instead."""
        if not self.keyword_only:  # a transformation's keyword-only parameters: refused
            return super().__numbax_by_position__(n_positional, keywords)
        key = (n_positional, keywords)
        if key not in self._by_position_calls:
            self._by_position_calls[key] = self._by_position_view(n_positional, keywords)
        return self._by_position_calls[key]

    def __numbax_omitted__(self, n_positional: int, keywords: tuple[str, ...]) -> Batched | None:
        """This ``vmap`` for a call that leaves parameters to their defaults, as one that
        takes every argument by position and maps only those the call gave (a default is
        not mapped, as in JAX): what code compiling such a call (``jit``, a caller's
        generated code, which both pass defaults as arguments) calls instead. None for a
        function with keyword-only parameters (:meth:`__numbax_by_position__`)."""
        if self.keyword_only or self._takes_all:
            return None
        key = ("omitted", n_positional, keywords)
        if key not in self._by_position_calls:
            view = self._by_position_view(
                n_positional, keywords, per_example_callbacks=self.per_example_callbacks
            )
            view._takes_all = True
            self._by_position_calls[key] = view
        return self._by_position_calls[key]

    def _by_position_view(
        self, n_positional: int, keywords: tuple[str, ...], **options: Any
    ) -> Batched:
        """This ``vmap`` of :attr:`by_position`, mapping what a call with
        ``n_positional`` arguments and these keywords gives."""
        return Batched(
            self.by_position,
            in_axes=self._axes(n_positional, keywords),
            out_axes=self.out_axes,
            axis_name=self.axis_name,
            axis_size=self.axis_size,
            method=self.method,
            **options,
        )

    def _key(self) -> tuple:
        return (
            self.in_axes,
            self.out_axes,
            self.axis_size,
            self.axis_name,
            self.method,
            self.per_example_callbacks,
        )

    # -- calling ------------------------------------------------------------------------
    def _axes(self, n_positional: int, keywords: tuple[str, ...]) -> tuple:
        """Each parameter's axis for a call with ``n_positional`` positional arguments
        and these keywords (mapped over axis 0, as in JAX)."""
        params = self.parameters("vmap")
        if n_positional > len(params):
            raise TypeError(
                f"{display_name(self.fun)} takes {len(params)} positional arguments but "
                f"{n_positional} were given"
            )
        if isinstance(self.in_axes, tuple):
            if len(self.in_axes) != n_positional:
                raise ValueError(
                    "vmap in_axes must be an int, None, or a tuple of entries corresponding "
                    "to the positional arguments passed to the function, but got "
                    f"len(in_axes)={len(self.in_axes)}, len(args)={n_positional}"
                )
            given = list(self.in_axes)
        else:
            given = [self.in_axes] * n_positional
        axes = []
        for k, param in enumerate(params):
            if k < n_positional:
                axes.append(given[k])
            else:
                axes.append(0 if param in keywords else None)  # defaults are not mapped
        if self.axis_size is None and all(a is None for a in axes):
            raise ValueError("vmap must have at least one non-None value in in_axes")
        return tuple(axes)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        refuse_matrices(self.fun, "vmap", args, kwargs)
        bound = inspect.signature(self.fun).bind(*args, **kwargs)
        bound.apply_defaults()
        values = tuple(bound.arguments.values())
        axes = self._axes(len(args), tuple(kwargs))
        ranks = tuple(
            _per_example(rank, axis) for rank, axis in zip(map(rank_of, values), axes, strict=True)
        )
        self._last = self.program(axes, ranks)
        return self._last.function(*values)

    def program(self, axes: tuple, ranks: tuple) -> Generated:
        """What a call runs for these axes and per-example ranks: the vectorized
        function where it can be, else the loop (``method`` may force either)."""
        if self.per_example_callbacks and self._callbacks_refused:
            return self.loop(axes)
        self._callbacks_checked  # noqa: B018 (raises for a callback JAX does not batch)
        if self.method != "loop":
            vectorized = self.vectorized(axes, ranks)
            if not isinstance(vectorized, Decline):
                return vectorized
            if self.method == "vectorized":
                raise TransformError(
                    f"method='vectorized' cannot batch it: {str(vectorized).rstrip('.')}. "
                    "Leave method=None to batch by a loop where needed.",
                    function=display_name(self.fun),
                    transformation="vmap",
                    filename=vectorized.filename,
                    lineno=vectorized.lineno,
                ) from None
        return self.loop(axes)

    def vectorized(self, axes: tuple, ranks: tuple) -> Generated | Decline:
        """The body rewritten for the batch, for arguments of these per-example ranks,
        or why it cannot be (:class:`Decline`)."""
        key = (repr(axes), ranks)
        if key not in self._vectorized:
            self._vectorized[key] = self._vectorize(axes, ranks)
        return self._vectorized[key]

    def _vectorize(self, axes: tuple, ranks: tuple) -> Generated | Decline:
        if any(isinstance(r, int) and r < 0 for r in ranks):  # the loop says what is wrong
            return Decline("an argument has no axis to map")
        if all(a is None for a in axes):
            return Decline("no argument is mapped (axis_size alone)")

        key = ("vectorized", repr(axes), ranks, repr(self.out_axes), repr(self.axis_name))
        identity = (cache_identity(self.by_position), key)
        if identity in _vectorizing:  # a function that calls itself on batched values
            return Decline(f"{display_name(self.fun)} calls itself (vmap loops)")

        def build(fn: Any, source: Any, derive: Derivatives) -> Any:
            resolver = Resolver(source, local_names(fn))
            tree = vectorize(
                fn,
                source,
                resolver,
                self.name,
                axes,
                ranks,
                self.out_axes,
                self.axis_name,
                _call_batched(derive),
            )
            _outputs[identity] = getattr(tree, OUTPUT)
            return tree

        described = ", ".join(
            f"{p}: {r}" for p, r in zip(self.parameters("vmap"), ranks, strict=True)
        )
        _vectorizing.add(identity)
        try:
            generated = generate(
                self.by_position,
                "vmap",
                key,
                build,
                note=f"vectorized: the whole batch at once; in_axes={axes!r}, "
                f"out_axes={self.out_axes!r}; ranks per example: {described}",
            )
        except Decline as decline:
            return decline
        except TransformError as error:  # a source numbax cannot read: the loop calls it
            return Decline(error.detail)
        finally:
            _vectorizing.discard(identity)
        if isinstance(self.fun, Jitted):  # vmap(jit(f)): the batched code is compiled
            return Generated(
                Jitted(generated.function, **self.fun.options), generated.text, generated.source
            )
        return generated

    def __numbax_dispatcher__(self, options: dict[str, Any]) -> Any:
        """What compiled code calls: a function Numba types per call, which runs the
        vectorized function for the arguments' ranks where it can and the loop
        otherwise (both compiled with ``options``)."""
        key = tuple(sorted(options.items()))
        if key not in self._dispatchers:
            self._dispatchers[key] = typed_per_call(
                self.name,
                self.parameters("vmap"),
                lambda types: self._compiled(types, options),
                self._content_identity(options),
            )
        return self._dispatchers[key]

    def _content_identity(self, options: dict[str, Any]) -> str | None:
        """What the code compiled for a call depends on, by content: this ``vmap`` (axes,
        method) and the generated module of the function it batches, whose key covers
        that function's source and everything it calls; the vectorized and the loop
        programs are made from them and the argument types (in the signature's key).
        None when the function is not compiled from a generated module (a ``vmap`` of a
        ``vmap``) or is itself compiled per process (it makes host callbacks): its callers
        are then compiled in every process."""
        try:
            compiled = compile_helper(self.by_position, options)
        except Exception:  # noqa: BLE001 - compiling fails at the call, with its own error
            return None
        module = getattr(getattr(compiled, "py_func", None), "__module__", "") or ""
        if not module.startswith(GENERATED_PREFIX) or typed_per_process([compiled]):
            return None  # what it runs is not named by content (a host callback in it)
        return f"{self.__numbax_identity__()} of {module} with {sorted(options.items())}"

    def _compiled(self, types: tuple, options: dict[str, Any]) -> Callable:
        """The compiled function a call with these argument types runs."""
        axes, ranks = self._typed_ranks(types)
        program = self.program(axes, ranks)
        self._last = program  # what ``nx.show`` of the compiled caller shows
        if program.function is self.loop(axes).function:
            return self._loop_dispatcher(options)
        # whole arrays and BLAS: no prange to run (and Numba's parallel analysis cannot
        # prove that lifted axes, x[:, None], broadcast)
        serial = {k: v for k, v in options.items() if k != "parallel"}
        return compile_helper(program.function, serial)

    def _loop_dispatcher(self, options: dict[str, Any]) -> Any:
        """The loop compiled by Numba as generated (it is already what Numba compiles),
        calling the compiled function; under ``parallel=True`` its examples run on all
        cores (``prange``; each writes its own slice of the batch)."""
        key = ("loop", *sorted(options.items()))
        axes = self._axes(len(self.parameters("vmap")), ())
        if key not in self._dispatchers and (
            self._collective_parts() is not None or _has_dict(axes) or _has_dict(self.out_axes)
        ):  # numbax compiles what raw Numba cannot: dicts (records), reductions' axes
            self._dispatchers[key] = compile_helper(self.loop(axes).function, options)
        if key not in self._dispatchers:
            function = compile_helper(self.by_position, options)
            generated = self.loop(axes, compiled=options, callee=function)
            self._dispatchers[key] = compiled_calling(generated.function, options, [function])
        return self._dispatchers[key]

    @property
    def source(self) -> str:
        """The generated code the last call ran, or compiled code was last compiled to
        run (before either: the loop for a call passing every argument positionally)."""
        return self.shown().text

    def source_parts(self) -> list[str]:
        """What ``nx.source`` of ``jit`` of this ``vmap`` shows after the compiled call
        to it: the code that call runs (:meth:`shown`, the vectorized body where it
        batches) and the generated functions that calls. The first part, the call
        itself, is what ``jit`` shows its own specialization of."""
        return [self._trampoline().text, *shown_texts(self.shown())]

    def called_with(self, types: tuple) -> None:
        """Compiled code called this ``vmap`` with arguments of these Numba types: what
        :meth:`shown` shows, where the call's code came from the disk cache (compiled in
        an earlier process, so :meth:`_compiled` never ran in this one)."""
        if self._last is None:
            self._last = self.program(*self._typed_ranks(types))

    def _typed_ranks(self, types: tuple) -> tuple[tuple, tuple]:
        """The axes of a call from compiled code, and the per-example ranks of its
        arguments of these Numba types."""
        axes = self._axes(len(self.parameters("vmap")), ())
        ranks = tuple(
            _per_example(rank, axis)
            for rank, axis in zip(map(rank_of_type, types[: len(axes)]), axes, strict=True)
        )
        return axes, ranks

    def shown(self) -> Generated:
        """What :attr:`source` shows, with the generated functions it calls."""
        if self._last is not None:
            return self._last
        return self.loop(self._axes(len(self.parameters("vmap")), ()))

    def loop(
        self, axes: tuple, compiled: dict[str, Any] | None = None, callee: Any = None
    ) -> Generated:
        """The generated loop for one assignment of axes to the parameters; ``compiled``:
        Numba's options, for the loop Numba compiles (over ``prange``, calling
        ``callee``, the function's compiled version). Each set of options has its own
        module, because Numba's disk cache tells its entries apart by argument types
        only; and the callee is bound before the module is named, so a changed callee
        (its generated module) names a new loop module instead of meeting machine code
        on disk that calls the old one."""
        if self._collective_parts() is not None:  # split at each collective
            return self._split_loop(axes)
        key = repr((axes, compiled))  # axes may hold dicts (pytree prefixes)
        if key not in self._loops:
            short = super().name
            tree = loop_function(
                self.name,
                f"_{short}",
                short,
                self.parameters("vmap"),
                axes,
                self.out_axes,
                self.axis_size,
                loop="range" if compiled is None else "prange",
            )
            header = [
                f"vmap of {where(self.fun)}: one call per example, in a loop",
                f"in_axes={axes!r} (per parameter), out_axes={self.out_axes!r}",
            ]
            namespace: dict[str, Any] = {f"_{short}": self.by_position}
            if compiled is not None:
                namespace.update({f"_{short}": callee, "prange": PRANGE})
                options = ", ".join(f"{k}={v!r}" for k, v in sorted(compiled.items()))
                header.append(f"compiled by Numba with options: {options or 'none'}")
            loaded = _loaded(tree, header, namespace, self.fun)
            called = generated_of(self.by_position)  # shown after the loop
            self._loops[key] = replace(loaded, callees=(called,)) if called else loaded
        return self._loops[key]

    def _collective_parts(self) -> list | None:
        """The function's body split at its collectives over ``axis_name`` (None when
        there are none)."""
        return None if self.axis_name is None else self._parts

    @functools.cached_property
    def _callbacks_checked(self) -> bool:
        """Whether the callbacks the function makes may be batched (raises if not)."""
        try:
            source = self._source
        except TransformError:  # what numbax cannot read, it batches by calling it
            return True
        refuse_unbatchable_callbacks(source)
        return True

    @functools.cached_property
    def _callbacks_refused(self) -> bool:
        """Whether the function makes a callback that ``vmap`` may not batch."""
        try:
            self._callbacks_checked  # noqa: B018
        except NotImplementedError:
            return True
        return False

    @functools.cached_property
    def _source(self) -> FunctionSource:
        return read_function(self.by_position, "vmap")

    @functools.cached_property
    def _parts(self) -> list[Part] | None:
        fn = normalize(self._source, "vmap")
        resolver = Resolver(self._source, local_names(fn))
        if not has_collectives(fn, resolver):
            return None
        return split(fn, resolver, self.axis_name, display_name(self.fun))

    def _split_loop(self, axes: tuple) -> Generated:
        """The loop over the examples, split at each collective (one loop per part)."""
        key = repr(("split", axes))
        if key in self._loops:
            return self._loops[key]
        parts = self._collective_parts()
        short = super().name
        callees = [f"_{short}_part{k + 1}" for k in range(len(parts))]
        namespace: dict[str, Any] = {"np": np}
        for k, callee in enumerate(callees):
            if k == len(parts) - 1 or parts[k].outputs:  # else the part need not run
                namespace[callee] = self._part(k, callee[1:])
        tree = split_loop_function(
            self.name,
            short,
            parts,
            callees,
            self.parameters("vmap"),
            axes,
            self.out_axes,
            self.axis_size,
        )
        header = [
            f"vmap of {where(self.fun)} over axis {self.axis_name!r}: the loop over the "
            "examples split at each collective",
            f"in_axes={axes!r} (per parameter), out_axes={self.out_axes!r}",
            f"each part runs every example up to a collective ({callees[0]}...), which "
            "then reduces over the batch; the last runs to the end",
        ]
        self._loops[key] = _loaded(tree, header, namespace, self.fun, self._source.line)
        return self._loops[key]

    def _part(self, k: int, name: str) -> Callable:
        """The generated function running part ``k`` of the body for one example."""

        def build(fn: gast.FunctionDef, source: FunctionSource, _derive: Any) -> Any:
            resolver = Resolver(source, local_names(fn))
            part = split(fn, resolver, self.axis_name, display_name(self.fun))[k]
            return part_function(fn, part, name, resolver)

        return generate(self.by_position, "vmap", ("part", k, repr(self.axis_name)), build).function

    # -- derivatives: vmap of the derivative --------------------------------------------
    def _derivative_method(self) -> str | None:
        """A forced loop stays a loop; derivative code may hold tapes the vectorized
        method declines, so it is otherwise chosen per call."""
        return "loop" if self.method == "loop" else None

    def _derivative_map(self, derivative: Callable, in_axes: tuple, out_axes: Any) -> Batched:
        """The map of ``derivative`` (the JVP or VJP of the function) that this map's
        derivative calls: a ``vmap`` of it, as this one is."""
        return Batched(
            derivative,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=self.axis_name,
            axis_size=self.axis_size,
            method=self._derivative_method(),
            per_example_callbacks=self.per_example_callbacks,
        )

    def _derive(self, mode: str, positions: tuple[int, ...], params: list[str]) -> Generated:
        axes = self._axes(len(params), ())
        derivative = callee_derivative(self.fun, mode, positions).function
        # Parameters of derivative code are often derivative names already (vmap of a
        # JVP takes ``_d_x``): the new ones must not repeat them.
        namer = Namer({*params, BATCHED_JVP, BATCHED_VJP, COTANGENTS, RUNTIME})
        if mode == "jvp":
            tangents = [namer.fresh(tangent_name(params[i])) for i in positions]
            in_axes = axes + tuple(axes[i] for i in positions)
            out_axes: Any = (self.out_axes, self.out_axes)
            tree = jvp_function(f"jvp_{self.name}", params + tangents)
            what = f"JVP of {self.name}: vmap of the JVP of {display_name(self.fun)}"
            header = [what]
        else:
            in_axes = axes + (self.out_axes,)
            out_axes = tuple(0 if axes[i] is None else axes[i] for i in positions)
            shared = [axes[i] is None for i in positions]
            tree = vjp_function(f"vjp_{self.name}", [*params, namer.fresh("_ct_out")], shared)
            what = f"VJP of {self.name}: vmap of the VJP of {display_name(self.fun)}"
            header = [what, "an argument the batch shares gets the sum of its examples' cotangents"]
        batched = self._derivative_map(derivative, in_axes, out_axes)
        callee = BATCHED_JVP if mode == "jvp" else BATCHED_VJP
        return _loaded(tree, header, {callee: batched}, self.fun, of=self.__numbax_function__())


_vectorizing: set[tuple] = set()  # vectorized functions being generated (recursion)
_outputs: dict[tuple, Value] = {}  # of each vectorized function: what it returns


def _call_batched(derive: Derivatives) -> Callable[[Any, tuple, tuple], tuple[str, Value]]:
    """How vectorized code calls a function on batched values (``vectorize``'s
    ``call_batched``): its own vectorized version, with each output batched where it
    depends on the batch, bound in the generated module as ``_vmap_<name>``."""

    def call(callee: Any, axes: tuple, ranks: tuple) -> tuple[str, Value]:
        batched = Batched(callee, in_axes=axes, out_axes=KEEP)
        program = batched.vectorized(axes, ranks)
        if isinstance(program, Decline):
            raise Decline(f"a call to {display_name(callee)}, which does not vectorize: {program}")
        key = ("vectorized", repr(axes), ranks, repr(KEEP), repr(None))
        output = _outputs[(cache_identity(batched.by_position), key)]
        value = program.function
        if value in derive.names:
            return derive.names[value], output
        base = name = f"_{batched.name}"
        count = 1
        while name in derive.taken or name in derive.bindings:
            count += 1
            name = f"{base}_{count}"
        derive.names[value] = name
        derive.bindings[name] = value
        derive.generated.append(program)
        return name, output

    return call


def _loaded(
    tree: gast.FunctionDef,
    header: list[str],
    namespace: dict[str, Any],
    user: Callable,
    describe_line: Callable[[int], str] | None = None,
    of: Any = None,
) -> Generated:
    """A generated function's tree written, loaded and read back (see
    :func:`load_generated`), standing for the user's function ``user``;
    ``describe_line``: the user's text of a line, for the ``# line`` comments of
    statements that carry one."""
    emitted = emit_function(tree, describe_line)
    return load_generated(
        tree.name,
        header,
        emitted.text.splitlines(),
        namespace,
        of=of,
        origin=user_origin(user),
        line_origins=emitted.origins,
    )


def _has_dict(axes: Any) -> bool:
    """Whether a prefix of axes holds a dict."""
    if isinstance(axes, dict):
        return True
    return isinstance(axes, tuple) and any(map(_has_dict, axes))


def _per_example(rank: Any, axis: Any) -> Any:
    """An argument's rank per example: one less where it is mapped (a mapped tuple is
    left to the loop)."""
    if axis is None or rank is None:
        return rank
    return rank - 1 if isinstance(rank, int) else None


def vmap(
    fun: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    *,
    method: str | None = None,
) -> Batched | PerArity:
    """Map ``fun`` over an axis of its arguments (JAX's ``jax.vmap``).

    ``in_axes``: an int, None, or a tuple/list with one entry per positional argument
    (each an int, None, or a pytree prefix of the argument); negative axes count from
    the end; keyword arguments are mapped over axis 0. ``out_axes``: where the batch
    axis goes in the output (None: the output must be the same for every example).
    ``axis_size``: the batch size when no argument is mapped. ``method``: None (the
    vectorized method where it applies, else a loop), ``"vectorized"`` or ``"loop"``.
    """
    if takes_star_args(fun):
        return PerArity(
            fun,
            lambda f: Batched(f, in_axes, out_axes, axis_name, axis_size, method),
            "vmap",
        )
    return Batched(fun, in_axes, out_axes, axis_name, axis_size, method)
