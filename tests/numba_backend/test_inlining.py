"""An inlined function's blocks are copied with one scope per copy while numbax compiles
(``numba_backend/caching/inlining.py``); Numba copies as it does elsewhere."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba.core import inline_closurecall

import numbax as nx
from numbax.numba_backend.caching import inlining  # noqa: F401  (installs its inline_ir)
from numbax.numba_backend.caching.compiling import numbax_compiling


@numba.njit(inline="always")
def _branchy(x, n):
    """Several blocks: a loop, a branch, an early exit."""
    total = 0.0
    for i in range(n):
        if x[i] > 0.0:
            total += x[i] * x[i]
        else:
            total -= x[i]
        if total > 100.0:
            return total
    return total


def _caller():
    @numba.njit
    def caller(x):
        return _branchy(x, x.size) + _branchy(x[::-1], 2)

    return caller


def _scopes_of_inlined_copies(monkeypatch):
    """Run a fresh caller; the scopes of the blocks of each callee copy inline_ir made."""
    copies = []
    inline_ir = inline_closurecall.InlineWorker.inline_ir

    def recording(self, *args, **kwargs):
        result = inline_ir(self, *args, **kwargs)
        original = result[0]  # the copy inline_ir keeps unchanged, to return
        copies.append({id(block.scope) for block in original.blocks.values()})
        return result

    monkeypatch.setattr(inline_closurecall.InlineWorker, "inline_ir", recording)
    x = np.array([0.5, -1.5, 2.0, 3.0])
    assert _caller()(x) == pytest.approx(_branchy.py_func(x, 4) + _branchy.py_func(x[::-1], 2))
    return copies


def test_each_copy_of_an_inlined_function_has_one_scope(monkeypatch):
    with numbax_compiling():
        copies = _scopes_of_inlined_copies(monkeypatch)
    assert len(copies) == 2  # both call sites
    assert all(len(scopes) == 1 for scopes in copies)


def test_outside_numbax_compiles_numba_copies_block_by_block(monkeypatch):
    copies = _scopes_of_inlined_copies(monkeypatch)
    assert len(copies) == 2
    assert all(len(scopes) > 1 for scopes in copies)  # a scope copied for each block


def loop_helper(x):
    acc = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            acc = acc + np.sin(x[i]) * x[i]
        else:
            acc = acc - x[i] * x[i]
    return acc


def uses_loop_helper(x):
    return loop_helper(x) * 2.0 + loop_helper(x[::-1])


def test_a_derivative_through_an_inlined_helper_is_right():
    """numbax's compiles copy inlined callees with one scope each: the gradient of a
    function calling a generated helper with loops and branches twice."""
    x = np.array([0.4, -0.8, 1.3, -0.2])
    got = nx.jit(nx.grad(uses_loop_helper))(x)
    np.testing.assert_allclose(got, nx.grad(uses_loop_helper)(x), rtol=1e-13)
