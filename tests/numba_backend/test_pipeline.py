"""The jit pipeline is target-neutral: it generates a module a target compiles, and asks
the target how to compile the user functions the generated code calls."""

import numpy as np

from numbax.numba_backend.lower import RECURSIVE
from numbax.numba_backend.pipeline import specialize
from numbax.transform.source import read_function


def helper(x):
    return x + 1.0


def scaled(x, n=2):
    return helper(np.sin(x) * n)


def countdown(k):
    if k > 0:
        return countdown(k - 1)
    return k


def test_the_generated_function_runs_as_python_with_the_targets_helpers():
    asked = []

    def compile_helper(func):
        asked.append(func)
        return func  # a target that runs everything as Python

    generated = specialize(read_function(scaled), compile_helper, statics={"n": 3})
    assert asked == [helper]
    assert "static arguments: n=3" in generated.text
    assert generated.path.endswith(".py") and generated.module.__file__ == generated.path
    np.testing.assert_allclose(generated.function(np.ones(2)), np.sin(1.0) * 3 + 1.0)
    assert not generated.calls_itself


def test_a_function_calling_itself_is_left_for_the_target_to_bind():
    generated = specialize(read_function(countdown), lambda func: RECURSIVE)
    assert generated.calls_itself
    generated.module.countdown = generated.function  # what cpu.py does with its dispatcher
    assert generated.function(3) == 0
