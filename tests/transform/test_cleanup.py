"""The cleanup pass's dead-code sweep (``transform/cleanup/__init__.py``)."""

import astor
import gast
import numpy as np

from numbax.transform.analysis.dataflow import Liveness
from numbax.transform.cleanup import _Names, _sweep
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
