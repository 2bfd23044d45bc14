"""Products and contractions Numba lacks or compiles only in part: ``np.dot``,
``np.matmul``, ``np.vdot``, ``np.inner``, ``np.tensordot``, ``np.einsum``, and ``a @ b``
of arrays of two dtypes.

Numba has no ``np.matmul``, ``np.inner``, ``np.tensordot`` nor ``np.einsum``; its
``np.dot`` takes no scalar and no array of more than two dimensions, its ``np.vdot`` only
vectors, and its ``@`` refuses operands of two dtypes (NumPy promotes).

How a call reaches them and compiles: the package's docstring (``np/__init__.py``).

Contractions end in one matrix product of the operands reshaped to matrices (BLAS for
floats, as NumPy), or one per matrix of a stack; axes known when compiling are built into
the code, so 1-d and 2-d operands reach BLAS without a copy. ``einsum`` subscripts that
are no such product (traces, diagonals, sums over one operand, three operands) compile to
one loop nest. An ``int`` ``axes`` of ``tensordot`` and the subscripts of ``einsum`` are
made compile-time constants with ``numba.literally`` when they are not. A list as
``axes`` of ``tensordot`` (``axes=([1], [0])``) cannot compile: Numba does not know a
list's length; a tuple works.
"""

from __future__ import annotations

import builtins
import functools
import operator
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from numbax.numba_backend.caching import runtime_cache
from numbax.numba_backend.generated import Code
from numbax.numba_backend.loops.matrix_product import is_blas_matrix_pair, matrix_product
from numbax.numba_backend.np._typing import (
    _axis_count,
    _axis_items,
    _fail,
    _family_code,
    _is_none,
    _is_scalar,
    _literal_int,
    _npt,
    _promote,
    _scalar_type,
    _tuple,
    _wants_literal_int,
)
from numbax.numba_backend.redirects import redirect
from numbax.runtime.linalg import einsum_terms

__all__ = ["dot", "einsum", "inner", "matmul", "tensordot", "vdot"]


@redirect(np.dot)
def dot(a: Any, b: Any, out: Any = None) -> Any:
    """``np.dot``, also of scalars, integers and arrays of any ndim under jit."""
    return np.dot(a, b, out=out)


@redirect(np.matmul)
def matmul(a: Any, b: Any) -> Any:
    """``np.matmul``: stacks of matrices broadcast; 1-d operands are vectors."""
    return np.matmul(a, b)


@redirect(np.vdot)
def vdot(a: Any, b: Any) -> Any:
    """``np.vdot``: the dot product of the flattened arrays, ``a`` conjugated."""
    return np.vdot(a, b)


@redirect(np.inner)
def inner(a: Any, b: Any) -> Any:
    """``np.inner``: contracts the last axes of ``a`` and ``b``."""
    return np.inner(a, b)


@redirect(np.tensordot)
def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """``np.tensordot`` with ``axes`` an int, or a pair of ints or of tuples of ints."""
    return np.tensordot(a, b, axes=axes)


@redirect(np.einsum)
def einsum(subscripts: str, *operands: Any) -> Any:
    """``np.einsum``; under jit ``subscripts`` must be a constant string."""
    return np.einsum(subscripts, *operands)


def _blas(dt: types.Type) -> bool:
    """Whether Numba's ``np.dot`` (BLAS) takes this dtype."""
    return dt in (types.float32, types.float64, types.complex64, types.complex128)


def _gemm(a: Any, b: Any) -> Any:
    """The product of two 2-d arrays of one dtype (BLAS for floats, loops for ints)."""
    return np.dot(a, b)


@overload(_gemm)
def _gemm_jit(a, b):
    dt = a.dtype
    if is_blas_matrix_pair(a, b):
        return lambda a, b: matrix_product(a, b)
    if _blas(dt):
        return lambda a, b: np.dot(a, b)
    acc = types.int64 if isinstance(dt, types.Boolean) else dt
    to_bool = isinstance(dt, types.Boolean)

    def impl(a, b):
        m, k = a.shape
        n = b.shape[1]
        out = np.zeros((m, n), acc)
        for i in range(m):
            for p in range(k):
                x = acc(a[i, p])
                for j in range(n):
                    out[i, j] += x * acc(b[p, j])
        if to_bool:
            return out != 0
        return out

    return impl


def _gemm_into(a: Any, b: Any, out: Any) -> None:
    """``out[...] = a @ b`` for 2-d arrays of ``out``'s dtype, ``out`` C-contiguous."""
    out[...] = np.dot(a, b)


@overload(_gemm_into)
def _gemm_into_jit(a, b, out):
    if _blas(out.dtype):
        return lambda a, b, out: np.dot(a, b, out)

    def impl(a, b, out):
        out[...] = _gemm(a, b)

    return impl


_code = _family_code(_gemm, _gemm_into)


def _operand(name: str, x: Any) -> types.Array:
    if not isinstance(x, types.Array):
        raise _fail(name, f"expected an array, got {x}")
    return x


def _as_matrix(x: str, ty: types.Array, perm: list[int], split: int, shape: str, cast: bool) -> str:
    """Source of ``x`` (of type ``ty``) with its axes in order ``perm``, the first
    ``split`` of them as rows, as a 2-d array of ``shape`` and dtype ``T``: the array
    itself or its ``.T`` when it already is one (Numba's ``np.dot`` takes C and Fortran
    order), else a C-ordered copy if needed."""
    if ty.ndim == 2 and split == 1 and ty.layout in "CF":
        base = f"{x}.astype(T)" if cast else x
        return base if perm == [0, 1] else f"{base}.T"
    moved = x if perm == sorted(perm) else f"{x}.transpose({_tuple(map(str, perm))})"
    return f"np.ascontiguousarray({moved}){'.astype(T)' if cast else ''}.reshape({shape})"


def _product(sizes: list[str]) -> str:
    return " * ".join(sizes) if sizes else "1"


@functools.cache
def _contraction(
    a: Any, b: Any, axes_a: tuple[Any, ...], axes_b: tuple[Any, ...], header: str
) -> Any:
    """``tensordot(a, b, (axes_a, axes_b))`` for arrays ``a`` and ``b``.

    Axes given as ints are known when compiling: the code has them built in and, for
    1-d and 2-d operands, hands them to ``np.dot`` without any copy. Axes given as source
    expressions (items of the arguments named in ``header``) are only known at run time:
    see ``_runtime_contraction``.
    """
    if not builtins.all(isinstance(x, int) for x in axes_a + axes_b):
        return _runtime_contraction(a, b, tuple(map(str, axes_a)), tuple(map(str, axes_b)), header)
    na, nb = a.ndim, b.ndim
    fixed_a, fixed_b = [], []
    for axes, ndim, fixed in ((axes_a, na, fixed_a), (axes_b, nb, fixed_b)):
        for axis in axes:
            if not -ndim <= axis < ndim:
                raise _fail("tensordot", f"axis {axis} is out of bounds for {ndim} dims")
            if axis % ndim in fixed:
                raise _fail("tensordot", "repeated axis")
            fixed.append(axis % ndim)
    result = _promote(a.dtype, b.dtype)
    code = _code(header, T=_npt(result))
    for x, y in zip(fixed_a, fixed_b, strict=True):
        code(f"if a.shape[{x}] != b.shape[{y}]:", "    raise ValueError('shape-mismatch for sum')")
    free_a = [d for d in range(na) if d not in fixed_a]
    free_b = [d for d in range(nb) if d not in fixed_b]
    m = _product([f"a.shape[{d}]" for d in free_a])
    k = _product([f"a.shape[{d}]" for d in fixed_a])
    n = _product([f"b.shape[{d}]" for d in free_b])
    a2 = _as_matrix("a", a, free_a + fixed_a, len(free_a), f"({m}, {k})", a.dtype != result)
    b2 = _as_matrix("b", b, fixed_b + free_b, len(fixed_b), f"({k}, {n})", b.dtype != result)
    code(f"a2 = {a2}", f"b2 = {b2}")
    code("c = _gemm(a2, b2)")
    shape = [f"a.shape[{d}]" for d in free_a] + [f"b.shape[{d}]" for d in free_b]
    if not shape:
        code("return c[0, 0]")
    elif len(free_a) == 1 and len(free_b) == 1:
        code("return c")
    else:
        code(f"return c.reshape({_tuple(shape)})")
    return code.compile("tensordot")


@functools.cache
def _runtime_contraction(
    a: Any, b: Any, axes_a: tuple[str, ...], axes_b: tuple[str, ...], header: str
) -> Any:
    """``tensordot(a, b, (axes_a, axes_b))`` with axes known at run time only.

    Axes are checked and the free axes found at run time; each operand is transposed to
    (free, contracted) or (contracted, free) order and reshaped to a matrix (a copy only
    when it is not already in that order in memory), and one matrix product (BLAS for
    floats) does the work.
    """
    na, nb, count = a.ndim, b.ndim, len(axes_a)
    result = _promote(a.dtype, b.dtype)
    rank = na + nb - 2 * count
    code = _code(header, T=_npt(result))
    code(f"pa = np.empty({builtins.max(na, 1)}, np.intp)")
    code(f"pb = np.empty({builtins.max(nb, 1)}, np.intp)")
    code(f"used_a = np.zeros({builtins.max(na, 1)}, np.bool_)")
    code(f"used_b = np.zeros({builtins.max(nb, 1)}, np.bool_)")
    code("k = 1")
    for j, (x, y) in enumerate(zip(axes_a, axes_b, strict=True)):
        code(f"x = _normalize({x}, {na})", f"y = _normalize({y}, {nb})")
        code("if used_a[x] or used_b[y]:", "    raise ValueError('repeated axis')")
        code("if a.shape[x] != b.shape[y]:", "    raise ValueError('shape-mismatch for sum')")
        code("used_a[x] = True", "used_b[y] = True", "k *= a.shape[x]")
        code(f"pa[{na - count + j}] = x", f"pb[{j}] = y")
    code(f"shape = np.empty({builtins.max(rank, 1)}, np.intp)")
    code("i = 0", "m = 1", f"for d in range({na}):", "    if not used_a[d]:")
    code("        pa[i] = d", "        shape[i] = a.shape[d]", "        m *= a.shape[d]")
    code("        i += 1")
    code(f"i = {count}", "n = 1", f"for d in range({nb}):", "    if not used_b[d]:")
    code("        pb[i] = d", f"        shape[i + {na - 2 * count}] = b.shape[d]")
    code("        n *= b.shape[d]", "        i += 1")
    for x, nx, rows_cols in (("a", na, "(m, k)"), ("b", nb, "(k, n)")):
        perm = f"to_fixed_tuple(p{x}, {nx})"
        cast = ".astype(T)" if (a if x == "a" else b).dtype != result else ""
        code(f"{x}2 = np.ascontiguousarray({x}.transpose({perm})).reshape({rows_cols}){cast}")
    code("c = _gemm(a2, b2)")
    code(f"return c.reshape(to_fixed_tuple(shape, {rank}))" if rank else "return c[0, 0]")
    return code.compile("tensordot")


@overload(tensordot, prefer_literal=True)
def _tensordot_jit(a, b, axes=2):
    a, b = _operand("tensordot", a), _operand("tensordot", b)
    header = "def impl(a, b, axes=2):"
    if isinstance(axes, types.Integer | types.Omitted | int):
        if _wants_literal_int(axes):
            return lambda a, b, axes=2: numba.literally(axes)
        n = _literal_int(axes)
        if n is None or n < 0 or n > builtins.min(a.ndim, b.ndim):
            raise _fail("tensordot", f"axes={n} does not fit arrays of {a.ndim} and {b.ndim} dims")
        axes_a = tuple(range(a.ndim - n, a.ndim))
        return _contraction(a, b, axes_a, tuple(range(n)), header)
    if not (isinstance(axes, types.BaseTuple) and len(axes.types) == 2):
        raise _fail("tensordot", f"axes must be an int or a pair, got {axes}")
    items = []
    for j, side in enumerate(axes.types):
        _axis_count("tensordot", side, "each of axes")
        # Constant ints (axes=(1, 0), or tuples of constants) are built in.
        sides = [side] if isinstance(side, types.Integer) else list(side.types)
        values = [_literal_int(t) for t in sides]
        if None in values:
            values = _axis_items(f"axes[{j}]", side)
        items.append(tuple(values))
    if len(items[0]) != len(items[1]):
        raise _fail("tensordot", "axes name different numbers of axes of a and b")
    return _contraction(a, b, items[0], items[1], header)


@overload(dot)
def _dot_jit(a, b, out=None):
    if not _is_none(out):
        raise _fail("dot", "out= is not supported under jit")
    if _is_scalar(a) or _is_scalar(b):
        return lambda a, b, out=None: a * b
    a, b = _operand("dot", a), _operand("dot", b)
    axes_b = (b.ndim - 2,) if b.ndim >= 2 else (0,)
    return _contraction(a, b, (a.ndim - 1,), axes_b, "def impl(a, b, out=None):")


@overload(inner)
def _inner_jit(a, b):
    if _is_scalar(a) or _is_scalar(b):
        return lambda a, b: a * b
    a, b = _operand("inner", a), _operand("inner", b)
    if a.ndim == 0 or b.ndim == 0:
        return lambda a, b: a * b
    return _contraction(a, b, (a.ndim - 1,), (b.ndim - 1,), "def impl(a, b):")


@overload(vdot)
def _vdot_jit(a, b):
    dt = _promote(_scalar_type("vdot", a), _scalar_type("vdot", b))
    conj = isinstance(_scalar_type("vdot", a), types.Complex)
    cast = _npt(dt)
    if _blas(dt) and isinstance(a, types.Array) and isinstance(b, types.Array):
        fix_a, fix_b = a.dtype != dt, b.dtype != dt

        def blas(a, b):
            x = np.ascontiguousarray(a).ravel()
            y = np.ascontiguousarray(b).ravel()
            x = x.astype(cast) if fix_a else x
            y = y.astype(cast) if fix_b else y
            if x.size != y.size:
                raise ValueError("vdot: vectors have different lengths")
            return np.dot(np.conj(x) if conj else x, y)

        return blas

    def loop(a, b):
        x = np.asarray(a).ravel()
        y = np.asarray(b).ravel()
        if x.size != y.size:
            raise ValueError("vdot: vectors have different lengths")
        s = cast(0)
        for i in range(x.size):
            u = cast(x[i])
            s += (np.conj(u) if conj else u) * cast(y[i])
        return s

    return loop


@overload(matmul)
def _matmul_jit(a, b):
    for x in (a, b):
        if not isinstance(x, types.Array) or x.ndim == 0:
            raise _fail("matmul", f"operands must be arrays of at least 1 dimension, got {x}")
    header = "def impl(a, b):"
    if a.ndim <= 2 and b.ndim <= 2:
        return _contraction(a, b, (a.ndim - 1,), (0,), header)
    return _batched_matmul(a, b)


@overload(operator.matmul)
def _matmul_operator_mixed(a, b):
    """``a @ b`` of arrays of two dtypes, which Numba's ``@`` refuses: NumPy promotes
    them (``float64 @ float32`` is float64), as :func:`matmul` does."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)) or a.dtype == b.dtype:
        return None
    return lambda a, b: matmul(a, b)


@functools.cache
def _batched_matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for stacks of matrices: the stack dims broadcast, a 1-d operand is a
    vector; one matrix product per matrix of the result."""
    result = _promote(a.dtype, b.dtype)
    code = _code("def impl(a, b):", T=_npt(result))
    ba, bb = builtins.max(a.ndim - 2, 0), builtins.max(b.ndim - 2, 0)
    rank = builtins.max(ba, bb)
    ca = ".astype(T)" if a.dtype != result else ""
    cb = ".astype(T)" if b.dtype != result else ""
    code(f"x = np.ascontiguousarray(a){ca}", f"y = np.ascontiguousarray(b){cb}")
    if a.ndim == 1:
        code("x = x.reshape((1, x.shape[0]))")
    if b.ndim == 1:
        code("y = y.reshape((y.shape[0], 1))")
    code(f"if x.shape[{ba + 1}] != y.shape[{bb}]:")
    code("    raise ValueError('matmul: Input operand 1 has a mismatch in its core dimension')")
    sizes = []
    for d in range(rank):
        da, db = d - (rank - ba), d - (rank - bb)
        sa = f"x.shape[{da}]" if da >= 0 else "1"
        sb = f"y.shape[{db}]" if db >= 0 else "1"
        code(f"s{d} = {sa} if {sb} == 1 else {sb}")
        code(f"if ({sa} != s{d} and {sa} != 1) or ({sb} != s{d} and {sb} != 1):")
        code("    raise ValueError('matmul: operands could not be broadcast together')")
        sizes.append(f"s{d}")
    m, n = f"x.shape[{ba}]", f"y.shape[{bb + 1}]"
    code(f"c = np.empty({_tuple([*sizes, m, n])}, T)")
    index_a, index_b = [], []
    for d in range(rank):
        code(f"for i{d} in range(s{d}):")
        code.depth += 1
        da, db = d - (rank - ba), d - (rank - bb)
        if da >= 0:
            index_a.append(f"(i{d} if x.shape[{da}] != 1 else 0)")
        if db >= 0:
            index_b.append(f"(i{d} if y.shape[{db}] != 1 else 0)")
    xa = f"x[{', '.join(index_a)}]" if index_a else "x"
    yb = f"y[{', '.join(index_b)}]" if index_b else "y"
    code(f"_gemm_into({xa}, {yb}, c[{', '.join(f'i{d}' for d in range(rank))}])")
    code.depth = 1
    final = sizes + ([m] if a.ndim > 1 else []) + ([n] if b.ndim > 1 else [])
    code(f"return c.reshape({_tuple(final)})")
    return code.compile("matmul")


def _parse_einsum(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    """Operand and output subscripts of an einsum; implicit output as NumPy makes it,
    ``...`` spelled out with letters of its own."""
    spec = subscripts.replace(" ", "")
    if "..." in spec:
        try:
            terms, output = einsum_terms(spec, tuple(ndims), None)
        except ValueError as err:
            raise _fail("einsum", str(err)) from None
        spec = ",".join(terms) + "->" + output
    if "->" in spec:
        inputs, output = spec.split("->")
    else:
        inputs = spec
        letters = inputs.replace(",", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = inputs.split(",")
    if len(terms) != len(ndims):
        raise _fail("einsum", f"{len(terms)} subscript terms for {len(ndims)} operands")
    for term, ndim in zip(terms, ndims, strict=True):
        if len(term) != ndim or (term and not term.isalpha()):
            raise _fail("einsum", f"subscripts {term!r} do not fit an operand of {ndim} dims")
    letters = "".join(terms)
    if len(set(output)) != len(output) or not set(output) <= set(letters):
        raise _fail("einsum", f"invalid output subscripts {output!r}")
    return terms, output


def _einsum_loops(terms: list[str], output: str, dtypes: list[types.Type], code: Code) -> None:
    """Emit the general einsum: one loop per letter, output letters outermost, each
    dim of size 1 broadcasting, as NumPy's einsum allows."""
    result = _promote(*dtypes)
    acc = types.int64 if isinstance(result, types.Boolean) else result
    code.names.update(T=_npt(result), A=_npt(acc))
    letters = list(dict.fromkeys("".join(terms)))
    for c in letters:
        dims = [(k, d) for k, term in enumerate(terms) for d, x in enumerate(term) if x == c]
        sizes = [f"op{k}.shape[{d}]" for k, d in dims]
        code(
            f"n_{c} = builtins_max(({', '.join(sizes)},))"
            if len(sizes) > 1
            else f"n_{c} = {sizes[0]}"
        )
        for size in sizes if len(sizes) > 1 else []:
            code(f"if {size} != n_{c} and {size} != 1:")
            code("    raise ValueError('einsum: operands could not be broadcast together')")
    for k, term in enumerate(terms):
        for d, c in enumerate(term):
            code(f"f{k}_{d} = 1 if op{k}.shape[{d}] == n_{c} else 0")
    summed = [c for c in letters if c not in output]
    out_shape = _tuple(f"n_{c}" for c in output) if output else None
    if output:
        code(f"out = np.empty({out_shape}, T)")
    for c in output:
        code(f"for {c}_ in range(n_{c}):")
        code.depth += 1
    factors = []
    for k, term in enumerate(terms):
        index = ", ".join(f"{c}_ * f{k}_{d}" for d, c in enumerate(term))
        factors.append(f"A(op{k}[{index}])" if term else f"A(op{k}[()])")
    product = " * ".join(factors)
    if summed:
        code("s = A(0)")
        for c in summed:
            code(f"for {c}_ in range(n_{c}):")
            code.depth += 1
        code(f"s += {product}")
        code.depth -= len(summed)
        value = "s"
    else:
        value = product
    value = f"({value}) != 0" if acc is not result else value
    if output:
        code(f"out[{', '.join(f'{c}_' for c in output)}] = {value}")
        code.depth -= len(output)
        code("return out")
    else:
        code(f"return T({value})")
    code.names["builtins_max"] = _max_tuple


@register_jitable
def _max_tuple(values):
    m = values[0]
    for v in values:
        if v > m:
            m = v
    return m


def _einsum_product(terms: list[str], output: str) -> bool:
    """Whether a two-operand einsum is a (batched) matrix product worth BLAS: no letter
    repeated within an operand or summed over in one operand only, at least one letter
    contracted and one kept."""
    if len(terms) != 2:
        return False
    a, b = terms
    if len(set(a)) != len(a) or len(set(b)) != len(b):
        return False
    if any(c not in output and c not in b for c in a) or any(
        c not in output and c not in a for c in b
    ):
        return False
    contracted = [c for c in a if c in b and c not in output]
    free = [c for c in output if (c in a) != (c in b)]
    return bool(contracted) and bool(free)


@functools.cache
def _einsum_impl(subscripts: str, ops: tuple[types.Array, ...]) -> Any:
    terms, output = _parse_einsum(subscripts, [op.ndim for op in ops])
    dtypes = [op.dtype for op in ops]
    result = _promote(*dtypes)
    header = "def impl(subscripts, *operands):"
    unpack = [f"op{k} = operands[{k}]" for k in range(len(ops))]
    if not (_einsum_product(terms, output) and _blas(result)):
        code = _code(header)
        code(*unpack)
        _einsum_loops(terms, output, dtypes, code)
        return code.compile("einsum")
    # A (batched) matrix product: batch letters first, then a's free letters, then b's.
    general = _code("def impl(op0, op1):")
    _einsum_loops(terms, output, dtypes, general)
    loops = runtime_cache.njit(error_model="numpy")(general.compile("einsum"))
    a, b = terms
    batch = [c for c in output if c in a and c in b]
    left = [c for c in a if c in output and c not in b]
    right = [c for c in b if c in output and c not in a]
    contracted = [c for c in a if c in b and c not in output]
    code = _code(header, T=_npt(result), loops=loops)
    code(*unpack)
    for c in batch + contracted:
        code(f"if op0.shape[{a.index(c)}] != op1.shape[{b.index(c)}]:")
        code("    return loops(op0, op1)")

    def size(c: str) -> str:
        return f"op0.shape[{a.index(c)}]" if c in a else f"op1.shape[{b.index(c)}]"

    def prod(letters: list[str]) -> str:
        return " * ".join(size(c) for c in letters) if letters else "1"

    for k, (term, first, second) in enumerate(((a, left, contracted), (b, contracted, right))):
        perm = [term.index(c) for c in batch + first + second]
        cast = ops[k].dtype != result
        if batch:
            moved = (
                f"op{k}.transpose({_tuple(map(str, perm))})" if perm != sorted(perm) else f"op{k}"
            )
            shape = _tuple([prod(batch), prod(first), prod(second)])
            copy = f"np.ascontiguousarray({moved}){'.astype(T)' if cast else ''}"
            code(f"x{k} = {copy}.reshape({shape})")
        else:
            shape = _tuple([prod(first), prod(second)])
            code(f"x{k} = {_as_matrix(f'op{k}', ops[k], perm, len(first), shape, cast)}")
    if batch:
        code(f"c = np.empty(({prod(batch)}, {prod(left)}, {prod(right)}), T)")
        code(f"for t in range({prod(batch)}):", "    _gemm_into(x0[t], x1[t], c[t])")
    else:
        code("c = _gemm(x0, x1)")
    order = batch + left + right
    if batch or len(left) != 1 or len(right) != 1:
        code(f"r = c.reshape({_tuple(size(c) for c in order)})")
    else:
        code("r = c")
    perm = [order.index(c) for c in output]
    if perm != sorted(perm):
        code(f"return r.transpose({_tuple(map(str, perm))})")
    else:
        code("return r")
    return code.compile("einsum")


@overload(einsum, prefer_literal=True)
def _einsum_jit(subscripts, *operands):
    if isinstance(subscripts, types.UnicodeType) and not isinstance(
        subscripts, types.StringLiteral
    ):
        return lambda subscripts, *operands: numba.literally(subscripts)
    if not isinstance(subscripts, types.StringLiteral):
        raise _fail("einsum", f"subscripts must be a constant string, got {subscripts}")
    ops = tuple(
        operands[0].types
        if len(operands) == 1 and isinstance(operands[0], types.StarArgTuple)
        else operands
    )
    for op in ops:
        _operand("einsum", op)
    return _einsum_impl(subscripts.literal_value, ops)
