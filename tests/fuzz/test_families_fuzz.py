"""The construct families (``tests/fuzz/families.py``) through numbax's interpreted
transformations: a small deterministic profile of each, and the checker's own tests.

Each family's programs are checked in every interpreted mode (``value``, ``grad``,
``value_and_grad``, ``jvp``, ``vjp``, ``jacfwd``, ``jacrev``, ``hessian``) against NumPy
and central differences, pytree structures exactly. A ``TransformError`` is an
accepted outcome; a wrong number or structure, or any other exception, fails the test.
``python -m tests.fuzz --families all`` is the long random search.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import numbax as nx
from tests.fuzz.families import FAMILIES, FamilyProgram, family_programs
from tests.fuzz.family_checks import FAMILY_MODE_GROUPS, check_family_program, tree_mismatch

_SETTINGS = dict(
    derandomize=True,
    phases=[Phase.generate],
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=4, **_SETTINGS)
@given(data=st.data())
def test_family_interpreted(family: str, data: st.DataObject) -> None:
    program = data.draw(family_programs(family))
    report = check_family_program(program, FAMILY_MODE_GROUPS["eager"])
    assume(report.valid)  # no derivative to check at this point (a kink, a cast)
    assert not report.failures(), report.describe()


# -- the checker ---------------------------------------------------------------------------
def _program(family: str, body: str, args: str, argnums: str) -> FamilyProgram:
    source = (
        "import numpy as np\n\nimport numbax as nx\n\n\n"
        f"def f{body}\n\n\ndef args():\n    return {args}\n\n\nARGNUMS = {argnums}\n"
    )
    return FamilyProgram(family, source, frozenset())


def test_checker_accepts_a_container_gradient_and_a_complex_one() -> None:
    containers = _program(
        "containers",
        "(p, x):\n    return np.sum(p['bs'][0] * x) + np.sum(np.sin(p['w']) * p['bs'][1])",
        "({'w': np.array([1.1, 0.4]), 'bs': [np.array([0.3, -0.2]), np.array([0.6, 0.9])]},"
        " np.array([0.7, 0.5]))",
        "(0, 1)",
    )
    complex_input = _program(
        "complex_linalg",
        "(z):\n    return np.real(np.sum(z * np.conj(z))) + np.real(np.sum(z * (1.0 - 2.0j)))",
        "(np.array([0.3 + 0.4j, -1.2 + 0.1j]),)",
        "0",
    )
    for program in (containers, complex_input):
        report = check_family_program(program, FAMILY_MODE_GROUPS["eager"])
        assert report.valid, report.rejected
        assert not report.failures(), report.describe()


def test_checker_reference_runs_transformations_by_differences() -> None:
    nested = _program(
        "nested",
        "(x):\n    return np.sum(nx.grad(lambda y: np.sum(y ** 3))(x) * x)",
        "(np.array([0.3, -0.5, 0.8]),)",
        "0",
    )
    report = check_family_program(nested, ("value", "hessian"))
    assert report.valid, report.rejected
    assert [o.status for o in report.outcomes] in (["ok", "ok"], ["declined", "declined"])


def test_checker_checks_the_hessian_of_a_second_derivative_inside() -> None:
    # f = 12 sum(x ** 4): its Hessian is diag(144 x ** 2), here by differences of nx.grad
    source = _program(
        "nested",
        "(x):\n    return np.sum(nx.hessian(lambda y: np.sum(y ** 4))(x) * np.outer(x, x))",
        "(np.array([0.3, -0.5, 0.8]),)",
        "0",
    ).source
    program = FamilyProgram("nested", source, frozenset({"nested:second_order_inside"}))
    (outcome,) = check_family_program(program, ("hessian",)).outcomes
    assert outcome.status == "ok", outcome.message


def test_checker_checks_no_derivative_at_a_kink() -> None:
    # np.max of tied elements: central differences give the mean of the one-sided
    # slopes, which is no derivative (JAX and numbax split the tie evenly)
    tied = _program(
        "loops_value",
        "(x, s):\n    acc = s\n    for _ in range(3):\n        acc = acc * 0.5 + np.max(x)\n"
        "    return acc",
        "(np.array([0.0137, 0.0137, 0.0137]), -1.1163)",
        "(0, 1)",
    )
    report = check_family_program(tied, FAMILY_MODE_GROUPS["eager"])
    assert report.rejected == "not smooth"


def test_tree_mismatch_names_structure_shape_kind_and_value() -> None:
    a = np.array([1.0, 2.0])
    assert tree_mismatch("g", [a, {"w": a}], [a, {"w": a}], 1e-9) == ""
    assert "structure: tuple, expected list" in tree_mismatch("g", (a, a), [a, a], 1e-9)
    assert "keys" in tree_mismatch("g", {"v": a}, {"w": a}, 1e-9)
    assert "2 items, expected 3" in tree_mismatch("g", [a, a], [a, a, a], 1e-9)
    assert "shape" in tree_mismatch("g", a[:1], a, 1e-9)
    assert "dtype" in tree_mismatch("g", a + 0j, a, 1e-9)
    assert "max error" in tree_mismatch("g", a + 1e-3, a, 1e-9)


def test_checker_reports_a_wrong_container_structure(monkeypatch: pytest.MonkeyPatch) -> None:
    import numbax as nx

    real_grad = nx.grad

    def tuples_for_lists(f, argnums=0):
        g = real_grad(f, argnums=argnums)
        return lambda *args: tuple(g(*args))

    monkeypatch.setattr(nx, "grad", tuples_for_lists)
    program = _program(
        "containers", "(p):\n    return np.sum(p[0] * p[1])", "([np.ones(2), np.ones(2)],)", "0"
    )
    (outcome,) = check_family_program(program, ("grad",)).outcomes
    assert outcome.status == "wrong" and "structure: tuple, expected list" in outcome.message


def test_checker_allows_the_differences_own_error_on_a_steep_hessian() -> None:
    """The Hessian of ``sin(grad(sum(a ** 9)))``: five-point differences with the
    default step are 0.4 off its largest entry (20,678), past the tolerance; a half step
    shows the error is the reference's own (a fuzz run once reported it as wrong)."""
    source = _program(
        "nested",
        "(x, s):\n    return np.sum(np.sin(nx.grad(hs)(x, s)) * x) + np.sin(s)",
        "(np.array([0.9737, -0.7963, -1.1063]), 0.1437)",
        "0",
    ).source
    helper = "def hs(a, b):\n    return np.cos(np.sum(a)) + np.sum(a ** 3 ** 2)\n\n\n"
    program = FamilyProgram("nested", source.replace("def f(", helper + "def f(", 1), frozenset())
    (outcome,) = check_family_program(program, ("hessian",)).outcomes
    assert outcome.status == "ok", outcome.message


def test_checker_still_reports_a_hessian_off_by_a_percent(monkeypatch: pytest.MonkeyPatch) -> None:
    source = _program(
        "nested", "(x):\n    return np.sum(np.sin(x) * x ** 3)", "(np.array([0.4, -0.9]),)", "0"
    )
    hessian = nx.hessian
    monkeypatch.setattr(nx, "hessian", lambda f: lambda *a: 1.01 * np.asarray(hessian(f)(*a)))
    (outcome,) = check_family_program(source, ("hessian",)).outcomes
    assert outcome.status == "wrong", outcome.message
