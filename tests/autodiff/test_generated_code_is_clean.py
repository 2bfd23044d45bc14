"""The code grad, jvp and hessian generate carries no waste (DESIGN.md: "no dead code
left behind"), over the derivative corpus (``programs.py``) and generated programs
(``tests/fuzz/generator.py``): no assignment whose value nothing reads, unless making
it has an effect (a call: a tape's ``pop``, a helper that checks), and no restore that
gives a variable the value it already holds (``_x_old = x`` ... ``x = _x_old``)."""

from __future__ import annotations

import gast
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import numbax as nx
from numbax.errors import TransformError
from numbax.transform.analysis.dataflow import Liveness, assigned_names, definitions
from tests.autodiff.programs import PROGRAMS
from tests.fuzz.checks import load
from tests.fuzz.generator import ALL_CONSTRUCTS, programs


def _texts(transformed) -> list[str]:
    """The generated module of ``transformed`` and of every derivative it calls."""
    texts, todo, seen = [], [transformed.generated()], set()
    while todo:
        generated = todo.pop()
        if id(generated) in seen:
            continue
        seen.add(id(generated))
        texts.append(generated.text)
        todo += generated.callees
    return texts


def _waste(text: str) -> list[str]:
    """Each dead assignment and cancelling restore in a generated module's functions."""
    found = []
    for fn in gast.parse(text).body:
        if isinstance(fn, gast.FunctionDef):
            liveness = Liveness(fn.body)
            found += _dead(fn.body, liveness) + _cancelling(fn.body)
    return found


def _dead(stmts: list[gast.stmt], liveness: Liveness) -> list[str]:
    found = []
    for stmt in stmts:
        for block in ("body", "orelse"):
            found += _dead(getattr(stmt, block, []), liveness)
        if not isinstance(stmt, gast.Assign):
            continue
        target = stmt.targets[0]
        elements = target.elts if isinstance(target, gast.Tuple) else [target]
        if not all(isinstance(e, gast.Name) for e in elements):
            continue  # a store
        has_call = any(isinstance(n, gast.Call) for n in gast.walk(stmt.value))
        if not has_call and not definitions(stmt) & liveness.after(stmt):
            found.append(f"dead: {gast.unparse(stmt)} (line {stmt.lineno})")
    return found


def _cancelling(stmts: list[gast.stmt]) -> list[str]:
    found, copies = [], set()
    for stmt in stmts:
        for block in ("body", "orelse"):
            found += _cancelling(getattr(stmt, block, []))
        pair = None
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            if isinstance(stmt.value, gast.Name):
                pair = (stmt.targets[0].id, stmt.value.id)
                if pair[0] == pair[1] or pair[::-1] in copies:
                    found.append(f"restore that cancels: {gast.unparse(stmt)} (line {stmt.lineno})")
        written = assigned_names([stmt])
        copies = {p for p in copies if not set(p) & written}
        if pair is not None:
            copies.add(pair)
    return found


def _check(f, argnums, scalar: bool = True) -> None:
    derivatives = [nx.jacfwd(f, argnums=argnums)]  # its JVP
    if scalar:
        derivatives += [nx.grad(f, argnums=argnums), nx.hessian(f, argnums=argnums)]
    for derivative in derivatives:
        try:
            texts = _texts(derivative)
        except TransformError:
            continue  # refused, clearly: nothing generated
        for text in texts:
            waste = _waste(text)
            assert not waste, "\n".join(waste) + "\n\n" + text


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_corpus_derivatives_have_no_waste(name):
    f, args = PROGRAMS[name]
    floats = tuple(i for i, a in enumerate(args) if np.result_type(a).kind == "f")
    _check(f, floats[0] if name == "data_dependent_trips" else floats)


@settings(
    max_examples=30,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(programs(ALL_CONSTRUCTS))
def test_generated_programs_derivatives_have_no_waste(program):
    module = load(program)
    _check(module.f, (0, 1), scalar=program.scalar_output)
