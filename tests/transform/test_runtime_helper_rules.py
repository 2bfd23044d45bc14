"""Every runtime helper (``numbax.runtime``) has its derivative and batching rules, and a
helper registered without them is refused, naming it (the check
``numbax.transform.rules`` runs at import)."""

import numpy as np
import pytest

import numbax as nx
from numbax.runtime import helpers, nxrt
from numbax.transform import rules
from numbax.transform.rules import LOOPED_BY_VMAP, WITHOUT_DERIVATIVE_RULES, missing_rules


def test_every_registered_helper_has_its_rules():
    assert missing_rules(helpers()) == []


def test_every_helper_is_in_the_namespace_generated_code_calls():
    for name, helper in helpers().items():
        assert getattr(nxrt, name) is helper, name


def test_a_helper_without_rules_is_refused_by_name():
    def scaled_copy(x):
        return np.array(x) * 2.0

    problems = missing_rules({**helpers(), "scaled_copy": scaled_copy})
    assert problems == [
        "nxrt.scaled_copy has no derivative rule: define its JVP and VJP in "
        "numbax/transform/rules/ (or declare it nondifferentiable)"
    ]


def test_a_helper_without_a_batching_rule_is_refused_by_name():
    # nxrt.unbroadcast has a batching rule; seen under another name, that one has none.
    problems = missing_rules({"other": nxrt.index_add, "unbroadcast": nxrt.unbroadcast})
    assert any("nxrt.other has no batching rule" in p for p in problems), problems


def test_exemptions_name_helpers_that_need_them():
    registered = set(helpers())
    assert WITHOUT_DERIVATIVE_RULES <= registered
    assert LOOPED_BY_VMAP <= registered
    for name in WITHOUT_DERIVATIVE_RULES:
        assert rules.rule_for(getattr(nxrt, name)) is None, name
    for name in LOOPED_BY_VMAP:
        assert rules.batching_rule(rules.rule_for(getattr(nxrt, name))) is None, name


def _spread(value, like):
    return nxrt.broadcast_like(value * 2.0, like)


@pytest.mark.parametrize(
    ("value", "like", "in_axes"),
    [
        (np.arange(6.0).reshape(3, 2), np.zeros((3, 4, 2)), 0),  # both batched
        (np.arange(3.0), np.zeros((3, 4)), 0),  # a scalar per example, spread
        (np.arange(2.0), np.zeros((3, 4, 2)), (None, 0)),  # a shared value
        (np.arange(6.0).reshape(3, 2), np.zeros((4, 2)), (0, None)),  # a shared like
        (np.arange(3.0), np.zeros(3), 0),  # scalars against scalars
        (np.arange(6.0).reshape(3, 2), np.zeros(3), 0),  # against a scalar like: value
    ],
)
def test_broadcast_like_batches_as_its_loop(value, like, in_axes):
    vectorized = nx.vmap(_spread, in_axes=in_axes, method="vectorized")
    got = vectorized(value, like)
    assert "vectorized" in vectorized.source
    want = nx.vmap(_spread, in_axes=in_axes, method="loop")(value, like)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
