"""The kernels behind ``nx.jit(..., backend="gpu")``: a call prepared for one (its
arguments as the kernel reads them) and the kernel generated for it, from the device
function of the code each thread runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numbax.numba_backend.cuda import reductions as cuda_reduction
from numbax.numba_backend.cuda import target as gpu
from numbax.numba_backend.cuda import thread_shapes
from numbax.transform.source import FunctionSource

Kernel = gpu.PerExampleKernel | cuda_reduction.ReductionKernels


@dataclass(frozen=True)
class Reduced:
    """How a reduction runs: its reducer, the ``(outer, reduced, inner)`` sizes of the
    arguments' layout, the order the kernels read their axes in (None: as they are),
    the result's shape, and the function of each result after the reduction, if any."""

    reducer: str
    sizes: tuple[int, int, int]
    order: tuple[int, ...] | None
    shape: tuple[int, ...]
    after: FunctionSource | None = None


@dataclass
class KernelCall:
    """A call prepared for a kernel: where its code's source comes from and which part
    of the user's function that is (``device_function``'s ``part``), what kind of
    kernel runs it (``vmap``: per example; ``elementwise``: per element), the arguments
    (mapped ones split per thread), the batch's size and shape, and the reduction of
    the elementwise values, if any. ``broadcast[k]``: whether mapped argument ``k`` is
    read through strides, which ``locate`` gives after the shape of the elements' array
    (``cuda.broadcast_parameters``)."""

    read: Callable[[], FunctionSource]
    part: str
    kind: str
    args: list[Any]
    mapped: tuple[bool, ...]
    size: int
    shape: tuple[int, ...]
    reduced: Reduced | None = None
    broadcast: tuple[bool, ...] = ()
    locate: list[Any] = field(default_factory=list)

    @property
    def key(self) -> tuple:
        """What the kernel's code depends on: which arguments are split and how, and
        their types; for a thread per example, the shapes of its arrays (the arrays it
        makes take their shapes from them)."""
        types = tuple(type_key(a) for a in self.args)
        if self.kind != "vmap":
            return (self.mapped, self.broadcast, types)
        shapes = tuple(
            tuple(a.shape[1:] if m else a.shape) if hasattr(a, "shape") else ()
            for a, m in zip(self.args, self.mapped, strict=True)
        )
        return (self.mapped, self.broadcast, types, shapes)


def build_kernel(call: KernelCall) -> Kernel:
    """Generate and compile the kernel ``call`` runs, and the device functions it calls."""
    # One example run as Python on the host: the structure and dtypes of its results.
    # Without elements, a zero of each array's dtype (elementwise code is straight-line).
    pairs = zip(call.args, call.mapped, strict=True)
    if call.size:
        example = [gpu.to_host(a[0] if m else a) for a, m in pairs]
    else:
        example = [np.zeros((), a.dtype) if m else a for a, m in pairs]
    if call.kind == "vmap":  # and the shapes of the arrays each example makes
        return _per_example(call, example)
    function = gpu.device_function(call.read(), part=call.part)
    params = list(function.generated.function.__code__.co_varnames[: len(call.args)])
    with np.errstate(all="ignore"):
        results = gpu.Results.of(function.generated.function(*example))
    first = function.generated.text.splitlines()[0]
    if call.reduced is not None:
        reducer = call.reduced.reducer
        dtype = cuda_reduction.REDUCERS[reducer](np.zeros(1, results.dtypes[0])).dtype
        result, finishing = dtype, None
        if call.reduced.after is not None:
            after = f"{call.part}, after the reduction"
            finishing = gpu.device_function(call.reduced.after, part=after)
            with np.errstate(all="ignore"):
                value = finishing.generated.function(dtype.type(1), *example)
            result = gpu.Results.of(value).dtypes[0]
        describe = first.replace("# gpu device function of ", f"{reducer} of the values of ", 1)
        return cuda_reduction.reduction_kernels(
            function,
            params,
            call.mapped,
            reducer,
            (dtype, result),
            describe,
            finishing,
            call.broadcast,
        )
    describe = first.replace("# gpu device function of ", f"{call.kind} of ", 1)
    name = f"_kernel_{function.generated.function.__name__}"
    return gpu.per_example_kernel(
        name, function, params, call.mapped, results, describe, "element", call.broadcast
    )


def _per_example(call: KernelCall, example: list[Any]) -> Kernel:
    """vmap's kernel: its device function generated for the shapes of the arrays one
    example holds and returns, when it holds or returns any."""
    recording = thread_shapes.record_arrays(gpu.host_function(call.read()).function, example)
    arrays = recording.needs_local_arrays
    shapes = thread_shapes.ThreadArrays.of(recording) if arrays else None
    function = gpu.device_function(call.read(), part=call.part, arrays=shapes)
    params = list(function.generated.function.__code__.co_varnames[: len(call.args)])
    results = gpu.Results.of(recording.result, arrays=arrays)
    first = function.generated.text.splitlines()[0]
    describe = first.replace("# gpu device function of ", "vmap of ", 1)
    name = f"_kernel_{function.generated.function.__name__}"
    return gpu.per_example_kernel(name, function, params, call.mapped, results, describe)


def is_array(value: Any) -> bool:
    """Whether ``value`` is an array, on the host or on the device."""
    return isinstance(value, np.ndarray) or gpu.is_device_array(value)


def type_key(value: Any) -> tuple:
    """What a compiled kernel depends on of an argument: its dtype and rank, or type."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return (str(np.dtype(value.dtype)), len(value.shape))
    return (type(value).__name__,)
