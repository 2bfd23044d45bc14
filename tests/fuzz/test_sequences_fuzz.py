"""Generated programs where NumPy functions take lists and tuples as arrays.

``np.add(t, u)`` of two tuples adds them, ``t + u`` joins them; derivative templates
written with Python's operators once joined tuples (a mean half its value, silently) or
repeated one (``2 * t``). Each program packs scalars or arrays of ``f(x, s)`` into a
tuple or list, runs one or two ufuncs on it and reduces it; ``grad``, ``jacfwd``, ``jvp``
and ``hessian`` are checked against central differences, interpreted (Numba compiles no
ufunc of a tuple: under ``jit`` such a line is refused at the line, as
``tests/autodiff/test_sequences_as_arrays.py`` checks).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import numbax as nx
from tests.fuzz.checks import load
from tests.fuzz.generator import Program
from tests.helpers.fd import numeric_jacobian

_SCALARS = ("x[0]", "s * x[1]", "np.sin(s)", "x[2] * x[0]", "s", "2.0 * s")
_ARRAYS = ("x", "x * s", "np.sin(x)", "x[::-1]")
_UNARY = ("np.sin({t})", "np.negative({t})", "np.exp({t})", "np.square({t})", "np.abs({t})")
_BINARY = (
    "np.add({t}, {u})",
    "np.subtract({t}, {u})",
    "np.multiply({t}, {u})",
    "np.maximum({t}, {u})",
    "np.divide({t}, 2.0)",
    "np.multiply({t}, 2)",
    "np.power({t}, 2)",
    "np.add({t}, 1.0)",
    "np.where(np.asarray({t}) > 0.1, {t}, {u})",
)
_REDUCTIONS = ("np.sum({r})", "np.mean({r})", "np.max({r})", "np.sum({r}[0])")


@st.composite
def sequence_programs(draw: st.DrawFn) -> Program:
    pool = draw(st.sampled_from([_SCALARS, _ARRAYS]))
    display = draw(st.sampled_from(["({}, {})", "[{}, {}]"]))
    t = display.format(*draw(st.permutations(pool))[:2])
    u = display.format(*draw(st.permutations(pool))[:2])
    lines = ["def f(x, s):", f"    t = {t}", f"    u = {u}"]
    value = "t"
    for k in range(draw(st.integers(1, 2))):
        form = draw(st.sampled_from(_UNARY + _BINARY))
        lines.append(f"    r{k} = " + form.format(t=value, u="u"))
        value = f"r{k}"
    lines.append("    return " + draw(st.sampled_from(_REDUCTIONS)).format(r=value))
    source = "import numpy as np\n\n\n" + "\n".join(lines) + "\n"
    return Program(source, (0.3, -0.8, 1.1), 0.7, frozenset({"tuples"}), scalar_output=True)


@settings(
    max_examples=20,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(sequence_programs())
def test_derivatives_of_sequences_used_as_arrays(program: Program) -> None:
    f = load(program).f
    x, s = np.array(program.x), program.s
    want_x = numeric_jacobian(f, (x, s), 0)
    want_s = numeric_jacobian(f, (x, s), 1)
    close = dict(rtol=1e-5, atol=1e-7, err_msg=program.source)
    grad_x, grad_s = nx.grad(f, argnums=(0, 1))(x, s)
    np.testing.assert_allclose(grad_x, want_x, **close)
    np.testing.assert_allclose(grad_s, want_s, **close)
    fwd_x, fwd_s = nx.jacfwd(f, argnums=(0, 1))(x, s)
    np.testing.assert_allclose(fwd_x, want_x, **close)
    np.testing.assert_allclose(fwd_s, want_s, **close)
    dx, ds = np.array([1.0, 0.5, -0.25]), 0.3
    _, tangent = nx.jvp(f, (x, s), (dx, ds))
    np.testing.assert_allclose(tangent, want_x @ dx + want_s * ds, **close)
    hessian = nx.hessian(f)(x, s)
    want = numeric_jacobian(lambda a, b: nx.grad(f)(a, b), (x, s), 0)
    np.testing.assert_allclose(hessian, want, rtol=1e-4, atol=1e-6, err_msg=program.source)
