"""``nx.jit(vmap(f), backend="gpu")``: a batch on the GPU, one thread per example.

What JAX does worst on a GPU is a batch of examples that each run their own loops,
branches and ``while`` loops: ``jax.vmap`` turns branches into selects and runs every
lane until the slowest finishes. Here each example is a GPU thread running ``f``'s
generated code (``f`` may be ``grad``, ``value_and_grad`` or ``jvp`` of a user function:
its derivative runs inside the thread), so it follows its own control flow.

Arguments mapped over their first axis are split per example; the others (``in_axes``
None) are read whole by every thread. Each example returns numbers, or tuples of them
nested any way; each number becomes a device array with the batch first, in the
example's tuples. Results stay on the device until ``nx.device_get`` (or
``np.asarray``) copies them back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax.api.callable import NumbaxFunction
from numbax.numba_backend import cuda as gpu
from numbax.transform.source import display_name, read_function


class GpuJitted(NumbaxFunction):
    """``jit(vmap(f), backend="gpu")``: call it on a batch; ``.source`` shows the kernel
    and the device function each thread runs."""

    transformation = "jit"

    def __init__(self, fun: Callable) -> None:
        if getattr(fun, "transformation", None) != "vmap":
            raise gpu.GpuUnavailableError(
                f"jit(..., backend='gpu') of {display_name(fun)!r}: the GPU backend compiles "
                "a batched function, one GPU thread per example: jit(vmap(f), "
                "backend='gpu'). Other functions run on the CPU (backend='cpu')."
            )
        super().__init__(fun)
        gpu.cuda_module()  # says now, not at the first call, when no GPU can run it
        self.batched = fun
        self._kernels: dict[tuple, gpu.PerExampleKernel] = {}
        self._last: gpu.PerExampleKernel | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(
                f"{display_name(self.fun)} on the GPU takes its arguments by position; "
                f"got keyword arguments {sorted(kwargs)}"
            )
        axes = self.batched._axes(len(args), ())
        if len(axes) != len(args):
            raise TypeError(
                f"{display_name(self.batched.fun)} takes {len(axes)} arguments on the GPU "
                f"(defaults are not filled in there); got {len(args)}"
            )
        mapped = tuple(self._mapped(axis) for axis in axes)
        if self.batched.out_axes != 0:
            raise ValueError(
                f"vmap(out_axes={self.batched.out_axes!r}) on the GPU: results have the batch "
                "first (out_axes=0); move the axis after the call"
            )
        device_args = [gpu.to_device(a) if _is_array(a) else a for a in args]
        size = _batch_size(device_args, mapped)
        if size == 0:
            raise ValueError(
                f"{display_name(self.batched.fun)} on the GPU: the batch is empty. The "
                "first call runs one example on the host to learn the dtypes of the results, "
                "and there is none."
            )
        kernel = self._kernel(device_args, mapped)
        results = [gpu.empty((size,), dtype) for dtype in kernel.results.dtypes]
        kernel.launch(size, device_args, results)
        return kernel.results.rebuild(results)

    @staticmethod
    def _mapped(axis: Any) -> bool:
        if axis is None:
            return False
        if axis == 0:
            return True
        raise ValueError(
            f"vmap(in_axes=...) on the GPU maps arguments over their first axis (0) or not "
            f"at all (None); got {axis!r}. Move the axis first (np.moveaxis) before the call."
        )

    def _kernel(self, args: list[Any], mapped: tuple[bool, ...]) -> gpu.PerExampleKernel:
        key = (mapped, tuple(_type_key(a) for a in args))
        found = self._kernels.get(key)
        if found is None:
            found = self._cached(("kernel", key), lambda: self._build(args, mapped))
            self._kernels[key] = found
        self._last = found
        return found

    def _build(self, args: list[Any], mapped: tuple[bool, ...]) -> gpu.PerExampleKernel:
        function = gpu.device_function(read_function(self.batched.by_position, "vmap"))
        # One example run as Python on the host: how many results, and their dtypes.
        example = [gpu.to_host(a[0] if m else a) for a, m in zip(args, mapped, strict=True)]
        results = gpu.Results.of(function.generated.function(*example))
        params = list(function.generated.function.__code__.co_varnames[: len(args)])
        return gpu.per_example_kernel(
            f"_kernel_{self.batched.name}",
            function,
            params,
            mapped,
            results,
            _described(function),
        )

    @property
    def source(self) -> str:
        """The kernel the last call ran (its launch configuration) and the device
        function each thread calls."""
        if self._last is None:
            return (
                f"# jit(vmap({display_name(self.batched.fun)}), backend='gpu'): not called yet; "
                "the kernel is generated for the first call's argument types\n"
            )
        kernel = self._last
        return f"{kernel.text}# {kernel.launch_description}\n\n\n{kernel.function.text}"


def _described(function: gpu.DeviceFunction) -> str:
    """``vmap of grad_newton (file, line 2)``, from the device function's header."""
    first = function.generated.text.splitlines()[0]
    return first.replace("# gpu device function of ", "vmap of ", 1)


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or gpu.is_device_array(value)


def _batch_size(args: list[Any], mapped: tuple[bool, ...]) -> int:
    sizes = {int(a.shape[0]) for a, m in zip(args, mapped, strict=True) if m}
    if len(sizes) != 1:
        raise ValueError(f"vmap got inconsistent sizes for the mapped axis: {sorted(sizes)}")
    return sizes.pop()


def _type_key(value: Any) -> tuple:
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return (str(np.dtype(value.dtype)), len(value.shape))
    return (type(value).__name__,)
