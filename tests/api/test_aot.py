"""Ahead-of-time compilation as JAX spells it: ``jit(f).lower(*args).compile()``."""

import numpy as np
import pytest

import numbax as nx


def scaled_sum(params, n):
    return np.sum(np.sin(params["x"]) * params["w"]) * n


@pytest.fixture(scope="module")
def lowered():
    return nx.jit(scaled_sum, static_argnames="n").lower({"x": np.ones(3), "w": np.ones(3)}, n=2)


@pytest.fixture(scope="module")
def compiled(lowered):
    return lowered.compile()


def test_lowered_shows_the_generated_source(lowered):
    text = lowered.as_text()
    assert "def scaled_sum(params):" in text
    assert "n = 2" in text  # the static value, baked in


def test_compiled_runs_arrays_of_other_shapes_with_the_lowered_types(compiled):
    params = {"x": np.linspace(0.0, 1.0, 5), "w": np.arange(5.0)}
    np.testing.assert_allclose(compiled(params, n=2), scaled_sum(params, 2), rtol=1e-12)
    assert compiled._specialization.dispatcher.signatures  # compiled before the call


@pytest.mark.parametrize(
    ("params", "n"),
    [
        ({"x": np.ones(3, np.float32), "w": np.ones(3, np.float32)}, 2),  # other dtype
        ({"x": np.ones((2, 2)), "w": np.ones((2, 2))}, 2),  # other rank
        ({"x": np.ones(3), "v": np.ones(3)}, 2),  # other pytree structure
        ({"x": np.ones(3), "w": np.ones(3)}, 3),  # other static value
    ],
    ids=["dtype", "rank", "structure", "static"],
)
def test_compiled_refuses_what_it_was_not_compiled_for(compiled, params, n):
    with pytest.raises(TypeError, match="lower and compile it again"):
        compiled(params, n=n)


def test_cache_option_decides_whether_machine_code_goes_to_disk(lowered):
    uncached = nx.jit(scaled_sum, static_argnames="n", cache=False)
    lowered_uncached = uncached.lower({"x": np.ones(2), "w": np.ones(2)}, n=1)
    assert type(lowered_uncached._specialization.dispatcher._cache).__name__ == "NullCache"
    assert type(lowered._specialization.dispatcher._cache).__name__ == "TrustedCache"


def scaled(x, n=3.0):
    return x * n


def test_a_map_lowered_with_a_default_left_out_maps_only_what_was_given():
    """As its call does: vmap maps no default (a lowered default was mapped, and a
    scalar cannot be)."""
    xs = np.arange(8.0).reshape(4, 2)
    mapped = nx.jit(nx.vmap(scaled))
    compiled = mapped.lower(xs).compile()
    np.testing.assert_array_equal(compiled(xs), xs * 3.0)
    np.testing.assert_array_equal(mapped(xs), xs * 3.0)
