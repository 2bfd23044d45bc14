"""numbax's public face: every callable numbax hands out (jit, the grad family, vmap,
pmap, custom rules, checkpoint; their base class is :class:`~numbax.api.callable.NumbaxFunction`)
and :func:`show`. ``numbax/__init__.py`` re-exports them.

The transformations a user may build inside a function being transformed
(``nx.vmap(model)(w, xs)``) are registered here with the normalizer, which builds them
once beforehand (``numbax.transform.normalize.transformations``); ``nx.jvp``, ``nx.vjp``
and ``nx.linearize`` called there become calls of the generated derivative
(``numbax.transform.normalize.jvp_vjp``).
"""

from numbax.api import autodiff
from numbax.api.autodiff import grad, hessian, jacfwd, jacobian, jacrev, value_and_grad
from numbax.api.custom import checkpoint, remat
from numbax.api.jit import jit
from numbax.api.pmap import pmap
from numbax.api.vmap import vmap
from numbax.transform.normalize.jvp_vjp import register_derivative_calls
from numbax.transform.normalize.transformations import register_transformations

register_transformations(
    vmap, pmap, grad, value_and_grad, jacfwd, jacrev, jacobian, hessian, jit, checkpoint, remat
)
register_derivative_calls(
    jvp=autodiff.jvp,
    vjp=autodiff.vjp,
    linearize=autodiff.linearize,
    derive=autodiff.inline_derivative,
)
