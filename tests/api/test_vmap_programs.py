"""``vmap`` of every program of the derivative corpus, and of its gradient: the batched
result, by whichever method vmap picks, equals the programs run one example at a time
(the closure invariant for vmap: it accepts what the other transformations generate)."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.programs import PROGRAMS
from tests.helpers.trees import assert_tree_close

NAMES = sorted(PROGRAMS)
BATCH = 3


def _batched(args):
    """Each float argument as a batch of BATCH perturbed copies (mapped over axis 0);
    the others shared."""
    batch, axes = [], []
    for k, arg in enumerate(args):
        if np.result_type(arg).kind == "f":
            scales = 1.0 + 0.05 * np.arange(BATCH) * (1 if k % 2 else -1)
            batch.append(np.stack([np.asarray(arg) * s for s in scales]))
            axes.append(0)
        else:
            batch.append(arg)
            axes.append(None)
    return batch, tuple(axes)


def _example(batch, axes, i):
    return [b[i] if a == 0 else b for b, a in zip(batch, axes, strict=True)]


def _stacked(outs):
    if isinstance(outs[0], tuple):
        return tuple(np.stack(parts) for parts in zip(*outs, strict=True))
    return np.stack(outs)


@pytest.mark.parametrize("name", NAMES)
def test_vmap_of_each_program(name):
    f, args = PROGRAMS[name]
    batch, axes = _batched(args)
    want = _stacked([f(*_example(batch, axes, i)) for i in range(BATCH)])
    assert_tree_close(
        nx.vmap(f, in_axes=axes)(*batch), want, f"vmap of {name}", rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("name", NAMES)
def test_vmap_of_each_gradient(name):
    f, args = PROGRAMS[name]
    argnum = [i for i, a in enumerate(args) if np.result_type(a).kind == "f"][0]
    gradient = nx.grad(f, argnums=argnum)
    batch, axes = _batched(args)
    want = _stacked([gradient(*_example(batch, axes, i)) for i in range(BATCH)])
    assert_tree_close(
        nx.vmap(gradient, in_axes=axes)(*batch),
        want,
        f"vmap of grad of {name}",
        rtol=1e-12,
        atol=1e-12,
    )


VECTORIZED = ["straight", "reassigned", "recurrent", "array_accumulation"]


@pytest.mark.parametrize("name", VECTORIZED)
def test_programs_and_their_gradients_vectorize(name):
    f, args = PROGRAMS[name]
    batch, axes = _batched(args)
    for fun in (f, nx.grad(f)):
        batched = nx.vmap(fun, in_axes=axes, method="vectorized")
        want = nx.vmap(fun, in_axes=axes, method="loop")(*batch)
        assert_tree_close(batched(*batch), want, f"vectorized {name}", rtol=1e-12, atol=1e-12)
        assert_tree_close(
            nx.jit(batched)(*batch), want, f"jit of vectorized {name}", rtol=1e-12, atol=1e-12
        )
