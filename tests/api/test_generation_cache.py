"""Generated derivatives kept on disk (``api/generation_cache.py``): a later process
loads a derivative's module instead of generating it, exactly when the function, what
its names denote and numbax are what they were.

Forgetting the generations held in memory stands for a new process here; one test runs
two real processes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import numbax as nx
from numbax.api import generation_cache, transformed
from numbax.codegen import cache
from numbax.codegen.trust import CacheWarning


@pytest.fixture
def new_process(monkeypatch):
    """``forget()``: drop the generations held in memory, as a new process starts
    without them; ``generations()``: how many functions were generated (not loaded)
    since."""
    made = []
    normalize = transformed.normalize

    def counted(*args, **kwargs):
        made.append(args[0].name)
        return normalize(*args, **kwargs)

    monkeypatch.setattr(transformed, "normalize", counted)

    class Process:
        def forget(self):
            monkeypatch.setattr(transformed, "_generated", {})
            made.clear()

        def generations(self):
            return len(made)

    process = Process()
    process.forget()  # what earlier tests generated: this test starts anew
    return process


def entries(root):
    return sorted((root / cache.version_dirname() / generation_cache.SUBDIR).glob("*.json"))


def squash(x):
    return np.tanh(3.0 * x) + x


def total_squash(x):
    return np.sum(squash(x))


def second_derivative(x):
    return nx.grad(lambda v: np.sum(nx.grad(total_squash)(v)))(x)


X = np.linspace(-1.0, 1.0, 7)


def test_a_new_process_loads_the_derivatives_it_generated(cache_dir, new_process):
    grad = nx.grad(total_squash)
    first_text, first_value = grad.source, grad(X)
    assert new_process.generations() > 0 and entries(cache_dir)
    new_process.forget()
    again = nx.grad(total_squash)
    assert again.source == first_text
    np.testing.assert_array_equal(again(X), first_value)
    assert new_process.generations() == 0  # loaded: the callee's VJP too


def test_nested_derivatives_load_through_their_callees(cache_dir, new_process):
    """grad of a function calling grad(f): the inner derivative's VJP is found again
    by the free name that holds it, and its text checked."""
    want = second_derivative(X)
    new_process.forget()
    np.testing.assert_allclose(second_derivative(X), want, rtol=1e-14)
    # the lambda is made anew each time: read and generated again, the rest loaded
    assert new_process.generations() <= 1
    slope = 3.0 * (1.0 - np.tanh(3.0 * X) ** 2)
    np.testing.assert_allclose(want, -2.0 * 3.0 * np.tanh(3.0 * X) * slope, rtol=1e-12)


AXIS = 0


def summed_over_axis(x):
    return np.sum(np.sum(x**2, axis=AXIS) * np.arange(3.0))


def test_an_integer_global_is_part_of_the_key(cache_dir, new_process, monkeypatch):
    x = np.arange(9.0).reshape(3, 3)
    nx.grad(summed_over_axis)(x)
    new_process.forget()
    monkeypatch.setitem(globals(), "AXIS", 1)
    got = nx.grad(summed_over_axis)(x)
    assert new_process.generations() == 1  # an axis changes the code: generated again
    np.testing.assert_array_equal(got, 2 * x * np.arange(3.0)[:, None])


SCALE = 2.0


def scaled(x):
    return np.sum(SCALE * x**2)


def test_a_float_global_is_read_when_the_code_runs(cache_dir, new_process, monkeypatch):
    nx.grad(scaled)(X)
    new_process.forget()
    monkeypatch.setitem(globals(), "SCALE", 5.0)
    np.testing.assert_allclose(nx.grad(scaled)(X), 10.0 * X)
    assert new_process.generations() == 0  # the same code reads the new value


def helper_v1(x):
    return np.sin(x)


def helper_v2(x):
    return np.cos(x)


def calls_helper(x):
    return np.sum(helper(x))  # noqa: F821 (bound by the test)


def test_a_helper_with_other_code_is_differentiated_again(cache_dir, new_process, monkeypatch):
    monkeypatch.setitem(globals(), "helper", helper_v1)
    np.testing.assert_allclose(nx.grad(calls_helper)(X), np.cos(X))
    new_process.forget()
    monkeypatch.setitem(globals(), "helper", helper_v2)
    np.testing.assert_allclose(nx.grad(calls_helper)(X), -np.sin(X))
    assert new_process.generations() == 2  # calls_helper and the new helper's VJP


def closure_of(power):
    def raised(x):
        return np.sum(x**power)

    return raised


def test_closures_of_one_factory_are_told_apart(cache_dir, new_process):
    np.testing.assert_allclose(nx.grad(closure_of(2))(X), 2 * X)
    new_process.forget()
    np.testing.assert_allclose(nx.grad(closure_of(3))(X), 3 * X**2)
    assert new_process.generations() == 1


def with_default(k):
    return lambda x, k=k: np.sum(k * x**2)


def test_defaults_are_part_of_the_key_by_value(cache_dir, new_process):
    """A default is written into the generated signature (``k=2.0``): two floats of one
    kind are two entries, where a float global read when the code runs is one."""
    np.testing.assert_allclose(nx.grad(with_default(2.0))(X), 4.0 * X)
    new_process.forget()
    np.testing.assert_allclose(nx.grad(with_default(3.0))(X), 6.0 * X)
    assert new_process.generations() == 1


class Box:
    factor = 2.0


BOX = Box()


def reads_an_object(x):
    return np.sum(BOX.factor * x)


def test_what_has_no_lasting_description_is_not_kept(cache_dir, new_process):
    assert generation_cache.describe(BOX) is None
    np.testing.assert_allclose(nx.grad(reads_an_object)(X), 2.0)
    assert entries(cache_dir) == []


def test_a_damaged_entry_is_discarded_and_generated_again(cache_dir, new_process):
    want = nx.grad(total_squash)(X)
    for path in entries(cache_dir):
        path.write_bytes(path.read_bytes()[:-5])
    new_process.forget()
    with pytest.warns(CacheWarning, match="discarded"):
        got = nx.grad(total_squash)(X)
    np.testing.assert_array_equal(got, want)
    assert new_process.generations() > 0


def test_directories_in_the_place_of_entries_are_one_warning(cache_dir, new_process):
    want = nx.grad(total_squash)(X)
    kept = entries(cache_dir)
    assert len(kept) > 1  # the function's and its callee's
    for path in kept:
        path.unlink()
        (path / "inside").mkdir(parents=True)
    new_process.forget()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = nx.grad(total_squash)(X)
    np.testing.assert_array_equal(got, want)
    said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(said) == 1 and "not a regular file" in said[0]
    assert all(path.is_file() for path in kept)  # written again


def test_an_entry_whose_callee_derivative_changed_is_not_used(cache_dir, new_process):
    """Each derivative an entry binds is made again and compared with the text it was
    made with; another text (here, a forged hash) means the entry is not used."""
    want = nx.grad(total_squash)(X)
    forged = 0
    for path in entries(cache_dir):
        digest, _, payload = path.read_bytes().partition(b"\n")
        entry = json.loads(payload)
        for recipe in entry["derivatives"]:
            recipe["text"] = "0" * 64
            forged += 1
        payload = json.dumps(entry, sort_keys=True).encode()
        path.write_bytes(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    assert forged
    new_process.forget()
    np.testing.assert_array_equal(nx.grad(total_squash)(X), want)
    assert new_process.generations() == 1  # the caller; the callee's VJP loads


def test_descriptions_name_what_holds_across_processes():
    describe = generation_cache.describe
    assert describe(3) == ("int", 3) and describe(np.int64(3)) == ("int64", 3)
    assert describe(2.5) == describe(7.0) == "float"
    assert describe(np.ones((2, 3))) == ("ndarray", "<f8", 2)
    assert describe(np) == ("module", "numpy")
    assert describe(np.sin) == ("ufunc", "sin")
    assert describe(math.exp) == ("library", "math", "exp")
    assert describe((1, "a", None)) == ("tuple", (), (("int", 1), ("str", "a"), ("NoneType", None)))
    assert describe({"k": 2.0}) == ("dict", ("k",), ("float",))
    assert describe({"k": 2.0}, exact=True) == ("dict", ("k",), (("float", "2.0"),))
    assert describe(helper_v1) != describe(helper_v2)  # the code
    assert describe(closure_of(2)) != describe(closure_of(3))  # the closure
    assert describe(closure_of(2)) == describe(closure_of(2))
    assert describe(nx.grad(helper_v1)) != describe(nx.grad(helper_v1, argnums=(0,)))
    assert describe(object()) is None and describe({object(): 1}) is None
    assert describe(Box) is None  # a class of the user's
    assert describe(np.random.default_rng(0).normal) is None  # a method of an object
    assert describe(np.dtype("float32")) is None


SCRIPT = """
import sys
import numpy as np
import numbax as nx
from numbax.api import transformed

made = []
normalize = transformed.normalize
transformed.normalize = lambda *a, **k: made.append(a[0].name) or normalize(*a, **k)
sys.path.insert(0, {tests!r})
from test_generation_cache import total_squash
value = nx.grad(total_squash)(np.float64(0.3))
print(len(made), repr(float(value)))
"""


def test_a_second_process_generates_nothing_of_what_the_first_kept(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(SCRIPT.format(tests=str(Path(__file__).parent))))
    env = {
        **os.environ,
        "NUMBAX_CACHE_DIR": str(tmp_path / "cache"),
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
    }
    runs = [
        subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert int(runs[0][0]) > 0 and int(runs[1][0]) == 0
    assert runs[0][1] == runs[1][1]
