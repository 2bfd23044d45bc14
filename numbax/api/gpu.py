"""``nx.jit(f, backend="gpu")``: one GPU thread per example, or per element.

What JAX does worst on a GPU is a batch of examples that each run their own loops,
branches and ``while`` loops: ``jax.vmap`` turns branches into selects and runs every
lane until the slowest finishes. Here ``jit(vmap(f), backend="gpu")`` makes each example
a GPU thread running ``f``'s generated code (``f`` may be ``grad``, ``value_and_grad``
or ``jvp`` of a user function: its derivative runs inside the thread), so it follows its
own control flow. Arguments mapped over their first axis are split per example; the
others (``in_axes`` None) are read whole by every thread.

``jit(f, backend="gpu")`` of an elementwise function (a chain of ufuncs, ``np.where``,
arithmetic: what the CPU fuses into one loop) is one kernel with a thread per element
of its arguments' broadcast shape. One that reduces such values (``np.sum``, ``prod``,
``max``, ``min``, ``mean``, with ``axis`` and ``keepdims``), and may compute its result
elementwise from the reduced value (``np.sqrt(np.sum(x * x, axis=1))``), runs them
inside reduction kernels (``numba_backend/cuda_reduction.py``). Any other function is
refused at its first line that is not elementwise.

Each example (element) returns numbers, or tuples of them nested any way; each number
becomes a device array with the batch (the broadcast shape) first, in the example's
tuples. Results stay on the device until ``nx.device_get`` (or ``np.asarray``) copies
them back; device arrays of other libraries are taken without a copy.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from numbax.api.callable import NumbaxFunction
from numbax.numba_backend import cuda as gpu
from numbax.numba_backend import cuda_reduction
from numbax.numba_backend.fuse import first_not_elementwise, parameters_read
from numbax.numba_backend.reduction_tail import (
    NotReducible,
    TrailingReduction,
    finishing_function,
    operand_function,
    trailing_reduction,
)
from numbax.transform.normalize import normalize
from numbax.transform.provenance import resolve
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource, display_name, read_function


class GpuJitted(NumbaxFunction):
    """``jit(vmap(f), backend="gpu")`` or ``jit(f, backend="gpu")`` of an elementwise
    ``f``: call it on arrays; ``.source`` shows the kernel and the device function each
    thread runs."""

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
        self._kernels: dict[tuple, gpu.PerExampleKernel | cuda_reduction.ReductionKernels] = {}
        self._last: gpu.PerExampleKernel | cuda_reduction.ReductionKernels | None = None
        self._last_launch = ""
        self._signature = inspect.signature(self.fun if self.batched is None else self.batched.fun)
        self._elementwise: FunctionSource | None = None  # read and checked at the first call
        self._reduction: TrailingReduction | None = None  # what it returns, if a reduction
        self._finishing: FunctionSource | None = None  # its lines after the reduction
        self._reads: set[str] = set()  # the parameters an elementwise result reads

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self._plan(args, kwargs, gpu.to_device)
        kernel = self._kernel(call)
        if call.reduced is not None:
            self._last_launch = kernel.launch_description(*call.reduced.sizes)
            reduced = kernel.run(*call.reduced.sizes, call.args, call.locate)
            return reduced.reshape(call.reduced.shape)
        self._last_launch = kernel.launch_description
        results = [gpu.empty((call.size,), dtype) for dtype in kernel.results.dtypes]
        if call.size:
            kernel.launch(call.size, call.args, results, call.locate)
        if len(call.shape) != 1:
            results = [r.reshape(call.shape) for r in results]
        return kernel.results.rebuild(results)

    def kernel(self, *args: Any) -> gpu.PerExampleKernel | cuda_reduction.ReductionKernels:
        """The kernel a call with these (host) arguments runs, generated without moving
        anything to the device: its ``text``, and its launchers' Python functions to
        compile ahead of time (``benchmarks/gpu/ptx.py`` compiles them to PTX)."""
        return self._kernel(self._plan(args, {}, lambda value: value))

    def kernel_arguments(self, *args: Any) -> tuple[list[Any], list[Any]]:
        """What :meth:`kernel`'s launchers are given for these (host) arguments: the
        arguments as the kernel reads them (an elementwise call's arrays flat), and
        the shape and strides that locate broadcast ones (empty when none is)."""
        call = self._plan(args, {}, lambda value: value)
        return call.args, call.locate

    def _plan(self, args: tuple, kwargs: dict, place: Callable[[Any], Any]) -> _Call:
        if kwargs:
            raise TypeError(
                f"{display_name(self.fun)} on the GPU takes its arguments by position; "
                f"got keyword arguments {sorted(kwargs)}"
            )
        if self.batched is None:
            call = self._per_element(args, place)
        else:
            call = self._per_example(args, place)
        if call.size == 0 and call.kind == "vmap":
            raise ValueError(
                f"{display_name(self.fun)} on the GPU: the batch is empty. The first call "
                "runs one example on the host to learn the dtypes of the results, and there "
                "is none."
            )
        return call

    # -- vmap(f): a thread per example ---------------------------------------------------
    def _per_example(self, args: tuple, place: Callable[[Any], Any]) -> _Call:
        values = self._with_defaults(args)
        mapped = tuple(map(_mapped, self.batched._axes(len(args), ())))
        if self.batched.out_axes != 0:
            raise ValueError(
                f"vmap(out_axes={self.batched.out_axes!r}) on the GPU: results have the batch "
                "first (out_axes=0); move the axis after the call"
            )
        placed = [place(v) if _is_array(v) else v for v in values]
        sizes = {int(a.shape[0]) for a, m in zip(placed, mapped, strict=True) if m}
        if len(sizes) != 1:
            raise ValueError(f"vmap got inconsistent sizes for the mapped axis: {sorted(sizes)}")
        (size,) = sizes
        read = lambda: read_function(self.batched.by_position, "vmap")  # noqa: E731
        return _Call(read, "vmap", placed, mapped, size, (size,))

    # -- an elementwise f: a thread per element --------------------------------------------
    def _per_element(self, args: tuple, place: Callable[[Any], Any]) -> _Call:
        values = self._with_defaults(args)
        mapped = tuple(map(_is_array, values))
        if not any(mapped):
            raise TypeError(
                f"{display_name(self.fun)} on the GPU runs once per element of its array "
                "arguments; it was given none (pass arrays, or call it on the CPU)"
            )
        source = self._elementwise_source()
        params = list(self._signature.parameters)
        if self._reduction is not None:
            after = [p for p, m in zip(params, mapped, strict=True) if m]
            after = sorted(set(after) & self._reduction.after_reads)
            if after:
                raise ValueError(
                    f"{display_name(self.fun)} on the GPU: after its reduction it reads array "
                    f"argument {after[0]!r}; the lines after the reduction compute from the "
                    "reduced value and numbers only. Pass a number, or run it on the CPU."
                )
        unread = [p for p, m in zip(params, mapped, strict=True) if m and p not in self._reads]
        if unread:
            raise ValueError(
                f"{display_name(self.fun)} on the GPU: array argument {unread[0]!r} does not "
                "reach the result, whose shape NumPy would then not broadcast with it; pass it "
                "as a scalar, or run the function on the CPU"
            )
        shape = np.broadcast_shapes(*(tuple(v.shape) for v in values if _is_array(v)))
        reduced = None if self._reduction is None else self._reduced(shape)
        order = None if reduced is None else reduced.order
        flat, broadcast, strides = [], [], []
        for value, m in zip(values, mapped, strict=True):
            data, stride = _argument(value, shape, order) if m else (value, None)
            flat.append(place(data) if m else data)
            broadcast.append(stride is not None)
            strides += [stride] if stride is not None else []
        laid_out = shape if order is None else tuple(shape[a] for a in order)
        locate = [laid_out, *strides] if strides else []
        size = math.prod(shape)
        call = _Call(lambda: source, "elementwise", flat, mapped, size, shape, reduced)
        call.broadcast, call.locate = tuple(broadcast), locate
        return call

    def _reduced(self, shape: tuple[int, ...]) -> _Reduced:
        """How the function's trailing reduction runs on arguments broadcast to
        ``shape``: the reduced axes are made neighbours (moved last when they are not:
        the arguments are then read through permuted strides), and the result gets
        NumPy's shape."""
        reduction = self._reduction
        axes = reduction.axes(len(shape))
        kept = tuple(a for a in range(len(shape)) if a not in axes)
        order = None
        if axes and axes != tuple(range(axes[0], axes[-1] + 1)):
            order = (*kept, *axes)
            axes = tuple(range(len(kept), len(shape)))
        laid_out = shape if order is None else tuple(shape[a] for a in order)
        sizes = cuda_reduction.layout(laid_out, axes)
        if sizes[1] == 0 and reduction.reducer in ("max", "min"):
            name = {"max": "maximum", "min": "minimum"}[reduction.reducer]
            raise ValueError(
                f"zero-size array to reduction operation {name} which has no identity "
                f"({display_name(self.fun)} on the GPU, as in NumPy)"
            )
        if reduction.keepdims:
            result = tuple(1 if a not in kept else n for a, n in enumerate(shape))
        else:
            result = tuple(shape[a] for a in kept)
        return _Reduced(reduction.reducer, sizes, order, result, self._finishing)

    def _with_defaults(self, args: tuple) -> tuple:
        """The arguments with the function's defaults after them, as it is called; each
        must be an array or a number (a thread reads nothing else)."""
        bound = self._signature.bind(*args)
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            if not (_is_array(value) or isinstance(value, bool | int | float | np.number)):
                raise TypeError(
                    f"{display_name(self.fun)} on the GPU: argument {name!r} is a "
                    f"{type(value).__name__}; a GPU thread takes arrays and numbers. Pass "
                    "the leaves of a pytree as arguments of their own, or run it on the CPU."
                )
        return tuple(bound.arguments.values())

    def _elementwise_source(self) -> FunctionSource:
        """The function's source, once it is known to be elementwise (read and checked
        at the first call); when it returns a reduction, the source of the values it
        reduces."""
        if self._elementwise is None:
            source = read_function(self.fun, "jit")
            fn = normalize(source, "jit")
            resolver = Resolver(source, local_names(fn))
            try:
                reduction = trailing_reduction(fn, resolver)
            except NotReducible as err:
                origin = resolve(source.filename, err.line)
                raise gpu.refusal(str(err), self.fun, origin.filename, origin.line) from None
            finishing = None if reduction is None else finishing_function(fn, reduction)
            if reduction is not None:
                fn = operand_function(fn, reduction)
                source = replace(source, tree=fn)
            stmt = first_not_elementwise(fn, resolver)
            if stmt is None and finishing is not None:
                stmt = first_not_elementwise(finishing, resolver)
                self._finishing = replace(source, tree=finishing)
            if stmt is not None:
                origin = resolve(source.filename, stmt.lineno)
                raise gpu.refusal(
                    "the GPU backend runs a function once per element of its arguments only "
                    "when every line is elementwise (ufuncs, np.where, arithmetic), and this "
                    "line is not. Batch it with jit(vmap(f), backend='gpu') (one thread per "
                    "example), or run it on the CPU (backend='cpu').",
                    self.fun,
                    origin.filename,
                    origin.line,
                )
            self._reads = parameters_read(fn)
            self._reduction = reduction
            self._elementwise = source
        return self._elementwise

    # -- both ------------------------------------------------------------------------------
    def _kernel(self, call: _Call) -> Any:
        key = (call.mapped, call.broadcast, tuple(_type_key(a) for a in call.args))
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._cached(("kernel", key), lambda: _build(call))
            self._kernels[key] = kernel
        self._last = kernel
        return kernel

    @property
    def source(self) -> str:
        """The kernel the last call ran (its launch configuration) and the device
        function each thread calls."""
        if self._last is None:
            return (
                f"# jit({display_name(self.fun)}, backend='gpu'): not called yet; the kernel "
                "is generated for the first call's argument types\n"
            )
        kernel = self._last
        launch = self._last_launch or "launch: chosen at the call, from its sizes"
        text = f"{kernel.text}# {launch}\n\n\n{kernel.function.text}"
        finishing = getattr(kernel, "finishing", None)
        return text if finishing is None else f"{text}\n\n{finishing.text}"


@dataclass(frozen=True)
class _Reduced:
    """How a trailing reduction runs: its reducer, the ``(outer, reduced, inner)``
    sizes of the arguments' layout, the order the kernels read their axes in (None: as
    they are) and the result's shape."""

    reducer: str
    sizes: tuple[int, int, int]
    order: tuple[int, ...] | None
    shape: tuple[int, ...]
    after: FunctionSource | None = None  # the function's lines after the reduction


@dataclass
class _Call:
    """A call prepared for the kernel: where the function's source comes from, what
    kind of kernel runs it (``vmap``: per example; ``elementwise``: per element), the
    arguments (mapped ones over their first axis), the batch's size and shape, and the
    reduction of the elementwise values, if the function returns one. ``broadcast[k]``:
    whether mapped argument ``k`` is read through strides, which ``locate`` gives after
    the shape of the elements' array (``cuda.broadcast_parameters``)."""

    read: Callable[[], FunctionSource]
    kind: str
    args: list[Any]
    mapped: tuple[bool, ...]
    size: int
    shape: tuple[int, ...]
    reduced: _Reduced | None = None
    broadcast: tuple[bool, ...] = ()
    locate: list[Any] = field(default_factory=list)


def _build(call: _Call) -> gpu.PerExampleKernel | cuda_reduction.ReductionKernels:
    part = "whole" if call.reduced is None else "reduced values"
    function = gpu.device_function(call.read(), part=part)
    # One example run as Python on the host: the structure and dtypes of its results.
    # Without elements, a zero of each array's dtype (elementwise code is straight-line).
    pairs = zip(call.args, call.mapped, strict=True)
    if call.size:
        example = [gpu.to_host(a[0] if m else a) for a, m in pairs]
    else:
        example = [np.zeros((), a.dtype) if m else a for a, m in pairs]
    with np.errstate(all="ignore"):
        results = gpu.Results.of(function.generated.function(*example))
    params = list(function.generated.function.__code__.co_varnames[: len(call.args)])
    first = function.generated.text.splitlines()[0]
    if call.reduced is not None:
        reducer = call.reduced.reducer
        dtype = cuda_reduction.REDUCERS[reducer](np.zeros(1, results.dtypes[0])).dtype
        result, finishing = dtype, None
        if call.reduced.after is not None:
            finishing = gpu.device_function(call.reduced.after, part="after the reduction")
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
    unit = "example" if call.kind == "vmap" else "element"
    name = f"_kernel_{function.generated.function.__name__}"
    return gpu.per_example_kernel(
        name, function, params, call.mapped, results, describe, unit, call.broadcast
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


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or gpu.is_device_array(value)


def _argument(
    value: Any, shape: tuple[int, ...], order: tuple[int, ...] | None
) -> tuple[Any, tuple[int, ...] | None]:
    """An array argument of an elementwise call broadcasting to ``shape``, as a kernel
    reads it: its elements in C order, flat, and None when they are the broadcast's own
    (its shape, axes in ``order`` None); else its strides in elements along each axis of
    ``shape`` put in ``order``, 0 where it is broadcast. Nothing is copied on the device."""
    own = tuple(value.shape)
    if gpu.is_device_array(value):
        data = gpu.to_device(value)
        if not getattr(data, "is_c_contiguous", lambda: True)():
            raise ValueError(
                f"a device array of shape {own} with strides {tuple(data.strides)} (not "
                "C-contiguous): the GPU kernels read arrays in C order; pass a contiguous "
                "copy (cupy.ascontiguousarray, or a NumPy array)"
            )
    else:
        data = np.ascontiguousarray(value)
    flat = data.reshape(math.prod(own))
    if own == shape and order is None:
        return flat, None
    pad = len(shape) - len(own)
    c_strides = [math.prod(own[j + 1 :]) for j in range(len(own))]
    strides = [0 if d < pad or own[d - pad] == 1 else c_strides[d - pad] for d in range(len(shape))]
    if order is not None:
        strides = [strides[a] for a in order]
    return flat, tuple(strides)


def _type_key(value: Any) -> tuple:
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return (str(np.dtype(value.dtype)), len(value.shape))
    return (type(value).__name__,)
