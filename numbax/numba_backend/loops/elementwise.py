"""Run a fused scalar kernel (see ``passes/fuse.py``) over arrays in one pass, as NumPy would.

``elementwise(kernel)`` returns a function that, called on arrays and scalars, applies
``kernel`` to every element of their broadcast shape. In plain Python it is a Numba
ufunc. Under Numba, when every array argument has the same shape and is C-contiguous
(the common case), it compiles to one flat loop that calls the kernel inline, which
LLVM vectorizes; otherwise it falls back to the ufunc, which broadcasts.

The flat loop also allocates its result with transparent huge pages on Linux. A fresh
64 MB result otherwise costs 16,000 page faults on first touch, which takes longer
than the arithmetic (NumPy advises huge pages the same way; Numba does not).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload, register_jitable
from numba.np.numpy_support import as_dtype, from_dtype

from numbax.codegen.load import GENERATED_PREFIX
from numbax.numba_backend.caching.disk_cache import cache_for
from numbax.numba_backend.caching.linking import optimized_moderately
from numbax.numba_backend.caching.runtime_cache import cache_of
from numbax.numba_backend.generated import define
from numbax.numba_backend.loops import new_arrays
from numbax.numba_backend.loops.broadcast_dims import broadcast_dim
from numbax.numba_backend.loops.fused_sums import stored_unbroadcast, sum_loop, unbroadcast_loop
from numbax.numba_backend.loops.threads import chunk_runner, threads_allowed, threads_for
from numbax.numba_backend.loops.threads import launch as launch_threads
from numbax.numba_backend.np import reductions
from numbax.numba_backend.np.scalars import NUMPY_RULES
from numbax.numba_backend.np.weak import weak_cast, weak_target
from numbax.numba_backend.redirects import lowering_helper
from numbax.numba_backend.result_types import result_type
from numbax.runtime.broadcasting import unbroadcast

_HUGE_PAGE_THRESHOLD = 2 << 20  # bytes: one huge page; below that the advice cannot help
_PAGE = 4096
_MADV_HUGEPAGE = 14


@intrinsic
def _madvise_hugepages(typingctx, address, nbytes):
    """``madvise(address, nbytes, MADV_HUGEPAGE)``, linked by symbol (cache-safe)."""

    def codegen(context, builder, sig, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [i8p, ir.IntType(64), ir.IntType(32)])
        madvise = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        pointer = builder.inttoptr(args[0], i8p)
        builder.call(madvise, [pointer, args[1], ir.Constant(ir.IntType(32), _MADV_HUGEPAGE)])
        return context.get_dummy_value()

    return types.none(types.int64, types.int64), codegen


if sys.platform.startswith("linux"):

    @register_jitable
    def _allocate(shape, dtype):
        out = new_arrays.empty(shape, dtype)
        nbytes = out.size * out.itemsize
        if nbytes >= _HUGE_PAGE_THRESHOLD:
            address = out.ctypes.data
            start = (address + _PAGE - 1) & ~(_PAGE - 1)
            _madvise_hugepages(start, address + nbytes - start)
        return out

else:

    @register_jitable
    def _allocate(shape, dtype):
        return new_arrays.empty(shape, dtype)


@dataclass(frozen=True)
class ScalarKernel:
    """A fused kernel's scalar function, compiled with NumPy's error model, and the
    positions of its parameters that may receive weak Python scalars."""

    scalar: Any
    weak_positions: frozenset[int]
    ints_stay_weak: bool = False  # see _weak_casts

    def element_types(self, args: tuple) -> tuple[dict[int, types.Type], tuple, types.Type]:
        """For argument types ``args`` (some arrays): the casts of weak scalars, the
        scalar function's argument types, and its result type (compiling it)."""
        casts, element_types = self._casts_and_element_types(args)
        self.scalar.compile(element_types)
        return casts, element_types, self.scalar.overloads[element_types].signature.return_type

    def result_type(self, args: tuple) -> types.Type:
        """The scalar function's result type for argument types ``args``, typed and not
        compiled unless it is already (``result_types.py``: for a shape stand-in)."""
        _, element_types = self._casts_and_element_types(args)
        compiled = self.scalar.overloads.get(element_types)
        if compiled is not None:
            return compiled.signature.return_type
        return result_type(self.scalar.py_func, element_types)

    def _casts_and_element_types(self, args: tuple) -> tuple[dict[int, types.Type], tuple]:
        arrays = [i for i, a in enumerate(args) if isinstance(a, types.Array)]
        casts = (
            _weak_casts(args, arrays, self.weak_positions, self.ints_stay_weak) if arrays else {}
        )
        element_types = tuple(
            a.dtype if isinstance(a, types.Array) else casts.get(i, a) for i, a in enumerate(args)
        )
        return casts, element_types


@lowering_helper
def elementwise(
    kernel: Callable | None = None,
    *,
    weak: tuple[str, ...] = (),
    summed: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    unbroadcast: bool = False,
    also: Callable | None = None,
    same_shapes: bool = False,
) -> Callable:
    """The elementwise application of scalar ``kernel`` (usable in Python and Numba).

    ``weak`` names the parameters that may receive Python scalars: where they do, they
    are cast as NEP 50 casts a Python scalar next to the array arguments (a Python float
    next to float32 arrays is float32), as in NumPy 2 and JAX.

    A loop whose values are only summed returns the sum, made as the loop runs
    (``fused_sums.py``): with ``summed`` (an axis or a tuple of axes), a call returns
    ``np.sum(values, axis=summed, keepdims=keepdims)``; with ``unbroadcast``, its first
    argument is ``like`` (not the kernel's) and it returns ``unbroadcast(values, like)``.
    ``also``, an earlier kernel so declared, given the same arguments: the call takes its
    like first, then this kernel's, and returns both sums, made in one loop.

    ``same_shapes``: the program shows that the array arguments have one shape
    (``passes/fuse.py``), so the compiled loop has no broadcasting loop nest, the largest part
    of its machine code. Should the shapes differ after all (a cotangent given smaller
    than its value), the arguments are first copied to their broadcast shape: the
    answer is the same, only slower.
    """
    options = {"weak": weak, "summed": summed, "keepdims": keepdims, "unbroadcast": unbroadcast}
    options.update({"also": also} if also is not None else {})
    options.update({"same_shapes": True} if same_shapes else {})
    if kernel is None:
        return lambda kernel: elementwise(kernel, **options)
    apply = _applied(kernel, weak, same_shapes)
    if summed is None and not unbroadcast:
        return apply
    if unbroadcast:
        together = [also.__numbax_applied__] if also is not None else []
        total = _summed_into_like([*together, apply])
    else:
        total = _summed_over(apply, summed if isinstance(summed, tuple) else (summed,), keepdims)
    total.__name__ = total.__qualname__ = kernel.__name__
    total.__doc__ = kernel.__doc__
    total.__wrapped__ = kernel
    total.__numbax_rebuild__ = (elementwise, (kernel,), options)  # for nx.export
    total.__numbax_applied__ = apply  # for a later kernel declared ``also=`` this one
    return total


def _applied(kernel: Callable, weak: tuple[str, ...], same_shapes: bool = False) -> Callable:
    """``kernel`` applied to every element of its arguments' broadcast (``same_shapes``:
    see :func:`elementwise`)."""
    weak_positions = frozenset(
        i for i, name in enumerate(kernel.__code__.co_varnames) if name in weak
    )
    setattr(kernel, NUMPY_RULES, weak)  # each operation at NumPy's loop (numpy_scalars.py)
    scalar = numba.njit(error_model="numpy")(kernel)  # NumPy: 1/0 is inf
    scalar._cache = _disk_cache(kernel, scalar)
    ufunc = numba.vectorize()(kernel)
    ufunc._dispatcher.cache = _disk_cache(kernel, ufunc._dispatcher)
    fused = ScalarKernel(scalar, weak_positions, _operators_and_ufuncs_only(kernel))

    def apply(*args: Any) -> Any:
        return ufunc(*args)

    apply.__name__ = apply.__qualname__ = kernel.__name__
    apply.__doc__ = kernel.__doc__
    apply.__wrapped__ = kernel
    rebuild = {"weak": weak, **({"same_shapes": True} if same_shapes else {})}
    apply.__numbax_rebuild__ = (elementwise, (kernel,), rebuild)  # for nx.export
    apply.__numbax_scalar__ = fused

    @overload(apply)
    def _apply_numba(*args):
        args = _star(args)
        if any(isinstance(a, types.BaseTuple | types.List) for a in args):
            return None  # a tuple or list operand: Numba says which, at the user's line
        arrays = [i for i, a in enumerate(args) if isinstance(a, types.Array)]
        if not arrays:
            return lambda *args: scalar(*args)
        casts, _, result = fused.element_types(args)
        ndim = max(args[i].ndim for i in arrays)
        # a 0-d array next to larger ones is read once, as the scalar it holds
        items = [i for i in arrays if args[i].ndim == 0] if ndim > 0 else []
        arrays = [i for i in arrays if i not in items]
        flat = all(args[i].layout == "C" for i in arrays)
        fewer = {i: args[i].ndim for i in arrays if args[i].ndim < ndim} if flat else {}
        parallel = threads_allowed()
        # A copy to the broadcast shape has the type of an argument that is also
        # writable. In one dimension the broadcasting loop is one loop, cheaper to
        # compile than the copies (the 4th derivative of tanh: 0.2 s).
        spread = (
            same_shapes and ndim > 1 and all(args[i].mutable and args[i].aligned for i in arrays)
        )
        return _flat_loop(
            len(args),
            ndim,
            arrays,
            flat,
            scalar,
            ufunc,
            np.dtype(str(result)),
            {i: weak_cast(args[i], target) for i, target in casts.items()},
            parallel,
            spread,
            fewer,
            items,
        )

    return apply


def _summed_over(apply: Callable, axes: tuple[int, ...], keepdims: bool) -> Callable:
    """``np.sum(apply(*args), axis=axes, keepdims=keepdims)``, in one loop once compiled."""
    axis = axes if len(axes) > 1 else axes[0]

    def total(*args: Any) -> Any:
        return np.sum(apply(*args), axis=axis, keepdims=keepdims)

    @register_jitable
    def stored(*args):
        return reductions.sum(apply(*args), axis, keepdims=keepdims)

    @overload(total)
    def _total_numba(*args):
        return sum_loop(apply.__numbax_scalar__, _star(args), axes, keepdims, stored)

    return total


def _summed_into_like(applied: list[Callable]) -> Callable:
    """``unbroadcast(apply(*values), like)`` of ``(*likes, *values)`` for each of the
    ``applied`` loops and its like (a tuple of them for more than one), in one loop once
    compiled."""
    stored = stored_unbroadcast(applied)
    count = len(applied)

    def total(*args: Any) -> Any:
        likes, values = args[:count], args[count:]
        each = tuple(unbroadcast(f(*values), like) for f, like in zip(applied, likes, strict=True))
        return each[0] if count == 1 else each

    @overload(total)
    def _total_numba(*args):
        kernels = [f.__numbax_scalar__ for f in applied]
        return unbroadcast_loop(kernels, _star(args), stored, applied[0])

    return total


def _star(args: tuple) -> tuple:
    """Numba's types of ``*args`` (given as one StarArgTuple, or one by one)."""
    if args and isinstance(args[0], types.StarArgTuple):
        args = args[0].types
    return tuple(args)


def _disk_cache(kernel: Callable, dispatcher: Any) -> Any:
    """Where ``dispatcher``'s machine code is kept: a generated kernel's in the trusted
    cache beside its module; one of numbax's own in the runtime cache, whose key holds
    numbax's whole source (the machine code holds what the kernel calls, from other
    files, which Numba's own cache, keyed by the kernel's file, would not notice)."""
    if getattr(kernel, "__module__", "").startswith(GENERATED_PREFIX):
        return cache_for(kernel)
    return cache_of(dispatcher)


def _operators_and_ufuncs_only(kernel: Callable) -> bool:
    """Whether ``kernel`` computes with Python's operators and NumPy's ufuncs alone (the
    names its code reads are ``np`` and ufuncs of it): each such operation runs at
    NumPy's loop for its weak operands (``np/scalars.py``); other calls
    (``nxrt.power``) take their operands' Numba types."""
    return all(
        name == "np" or isinstance(getattr(np, name, None), np.ufunc)
        for name in kernel.__code__.co_names
    )


def _weak_casts(
    args: tuple, arrays: list[int], weak: set[int], ints_stay_weak: bool = False
) -> dict[int, types.Type]:
    """Casts of the ``weak`` scalar arguments next to the arrays' common dtype
    (``np/weak.py``): a Python float next to float32 arrays becomes float32.

    Done here, where the types are known, rather than with ``nxrt.weak`` at each call
    site, so that the generated call reads ``_kernel(x, alpha)``.

    A Python bool stays a bool: NumPy computes with it as with ``np.bool_`` next to
    arrays, and Python's own operators on it alone compute on ints (``~True * x`` is
    ``-2 * x``), as the kernel does (``np/scalars.py``). So does a Python int next to
    integer arrays where ``ints_stay_weak`` (the kernel's operations all run at NumPy's
    loops): the loop is not always the arrays' dtype (``int8_array / 2**40`` is float64,
    ``-b * uint8_array`` negates ``b`` as a Python int first)."""
    common = np.result_type(*(as_dtype(args[i].dtype) for i in arrays))
    like = from_dtype(common)
    casts = {}
    for i, arg in enumerate(args):
        if i in weak and not isinstance(arg, types.Array):
            target = weak_target(arg, like)
            stays = isinstance(arg, types.Boolean) or (
                ints_stay_weak
                and isinstance(arg, types.Integer)
                and isinstance(target, types.Integer)
            )
            if target is not None and not stays:
                casts[i] = target
    return casts


def _flat_loop(
    n: int,
    ndim: int,
    arrays: list[int],
    flat: bool,
    scalar: Any,
    ufunc: Any,
    dtype: np.dtype,
    casts: dict[int, Callable],
    parallel: bool,
    spread: bool = False,
    fewer: dict[int, int] | None = None,
    items: list[int] | None = None,
) -> Callable:
    """The implementation for ``n`` arguments of which ``arrays`` are arrays of ``ndim``
    dimensions at most and ``casts`` cast the scalars at their positions first
    (``weak.weak_cast``); ``flat``: all arrays are C-contiguous, so equal shapes
    (checked at run time) allow one flat loop, and other
    shapes broadcast in a loop nest written for that ndim (Numba's ufunc machinery,
    which the other cases fall back to, costs one to two seconds of compiling per
    kernel). ``fewer``: the arrays of fewer dimensions, by position, with their ndim:
    viewed first with leading dimensions of length 1, as NumPy broadcasts them (the
    bias of ``x @ w + b``); they go straight to the loop nest, since the arrays they
    are broadcast against are larger (a flat loop for equal shapes would be compiled,
    0.2 s a loop, and not run). ``items``: 0-d arrays, read once as the scalar they
    hold (not arrays of the loop: it stays flat, and on every thread). ``parallel``:
    the flat loop runs on all threads when it is large enough (``threads.py``).
    ``spread``: other shapes are copied to their broadcast shape and go through the
    flat loop too (a kernel declared ``same_shapes``, whose arguments are expected to
    have one shape: its loop is compiled once, without a nest)."""
    fewer = fewer or {}
    items = items or []
    params = ", ".join(f"r{i}" if i in fewer or i in items else f"a{i}" for i in range(n))
    lines = ["def impl(*args):", f"    {params}{',' if n == 1 else ''} = args"]
    lines += [f"    a{i} = r{i}[()]" for i in items]
    lines += [f"    a{i} = _cast{i}(a{i})" for i in casts]
    for i, own in fewer.items():
        lengths = ["1"] * (ndim - own) + [f"r{i}.shape[{d}]" for d in range(own)]
        lines.append(f"    a{i} = r{i}.reshape(({', '.join(lengths)}{',' if ndim == 1 else ''}))")
    if flat:
        first = arrays[0]
        element = ", ".join(f"f{i}[k]" if i in arrays else f"a{i}" for i in range(n))
        serial = ["for k in range(flat.size):", f"    flat[k] = _scalar({element})"]
        if parallel:  # one chunk per thread, or one chunk here (threads.py)
            inputs = "".join(f"f{i}, " if i in arrays else f"a{i}, " for i in range(n))
            at_failure = element.replace("[k]", "[failed]")
            serial = [
                f"failed = _run_chunks(flat, _threads_for(flat.size), ({inputs}))",
                "if failed >= 0:",
                f"    _scalar({at_failure})  # raises the kernel's error",
                "    raise RuntimeError('a fused loop failed once, and not again')",
            ]
        loop = [
            f"out = _allocate(a{first}.shape, _dtype)",
            "flat = out.reshape(-1)",
            *[f"f{i} = a{i}.reshape(-1)" for i in arrays],
            *serial,
            "return out",
        ]
        if len(arrays) == 1 or ndim == 0:  # the shapes are equal
            lines += [f"    {line}" for line in loop]
        elif fewer and not spread:
            lines += _broadcast_loop(n, arrays, ndim)
        elif spread:
            checks = " and ".join(f"a{i}.shape == a{first}.shape" for i in arrays[1:])
            lines += [f"    if not ({checks}):", *_broadcast_shape(arrays, ndim, "        ")]
            shape = ", ".join(f"n{d}" for d in range(ndim)) + ("," if ndim == 1 else "")
            lines += [f"        a{i} = _spread(a{i}, ({shape}))" for i in arrays]
            lines += [f"    {line}" for line in loop]
        else:
            checks = " and ".join(f"a{i}.shape == a{first}.shape" for i in arrays[1:])
            lines += [f"    if {checks}:", *[f"        {line}" for line in loop]]
            lines += _broadcast_loop(n, arrays, ndim)
    else:
        lines.append(f"    return _ufunc({params})")
    namespace = {
        "_allocate": _allocate,
        "_dtype": dtype,
        "_scalar": scalar,
        "_ufunc": ufunc,
        "_dim": broadcast_dim,
        "_spread": _spread,
    }
    if parallel:
        launch_threads()
        namespace.update(_threads_for=threads_for, _run_chunks=chunk_runner(scalar))
    namespace.update({f"_cast{i}": cast for i, cast in casts.items()})
    driver = define("\n".join(lines) + "\n", namespace, f"elementwise {n} arguments")
    return optimized_moderately(driver)


@register_jitable
def _spread(a, shape):
    """``a`` broadcast to ``shape``: ``a`` itself when it has that shape, else a new
    C-contiguous copy (the arguments of a loop declared ``same_shapes``, when they turn
    out not to share one). ``a`` is C-contiguous with ``len(shape)`` dimensions.

    Written as one loop with an index carried like an odometer, rather than as NumPy's
    ``out[...] = a``, whose error messages would add their formatting code to every
    loop that may call this."""
    if a.shape == shape:
        return a
    out = np.empty(shape, a.dtype)
    flat, source = out.reshape(-1), a.reshape(-1)
    ndim = len(shape)
    strides = np.zeros(ndim, np.intp)  # elements of a per step along each axis; 0: spread
    step = 1
    for d in range(ndim - 1, -1, -1):
        if a.shape[d] != 1:
            strides[d] = step
        step *= a.shape[d]
    index = np.zeros(ndim, np.intp)
    at = 0
    for k in range(flat.size):
        flat[k] = source[at]
        d = ndim - 1
        while d >= 0:
            index[d] += 1
            at += strides[d]
            if index[d] < shape[d]:
                break
            at -= strides[d] * shape[d]
            index[d] = 0
            d -= 1
    return out


def _broadcast_shape(arrays: list[int], ndim: int, indent: str) -> list[str]:
    """Source lines: ``n<d>``, the length of dimension ``d`` of the broadcast of the
    same-ndim arrays ``a<i>`` (NumPy's ValueError where they do not broadcast)."""
    lines = []
    for d in range(ndim):
        lengths = [f"a{i}.shape[{d}]" for i in arrays]
        shape = lengths[0]
        for length in lengths[1:]:
            shape = f"_dim({shape}, {length})"
        lines.append(f"{indent}n{d} = {shape}")
    return lines


def _broadcast_loop(n: int, arrays: list[int], ndim: int) -> list[str]:
    """Source lines: the broadcast of same-ndim arrays ``a<i>`` (``arrays``) and scalars
    through ``_scalar``, one loop per dimension; a dimension of length 1 is read at 0."""
    lines = _broadcast_shape(arrays, ndim, "    ")
    for d in range(ndim):
        lines += [f"    s{i}_{d} = int(a{i}.shape[{d}] != 1)" for i in arrays]
    dims = ", ".join(f"n{d}" for d in range(ndim))
    lines.append(f"    out = _allocate(({dims}{',' if ndim == 1 else ''}), _dtype)")
    for d in range(ndim):
        lines.append("    " * (d + 1) + f"for i{d} in range(n{d}):")
    inner = "    " * (ndim + 1)
    where = ", ".join(f"i{d}" for d in range(ndim))
    elements = []
    for i in range(n):
        if i in arrays:
            index = ", ".join(f"i{d} * s{i}_{d}" for d in range(ndim))
            elements.append(f"a{i}[{index}]")
        else:
            elements.append(f"a{i}")
    lines.append(f"{inner}out[{where}] = _scalar({', '.join(elements)})")
    lines.append("    return out")
    return lines
