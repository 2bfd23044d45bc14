"""Generated programs through numbax's transformations (the fast, deterministic profile).

Each example is a whole module drawn by ``tests/fuzz/generator.py``; its derivatives
(``grad``, ``jacfwd``, ``jacrev``, ``jvp``, ``vjp``) are checked against central
differences and its ``vmap`` against a Python loop, interpreted and under ``nx.jit``;
``grad`` of a weighted sum of its gradient (a VJP of a VJP) under ``nx.jit`` against the
same interpreted.
A clear ``numbax.TransformError`` is an accepted outcome; a wrong number or any other
exception fails the test. ``derandomize=True`` makes the examples the same on every
run, so this profile is a regression test; ``make fuzz`` is the long random search.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, find, given, settings

import numbax as nx
from tests.fuzz.checks import MODE_GROUPS, check_program, normalize_message
from tests.fuzz.generator import ALL_CONSTRUCTS, CONSTRUCTS, Program, programs

#: Construct classes numbax gets wrong today, left out of this profile until fixed
#: (delete an entry to put its class back; ``make fuzz`` still generates them all).
FAST_PROFILE_EXCLUDED: dict[str, str] = {}

FAST_PROFILE = ALL_CONSTRUCTS - FAST_PROFILE_EXCLUDED.keys()

# No shrinking here: shrinking a failure through numbax takes minutes; the failing
# program is printed as found, and ``python -m tests.fuzz --shrink`` minimizes classes.
_SETTINGS = dict(
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _assert_no_failures(program: Program, groups: tuple[str, ...]) -> None:
    modes = tuple(m for g in groups for m in MODE_GROUPS[g])
    report = check_program(program, modes)
    assume(report.valid)  # no derivative to check at this point (a kink, an overflow)
    assert not report.failures(), report.describe()


@settings(max_examples=25, **_SETTINGS)
@given(programs(FAST_PROFILE))
def test_derivatives_and_vmap_interpreted(program: Program) -> None:
    _assert_no_failures(program, ("eager", "vmap"))


#: Variables assigned on some paths only, in both arms of a branch in a loop, or across
#: iterations and nested loops: reverse mode's bookkeeping of what exists where, drawn
#: here apart so that they are not a small share of a few examples.
_DEFINEDNESS = FAST_PROFILE & {
    "elementwise",
    "reductions",
    "indexing",
    "loop_branch_assign",
    "maybe_defined",
    "nested_break",
}


@settings(max_examples=20, **_SETTINGS)
@given(programs(_DEFINEDNESS))
def test_definedness_across_paths_interpreted(program: Program) -> None:
    _assert_no_failures(program, ("eager", "vmap"))


@settings(max_examples=3, **_SETTINGS)
@given(programs(FAST_PROFILE))
def test_grad_and_vmap_under_jit(program: Program) -> None:
    _assert_no_failures(program, ("jit",))


def test_exclusions_name_real_constructs() -> None:
    assert set(FAST_PROFILE_EXCLUDED) <= ALL_CONSTRUCTS


@pytest.mark.parametrize("construct", CONSTRUCTS)
def test_generator_reaches_every_construct(construct: str) -> None:
    """Every construct switch leads to programs that use it (else a class goes untested)."""
    found = find(
        programs(ALL_CONSTRUCTS),
        lambda program: construct in program.features,
        settings=settings(
            max_examples=500, derandomize=True, database=None, phases=[Phase.generate]
        ),
    )
    assert construct in found.features


@settings(max_examples=40, derandomize=True, database=None, deadline=None)
@given(programs(ALL_CONSTRUCTS))
def test_generated_programs_run_as_python(program: Program) -> None:
    """Every program is valid Python that runs and returns the promised shape (a
    generator bug must not pass for a numbax failure, or hide one)."""
    namespace: dict = {}
    exec(compile(program.source, "<generated>", "exec"), namespace)
    with np.errstate(all="ignore"):
        try:
            out = np.asarray(namespace["f"](*program.args()))
        except ZeroDivisionError:  # a Python float divided by an exact zero
            assume(False)
    assert out.shape == (() if program.scalar_output else (3,))


_SMOOTH = "import numpy as np\n\n\ndef f(x, s):\n    return np.sum(np.sin(x) * s)\n"
_KINK = "import numpy as np\n\n\ndef f(x, s):\n    return np.sum(np.abs(x)) + s\n"


def _program(source: str, x: tuple[float, float, float] = (0.3, -0.2, 0.9)) -> Program:
    return Program(source, x, 0.7, frozenset({"elementwise"}), scalar_output=True)


def test_checker_accepts_a_correct_program() -> None:
    report = check_program(_program(_SMOOTH), MODE_GROUPS["eager"] + MODE_GROUPS["vmap"])
    assert report.valid and not report.failures() and not report.declined()
    assert {o.status for o in report.outcomes} == {"ok"}


def test_checker_rejects_a_point_on_a_kink() -> None:
    assert check_program(_program(_KINK, (0.0, 0.5, 0.5))).rejected == "not smooth"


def test_checker_reports_a_wrong_derivative(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property can fail: a gradient that is off is classified ``wrong``."""
    real_grad = nx.grad

    def off_by_one(f, argnums=0):
        exact = real_grad(f, argnums=argnums)
        return lambda *args: tuple(g + 1.0 for g in exact(*args))

    monkeypatch.setattr(nx, "grad", off_by_one)
    (outcome,) = check_program(_program(_SMOOTH), ("grad",)).outcomes
    assert outcome.status == "wrong" and "d/dx" in outcome.message


def test_checker_classifies_exceptions(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(f, argnums=0):
        raise nx.TransformError("no rule", function="f", filename="/tmp/fuzz_0a1b2c3d4e_7.py")

    def crash(*args, **kwargs):
        raise KeyError("v12")

    monkeypatch.setattr(nx, "grad", refuse)
    monkeypatch.setattr(nx, "jacfwd", crash)
    refused, crashed = check_program(_program(_SMOOTH), ("grad", "jacfwd")).outcomes
    assert refused.status == "declined" and crashed.status == "crash"
    assert "<file>" in refused.signature and "<v>" in crashed.signature


def test_messages_of_one_bug_share_a_class() -> None:
    a = "UnboundLocalError: cannot access local variable '_ct_v12' [in /tmp/x/y_3f9a0c1d22.py]"
    b = "UnboundLocalError: cannot access local variable '_ct_a3' [in /tmp/q/y_99ff00aa11.py]"
    assert normalize_message(a) == normalize_message(b)
