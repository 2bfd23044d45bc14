"""NumPy's elementwise functions: each output element depends on the same element of
each (broadcast) input, so the JVP is a product with the local derivative and the VJP
multiplies the cotangent by it, then undoes broadcasting."""

import numpy as np

from numbax.transform.rules.registry import define, nondifferentiable

# fmt: off
#      function          parameters   jvp                             vjp
define(np.exp,           "x",   jvp="dx * ans",                vjp="g * ans")
define(np.log,           "x",   jvp="dx / x",                  vjp="g / x")
define(np.sin,           "x",   jvp="dx * np.cos(x)",          vjp="g * np.cos(x)")
define(np.cos,           "x",   jvp="-dx * np.sin(x)",         vjp="-g * np.sin(x)")
define(np.tanh,          "x",   jvp="dx * (1 - ans * ans)",    vjp="g * (1 - ans * ans)")
define(np.sqrt,          "x",   jvp="dx / (2 * ans)",          vjp="g / (2 * ans)")
# fmt: on

nondifferentiable([np.floor, np.ceil, np.round, np.sign, np.isnan, np.isfinite])
