"""``nx.jit(f, backend="gpu")`` of a function of elementwise lines and reductions: the
kernels that run it, one stage after another.

Each stage is a function of the user's arguments and the results of the stages before
it (``reduction_tail.kernel_stages``): a reduction of elementwise values, which may
end with lines computing the function's result from the reduced value, or the result
computed elementwise. A stage runs with a thread per element of the broadcast of the
arrays it reads, or in reduction kernels that make its values as they reduce them.
Every argument is read at its own size, through strides that are 0 where it is
broadcast, so a stage's earlier results (small, reduced arrays) are never spread out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

import gast
import numpy as np

from numbax.numba_backend.cuda import reductions as cuda_reduction
from numbax.numba_backend.cuda import target as gpu
from numbax.numba_backend.cuda.kernels import Kernel, KernelCall, Reduced, build_kernel, is_array
from numbax.numba_backend.cuda.reduction_tail import (
    NotReducible,
    finishing_function,
    kernel_stages,
    operand_function,
    trailing_reduction,
)
from numbax.numba_backend.passes.fuse import first_not_elementwise, parameters_read
from numbax.transform.normalize import normalize
from numbax.transform.provenance import resolve
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource, display_name, read_function

Cache = Callable[[Hashable, Callable[[], Kernel]], Kernel]
"""``NumbaxFunction._cached``: a kernel made once per key, however many threads call."""


class ElementwiseStage:
    """One stage: its source (``tree``, a function whose first parameters are the
    earlier stages' results named ``inputs``), checked when made; the kernels it ran."""

    def __init__(self, fun: Callable, source: FunctionSource, inputs: list[str]) -> None:
        self.fun = fun  # the user's function, for messages
        self.inputs = inputs
        self.name = source.tree.name
        fn = source.tree
        resolver = Resolver(source, local_names(fn))
        try:
            self.reduction = trailing_reduction(fn, resolver)
        except NotReducible as err:
            raise self._refusal(str(err), source, err.line) from None
        self.finishing: FunctionSource | None = None
        if self.reduction is not None:
            finishing = finishing_function(fn, self.reduction)
            fn = operand_function(fn, self.reduction)
            if finishing is not None:
                self._check_elementwise(source, finishing, resolver)
                self.finishing = replace(source, tree=finishing)
        self._check_elementwise(source, fn, resolver)
        self.source = replace(source, tree=fn)
        self.reads = parameters_read(fn)  # the parameters its values are made from
        self.last: Kernel | None = None
        self.last_launch = ""

    @property
    def target(self) -> str | None:
        """The name of the reduced value, for the stages after this one."""
        return None if self.reduction is None else self.reduction.target

    def run(self, values: list[Any], cache: Cache) -> Any:
        """The stage's result on ``values`` (its parameters' values): device arrays."""
        call = self.plan(values, gpu.to_device)
        kernel = self.kernel(call, cache)
        if call.reduced is not None:
            self.last_launch = kernel.launch_description(*call.reduced.sizes)
            reduced = kernel.run(*call.reduced.sizes, call.args, call.locate)
            return reduced.reshape(call.reduced.shape)
        self.last_launch = kernel.launch_description
        results = [gpu.empty((call.size,), dtype) for dtype in kernel.results.dtypes]
        if call.size:
            kernel.launch(call.size, call.args, results, call.locate)
        if len(call.shape) != 1:
            results = [r.reshape(call.shape) for r in results]
        return kernel.results.rebuild(results)

    def kernel(self, call: KernelCall, cache: Cache) -> Kernel:
        """The kernel for ``call``, made once per argument types (a stage that finishes
        its results is another stage than one of the same name that does not)."""
        key = ("kernel", self.name, self.finishing is not None, call.key)
        self.last = cache(key, lambda: build_kernel(call))
        return self.last

    def plan(self, values: list[Any], place: Callable[[Any], Any]) -> KernelCall:
        """The call of this stage's kernel on ``values``: the arrays its values are made
        from, each as the kernel reads it (``place`` puts it on the device), in a thread
        per element of their broadcast; an array it does not read is not passed."""
        params = [a.id for a in self.source.tree.args.posonlyargs + self.source.tree.args.args]
        reads = self.reads | (self.reduction.after_reads if self.reduction else set())
        values = [v if p in reads else 0 for p, v in zip(params, values, strict=True)]
        mapped = tuple(map(is_array, values))
        if not any(mapped):
            raise TypeError(
                f"{display_name(self.fun)} on the GPU runs once per element of the arrays "
                "it reads; it reads none here (pass arrays, or call it on the CPU)"
            )
        shape = np.broadcast_shapes(*(tuple(v.shape) for v in values if is_array(v)))
        reduced = None if self.reduction is None else self._reduced(shape)
        order = None if reduced is None else reduced.order
        flat, broadcast, strides = [], [], []
        for value, m in zip(values, mapped, strict=True):
            data, stride = argument_layout(value, shape, order) if m else (value, None)
            flat.append(place(data) if m else data)
            broadcast.append(stride is not None)
            strides += [stride] if stride is not None else []
        laid_out = shape if order is None else tuple(shape[a] for a in order)
        locate = [laid_out, *strides] if strides else []
        source = self.source
        call = KernelCall(
            lambda: source, self.name, "elementwise", flat, mapped, math.prod(shape), shape
        )
        call.reduced, call.broadcast, call.locate = reduced, tuple(broadcast), locate
        return call

    def _reduced(self, shape: tuple[int, ...]) -> Reduced:
        """How the stage's reduction runs on arguments broadcast to ``shape``: the
        reduced axes are made neighbours (moved last when they are not: the arguments
        are then read through permuted strides), and the result gets NumPy's shape."""
        reduction = self.reduction
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
        return Reduced(reduction.reducer, sizes, order, result, self.finishing)

    @property
    def text(self) -> str:
        """The kernels the stage last ran (their launch) and the device functions."""
        kernel = self.last
        launch = self.last_launch or "launch: chosen at the call, from its sizes"
        text = f"{kernel.text}# {launch}\n\n\n{kernel.function.text}"
        finishing = getattr(kernel, "finishing", None)
        return text if finishing is None else f"{text}\n\n{finishing.text}"

    def _check_elementwise(self, source: FunctionSource, fn: Any, resolver: Resolver) -> None:
        stmt = first_not_elementwise(fn, resolver)
        if stmt is not None:
            operation = _operation(stmt, resolver)
            instead = (
                "Batch it with jit(vmap(f), backend='gpu') (one thread per example), or run "
                "it on the CPU (backend='cpu')."
            )
            if any(word in operation for word in ("@", "matmul", "dot", "linalg", "einsum")):
                instead = (
                    "Matrix products and linear algebra are not run by numbax's GPU kernels "
                    "yet: compute them with CuPy (cupy.matmul, cupy.linalg) and pass the "
                    "result, whose device array numbax takes without a copy, or run the "
                    "function on the CPU (backend='cpu')."
                )
            raise self._refusal(
                "the GPU backend runs a function once per element of its arguments only "
                "when every line is elementwise (ufuncs, np.where, arithmetic) or a "
                f"reduction of such values, and this line {operation} is neither. {instead}",
                source,
                stmt.lineno,
                construct=operation.removeprefix("(").removesuffix(")") or None,
            )

    def _refusal(
        self, message: str, source: FunctionSource, line: int, construct: str | None = None
    ) -> Exception:
        origin = resolve(source.filename, line)
        return gpu.refusal(message, self.fun, origin.filename, origin.line, construct)


def _operation(stmt: Any, resolver: Resolver) -> str:
    """What ``stmt`` does that a kernel does not run, for its refusal: ``(the matrix
    product @)``, ``(numpy.cumsum)``..., or nothing when it is not one operation."""
    value = getattr(stmt, "value", None)
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.MatMult):
        return "(the matrix product @)"
    if isinstance(value, gast.Call):
        function = resolver.resolve(value.func)
        name = getattr(function, "__name__", None)
        module = getattr(function, "__module__", None) or ""
        if name is not None:
            module = "numpy" if module.startswith("numpy") else module
            return f"({module + '.' if module else ''}{name})"
    return ""


def elementwise_stages(fun: Callable, attach: bool = True) -> list[ElementwiseStage]:
    """``fun`` read and split into the stages the GPU runs (each checked);
    ``attach``: as ``kernel_stages``."""
    source = read_function(fun, "jit")
    fn = normalize(source, "jit")
    stages = []
    own = len(fn.args.posonlyargs + fn.args.args)
    for tree in kernel_stages(fn, Resolver(source, local_names(fn)), attach):
        params = [a.id for a in tree.args.posonlyargs + tree.args.args]
        stages.append(
            ElementwiseStage(fun, replace(source, tree=tree), params[: len(params) - own])
        )
    return stages


def finishes_with_an_array(stages: list[ElementwiseStage], values: dict[str, Any]) -> bool:
    """Whether the lines after the last stage's reduction read an array among
    ``values`` (the user's arguments by name): they then need a stage of their own."""
    reduction = stages[-1].reduction
    if reduction is None:
        return False
    return any(is_array(values[p]) for p in reduction.after_reads if p in values)


def run_stages(stages: list[ElementwiseStage], values: list[Any], cache: Cache) -> Any:
    """The function's result: each stage run on the user's ``values`` after the
    results of the stages before it that it reads."""
    results: dict[str, Any] = {}
    for stage in stages:
        result = stage.run([*(results[name] for name in stage.inputs), *values], cache)
        if stage.target is not None:
            results[stage.target] = result
    return result


def argument_layout(
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
