"""Kernels that repeat a computation are emitted once and called where each was
(``numba_backend/passes/shared_kernels.py``)."""

import re
import sys
import textwrap

import gast
import numpy as np

import numbax as nx
from numbax.numba_backend.passes.shared_kernels import share_kernels
from numbax.transform.provenance import ORIGIN, Origin

MODULE = """
@nxrt.elementwise
def _f_line3(x):
    _mul = -2.0 * x
    return np.exp(_mul)

@nxrt.elementwise(weak=("a",), same_shapes=True)
def _f_line5(a, b):
    _neg = -a
    return _neg / b

@nxrt.elementwise
def _f_line3_2(_x_2):
    _mul_7 = -2.0 * _x_2
    return np.exp(_mul_7)

@nxrt.elementwise(weak=("c",), same_shapes=True)
def _f_line5_2(c, d):
    _neg_2 = -c
    return _neg_2 / d

@nxrt.elementwise(weak=("d",), same_shapes=True)
def _f_line5_3(c, d):
    _neg_3 = -c
    return _neg_3 / d

@nxrt.elementwise
def _f_line4(x):
    _mul = -2.0 * x
    return np.exp(_mul)

@nxrt.elementwise(unbroadcast=True, also=_f_line3_2)
def _f_line9(x):
    _mul = -2.0 * x
    return np.exp(_mul)

def f(x, y):
    a = _f_line3(x)
    b = _f_line3_2(y)
    if a[0] > 0:
        c = _f_line5_2(a, b)
    d = _f_line5_3(a, b)
    e = _f_line4(a)
    return _f_line9(x, e, y)
"""

LINES = {"_f_line3": 3, "_f_line3_2": 3, "_f_line5": 5, "_f_line5_2": 5, "_f_line5_3": 5}


def _parsed():
    *kernels, fn = gast.parse(textwrap.dedent(MODULE)).body
    for kernel in kernels:  # the user's line each statement comes from
        line = LINES.get(kernel.name, int(kernel.name.split("_line")[1].split("_")[0]))
        for stmt in kernel.body:
            stmt.lineno = line
    return fn, kernels


def test_kernels_equal_up_to_their_names_are_emitted_once_and_called_where_each_was():
    fn, kernels = _parsed()
    kept = share_kernels(fn, kernels)
    # _f_line3_2 repeats _f_line3, _f_line5_2 repeats _f_line5 (its weak parameter is
    # the first, too); _f_line5_3's weak parameter is another, _f_line4 reads another
    # line of the user's code, _f_line9 declares another sum
    assert [k.name for k in kept] == ["_f_line3", "_f_line5", "_f_line5_3", "_f_line4", "_f_line9"]
    calls = {n.targets[0].id: n.value.func.id for n in gast.walk(fn) if isinstance(n, gast.Assign)}
    assert calls == {"a": "_f_line3", "b": "_f_line3", "c": "_f_line5", "d": "_f_line5_3"} | {
        "e": "_f_line4"
    }
    returned = fn.body[-1].value.func.id
    assert returned == "_f_line9"
    also = kept[-1].decorator_list[0].keywords[1].value
    assert also.id == "_f_line3"  # a repeat named in a declaration names the first


def test_nothing_changes_without_repeats():
    fn, kernels = _parsed()
    distinct = [kernels[0], kernels[1], kernels[5]]
    before = gast.dump(fn)
    assert share_kernels(fn, distinct) == distinct
    assert gast.dump(fn) == before


def scaled(x):
    y = np.exp(-2.0 * x)
    s = np.sum(y * y)
    return (1.0 - y) / (1.0 + y) * s


def total(x):
    return np.sum(scaled(x))


slope = nx.grad(total)


def total_slope(x):
    return np.sum(slope(x))


curvature = nx.grad(total_slope)


def test_a_second_adjoint_shares_its_kernels_and_keeps_its_values():
    """The adjoint of ``scaled``'s adjoint recomputes ``y`` and applies one local
    derivative in several runs (the sum splits them): each computation is one kernel,
    and the values are those of the interpreted derivative and of central differences
    of the first."""
    x = np.linspace(-1.0, 1.0, 7)
    np.testing.assert_allclose(nx.jit(curvature)(x), curvature(x), rtol=1e-12, atol=1e-12)
    texts = [
        m.__numbax_source__
        for m in list(sys.modules.values())
        if getattr(m, "__numbax_source__", "").startswith("# jit of vjp_vjp_scaled ")
    ]
    assert texts
    for text in texts:
        defined = re.findall(r"^def (\w+_line\w*)\(", text, re.M)
        called = re.findall(r"= (\w+_line\w*)\(", text)
        stood_in = re.findall(r"nxrt\.shape_stand_in\((\w+_line\w*), ", text)  # for a shape
        assert set(called) | set(stood_in) == set(defined), text
        assert len(called) > len(set(called)), text  # a kernel called in two places
    h = 1e-5
    fd = (slope(x + h) - slope(x - h)) / (2 * h)
    np.testing.assert_allclose(curvature(x), fd, rtol=1e-6, atol=1e-8)


def test_kernels_of_one_users_line_are_shared_where_their_own_lines_differ():
    """Recomputed copies sit at other lines of the generated tree (their ``lineno``) but
    compute the same user's line (their origin): one kernel serves both; another user's
    line is another kernel, as its comment would be another."""
    fn, kernels = _parsed()
    first, _, repeat, *_ = kernels
    for stmt in first.body:
        stmt.lineno = 7
    for stmt in repeat.body:
        stmt.lineno = 31
    for kernel in (first, repeat):
        for stmt in kernel.body:
            setattr(stmt, ORIGIN, Origin("user.py", 95))
    assert [k.name for k in share_kernels(fn, [first, repeat])] == ["_f_line3"]
    setattr(repeat.body[-1], ORIGIN, Origin("user.py", 96))
    fn, kernels = _parsed()
    assert len(share_kernels(fn, [first, repeat])) == 2
