"""The finite-difference checker itself: a compiled derivative that is wrong fails it.

``check_jacobians`` checks compiled code along one random direction (a JVP and a VJP,
``tests/helpers/fd.py``); a rule that is wrong in any direction must fail there.
``doubled``'s rule claims the identity's derivative is 2, so every numbax derivative of
it is wrong in ``x`` and right in ``w``.
"""

import numpy as np
import pytest

from tests.autodiff.test_custom import doubled  # the identity, its rule claiming 2
from tests.helpers.fd import (
    check_jvp_under_jit,
    check_vjp_under_jit,
    directional_programs,
    numeric_jacobian,
)


def scaled_by_doubled(x, w):
    return doubled(x) * w


ARGS = (np.array([0.3, -1.2, 0.7]), np.array([1.5, 0.5, -2.0]))
WANTS = {i: numeric_jacobian(scaled_by_doubled, ARGS, i) for i in (0, 1)}
PLACES = {i: f"scaled_by_doubled w.r.t. argument {i}" for i in (0, 1)}


@pytest.fixture(scope="module")
def programs():
    return directional_programs(scaled_by_doubled, len(ARGS))


def _rng():
    return np.random.default_rng(0)


def test_a_wrong_compiled_jvp_fails_the_check(programs):
    check_jvp_under_jit(programs, ARGS, [1], WANTS, PLACES[1], _rng(), 1e-5, 1e-6)
    with pytest.raises(AssertionError, match=r"jvp of scaled_by_doubled .* under jit"):
        check_jvp_under_jit(programs, ARGS, [0, 1], WANTS, PLACES[0], _rng(), 1e-5, 1e-6)


def test_a_wrong_compiled_vjp_fails_the_check(programs):
    check_vjp_under_jit(programs, ARGS, [1], WANTS, PLACES, _rng(), 1e-5, 1e-6)
    with pytest.raises(AssertionError, match=r"vjp of .* argument 0, under jit"):
        check_vjp_under_jit(programs, ARGS, [0, 1], WANTS, PLACES, _rng(), 1e-5, 1e-6)
