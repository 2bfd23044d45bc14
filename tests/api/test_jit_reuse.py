"""A new ``nx.jit`` object of a function compiled already reuses its compilations (a
jit made in a loop costs a lookup), never across a rebound global or closure value;
long compiles say so on stderr; ``nx.config``; ``nx.pmap``."""

from __future__ import annotations

import importlib
import types

import numpy as np
import pytest

import numbax as nx
from numbax.codegen.reuse import reuse_key
from numbax.configuration import Config
from numbax.numba_backend.caching import compile_log

jit_module = importlib.import_module("numbax.api.jit")  # numbax.api.jit is also the function

SCALE = 2.0


def helper(x):
    return x * SCALE


def scaled(x):
    return np.sum(helper(x) ** 2)


def make(k):
    return lambda x: x * k


@pytest.fixture
def compiles(monkeypatch):
    """How many specializations ``nx.jit`` objects generate and compile."""
    count = []
    real = jit_module.compile_function

    def counting(*args, **kwargs):
        count.append(args[0].name)
        return real(*args, **kwargs)

    monkeypatch.setattr(jit_module, "compile_function", counting)
    return count


def test_reuse_key_follows_code_closure_and_globals(monkeypatch) -> None:
    a, b = np.ones(2), np.ones(2)
    assert reuse_key(make(a)) == reuse_key(make(a))
    assert reuse_key(make(a)) != reuse_key(make(b))  # equal values, other objects
    before = reuse_key(scaled)
    assert reuse_key(scaled) == before
    monkeypatch.setattr(__import__(__name__), "SCALE", 3.0)  # read by helper, called by scaled
    assert reuse_key(scaled) != before
    assert reuse_key(nx.grad(scaled)) == reuse_key(nx.grad(scaled))
    assert reuse_key(nx.grad(scaled)) != reuse_key(nx.grad(scaled, argnums=(0,)))


def star_total(*xs):
    return np.sum(xs[0] * 2.0)


def test_reuse_key_names_the_transformation_and_its_options() -> None:
    """Code compiled for ``jacrev(f)`` never serves ``jacfwd(f)``: the jit of the one
    compiled first once answered for both, so the other mode went untested under jit."""
    transformations = [
        nx.jacfwd(scaled),
        nx.jacrev(scaled),
        nx.grad(scaled),
        nx.grad(scaled, allow_int=True),
        nx.value_and_grad(scaled),
        nx.hessian(scaled),
        nx.grad(star_total),
        nx.jacfwd(star_total),
        nx.jacrev(star_total),
    ]
    keys = [reuse_key(t) for t in transformations]
    assert len(set(keys)) == len(keys), [t for t in transformations]
    assert reuse_key(nx.jacfwd(scaled)) == reuse_key(nx.jacfwd(scaled))
    assert reuse_key(nx.grad(star_total)) == reuse_key(nx.grad(star_total))


def test_jit_of_jacfwd_after_jacrev_runs_jacfwd() -> None:
    """The generated code each ``jit`` runs is its own transformation's."""
    backward, forward = nx.jit(nx.jacrev(scaled)), nx.jit(nx.jacfwd(scaled))
    assert "jacrev_" in backward.source and "jacfwd_" in forward.source


def test_new_jit_objects_reuse_and_rebinding_a_global_compiles_anew(compiles, monkeypatch) -> None:
    x = np.array([1.0, 2.0])
    for _ in range(3):
        assert nx.jit(scaled)(x) == pytest.approx(20.0)
    assert compiles == ["scaled"]
    monkeypatch.setattr(__import__(__name__), "SCALE", 3.0)
    for _ in range(3):
        assert nx.jit(scaled)(x) == pytest.approx(45.0)
    assert compiles == ["scaled", "scaled"]


def frozen_scale(x):
    return x * SCALE


def test_compilations_are_keyed_by_the_values_at_compile_time(monkeypatch) -> None:
    """A jit object made before a rebinding and compiled after it files its code under
    the values it froze, so a later jit object made with the old values compiles anew.
    (Numba is stood in for by a compile that freezes SCALE.)"""
    made = []

    def freeze(source, *args, **kwargs):
        value = np.float64(SCALE)
        made.append(value)
        return types.SimpleNamespace(dispatcher=lambda x: value, text="", __call__=None)

    monkeypatch.setattr(jit_module, "compile_function", freeze)
    module = __import__(__name__)
    early = nx.jit(frozen_scale)
    monkeypatch.setattr(module, "SCALE", 5.0)
    assert early.specialize().dispatcher(1.0) == 5.0
    monkeypatch.setattr(module, "SCALE", 2.0)
    assert nx.jit(frozen_scale).specialize().dispatcher(1.0) == 2.0
    monkeypatch.setattr(module, "SCALE", 5.0)
    assert nx.jit(frozen_scale).specialize().dispatcher(1.0) == 5.0
    assert made == [5.0, 2.0]


def test_long_compiles_are_reported(capfd, monkeypatch) -> None:
    monkeypatch.setattr(nx.config, "_values", {**nx.config._values})
    log = compile_log._CompileLog()
    dispatcher = types.SimpleNamespace()
    compile_log.describe(dispatcher, "jit of loss (fit.py, line 3)")
    event = types.SimpleNamespace(data={"dispatcher": dispatcher})
    nested = types.SimpleNamespace(data={"dispatcher": types.SimpleNamespace()})

    def compile_once(seconds: float) -> str:
        nx.config.update("numbax_compile_log_seconds", seconds)
        log.on_start(event)
        log.on_start(nested)  # a helper compiled inside: not reported on its own
        log.on_end(nested)
        log.on_end(event)
        return capfd.readouterr().err

    assert compile_once(0.0).startswith("numbax: compiled jit of loss (fit.py, line 3) in 0.0 s")
    assert compile_once(60.0) == ""
    nx.config.update("numbax_compile_log", False)
    assert compile_once(0.0) == ""


def test_config(monkeypatch) -> None:
    with pytest.raises(AttributeError, match="numbax_compile_log"):
        nx.config.update("jax_enable_x64", True)
    with pytest.raises(TypeError, match="takes a bool"):
        nx.config.update("numbax_compile_log", "yes")
    monkeypatch.setenv("NUMBAX_COMPILE_LOG", "0")
    monkeypatch.setenv("NUMBAX_COMPILE_LOG_SECONDS", "5")
    fresh = Config()
    assert fresh.numbax_compile_log is False
    assert fresh.numbax_compile_log_seconds == 5.0


def centered(x):
    return x - nx.lax.pmean(x, "devices")


def test_pmap_maps_on_the_host_like_vmap() -> None:
    """pmap's results are vmap's (its threads: tests/api/test_pmap_threads.py)."""
    xs = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(nx.pmap(centered, "devices")(xs), xs - xs.mean(0))
    np.testing.assert_allclose(nx.pmap(np.sin)(xs), np.sin(xs))


def lambda_over_global():
    return lambda x: scaled(x) * SCALE


def test_eager_derivatives_of_lambdas_made_anew_share_generated_code() -> None:
    """A lambda made in each call of an objective, reading globals only, shares its
    derivative; lambdas closing over different cells (which eager code reads as it
    runs) do not."""
    first, second = lambda_over_global(), lambda_over_global()
    assert first is not second
    assert nx.grad(first).generated() is nx.grad(second).generated()
    a, b = make(2.0), make(2.0)
    assert nx.grad(a).generated() is not nx.grad(b).generated()
    assert nx.grad(a)(1.0) == nx.grad(b)(1.0) == 2.0
