"""``nx.jit(f, backend="gpu")``: one GPU thread per example, or per element.

What JAX does worst on a GPU is a batch of examples that each run their own loops,
branches and ``while`` loops: ``jax.vmap`` turns branches into selects and runs every
lane until the slowest finishes. Here ``jit(vmap(f), backend="gpu")`` makes each example
a GPU thread running ``f``'s generated code (``f`` may be ``grad``, ``value_and_grad``
or ``jvp`` of a user function: its derivative runs inside the thread), so it follows its
own control flow. Arguments mapped over their first axis are split per example; the
others (``in_axes`` None) are read whole by every thread.

``jit(f, backend="gpu")`` of a function of elementwise lines (ufuncs, ``np.where``,
arithmetic: what the CPU fuses into one loop) and reductions of them (``np.sum``,
``prod``, ``max``, ``min``, ``mean``, with ``axis`` and ``keepdims``) runs as kernels,
one stage after another (``numba_backend/cuda/stages.py``): a thread per element of the arguments'
broadcast, and reduction kernels that make the values they reduce
(``numba_backend/cuda/reductions.py``). ``softmax`` is three stages: ``max``, ``sum`` and
the quotient. Any other function is refused at its first line that is neither.

Each example (element) returns numbers, or tuples of them nested any way; each number
becomes a device array with the batch (the broadcast shape) first, in the example's
tuples. Results stay on the device until ``nx.device_get`` (or ``np.asarray``) copies
them back; device arrays of other libraries are taken without a copy.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax.api.callable import NumbaxFunction
from numbax.numba_backend.cuda import target as gpu
from numbax.numba_backend.cuda.kernels import Kernel, KernelCall, build_kernel, is_array
from numbax.numba_backend.cuda.stages import (
    ElementwiseStage,
    elementwise_stages,
    finishes_with_an_array,
    run_stages,
)
from numbax.transform.source import display_name, read_function


class GpuJitted(NumbaxFunction):
    """``jit(vmap(f), backend="gpu")``, or ``jit(f, backend="gpu")`` of an ``f`` of
    elementwise lines and reductions: call it on arrays; ``.source`` shows the kernels
    and the device functions their threads run."""

    transformation = "jit"

    def __init__(self, fun: Callable, **options: Any) -> None:
        """``options``: ``nx.jit``'s. JAX's ``donate_argnums`` and ``keep_unused`` are
        taken and do nothing (results are new device arrays); the others are refused
        rather than ignored."""
        unsupported = {
            k: v
            for k, v in options.items()
            if k not in ("donate_argnums", "keep_unused", "device", "backend")
            and v is not None
            and v is not False
        }
        if unsupported:
            raise TypeError(
                f"jit(..., backend='gpu') does not take {sorted(unsupported)} yet: static "
                "arguments, inlining and Numba's CPU options are for the CPU backend"
            )
        super().__init__(fun)
        gpu.cuda_module()  # says now, not at the first call, when no GPU can run it
        self.batched = self.fun if getattr(self.fun, "transformation", None) == "vmap" else None
        self._signature = inspect.signature(self.fun if self.batched is None else self.batched.fun)
        # read and checked at the first call; by whether lines after the last reduction
        # finish its results in its kernels (False: they are a stage of their own)
        self._stages: dict[bool, list[ElementwiseStage]] = {}
        self._last: Kernel | None = None  # vmap's
        self._ran: list[ElementwiseStage] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        values = self._arguments(args, kwargs)
        if self.batched is None:
            self._ran = self.stages(values)
            return run_stages(self._ran, values, self._cached)
        call = self._per_example(values, args, gpu.to_device)
        kernel = self._kernel(call)
        shapes = kernel.results.shapes
        results = [
            gpu.empty((call.size, *shape), dtype)
            for dtype, shape in zip(kernel.results.dtypes, shapes, strict=True)
        ]
        kernel.launch(call.size, call.args, results)
        return kernel.results.rebuild(results)

    def stages(self, values: list[Any]) -> list[ElementwiseStage]:
        """The stages ``jit(f)`` (not of a ``vmap``) runs on ``values``, read and checked
        once: the lines after its last reduction finish its results in its kernels,
        unless they read an array argument."""
        attached = self._split(attach=True)
        named = dict(zip(self._signature.parameters, values, strict=True))
        return self._split(attach=False) if finishes_with_an_array(attached, named) else attached

    def _split(self, attach: bool) -> list[ElementwiseStage]:
        if attach not in self._stages:
            self._stages[attach] = elementwise_stages(self.fun, attach)
        return self._stages[attach]

    def kernel(self, *args: Any) -> Kernel:
        """The kernel a call with these (host) arguments runs, generated without moving
        anything to the device: its ``text``, and its launchers' Python functions to
        compile ahead of time. A function of several stages has several kernels
        (:meth:`stage_kernels`)."""
        found = self.stage_kernels(*args)
        if len(found) != 1:
            raise ValueError(
                f"{display_name(self.fun)} runs on the GPU as {len(found)} kernels, one after "
                "another; stage_kernels() gives each"
            )
        return found[0][0]

    def stage_kernels(self, *args: Any) -> list[tuple[Kernel, list[Any], list[Any]]]:
        """Each stage's kernel for these (host) arguments, with what its launchers are
        given (the arguments as the kernel reads them, an elementwise call's arrays
        flat; then the shape and strides that locate broadcast ones), generated without
        running any: an earlier stage's result stands in as zeros of its shape and
        dtype. ``benchmarks/gpu/ptx.py`` compiles them to PTX."""
        values = self._arguments(args, {})
        if self.batched is not None:
            call = self._per_example(values, args, lambda value: value)
            return [(self._kernel(call), call.args, call.locate)]
        self._ran = self.stages(values)
        results: dict[str, Any] = {}
        found = []
        for stage in self._ran:
            call = stage.plan([*(results[n] for n in stage.inputs), *values], lambda v: v)
            kernel = stage.kernel(call, self._cached)
            found.append((kernel, call.args, call.locate))
            if stage.target is not None:
                results[stage.target] = np.zeros(call.reduced.shape, kernel.result_dtype)
        return found

    def _kernel(self, call: KernelCall) -> Kernel:
        """vmap's kernel for ``call``, made once per argument types."""
        self._last = self._cached(("kernel", call.key), lambda: build_kernel(call))
        return self._last

    def _arguments(self, args: tuple, kwargs: dict) -> list[Any]:
        """The arguments with the function's defaults after them, as it is called; each
        must be an array or a number (a thread reads nothing else)."""
        if kwargs:
            raise TypeError(
                f"{display_name(self.fun)} on the GPU takes its arguments by position; "
                f"got keyword arguments {sorted(kwargs)}"
            )
        bound = self._signature.bind(*args)
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            if not (is_array(value) or isinstance(value, bool | int | float | np.number)):
                raise TypeError(
                    f"{display_name(self.fun)} on the GPU: argument {name!r} is a "
                    f"{type(value).__name__}; a GPU thread takes arrays and numbers. Pass "
                    "the leaves of a pytree as arguments of their own, or run it on the CPU."
                )
        return list(bound.arguments.values())

    # -- vmap(f): a thread per example ---------------------------------------------------
    def _per_example(
        self, values: list[Any], args: tuple, place: Callable[[Any], Any]
    ) -> KernelCall:
        mapped = tuple(map(_mapped, self.batched._axes(len(args), ())))
        if self.batched.out_axes != 0:
            raise ValueError(
                f"vmap(out_axes={self.batched.out_axes!r}) on the GPU: results have the batch "
                "first (out_axes=0); move the axis after the call"
            )
        placed = [
            # a 0-d array read whole is a number in a thread, as in JAX
            gpu.to_host(v)[()]
            if is_array(v) and not m and len(v.shape) == 0
            else place(v)
            if is_array(v)
            else v
            for v, m in zip(values, mapped, strict=True)
        ]
        sizes = {int(a.shape[0]) for a, m in zip(placed, mapped, strict=True) if m}
        if len(sizes) != 1:
            raise ValueError(f"vmap got inconsistent sizes for the mapped axis: {sorted(sizes)}")
        (size,) = sizes
        if size == 0:
            raise ValueError(
                f"{display_name(self.fun)} on the GPU: the batch is empty. The first call "
                "runs one example on the host to learn the dtypes of the results, and there "
                "is none."
            )
        read = lambda: read_function(self.batched.by_position, "vmap")  # noqa: E731
        return KernelCall(read, "whole", "vmap", placed, mapped, size, (size,))

    @property
    def source(self) -> str:
        """The kernels the last call ran (their launch configuration) and the device
        functions their threads call."""
        if self.batched is not None and self._last is not None:
            kernel = self._last
            return f"{kernel.text}# {kernel.launch_description}\n\n\n{kernel.function.text}"
        ran = [stage for stage in self._ran if stage.last is not None]
        if not ran:
            return (
                f"# jit({display_name(self.fun)}, backend='gpu'): not called yet; the kernels "
                "are generated for the first call's argument types\n"
            )
        if len(ran) == 1:
            return ran[0].text
        return "\n\n".join(
            f"# ---- stage {k} of {len(ran)}: {stage.name} ----\n{stage.text}"
            for k, stage in enumerate(ran, start=1)
        )


def _mapped(axis: Any) -> bool:
    if axis is None:
        return False
    if axis == 0:
        return True
    raise ValueError(
        f"vmap(in_axes=...) on the GPU maps arguments over their first axis (0) or not at "
        f"all (None); got {axis!r}. Move the axis first (np.moveaxis) before the call."
    )
