"""A function's result type from Numba's typing alone (``numba_backend/result_types.py``):
the type compiling it gives, without compiling it; what shape stand-ins use for the
dtype of a fused kernel's values."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import types

from numbax.numba_backend.loops.elementwise import _applied
from numbax.numba_backend.result_types import result_type


def square_of_difference(a, b):
    d = a - b
    return d**2


def mixed(a, k):
    return a * k + (k // 2)


def comparison(a, b):
    return a < b


def complex_scale(z, s):
    return z * s


def with_a_helper(x):
    return np.tanh(x) + 1.0


@pytest.mark.parametrize(
    "function, argument_types",
    [
        (square_of_difference, (types.float64, types.float64)),
        (square_of_difference, (types.float32, types.float32)),
        (mixed, (types.float32, types.int64)),
        (mixed, (types.int32, types.int64)),
        (comparison, (types.float64, types.int64)),
        (complex_scale, (types.complex64, types.float64)),
        (with_a_helper, (types.float32,)),
    ],
)
def test_the_type_compiling_gives(function, argument_types):
    typed = result_type(function, argument_types)
    compiled = numba.njit(error_model="numpy")(function)
    compiled.compile(argument_types)
    assert typed == compiled.overloads[argument_types].signature.return_type


def test_typing_a_kernel_compiles_nothing_of_it():
    def kernel(a, b):
        return (a - b) ** 2

    apply = _applied(kernel, ())
    fused = apply.__numbax_scalar__
    array = types.Array(types.float32, 2, "C")
    assert fused.result_type((array, array)) == types.float32
    assert not fused.scalar.overloads  # typed, not compiled
    casts, element_types, result = fused.element_types((array, array))
    assert result == types.float32 and fused.scalar.overloads  # compiled once asked
    assert fused.result_type((array, array)) == result


def test_an_untypeable_function_raises_numbas_typing_error():
    def refused(x):
        return x.no_such_attribute

    with pytest.raises(numba.core.errors.TypingError):
        result_type(refused, (types.float64,))
