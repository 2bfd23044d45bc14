"""Run numba-cuda's code for per-example device functions on the CPU, without a GPU.

    python -m benchmarks.gpu.replay

Numba's CUDA simulator runs generated code as Python, so it cannot see a miscompile in
numba-cuda's own pipeline; ``ptx.py`` only checks that code compiles. This compiles
each per-example device function of the cases below with numba-cuda (its typing, its
inlining, its lowering to LLVM: everything before NVVM), runs that LLVM on the CPU
(libdevice's math taken from the C library) and compares the numbers with the CPU's
batch. It reproduced, to the last digit, the wrong results an H200 gave when
numba-cuda 0.30 inlined ``nxrt.weak`` into loops (``numba_backend/np/weak.py``).

Needs numba-cuda and NVVM (``pip install 'numbax[cuda]'``) and scalar arguments.
"""

from __future__ import annotations

import ctypes
import math
import os
import re
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

LIBM_FUNCTIONS = ("sin", "cos", "tan", "exp", "log", "tanh", "sqrt", "pow", "fabs")
LIBM_FUNCTIONS += ("expm1", "log1p", "atan", "atan2", "sinh", "cosh", "floor", "ceil")


def main(argv: list[str] | None = None) -> int:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    import numba.cuda.dispatcher
    from numba import cuda

    device = types.SimpleNamespace(compute_capability=(9, 0))  # the GPU there is not
    numba.cuda.dispatcher.get_current_device = lambda: device
    cuda.is_available = lambda: True

    failed = False
    for label, function, args in _cases():
        got = device_result(function, args)
        want = [float(v) for v in np.concatenate([np.ravel(v) for v in _leaves(function(*args))])]
        same = np.allclose(got, want, rtol=1e-12, atol=0)
        failed |= not same
        print(f"{label}: {'same as the CPU' if same else f'WRONG: {got}, the CPU {want}'}")
    return 1 if failed else 0


def carried(a, b):
    """A value carried through a loop that may leave early."""
    total = 1.0
    for k in range(3):
        total = total * 0.5 + (0.25 / -0.7 + (total - a * k - b))
        if total > 0.5:
            break
    return total


def damped(x, rate):
    """A loop with a branch and an early exit, its tapes in local memory."""
    y = 1.0
    for _ in range(20):
        dx = rate * (y - x)
        x = x + 0.01 * dx
        y = y + 0.01 * (x * 0.5 - y)
        if x > 3.0:
            break
    return x + y


def rows_until(x, s):
    """A loop over an example's array that may leave early, and arrays in local memory."""
    total = 1.0
    for i in range(x.shape[0]):
        total = total * 0.5 + (0.25 / -0.7 + (total - x[i]))
        if total > 0.5:
            break
    scaled = x[::-1] * s
    for _ in range(2):
        scaled += scaled * total * 0.1
    return total + np.sum(scaled)


def branched(a, b):
    """A branch per example around libdevice's functions."""
    r = math.tanh(a * b) + a**2
    if a > 0:
        r = r + math.exp(-b) * math.sin(a)
    return r


def _cases() -> list[tuple[str, Callable, tuple[Any, ...]]]:
    import numbax as nx
    from benchmarks.gpu import workloads as w

    lorenz = (1.0, 1.0, 1.0, 10.0, 28.0, 8.0 / 3.0)
    return [
        ("a carried value", carried, (0.3, 1.4537)),
        ("its gradient", nx.grad(carried, argnums=(0, 1)), (0.3, 1.4537)),
        ("a damped loop's value_and_grad", nx.value_and_grad(damped, argnums=(0, 1)), (2.9, 10.0)),
        ("an array's loop", rows_until, (np.array([1.4537, 0.0037, -0.1363]), -0.1563)),
        ("a branch's gradient", nx.grad(branched, argnums=(0, 1)), (2.0, 0.7)),
        ("newton's value_and_grad", nx.value_and_grad(w.newton(), argnums=(0, 1)), (2.5, 0.5)),
        ("lorenz's value_and_grad", nx.value_and_grad(w.lorenz(20), argnums=(0, 1, 2)), lorenz),
    ]


def device_result(function: Callable, args: tuple[Any, ...]) -> list[float]:
    """``function(*args)`` computed by its GPU device function's LLVM, on the CPU: the
    numbers of its result, flat. Arguments: float64 numbers and 1-d arrays. The device
    function returns numbers, and writes arrays into arrays its kernel passes."""
    import llvmlite.binding as llvm
    import numba
    from numba.cuda.compiler import compile_cuda

    import numbax as nx
    from numbax.numba_backend.cuda import target as gpu

    args = tuple(np.ascontiguousarray(a, np.float64) if np.ndim(a) else float(a) for a in args)
    want = _leaves(function(*args))
    outputs = [np.zeros(np.shape(v)) for v in want if np.ndim(v)]
    batched = nx.jit(nx.vmap(function, in_axes=(0,) * len(args)), backend="gpu")
    gpu._device_functions.clear()
    batched.stage_kernels(*(np.stack([a, a]) for a in args))  # a batch of two examples
    device_function = list(gpu._device_functions.values())[-1]
    signature = tuple(numba.typeof(a) for a in (*args, *outputs))
    compiled = compile_cuda(device_function.generated.function, None, signature, cc=(9, 0))
    engine = _cpu_engine(llvm, [str(m) for m in compiled.library.modules])
    address = engine.get_function_address(compiled.fndesc.mangled_name)
    types_, values = [], []
    for a in (*args, *outputs):  # an array is passed as Numba's fields of it, one each
        if isinstance(a, np.ndarray):
            types_ += [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]
            types_ += [ctypes.c_int64] * 2 * a.ndim
            values += [None, None, a.size, a.itemsize, a.ctypes.data, *a.shape, *a.strides]
        else:
            types_.append(ctypes.c_double)
            values.append(a)
    prototype = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, *types_)
    returned = (ctypes.c_double * 256)()  # the numbers it returns, flat
    status = prototype(address)(ctypes.cast(returned, ctypes.c_void_p), *values)
    if status != 0:
        raise RuntimeError(f"the device function returned status {status}")
    numbers, arrays, got = iter(returned), iter(outputs), []
    for value in want:
        got += list(np.ravel(next(arrays))) if np.ndim(value) else [next(numbers)]
    return got


def _cpu_engine(llvm: Any, modules: list[str]) -> Any:
    """The modules linked and compiled for this CPU, libdevice's ``__nv_*`` functions
    resolved to the C library's."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.CDLL("libm.so.6")
    for name in LIBM_FUNCTIONS:
        llvm.add_symbol(f"__nv_{name}", ctypes.cast(getattr(libm, name), ctypes.c_void_p).value)
    texts = [re.sub(r'target (triple|datalayout) = ".*"|!nvvm[^\n]*', "", m) for m in modules]
    module = llvm.parse_assembly(texts[0])
    for text in texts[1:]:
        module.link_in(llvm.parse_assembly(text))
    module.verify()
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    return engine


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


if __name__ == "__main__":
    sys.exit(main())
