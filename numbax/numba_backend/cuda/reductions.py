"""Reductions on the GPU: ``np.sum(f(x), axis=...)`` as kernels that call ``f``'s
device function on each element as they reduce it, so the elementwise values are
never stored.

The arguments are laid out as ``(outer, reduced, inner)``: the reduced axes, next to
each other, between the axes before and after them. Each output element reduces
``reduced`` values ``inner`` apart. Two ways, chosen per launch from those sizes:

- **a thread per output element** (``rows``), looping over its values: for many
  outputs or few values each (neighbouring threads read neighbouring elements when
  ``inner`` > 1);
- **a block per part of an output** (``blocks``): the block's threads each combine
  every 128th value of the part, then a tree in shared memory combines the threads';
  a second kernel (``finish``, a thread per output) combines the parts. For few
  outputs with many values each (a full reduction) or the last axis (the block's
  threads then read neighbouring elements).

Both combine in a fixed order, so a result does not change from run to run (atomics
would). The order is not NumPy's pairwise one: float sums agree to rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba.core.errors import NumbaError

from numbax.codegen.cache import cache_key
from numbax.codegen.load import load_module, module_name
from numbax.numba_backend.cuda.target import (
    KERNEL_HELPERS,
    MAX_BLOCKS,
    THREADS_PER_BLOCK,
    DeviceFunction,
    broadcast_parameters,
    cuda_module,
    element_access,
    grid,
    kernel_helpers,
    kernel_parameters,
    launch_error,
)

REDUCERS = {
    "sum": np.sum,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
}
"""The reductions a kernel runs, by name, with the NumPy function that gives their
result's dtype (and their meaning)."""

_COMBINE = {
    "sum": "{a} + {b}",
    "mean": "{a} + {b}",
    "prod": "{a} * {b}",
    # NaN wins, as in NumPy: a NaN accumulator is kept, a NaN value taken
    "max": "{a} if {a} >= {b} or {a} != {a} else {b}",
    "min": "{a} if {a} <= {b} or {a} != {a} else {b}",
}

_KERNEL_NAMES = set(
    "cuda _identity _accumulator _accumulator_type _outputs _reduced _inner _parts _partial "
    "_out _o _start _r _element _value _shared _thread _task _first _width _mine _theirs "
    "_count _part".split()
)
"""The names the reduction kernels' text uses besides the user's parameters."""

BLOCKS_BELOW_OUTPUTS = 32_768
"""Fewer outputs than this (or a reduced last axis) and at least a block's worth of
values each: a block per output, as a thread each would leave the GPU mostly idle."""

VALUES_PER_THREAD = 4
"""What a thread of ``blocks`` combines at least before the tree: the parts of an
output are sized so (fewer threads reading more each beats a deeper second pass)."""

TARGET_BLOCKS = 1024
"""Blocks the ``blocks`` kernel aims for (several per multiprocessor of a large GPU);
an output is split in parts until there are as many."""


def identity(reducer: str, dtype: np.dtype) -> np.generic:
    """The value a reduction starts from, in its accumulator's ``dtype``: what it
    gives for no values (max and min have none in NumPy, which refuses the call)."""
    if reducer in ("sum", "mean"):
        return dtype.type(0)
    if reducer == "prod":
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(-np.inf if reducer == "max" else np.inf)
    if dtype.kind == "b":
        return dtype.type(reducer == "min")
    info = np.iinfo(dtype)
    return dtype.type(info.min if reducer == "max" else info.max)


@dataclass
class ReductionKernels:
    """The kernels of one reduction of one device function's values: launched by
    :meth:`run` on arguments laid out ``(outer, reduced, inner)``. ``finishing``: the
    device function that makes each result from its reduced value, if any."""

    reducer: str
    dtype: np.dtype  # the accumulator's (the reduction's result in NumPy)
    result_dtype: np.dtype  # the results', after ``finishing``
    function: DeviceFunction
    finishing: DeviceFunction | None
    text: str
    rows: Any
    blocks: Any
    finish: Any

    def run(
        self, outer: int, reduced: int, inner: int, args: Sequence[Any], locate: Sequence[Any] = ()
    ) -> Any:
        """The reduction of each output element's ``reduced`` values: a device array of
        ``outer * inner`` elements. ``locate``: the values of ``broadcast_parameters``,
        if any. numba-cuda compiles a kernel at its first launch; what it cannot compile
        is a :class:`CompileError` at the user's line."""
        args = [*args, *locate]
        outputs = outer * inner
        cuda = cuda_module()
        out = cuda.device_array((outputs,), self.result_dtype)
        if outputs == 0:
            return out
        try:
            if not uses_blocks(outputs, reduced, inner):
                self.rows[grid(outputs), THREADS_PER_BLOCK](outputs, reduced, inner, *args, out)
                return out
            parts = parts_per_output(outputs, reduced)
            partial = cuda.device_array((outputs * parts,), self.dtype)
            blocks = min(MAX_BLOCKS, outputs * parts)
            self.blocks[blocks, THREADS_PER_BLOCK](outputs, reduced, inner, parts, *args, partial)
            self.finish[grid(outputs), THREADS_PER_BLOCK](
                outputs, parts, reduced, *args, partial, out
            )
        except NumbaError as err:
            raise launch_error(err, self.function) from err
        return out

    def launch_description(self, outer: int, reduced: int, inner: int) -> str:
        """How :meth:`run` launches for these sizes, for ``nx.show``."""
        outputs = outer * inner
        if not uses_blocks(outputs, reduced, inner):
            return (
                f"launch: rows, {_count(outputs, 'output')} of {_count(reduced, 'value')} "
                f"each, a thread per output ({THREADS_PER_BLOCK} threads a block)"
            )
        parts = parts_per_output(outputs, reduced)
        return (
            f"launch: blocks, {_count(outputs, 'output')} of {_count(reduced, 'value')} each "
            f"in {_count(parts, 'part')}, a block of {THREADS_PER_BLOCK} threads per part; "
            "then finish, a thread per output combining its parts"
        )


def uses_blocks(outputs: int, reduced: int, inner: int) -> bool:
    """Whether a reduction of these sizes takes a block per output (see the module's
    docstring), rather than a thread."""
    return reduced >= THREADS_PER_BLOCK and (inner == 1 or outputs < BLOCKS_BELOW_OUTPUTS)


def parts_per_output(outputs: int, reduced: int) -> int:
    """The parts each output's values are split in for ``blocks``: enough for
    :data:`TARGET_BLOCKS` blocks in all, each thread combining at least
    :data:`VALUES_PER_THREAD` values."""
    most = max(1, reduced // (THREADS_PER_BLOCK * VALUES_PER_THREAD))
    return max(1, min(most, -(-TARGET_BLOCKS // outputs)))


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def reduction_kernels(
    function: DeviceFunction,
    params: Sequence[str],
    mapped: Sequence[bool],
    reducer: str,
    dtypes: tuple[np.dtype, np.dtype],
    describe: str,
    finishing: DeviceFunction | None = None,
    broadcast: Sequence[bool] | None = None,
) -> ReductionKernels:
    """Generate, load and compile the kernels that reduce ``function``'s values with
    ``reducer``: ``mapped[k]`` says whether parameter ``k`` has an element per value
    (else each value reads it whole). ``dtypes``: the accumulator's and the results'.
    ``finishing(reduced, *params)``, if given, makes each result from its reduced value.
    ``describe`` says what is reduced, for the header comment; ``broadcast[k]``: whether
    mapped parameter ``k`` is read through its strides."""
    cuda = cuda_module()
    callee = function.generated.function.__name__
    finisher = None if finishing is None else finishing.generated.function.__name__
    broadcast = broadcast or [False] * len(params)
    params = kernel_parameters(params, _KERNEL_NAMES | {callee, finisher, *KERNEL_HELPERS})
    element = element_access(params, mapped, broadcast, "_element")
    value = f"{callee}({', '.join(element)})"
    combine = _COMBINE[reducer]
    header = [
        f"# gpu kernels: {describe}",
        f"# each output element is the {reducer} of its values"
        + ("." if finisher is None else f", then {finisher} of that."),
        "# `rows` runs a thread per output, `blocks` a block per part of one (a tree in shared",
        "# memory) and `finish` a thread per output combining its parts. Sizes: (outer,",
        "# reduced, inner) with the reduced axes in the middle; output o is (o // inner,",
        "# o % inner).",
        "# generated by numbax; edits to this file are overwritten",
    ]
    arguments = ", ".join([*params, *broadcast_parameters(broadcast)])
    final = "_accumulator / _count" if reducer == "mean" else "_accumulator"
    if finisher is not None:
        final = f"{finisher}({final}, {', '.join(params)})"
    rows = [
        f"def rows(_outputs, _reduced, _inner, {arguments}, _out):",
        "    for _o in range(cuda.grid(1), _outputs, cuda.gridsize(1)):",
        "        _start = _o // _inner * _reduced * _inner + _o % _inner",
        "        _accumulator = _identity",
        "        for _r in range(_reduced):",
        "            _element = _start + _r * _inner",
        f"            _value = {value}",
        f"            _accumulator = {combine.format(a='_accumulator', b='_value')}",
        f"        _out[_o] = {final.replace('_count', '_reduced')}",
    ]
    half = THREADS_PER_BLOCK // 2
    blocks = [
        f"def blocks(_outputs, _reduced, _inner, _parts, {arguments}, _partial):",
        f"    _shared = cuda.shared.array({THREADS_PER_BLOCK}, _accumulator_type)",
        "    _thread = cuda.threadIdx.x",
        "    for _task in range(cuda.blockIdx.x, _outputs * _parts, cuda.gridDim.x):",
        "        _o = _task // _parts",
        "        _start = _o // _inner * _reduced * _inner + _o % _inner",
        "        _accumulator = _identity",
        f"        _first = _task % _parts * {THREADS_PER_BLOCK} + _thread",
        f"        for _r in range(_first, _reduced, _parts * {THREADS_PER_BLOCK}):",
        "            _element = _start + _r * _inner",
        f"            _value = {value}",
        f"            _accumulator = {combine.format(a='_accumulator', b='_value')}",
        "        _shared[_thread] = _accumulator",
        "        cuda.syncthreads()",
        f"        _width = {half}",
        "        while _width > 0:",
        "            if _thread < _width:",
        "                _mine = _shared[_thread]",
        "                _theirs = _shared[_thread + _width]",
        f"                _shared[_thread] = {combine.format(a='_mine', b='_theirs')}",
        "            cuda.syncthreads()",
        "            _width //= 2",
        "        if _thread == 0:",
        "            _partial[_task] = _shared[0]",
        "        cuda.syncthreads()  # before the next task overwrites _shared",
    ]
    finish = [
        f"def finish(_outputs, _parts, _count, {arguments}, _partial, _out):",
        "    for _o in range(cuda.grid(1), _outputs, cuda.gridsize(1)):",
        "        _accumulator = _identity",
        "        for _part in range(_parts):",
        "            _value = _partial[_o * _parts + _part]",
        f"            _accumulator = {combine.format(a='_accumulator', b='_value')}",
        f"        _out[_o] = {final}",
    ]
    text = "\n\n\n".join(["\n".join(header), "\n".join(rows), "\n".join(blocks), "\n".join(finish)])
    text += "\n"
    accumulator, result = map(np.dtype, dtypes)
    namespace = {
        "cuda": cuda,
        callee: function.dispatcher,
        "_identity": identity(reducer, accumulator),
        "_accumulator_type": accumulator.type,
        **kernel_helpers(cuda),
    }
    paths = [function.generated.path]
    if finishing is not None:
        namespace[finisher] = finishing.dispatcher
        paths.append(finishing.generated.path)
    key = cache_key(text, *paths, str(accumulator), "cuda-reduction")
    module = load_module(module_name(f"reduce_{callee}", key), text, namespace)
    launchers = [cuda.jit(getattr(module, name)) for name in ("rows", "blocks", "finish")]
    return ReductionKernels(reducer, accumulator, result, function, finishing, text, *launchers)


def layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, int, int]:
    """``(outer, reduced, inner)`` for reducing ``axes`` (next to each other, sorted)
    of an array of ``shape``."""
    if not axes:
        return math.prod(shape), 1, 1
    first, last = axes[0], axes[-1] + 1
    return math.prod(shape[:first]), math.prod(shape[first:last]), math.prod(shape[last:])
