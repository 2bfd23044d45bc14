"""The cleanup pass (``transform/cleanup.py``): its dead-code sweep and its folds."""

import textwrap

import astor
import gast
import numpy as np

from numbax.transform.analysis.dataflow import Liveness
from numbax.transform.cleanup import _Names, _sweep, cleanup
from numbax.transform.normalize import normalize
from numbax.transform.source import read_function


def chain(x):
    a = np.exp(x)
    b = a + 1.0
    c = np.sin(b) * a  # noqa: F841 (dead, on purpose)
    return x * 2.0


def chain_read_in_a_loop(x):
    a = np.exp(x)
    b = a + 1.0
    for _ in range(3):
        x = x + b
    c = np.sin(b)  # noqa: F841 (dead, on purpose)
    return x


def _swept_once(f):
    source = read_function(f)
    fn = normalize(source)
    _sweep(fn.body, Liveness(fn.body), _Names(fn, source), top=True)
    return astor.to_source(gast.gast_to_ast(fn))


def test_a_chain_of_values_read_only_by_each_other_goes_in_one_sweep():
    text = _swept_once(chain)
    assert "np.exp" not in text and "np.sin" not in text and "+ 1.0" not in text, text


def test_a_value_a_later_loop_reads_is_kept():
    text = _swept_once(chain_read_in_a_loop)
    assert "np.exp(x)" in text and "+ 1.0" in text, text
    assert "np.sin" not in text, text


def _cleaned(text):
    fn = gast.parse(textwrap.dedent(text)).body[0]
    return astor.to_source(gast.gast_to_ast(cleanup(fn)))


def test_the_slope_of_a_square_reads_as_a_product():
    """``nxrt.mul_pow(c, x, 1)`` (a power's slope, ``c * x ** 1``) is ``c * x`` for a
    nonzero number ``c`` and the integer 1; any other stays the helper's."""
    text = _cleaned(
        """
        def f(x):
            a = nxrt.mul_pow(2, x, 2 - 1)
            b = nxrt.mul_pow(0, x, 1)
            c = nxrt.mul_pow(2.5, x, 1.0)
            d = nxrt.mul_pow(3, x, 2)
            return a, b, c, d
        """
    )
    assert "a = 2 * x" in text, text
    assert "nxrt.mul_pow(0, x, 1)" in text, text  # 0 where c is 0, even where x is inf
    assert "nxrt.mul_pow(2.5, x, 1.0)" in text, text  # a float power makes ints float
    assert "nxrt.mul_pow(3, x, 2)" in text, text


def test_a_local_named_like_the_runtime_is_not_folded():
    text = _cleaned(
        """
        def f(x, nxrt):
            return nxrt.mul_pow(2, x, 1)
        """
    )
    assert "nxrt.mul_pow(2, x, 1)" in text, text
