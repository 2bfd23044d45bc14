"""The product of two matrices through BLAS, lowered where it is called.

Numba's ``a @ b`` and ``np.dot(a, b)`` of two matrices are overloads whose
implementation compiles four more functions (``np.zeros``, ``np.empty`` with its
allocator, and the three-argument ``np.dot``) wherever a program meets them anew: 0.2 to
0.3 s of the first call of ``jit(grad)`` of a two-layer MLP, compiled again for the
float32 twin and for every program the runtime cache has not seen. :func:`matrix_product`
is the same computation as an intrinsic: the result allocated, the sizes checked, and
Numba's own BLAS wrappers called (``numba_xxgemm``, ``numba_xxgemv``, ``numba_xxdot``:
SciPy's BLAS), with the same choice of routine as Numba's ``np.dot`` for a result of
one row or one column, all in the caller's code. Nothing else is compiled.

It takes matrices of one BLAS dtype, each C- or Fortran-contiguous
(:func:`is_blas_matrix_pair`); Numba's ``np.dot`` copies other layouts first, and its
callers keep it for them.
"""

from __future__ import annotations

from typing import Any

from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_new_ref
from numba.core.typing import signature
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl, make_array
from numba.np.linalg import call_xxdot, call_xxgemm, call_xxgemv, ensure_blas

_BLAS_DTYPES = (types.float32, types.float64, types.complex64, types.complex128)

_C_INT_MAX = 2**31 - 1
"""The largest size BLAS's ``int`` arguments hold."""

MISMATCH = (
    "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
    "signature (n?,k),(k,m?)->(n?,m?)"
)
"""NumPy's message for matrices whose inner sizes differ (without the two sizes)."""


def is_blas_matrix_pair(a: Any, b: Any) -> bool:
    """Whether :func:`matrix_product` takes arrays of Numba types ``a`` and ``b``."""
    return (
        isinstance(a, types.Array)
        and isinstance(b, types.Array)
        and a.ndim == b.ndim == 2
        and a.dtype == b.dtype
        and a.dtype in _BLAS_DTYPES
        and a.layout in "CF"
        and b.layout in "CF"
    )


@intrinsic
def matrix_product(typingctx: Any, a: Any, b: Any) -> Any:
    """``a @ b`` of two matrices (:func:`is_blas_matrix_pair`): a new C-contiguous
    matrix; NumPy's ValueError when the inner sizes differ."""
    if not is_blas_matrix_pair(a, b):
        return None
    out_type = types.Array(a.dtype, 2, "C")

    def codegen(context, builder, sig, args):
        ensure_blas()
        x = make_array(a)(context, builder, args[0])
        y = make_array(b)(context, builder, args[1])
        m, k = cgutils.unpack_tuple(builder, x.shape)
        inner, n = cgutils.unpack_tuple(builder, y.shape)
        with cgutils.if_unlikely(builder, builder.icmp_signed("!=", k, inner)):
            context.call_conv.return_user_exc(builder, ValueError, (MISMATCH,))
        c_int_max = context.get_constant(types.intp, _C_INT_MAX)
        for size in (m, k, n):
            with cgutils.if_unlikely(builder, builder.icmp_signed(">", size, c_int_max)):
                context.call_conv.return_user_exc(
                    builder, OverflowError, ("array size too large to fit in C int",)
                )
        out = _empty_nd_impl(context, builder, out_type, [m, n])
        _fill_product(context, builder, (a, x, m, k), (b, y, n), (out_type, out))
        return impl_ret_new_ref(context, builder, out_type, out._getvalue())

    return signature(out_type, a, b), codegen


def _fill_product(context: Any, builder: Any, left: tuple, right: tuple, result: tuple) -> None:
    """IR that writes ``x @ y`` into ``out``, choosing the BLAS routine as Numba's
    three-argument ``np.dot`` does: zeros for an empty product, a dot product for one
    element, a matrix-vector product for one row or one column, else a matrix product."""
    (xty, x, m, k), (yty, y, n), (out_type, out) = left, right, result
    zero = context.get_constant(types.intp, 0)
    one = context.get_constant(types.intp, 1)
    is_empty = builder.or_(
        builder.icmp_signed("==", k, zero),
        builder.or_(builder.icmp_signed("==", m, zero), builder.icmp_signed("==", n, zero)),
    )
    with builder.if_else(is_empty, likely=False) as (empty, nonempty):
        with empty:
            cgutils.memset(builder, out.data, builder.mul(out.itemsize, out.nitems), 0)
        with nonempty:
            one_row = builder.icmp_signed("==", m, one)
            one_column = builder.icmp_signed("==", n, one)
            with builder.if_else(one_column) as (column, columns):
                with column, builder.if_else(one_row) as (element, rows):
                    with element:
                        call_xxdot(context, builder, False, xty.dtype, k, x.data, y.data, out.data)
                    with rows:
                        transposed = xty.layout == out_type.layout
                        call_xxgemv(
                            context, builder, transposed, xty, (m, k), x.data, y.data, out.data
                        )
                with columns, builder.if_else(one_row) as (row, rows):
                    with row:
                        transposed = yty.layout != out_type.layout
                        call_xxgemv(
                            context, builder, transposed, yty, (k, n), y.data, x.data, out.data
                        )
                    with rows:
                        call_xxgemm(
                            context,
                            builder,
                            xty,
                            (m, k),
                            x.data,
                            yty,
                            (k, n),
                            y.data,
                            out_type,
                            (m, n),
                            out.data,
                        )
