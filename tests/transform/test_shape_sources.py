"""Which values share a shape (analysis/shape_sources.py), and what reverse mode records
of a VJP's cotangent parameters (reverse.COTANGENT_OF)."""

import gast
import numpy as np

import numbax as nx
from numbax.transform.ad.reverse import COTANGENT_OF
from numbax.transform.analysis.shape_sources import ShapeSources, is_elementwise_value
from numbax.transform.normalize import normalize
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import read_function


def _followed(fun, cotangents=None):
    """The analysis of ``fun``'s body, its statements followed in order."""
    source = read_function(fun)
    fn = normalize(source, "jit")
    resolver = Resolver(source, local_names(fn))
    params = [a.id for a in fn.args.args]

    def elementwise(stmt):
        return isinstance(stmt, gast.Assign) and is_elementwise_value(stmt.value, resolver)

    shapes = ShapeSources(params, resolver, elementwise, cotangents)
    for stmt in fn.body[:-1]:
        shapes.follow(stmt)
    return shapes, params


def elementwise_chain(x, w, ct):
    a = np.exp(x) * 2.0
    b = a + w
    c = np.sum(b)
    d = c * a
    t = (a, b)
    u = t
    e = u[1] - ct
    return e, d


def test_elementwise_values_take_the_union_of_their_sources():
    shapes, params = _followed(elementwise_chain)
    assert shapes.shape_in_parameters("a", params) == {"x"}
    assert shapes.shape_in_parameters("b", params) == {"x", "w"}
    # a reduction is a source of its own: what it makes proves nothing
    assert shapes.shape_in_parameters("c", params) is None
    assert shapes.shape_in_parameters("d", params) is None


def test_a_tuple_display_keeps_its_elements_through_copies_and_constant_subscripts():
    shapes, params = _followed(elementwise_chain)
    assert shapes.shape_in_parameters("u", params) == ({"x"}, {"x", "w"})
    assert shapes.shape_in_parameters("e", params) == {"x", "w", "ct"}


def test_a_cotangent_parameter_starts_from_the_parameters_it_is_said_to_broadcast_from():
    shapes, params = _followed(elementwise_chain, {"ct": frozenset({"x"})})
    assert shapes.shape_in_parameters("e", params) == {"x", "w"}


def reassigned(x, ct):
    x = np.sum(x)
    y = ct * 2.0
    return y


def test_a_parameter_assigned_again_keeps_its_own_source_at_entry_for_a_cotangent():
    shapes, params = _followed(reassigned, {"ct": frozenset({"x"})})
    # ct has the shape x had when the function was called, not the sum's
    assert shapes.shape_in_parameters("y", params) == {"x"}
    assert shapes.shape_in_parameters("x", params) is None


def test_a_cotangent_said_to_broadcast_from_what_is_not_a_parameter_proves_nothing():
    shapes, params = _followed(reassigned, {"ct": frozenset({"elsewhere"}), "absent": {"x"}})
    assert shapes.shape_in_parameters("y", params) is None


def damped(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def broadcast_product(x, w):
    return np.sin(x * w)


def total_of_damped(x):
    return np.sum(damped(x))


def total_of_product(x, w):
    return np.sum(broadcast_product(x, w) ** 2)


def _vjps_made(fun, *args):
    """The generated VJPs of the functions ``fun``'s derivative calls, by name."""
    from numbax.api.transformed import _of_function

    nx.grad(fun)(*args)
    return {f.__name__: f for f in list(_of_function) if f.__name__.startswith("vjp_")}


def test_reverse_mode_records_each_cotangents_shape_and_a_vjp_of_a_vjp_keeps_it():
    x = np.linspace(-1.0, 1.0, 4)
    made = _vjps_made(lambda x: np.sum(nx.grad(total_of_damped)(x)), x)
    assert getattr(made["vjp_damped"], COTANGENT_OF) == {"_ct_out": {"x"}}
    second = getattr(made["vjp_vjp_damped"], COTANGENT_OF)
    assert second["_ct_out"] == {"x"}
    assert second["_ct_out_2"] == ({"x"},)  # vjp_damped's result: a tuple of x's shape


def test_an_output_broadcast_from_two_parameters_records_both():
    x, w = np.ones((3, 2)), np.array([0.5, 2.0])
    from numbax.api.transformed import _of_function

    nx.grad(total_of_product, argnums=1)(x, w)
    (vjp,) = [f for f in list(_of_function) if f.__name__ == "vjp_broadcast_product"]
    assert getattr(vjp, COTANGENT_OF) == {"_ct_out": {"x", "w"}}
