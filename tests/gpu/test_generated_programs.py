"""Generated programs (``tests/fuzz/generator.py``) run a thread per example on the
simulator: each is refused at a line (``nx.CompileError``) or equals the CPU's batch,
its value and its gradient. A wrong number is the one outcome that fails.

The programs work on each example's array ``x`` of shape (3,) and a number ``s``:
elementwise lines, reductions, indexing, loops that accumulate or store into arrays,
branches; what the thread runs of them is written into local memory
(``numba_backend/cuda/local_arrays.py``).
"""

from __future__ import annotations

import collections

import numpy as np
from hypothesis import HealthCheck, Phase, assume, given, settings

import numbax as nx
from tests.fuzz.checks import load
from tests.fuzz.generator import Program, programs

ON_THE_GPU = frozenset(
    {
        "elementwise",
        "division",
        "reductions",
        "indexing",
        "for_accumulate",
        "store_zeros",
        "store_mul_copy",
        "if_else",
        "elif",
        "if_one_sided",
        "vector_output",
        "break_continue",
    }
)

OUTCOMES: collections.Counter = collections.Counter()


def _batched(program: Program, transform):
    function = load(program).f
    per_example = function if transform is None else transform(function)
    return nx.vmap(per_example, in_axes=program.vmap_in_axes)


@settings(
    max_examples=20,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(programs(ON_THE_GPU))
def test_a_generated_program_is_refused_or_equals_the_cpu(program: Program) -> None:
    transforms = [None] + ([nx.grad] if program.scalar_output else [])
    for transform in transforms:
        args = program.batch()
        try:
            with np.errstate(all="ignore"):
                want = _batched(program, transform)(*args)
        except (nx.TransformError, nx.CompileError):
            continue
        assume(np.all(np.isfinite(want)))
        try:
            got = nx.jit(_batched(program, transform), backend="gpu")(*args)
        except nx.CompileError:
            OUTCOMES["refused"] += 1
            continue
        OUTCOMES["ran"] += 1
        np.testing.assert_allclose(nx.device_get(got), want, rtol=1e-10, atol=1e-12)
