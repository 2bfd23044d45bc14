"""Compile the GPU workloads' kernels to PTX on a machine without a GPU.

    python -m benchmarks.gpu.ptx [--cc 9.0] [--out DIR]

Numba's CUDA simulator runs generated code as Python, so it cannot tell whether
numba-cuda compiles it. This does, with no GPU and no driver: numba-cuda and the CUDA
toolkit's compilers (NVVM, NVRTC: ``pip install 'numbax[cuda]'``) compile each kernel
and the device functions it calls for the compute capability given (numba-cuda asks
the current device for it, which is answered here instead). It prints each kernel's
size in PTX and its local memory (the tapes of per-example gradients).
"""

from __future__ import annotations

import argparse
import re
import sys
import types
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu.ptx", description=__doc__)
    parser.add_argument("--cc", default="9.0", help="compute capability (9.0: H100, H200)")
    parser.add_argument("--out", type=Path, help="write each kernel's PTX there")
    parser.add_argument("--steps", type=int, default=1000, help="Lorenz steps")
    args = parser.parse_args(argv)
    cc = tuple(int(part) for part in args.cc.split("."))

    import numba.cuda.dispatcher
    from numba import cuda

    device = types.SimpleNamespace(compute_capability=cc)  # the GPU there is not
    numba.cuda.dispatcher.get_current_device = lambda: device
    cuda.is_available = lambda: True

    import numpy as np

    import numbax as nx
    from benchmarks.gpu import workloads as w

    x = np.linspace(-1.0, 1.0, 8)
    programs = {
        "selu float32": (
            nx.jit(w.selu, backend="gpu"),
            (x.astype(np.float32), w.SELU_ALPHA, w.SELU_LAMBDA),
        ),
        "lorenz value_and_grad": (
            nx.jit(
                nx.vmap(
                    nx.value_and_grad(w.lorenz(args.steps), argnums=(0, 1, 2)),
                    in_axes=(0, 0, 0, None, None, None),
                ),
                backend="gpu",
            ),
            (x, x, x, 10.0, 28.0, 8.0 / 3.0),
        ),
        "random draws": (
            nx.jit(nx.vmap(w.noisy_position, in_axes=(0, None)), backend="gpu"),
            (nx.random.split(nx.random.key(0), 8), 1.0),
        ),
        "random walk": (
            nx.jit(nx.vmap(w.random_walk(10), in_axes=(0, None)), backend="gpu"),
            (nx.random.split(nx.random.key(0), 8), 0.0),
        ),
        "gamma draws": (
            nx.jit(nx.vmap(w.gamma_draws, in_axes=(0, None)), backend="gpu"),
            (nx.random.split(nx.random.key(0), 8), 2.5),
        ),
        "root mean square": (nx.jit(w.root_mean_square, backend="gpu"), (x.reshape(2, 4),)),
        "softmax": (nx.jit(w.softmax, backend="gpu"), (x.reshape(2, 4),)),
        "selu broadcast": (
            nx.jit(w.selu, backend="gpu"),
            (x.reshape(8, 1), x[:3].reshape(1, 3), w.SELU_LAMBDA),
        ),
        "mlp per-example gradients": (
            nx.jit(
                nx.vmap(
                    nx.grad(w.mlp_loss, argnums=(0, 1, 2, 3)),
                    in_axes=(None, None, None, None, 0, 0),
                ),
                backend="gpu",
            ),
            (*w.mlp_parameters(), np.ones((8, w.MLP_SIZES[0])), x),
        ),
        "newton value_and_grad": (
            nx.jit(nx.vmap(nx.value_and_grad(w.newton(), argnums=(0, 1))), backend="gpu"),
            (x + 2.0, x),
        ),
    }
    failed = False
    for name, (compiled, inputs) in programs.items():
        for part, launcher, signature in _launchers(compiled, inputs):
            label = f"{name} ({part})" if part else name
            try:
                ptx, _ = cuda.compile_ptx(launcher.py_func, signature, cc=cc)
            except Exception as err:  # noqa: BLE001 - reported per kernel
                failed = True
                print(f"{label}: FAILED: {type(err).__name__}: {err}")
                continue
            local = re.findall(r"\.local\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]", ptx)
            print(f"{label}: {len(ptx):,} characters of PTX, {sum(map(int, local)):,} B local")
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / f"{label.replace(' ', '_')}.ptx").write_text(ptx)
    return 1 if failed else 0


def _launchers(compiled, inputs):  # noqa: ANN001, ANN202
    """Each launcher of ``compiled``'s kernels for ``inputs`` (one for a thread per
    example or element; rows, blocks and finish for a reduction; a function of several
    stages has each stage's) with the types it is launched with."""
    import numba

    from numbax.numba_backend.cuda.reductions import ReductionKernels

    stages = compiled.stage_kernels(*inputs)
    found = []
    for number, (kernel, arguments, locate) in enumerate(stages, start=1):
        given = tuple(map(numba.typeof, [*arguments, *locate]))
        stage = f"stage {number}, " if len(stages) > 1 else ""
        size = numba.int64
        if not isinstance(kernel, ReductionKernels):
            results = tuple(
                numba.types.Array(numba.from_dtype(d), 1 + len(shape), "C")
                for d, shape in zip(kernel.results.dtypes, kernel.results.shapes, strict=True)
            )
            found.append((stage.rstrip(", "), kernel.launcher, (size, *given, *results)))
            continue
        partial = numba.from_dtype(kernel.dtype)[::1]
        out = numba.from_dtype(kernel.result_dtype)[::1]
        found += [
            (f"{stage}rows", kernel.rows, (size, size, size, *given, out)),
            (f"{stage}blocks", kernel.blocks, (size, size, size, size, *given, partial)),
            (f"{stage}finish", kernel.finish, (size, size, size, *given, partial, out)),
        ]
    return found


if __name__ == "__main__":
    sys.exit(main())
