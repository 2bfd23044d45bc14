"""``vmap``: a function of one example made a function of a batch (JAX's ``jax.vmap``).

numbax batches by writing a loop over the batch axis that calls the function once per
example (``transform/batching.py`` writes it; ``nx.show`` prints it). Unlike JAX's
batching rules this needs nothing of the function's body: Python control flow that
depends on the mapped values, in-place updates and calls to anything numbax can run all
batch, and under ``nx.jit`` the loop compiles with the function.

Derivatives commute with batching: the JVP of ``vmap(f)`` is ``vmap`` of ``f``'s JVP,
and its VJP is ``vmap`` of ``f``'s VJP, with the cotangents of unmapped arguments
summed over the batch. That is what a transformation gets for a call to a batched
function, so ``grad`` of a loss that calls ``vmap``, per-example gradients
``vmap(grad(loss), in_axes=(None, 0, 0))`` and their Hessians compose.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from numbax.rewritten import Rewritten, load_generated, tangent_name, where
from numbax.transform.numpy_functions import is_numpy_function, numpy_wrapper
from numbax.transform.source import display_name
from numbax.transformed import Generated

__all__ = ["vmap"]

_METHODS = (None, "loop")


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

    def __init__(
        self,
        fun: Callable,
        in_axes: Any = 0,
        out_axes: Any = 0,
        axis_name: Any = None,
        axis_size: int | None = None,
        method: str | None = None,
    ) -> None:
        if method not in _METHODS:
            raise NotImplementedError(
                f"vmap(method={method!r}): numbax batches by a loop over the batch axis "
                "(method='loop', the default); the vectorized method is not built yet."
            )
        if axis_name is not None:
            raise NotImplementedError(
                "vmap(axis_name=...): the collectives (nx.lax.psum, pmean, ...) are not built "
                "yet; leave axis_name=None."
            )
        if is_numpy_function(fun):  # vmap(np.dot): a wrapper numbax can call and read
            fun = numpy_wrapper(fun)
        super().__init__(fun, (), "")
        self.in_axes = _check_axes_spec(in_axes)
        self.out_axes = out_axes
        self.axis_size = axis_size
        self._loops: dict[str, Generated] = {}
        self._dispatchers: dict[tuple, Any] = {}

    @property
    def name(self) -> str:
        return f"vmap_{super().name}"

    def _identity(self) -> tuple:
        return (self.in_axes, self.out_axes, self.axis_size)

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
        bound = inspect.signature(self.fun).bind(*args, **kwargs)
        bound.apply_defaults()
        axes = self._axes(len(args), tuple(kwargs))
        return self.loop(axes).function(*bound.arguments.values())

    def __numbax_dispatcher__(self, options: dict[str, Any]) -> Any:
        """The loop compiled by Numba as generated (it is already what Numba compiles),
        calling the compiled function; under ``parallel=True`` its examples run on all
        cores (``prange``; each writes its own slice of the batch)."""
        import numba

        from numbax.numba_backend.cpu import compile_helper

        key = tuple(sorted(options.items()))
        if key not in self._dispatchers:
            axes = self._axes(len(self.parameters("vmap")), ())
            generated = self.loop(axes, compiled=options)
            generated.function.__globals__["_" + super().name] = compile_helper(self.fun, options)
            self._dispatchers[key] = numba.njit(**{"cache": True, **options})(generated.function)
        return self._dispatchers[key]

    @property
    def source(self) -> str:
        """The generated loop for a call passing every argument positionally."""
        return self.loop(self._axes(len(self.parameters("vmap")), ())).text

    def loop(self, axes: tuple, compiled: dict[str, Any] | None = None) -> Generated:
        """The generated loop for one assignment of axes to the parameters; ``compiled``:
        Numba's options, for the loop Numba compiles (over ``prange``, calling the
        function's compiled version, which the caller binds). Each set of options has its
        own module, because Numba's disk cache tells its entries apart by argument types
        only."""
        key = repr((axes, compiled))  # axes may hold dicts (pytree prefixes)
        if key not in self._loops:
            import numba

            from numbax.transform.batching import batching_loop

            params = self.parameters("vmap")
            short = super().name
            header, body, namespace = batching_loop(
                self.name,
                short,
                params,
                axes,
                self.out_axes,
                self.axis_size,
                loop="range" if compiled is None else "prange",
            )
            if compiled is None:
                namespace["_" + short] = self.fun
            else:
                namespace["prange"] = numba.prange
                options = ", ".join(f"{k}={v!r}" for k, v in sorted(compiled.items()))
                header.append(f"compiled by Numba with options: {options or 'none'}")
            self._loops[key] = load_generated(
                self.name,
                [f"vmap of {where(self.fun)}: one call per example, in a loop", *header],
                body,
                namespace,
            )
        return self._loops[key]

    # -- derivatives: vmap of the derivative --------------------------------------------
    def _derive(self, mode: str, positions: tuple[int, ...], params: list[str]) -> Generated:
        from numbax.autodiff import callee_derivative

        axes = self._axes(len(params), ())
        derivative = callee_derivative(self.fun, mode, positions).function
        if mode == "jvp":
            tangents = [tangent_name(params[i]) for i in positions]
            batched = Batched(
                derivative,
                in_axes=axes + tuple(axes[i] for i in positions),
                out_axes=(self.out_axes, self.out_axes),
                axis_size=self.axis_size,
            )
            name = f"jvp_{self.name}"
            call = ", ".join(params + tangents)
            body = [f"def {name}({call}):", f"    return _batched_jvp({call})"]
            return load_generated(
                name,
                [f"JVP of {self.name}: vmap of the JVP of {display_name(self.fun)}"],
                body,
                {"_batched_jvp": batched},
                of=self.__numbax_function__(),
            )
        cotangent_axes = tuple(0 if axes[i] is None else axes[i] for i in positions)
        batched = Batched(
            derivative,
            in_axes=axes + (self.out_axes,),
            out_axes=cotangent_axes,
            axis_size=self.axis_size,
        )
        name = f"vjp_{self.name}"
        call = ", ".join([*params, "_ct_out"])
        parts = [
            f"_cts[{k}]" if axes[i] is not None else f"nxrt.batch_sum(_cts[{k}])"
            for k, i in enumerate(positions)
        ]
        result = f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
        body = [
            f"def {name}({call}):",
            f"    _cts = _batched_vjp({call})",
            "    # an argument the batch shares gets the sum of its examples' cotangents",
            f"    return {result}",
        ]
        return load_generated(
            name,
            [f"VJP of {self.name}: vmap of the VJP of {display_name(self.fun)}"],
            body,
            {"_batched_vjp": batched},
            of=self.__numbax_function__(),
        )


def vmap(
    fun: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    *,
    method: str | None = None,
) -> Batched:
    """Map ``fun`` over an axis of its arguments (JAX's ``jax.vmap``).

    ``in_axes``: an int, None, or a tuple/list with one entry per positional argument
    (each an int, None, or a pytree prefix of the argument); negative axes count from
    the end; keyword arguments are mapped over axis 0. ``out_axes``: where the batch
    axis goes in the output (None: the output must be the same for every example).
    ``axis_size``: the batch size when no argument is mapped.
    """
    return Batched(fun, in_axes, out_axes, axis_name, axis_size, method)
