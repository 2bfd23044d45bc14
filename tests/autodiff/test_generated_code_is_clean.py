"""The code grad, jvp, hessian and vmap generate, and their compositions, carries no
waste (DESIGN.md: "no dead code left behind"), over the derivative corpus
(``tests/helpers/programs.py``), README's examples and generated programs
(``tests/fuzz/generator.py``): no assignment whose value nothing reads, unless making it
has an effect (a call: a tape's ``pop``, a helper that checks), no restore that gives a
variable the value it already holds (``_x_old = x`` ... ``x = _x_old``), and no
save/restore pair that renaming would make unnecessary (the variable rebound only in the
straight line between them); and each ``# line N`` comment names the user's own line,
through compositions.

Interpreted only: functions are transformed (and vmap's called, which chooses its
method), never compiled."""

from __future__ import annotations

import linecache
import os
import re
from collections import Counter

import gast
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import numbax as nx
from numbax.errors import TransformError
from numbax.transform.analysis.dataflow import (
    Liveness,
    assigned_names,
    copied_names,
    definitions,
    statements,
)
from tests.fuzz.checks import load
from tests.fuzz.generator import ALL_CONSTRUCTS, programs
from tests.helpers.programs import PROGRAMS


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
            found += _dead(fn.body, liveness) + _cancelling(fn.body) + _renamable(fn)
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


def _renamable(fn: gast.FunctionDef) -> list[str]:
    """Each restore ``v = a`` of a save ``a = v`` (``a`` assigned nowhere else) in the
    same block, where ``v`` is rebound between them only by statements of that block
    and nothing jumps out: renaming those values would make both unnecessary."""
    assigned = Counter(
        n.id
        for n in gast.walk(fn)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store | gast.Param)
    )
    found = []
    for block in [fn.body] + [
        getattr(s, b) for s in statements(fn.body) for b in ("body", "orelse") if hasattr(s, b)
    ]:
        for j, restore in enumerate(block):
            pair = copied_names(restore)
            if pair is None or assigned[pair[1]] != 1:
                continue
            v, a = pair
            saves = [i for i in range(j) if copied_names(block[i]) == (a, v)]
            if saves and v != a and _straight(block[saves[0] + 1 : j], v):
                found.append(f"save/restore pair renaming removes: {gast.unparse(restore)}")
    return found


def _straight(region: list[gast.stmt], v: str) -> bool:
    """Whether ``v`` is assigned in ``region`` only by its own statements, with no
    ``return``, ``break`` or ``continue`` anywhere in it."""
    for stmt in region:
        inner = [s for b in ("body", "orelse") for s in getattr(stmt, b, [])]
        if isinstance(stmt, gast.For) and v in assigned_names([stmt.target]):
            return False
        if v in assigned_names(inner):
            return False
        if any(isinstance(s, gast.Return | gast.Break | gast.Continue) for s in gast.walk(stmt)):
            return False
    return True


_COMMENT = re.compile(
    r"#\s*(?:(?P<file>[^,#]+\.py), )?(?:adjoint of )?line (?P<line>\d+): (?P<text>.*)$"
)


def _misplaced_comments(text: str, filename: str) -> list[str]:
    """``# line N: ...`` comments whose text is not line N of the user's file (a line of
    a generated module instead), and any mention of numbax's cache files."""
    found = []
    for line in text.splitlines():
        if "numbax_generated" in line and line.lstrip().startswith("#"):
            found.append(f"a cache file named: {line.strip()}")
        match = _COMMENT.search(line)
        if match is None:
            continue
        where = filename
        if match["file"] and match["file"] != os.path.basename(filename):
            continue  # another user file (a helper's)
        user = linecache.getline(where, int(match["line"])).strip()
        if user != match["text"].strip():
            found.append(f"not the user's line {match['line']} ({user!r}): {line.strip()}")
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
            problems = _waste(text) + _misplaced_comments(text, f.__code__.co_filename)
            assert not problems, "\n".join(problems) + "\n\n" + text


def _check_batched(batched, args, filename: str) -> None:
    """vmap's generated code for a call with ``args`` (the method it chose), and that
    of every generated function it calls, has no waste and comments the user's lines."""
    try:
        batched(*args)
    except TransformError:
        return  # refused, clearly
    texts = [batched.source] + [
        text for callee in _batched_callees(batched) for text in _texts(callee)
    ]
    for text in texts:
        problems = _waste(text) + _misplaced_comments(text, filename)
        assert not problems, "\n".join(problems) + "\n\n" + text


def _batched_callees(batched) -> list:
    fun = batched.fun
    return [fun] if hasattr(fun, "generated") else []


def _corpus(name):
    f, args = PROGRAMS[name]
    floats = tuple(i for i, a in enumerate(args) if np.result_type(a).kind == "f")
    return f, args, floats


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_corpus_derivatives_have_no_waste(name):
    f, args, floats = _corpus(name)
    _check(f, floats[0] if name == "data_dependent_trips" else floats)


@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - {"calls_jitted"}))
def test_corpus_batched_has_no_waste(name):
    """vmap of each program and of its gradient (vectorized where vmap can, else its
    loop), mapped over the floating-point arguments (not the program that calls a
    jitted function: running it compiles)."""
    f, args, floats = _corpus(name)
    argnums = floats[0] if name == "data_dependent_trips" else floats
    axes = tuple(0 if i in floats else None for i in range(len(args)))
    batch = tuple(np.stack([a, 1.1 * a]) if i in floats else a for i, a in enumerate(args))
    filename = f.__code__.co_filename
    _check_batched(nx.vmap(f, in_axes=axes), batch, filename)
    _check_batched(nx.vmap(nx.grad(f, argnums=argnums), in_axes=axes), batch, filename)


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


# README's examples (and what the README says of them)


def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def horner(c, x):
    acc = 0.0
    for i in range(c.shape[0]):
        acc = acc * x + c[i]
    return acc


def lorenz(sigma, rho, beta, n_steps=100):
    x, y, z = 1.0, 1.0, 1.0
    dt = 0.001
    for _ in range(n_steps):
        dx = sigma * (y - x)
        dy = x * (rho - z) - y
        dz = x * y - beta * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
    return x * x


def loss(w, x, y):
    z = np.tanh(np.dot(x, w))
    z = z * z + z
    return np.sum((z - y) ** 2)


def batched_loss(w, xs, ys):
    return np.sum(nx.vmap(loss, in_axes=(None, 0, 0))(w, xs, ys))


_MAT = np.arange(6.0).reshape(2, 3) / 6.0


def apply_matrix(x):
    return np.dot(_MAT, x)


def test_readme_examples_have_no_waste():
    _check(sum_logistic, 0)
    _check(horner, 1)
    _check(lorenz, (0, 1, 2))
    _check(loss, 0)
    _check(batched_loss, 0)  # grad and hessian of a function that calls vmap


def test_readme_batched_examples_have_no_waste():
    here = __file__
    w, xs, ys = np.array([0.1, -0.2, 0.3]), np.ones((4, 3)) * 0.5, np.ones(4)
    _check_batched(nx.vmap(apply_matrix), (xs,), here)
    _check_batched(nx.vmap(nx.grad(loss), in_axes=(None, 0, 0)), (w, xs, ys), here)
    _check_batched(nx.vmap(nx.grad(sum_logistic)), (xs,), here)
    # transformations reading vmap's generated functions (the function vmap stands for
    # and its derivatives) comment the user's lines
    for derivative in (nx.jacfwd(nx.vmap(sum_logistic)), nx.hessian(batched_loss)):
        for text in _texts(derivative):
            problems = _waste(text) + _misplaced_comments(text, here)
            assert not problems, "\n".join(problems) + "\n\n" + text
