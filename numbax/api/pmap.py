"""``pmap``: JAX's ``jax.pmap``, over the cores of this machine.

JAX maps ``pmap``'s axis over devices, one example a device, and on a CPU makes its
devices with ``--xla_force_host_platform_device_count``. numbax's devices are the
CPU's cores (``nx.devices()``), with no flag, and any axis length is accepted: the
examples are spread over the cores, each core taking the next example when it finishes
one (examples of uneven cost balance).

A call runs the compiled loop of ``nx.vmap(f, method="loop")`` with its examples after
the first on Numba's threading layer (``transform/batch/loop.py``'s
``threaded_loop_functions``, ``numba_backend/loops/examples.py``): each example is the
same compiled function ``nx.jit(nx.vmap(f, method="loop"))`` calls, writing into the
batch allocated from the first, so the results are bit-identical to it for any number
of threads. The compiled code holds no Python lock while the examples run, starts no
Python thread, and gives BLAS one thread meanwhile.

A function with collectives over ``axis_name`` (``nx.lax.psum``, ``all_gather``,
``ppermute``...) runs in stages: its body is split at each collective as ``vmap``'s loop
splits it (``transform/batch/collectives.py``); each part's examples run on the threads
as above, and between the parts each collective computes over the whole batch on the
calling thread, with the code ``vmap``'s loop runs, so the results are bit-identical
to it too. A map that makes host callbacks (``pure_callback``) or that takes or returns
dicts mapped by a prefix of ``in_axes``/``out_axes`` runs as ``vmap`` runs it, on one
thread, and so does a function numbax cannot compile (the map is then interpreted).
The derivatives of a ``pmap`` (``nx.grad`` of a loss calling it) map the function's JVP or
VJP the same way, on every core and in stages where it has collectives: the numbers of
``vmap``'s derivatives.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

import numpy as np

from numbax.api.devices import Device, local_device_count
from numbax.api.jit import Jitted
from numbax.api.per_arity import PerArity
from numbax.api.rewritten import where
from numbax.api.transformed import Generated
from numbax.api.vmap import Batched, _has_dict, _loaded
from numbax.codegen.cache import cache_key
from numbax.codegen.load import load_module, module_name
from numbax.codegen.variadic import takes_star_args
from numbax.errors import CompileError, TransformError
from numbax.numba_backend.cpu import compile_helper, typed_per_process
from numbax.numba_backend.loops.blas_threads import one_blas_thread
from numbax.numba_backend.loops.examples import examples_runner
from numbax.numba_backend.loops.threads import launch
from numbax.numba_backend.typed_calls import compiled_calling
from numbax.transform.batch.collectives import split_loop_function
from numbax.transform.batch.loop import ThreadedExamples, threaded_loop_functions
from numbax.transform.source import display_name

__all__ = ["pmap"]

_SERIAL_ONLY = ("parallel", "nogil")
"""Options of a compiled caller that the function of one example is not compiled with:
it is the serial loop's (``nx.jit(nx.vmap(f, method="loop"))``), bit for bit."""


class Pmapped(Batched):
    """``pmap(fun, ...)``: call it on a batch; its examples run on every core."""

    transformation = "pmap"

    def __init__(
        self,
        fun: Callable,
        in_axes: Any = 0,
        out_axes: Any = 0,
        axis_name: Any = None,
        axis_size: int | None = None,
        threads: int | None = None,
    ) -> None:
        """``threads``: at most this many threads (``devices``' count); None: one per
        device, ``nx.local_device_count()``."""
        super().__init__(fun, in_axes, out_axes, axis_name, axis_size, method="loop")
        self.threads = threads
        self._entry: Jitted | None = None
        self._interpreted = False  # numbax could not compile it: vmap's interpreted loop
        self._threaded_text: Generated | None = None  # what nx.show shows of a threaded call

    @property
    def name(self) -> str:
        return f"pmap_{super(Batched, self).name}"

    def _key(self) -> tuple:
        return (*super()._key(), self.threads)

    def _by_position_view(
        self, n_positional: int, keywords: tuple[str, ...], **options: Any
    ) -> Batched:
        view = Pmapped(
            self.by_position,
            in_axes=self._axes(n_positional, keywords),
            out_axes=self.out_axes,
            axis_name=self.axis_name,
            axis_size=self.axis_size,
            threads=self.threads,
        )
        view.per_example_callbacks = options.get("per_example_callbacks", False)
        return view

    def _derivative_map(self, derivative: Callable, in_axes: tuple, out_axes: Any) -> Batched:
        """The derivative's examples on every core too, in stages where it has
        collectives (the derivative of a ``psum`` is one): a ``pmap`` of it, which runs
        the code of vmap's loop, so the numbers are the same."""
        derived = Pmapped(
            derivative, in_axes, out_axes, self.axis_name, self.axis_size, self.threads
        )
        derived.per_example_callbacks = self.per_example_callbacks
        return derived

    def _axes(self, n_positional: int, keywords: tuple[str, ...]) -> tuple:
        try:
            return super()._axes(n_positional, keywords)
        except (TypeError, ValueError) as error:  # vmap's words, for the user's function
            message = str(error).replace("vmap", "pmap")
            raise type(error)(f"pmap of {display_name(self.fun)}: {message}") from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._interpreted:
            return super().__call__(*args, **kwargs)  # vmap's loop, on one thread
        if self._entry is None:
            self._entry = Jitted(self, nogil=True)  # no Python lock held while it runs
        try:
            with one_blas_thread():  # the first example too (loops/blas_threads.py)
                return self._entry(*args, **kwargs)
        except (CompileError, TransformError):  # what numbax cannot compile, vmap interprets
            self._interpreted = True
            return super().__call__(*args, **kwargs)

    def _loop_dispatcher(self, options: dict[str, Any]) -> Any:
        """The map compiled with its examples on every thread; vmap's compiled loop,
        on one thread, where that cannot be (see the module's docstring)."""
        key = ("pmap", *sorted(options.items()))
        if key in self._dispatchers:
            return self._dispatchers[key]
        serial = {k: v for k, v in options.items() if k not in _SERIAL_ONLY}
        axes = self._axes(len(self.parameters("pmap")), ())
        if _has_dict(axes) or _has_dict(self.out_axes):
            self._dispatchers[key] = super()._loop_dispatcher(serial)
        elif self._collective_parts() is not None:
            self._dispatchers[key] = self._staged(axes, options, serial)
        else:
            function = compile_helper(self.by_position, serial)
            if typed_per_process([function]):  # it calls back into Python: one thread
                self._dispatchers[key] = super()._loop_dispatcher(serial)
            else:
                self._dispatchers[key] = self._threaded(axes, serial, function)
        return self._dispatchers[key]

    def _threaded(self, axes: tuple, options: dict[str, Any], function: Any) -> Any:
        """The two compiled functions of ``threaded_loop_functions``: the map, and one
        example, which ``examples_runner`` calls on the threads."""
        launch()  # the runner names the threading layer's symbols
        short = super(Batched, self).name
        limit = self.threads if self.threads is not None else local_device_count()
        names = (self.name, f"_{self.name}_example")
        callee = f"_{short}"
        driver, example = threaded_loop_functions(
            names,
            callee,
            short,
            self.parameters("pmap"),
            axes,
            self.out_axes,
            self.axis_size,
            "run_examples",
            limit,
        )
        described = ", ".join(f"{k}={v!r}" for k, v in sorted(options.items())) or "none"
        header = [
            f"pmap of {where(self.fun)}: one call per example, on every thread",
            f"in_axes={axes!r} (per parameter), out_axes={self.out_axes!r}; "
            f"at most {limit} threads",
            f"compiled by Numba with options: {described}",
        ]
        example_code = _loaded(example, header, {callee: function}, self.fun)
        one = compiled_calling(example_code.function, options, [function])
        namespace = {callee: function, names[1]: one, "run_examples": examples_runner(one)}
        generated = _loaded(driver, header, namespace, self.fun)
        body = example_code.text.split("\n\n\n", 1)[-1]  # its def, after the header
        self._threaded_text = replace(generated, text=f"{generated.text}\n\n{body}")
        return compiled_calling(generated.function, options, [function, one])

    def _staged(self, axes: tuple, options: dict[str, Any], serial: dict[str, Any]) -> Any:
        """The map of a function with collectives, in stages: each part's examples on
        every thread (as :meth:`_threaded` runs the whole function's), each collective
        over the batch between them on this thread, in vmap's order (its loop's code:
        ``transform/batch/collectives.py``). On one thread where a part calls back into
        Python."""
        parts = self._collective_parts()
        short = super(Batched, self).name
        callees = [f"_{short}_part{k + 1}" for k in range(len(parts))]
        compiled = {
            callee: compile_helper(self._part(k, callee[1:]), serial)
            for k, callee in enumerate(callees)
            if k == len(parts) - 1 or parts[k].outputs  # else the part need not run
        }
        if typed_per_process(compiled.values()):
            return super()._loop_dispatcher(serial)
        launch()  # the runners name the threading layer's symbols
        limit = self.threads if self.threads is not None else local_device_count()

        def names(callee: str) -> tuple[str, str]:
            stage = callee[len(short) + 1 :]  # _part1
            return f"_{self.name}{stage}_example", f"run{stage}"

        threaded = ThreadedExamples(names, limit)
        tree = split_loop_function(
            self.name,
            short,
            parts,
            callees,
            self.parameters("pmap"),
            axes,
            self.out_axes,
            self.axis_size,
            examples=threaded,
        )
        described = ", ".join(f"{k}={v!r}" for k, v in sorted(options.items())) or "none"
        header = [
            f"pmap of {where(self.fun)} over axis {self.axis_name!r}: in stages, each "
            "part's examples on every thread",
            f"in_axes={axes!r} (per parameter), out_axes={self.out_axes!r}; "
            f"at most {limit} threads",
            f"each part runs every example up to a collective ({callees[0]}...) on the "
            "threads, then the collective reduces over the batch on this thread",
            f"compiled by Numba with options: {described}",
        ]
        namespace: dict[str, Any] = {"np": np, **compiled}
        examples = []
        for example, callee, runner in threaded.functions:
            code = _loaded(example, header, {callee: compiled[callee]}, self.fun)
            one = compiled_calling(code.function, serial, [compiled[callee]])
            namespace.update({example.name: one, runner: examples_runner(one)})
            examples.append(code.text.split("\n\n\n", 1)[-1])  # its def, after the header
        generated = _loaded(tree, header, namespace, self.fun, self._source.line)
        self._threaded_text = replace(generated, text="\n\n".join([generated.text, *examples]))
        return compile_helper(generated.function, options)

    def shown(self) -> Generated:
        """What ``nx.show`` shows: the threaded map and its example (made here where
        this object's calls ran code another ``pmap`` of the function compiled)."""
        if self._threaded_text is None and not self._interpreted:
            try:
                self._loop_dispatcher({})  # generates; Numba compiles at a call only
            except (CompileError, TransformError):
                self._interpreted = True
        if self._threaded_text is not None and not self._interpreted:
            return self._threaded_text
        return super().shown()


class StaticPmapped:
    """``pmap(fun, static_broadcasted_argnums=...)``: each call's static arguments
    (hashed, as ``jit``'s ``static_argnums``) select a ``pmap`` of ``fun`` with them
    bound as constants, compiled for them.

    A function with collectives is mapped itself, its static arguments passed to every
    example as arguments of ``in_axes`` None (compiled for their types, not their
    values): numbax rewrites collectives in the body of the mapped function, and a
    function binding the statics would call ``fun`` from its own."""

    def __init__(
        self, fun: Callable, static: tuple[int, ...], make: Callable, axis_name: Any = None
    ) -> None:
        self.fun = fun
        self.static = static
        self.axis_name = axis_name
        self._make = make
        self._maps: dict[Hashable, Pmapped] = {}
        functools.update_wrapper(self, fun, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        n = len(args)
        positions = sorted({p % n if -n <= p < n else p for p in self.static})
        if any(p >= n for p in positions):
            raise ValueError(
                f"pmap of {display_name(self.fun)}: static_broadcasted_argnums="
                f"{self.static} names positions past the {n} positional arguments given"
            )
        values = tuple(args[p] for p in positions)
        key = (tuple(positions), *((type(v), v) for v in values))
        try:
            hash(key)
        except TypeError:
            raise TypeError(
                f"pmap of {display_name(self.fun)}: static arguments must be hashable (as "
                f"jit's static_argnums), got {values!r}; pass a tuple instead of a list"
            ) from None
        if self._collectives:  # passed to every example instead: see the class docstring
            key = ("broadcast", n, tuple(positions))
            if key not in self._maps:
                self._maps[key] = self._make(self.fun, (), broadcast=(n, tuple(positions)))
            return self._maps[key](*args, **kwargs)
        if key not in self._maps:
            self._maps[key] = self._make(_with_statics(self.fun, positions, values, n), positions)
        dynamic = [a for k, a in enumerate(args) if k not in positions]
        return self._maps[key](*dynamic, **kwargs)

    @functools.cached_property
    def _collectives(self) -> bool:
        """Whether the function's body calls collectives, which numbax rewrites in the
        mapped function's own body only (not in a function binding the statics)."""
        try:
            return Pmapped(self.fun, axis_name=self.axis_name)._collective_parts() is not None
        except (CompileError, TransformError, TypeError, OSError):
            return False

    def __numbax_dispatcher__(self, options: dict[str, Any]) -> Any:
        raise TypeError(
            f"pmap of {display_name(self.fun)} with static_broadcasted_argnums cannot be "
            "called from compiled or transformed code: its static values are known only "
            "at a call from Python; close over them instead (nx.pmap(lambda x: f(x, n)))"
        )

    __numbax_function__ = __numbax_dispatcher__

    def __repr__(self) -> str:
        return f"<numbax.pmap of {display_name(self.fun)!r}>"


def _with_statics(fun: Callable, positions: list[int], values: tuple, n: int) -> Callable:
    """A function of the other ``n - len(positions)`` positional arguments calling
    ``fun`` with ``values`` at ``positions``: its closure holds them, so numbax keys the
    generated code on them and Numba compiles them in as constants."""
    name = getattr(fun, "__name__", "")
    name = name if name.isidentifier() else "static_"
    given = [f"arg_{k}" for k in range(n) if k not in positions]
    passed = [f"static_{k}" if k in positions else f"arg_{k}" for k in range(n)]
    statics = [f"static_{k}" for k in positions]
    text = (
        f"# {name} with its static arguments at {positions} bound (nx.pmap)\n"
        f"def make(static_func, {', '.join(statics)}):\n"
        f"    def {name}({', '.join(given)}):\n"
        f"        return static_func({', '.join(passed)})\n"
        f"    return {name}\n"
    )
    module = load_module(module_name(f"static_{name}", cache_key(text)), text, {})
    return module.make(fun, *values)


def pmap(
    fun: Callable,
    axis_name: Any = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    static_broadcasted_argnums: int | tuple[int, ...] = (),
    devices: Any = None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums: int | tuple[int, ...] = (),
) -> Pmapped | StaticPmapped | PerArity:
    """Map ``fun`` over an axis of its arguments on every core (JAX's ``jax.pmap``).

    The devices are the CPU's cores (``nx.devices()``); the axis may have any length,
    its examples spread over them, each core taking the next example when it finishes
    one. Each example runs the code ``nx.jit(nx.vmap(fun, method="loop"))`` runs, so the
    results are bit-identical to it for any number of threads (``numba.set_num_threads``
    limits them too). ``in_axes``, ``out_axes``, ``axis_size``: as ``vmap``'s.
    ``static_broadcasted_argnums``: positional arguments passed to every example as they
    are, as constants compiled in (hashable; each new value compiles anew, as ``jit``'s
    ``static_argnums``), or, where ``fun`` has collectives, as arguments of ``in_axes``
    None. ``devices``: a list of ``nx.devices()`` entries, as many threads
    at most; or ``nx.distributed.devices(client)``: the map runs on those Dask workers
    (``nx.distributed.map``). ``donate_argnums`` is accepted and ignored; ``backend``
    must be the CPU.

    A function with collectives over ``axis_name`` (``nx.lax.psum``, ``pmean``,
    ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``, ``ppermute``, ``axis_index``,
    ``axis_size``) runs in stages: the examples of each part between collectives on
    every core, each collective over the batch between them.
    Derivatives of a ``pmap`` (``nx.grad`` of a loss calling it) are ``pmap``s of the
    function's JVP or VJP: on every core, with ``vmap``'s numbers.
    """
    if backend not in (None, "cpu"):
        raise RuntimeError(f"pmap backend {backend!r} is not available: numbax maps on the CPU")
    devices = None if devices is None else list(devices)
    elsewhere = getattr(devices[0], "__numbax_pmap__", None) if devices else None
    if elsewhere is not None:  # a cluster's devices (nx.distributed.devices): its map
        return elsewhere(
            fun,
            devices,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            static_broadcasted_argnums=static_broadcasted_argnums,
        )
    threads = _thread_limit(fun, devices)
    static = _as_tuple(static_broadcasted_argnums)

    def make(
        f: Callable,
        positions: tuple[int, ...] = (),
        broadcast: tuple[int, tuple[int, ...]] | None = None,
    ) -> Pmapped | PerArity:
        """A map of ``f``: the statics at ``positions`` bound in it (their entries of
        ``in_axes`` dropped), or, ``broadcast=(n, positions)``, passed to every example
        of ``f``'s ``n`` positional arguments (their entries None)."""
        axes = in_axes
        if positions and isinstance(axes, tuple | list):  # the statics' entries go
            axes = tuple(a for k, a in enumerate(axes) if k not in positions)
        if broadcast is not None:
            n, shared = broadcast
            given = tuple(axes) if isinstance(axes, tuple | list) else (axes,) * n
            axes = tuple(None if k in shared else a for k, a in enumerate(given))
        if takes_star_args(f):
            return PerArity(
                f, lambda g: Pmapped(g, axes, out_axes, axis_name, axis_size, threads), "pmap"
            )
        return Pmapped(f, axes, out_axes, axis_name, axis_size, threads)

    try:
        if static:
            if not all(isinstance(p, int) for p in static):
                raise TypeError(f"static_broadcasted_argnums must be ints, got {static!r}")
            return StaticPmapped(fun, static, make, axis_name)
        return make(fun)
    except TypeError as error:
        if str(error).startswith("pmap of"):
            raise
        message = str(error).replace("vmap", "pmap")
        raise TypeError(f"pmap of {display_name(fun)}: {message}") from None


def _as_tuple(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple(value)


def _thread_limit(fun: Callable, devices: Any) -> int | None:
    """The threads ``devices`` allow (None: every device)."""
    if devices is None:
        return None
    devices = list(devices)
    if not devices or not all(isinstance(d, Device) and d.platform == "cpu" for d in devices):
        raise ValueError(
            f"pmap of {display_name(fun)}: devices must be a non-empty list of the CPU's "
            f"devices from nx.devices(), got {devices!r}"
        )
    return len(devices)
