"""Every operation with a derivative rule, checked from the rule table itself: no list
of operations here, so a new rule is checked as soon as it is declared.

Each differentiable rule (functions, array methods and attributes alike) is called at
the samples its declaration gives (``samples=``, ``domain=``; registry.py), and
``check_jacobians`` compares jacfwd and jacrev with central finite differences in
float64: interpreted at every sample, and under ``nx.jit`` at the first (a JVP and a VJP
along random directions, one compile each for all the operation's arguments). The
helpers of derivative code (``nxrt.*``) are compiled whenever the derivatives that call
them are; their own rules (for derivatives of derivatives) are checked interpreted, as
compiling each one's would add minutes to the suite. Rules with a batching rule are also
batched over every input, and ``vmap``'s vectorized method must agree with its loop (at
the first sample it takes), and under ``nx.jit`` too where the batching is not
elementwise. A differentiable rule without samples fails ``test_every_rule_has_samples``;
the few whose derivatives need a setting of their own name the test that checks them
(``checked_elsewhere``).

numbax reads a function's source, so the functions checked are written to a module
(one per rule and sample, ``f(a): return op(a, axis=1)``) and imported.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import numbax as nx
from numbax.transform import rules
from numbax.transform.rules.batch_kinds import elementwise
from numbax.transform.rules.operators import BINARY, UNARY
from numbax.transform.rules.registry import CheckedElsewhere
from tests.helpers.fd import check_jacobians

BATCH = 3  # examples in a vmap check


@dataclass(frozen=True)
class Case:
    """One call of one rule's operation, at one sample: ``id`` names it."""

    id: str
    rule: rules.Rule
    function: str  # the function's name in the generated module
    inputs: tuple[tuple[str, tuple[int, ...]], ...]  # (name, shape) of each argument
    primary: bool  # the rule's first spelling, at each of its samples
    jit: bool  # also checked under jit: a NumPy operation's first sample


# -- the rule table, by spelling -------------------------------------------------------


def _spellings() -> list[tuple[str, rules.Rule, Any]]:
    """(how the call is spelled, rule, target or None) of each differentiable rule: its
    first function, then each array method and attribute of the same rule."""
    found = []
    for target, rule in rules.all_rules():
        if rule.differentiable and all(r is not rule for _, r, _ in found):
            found.append(("call", rule, target))
    for kind, table in (("method", rules.all_methods()), ("attribute", rules.all_attributes())):
        found += [(f"{kind} {n}", r, None) for n, r in table.items() if r.differentiable]
    return found


def _is_helper(target: Any) -> bool:
    """A helper of numbax's derivative code (``nxrt.unbroadcast``...), not NumPy's."""
    return getattr(target, "__module__", "").startswith("numbax.")


def _is_elementwise(rule: rules.Rule) -> bool:
    return rule.elementwise or rules.batching_rule(rule) is elementwise


def _samples(rule: rules.Rule) -> tuple[str, ...] | None:
    """The rule's samples; for an elementwise rule without any, its differentiable
    parameters in order, the first (3, 2), the others rows of (2,) broadcast against it."""
    if rule.samples is not None:
        return None if isinstance(rule.samples, CheckedElsewhere) else rule.samples
    if not _is_elementwise(rule):
        return None
    params = rule.differentiable
    return (", ".join(f"{p}[{'3, 2' if k == 0 else '2'}]" for k, p in enumerate(params)),)


_EMPTY_SHAPE = re.compile(r"\b([A-Za-z_]\w*)\[\]")


def _parse_sample(text: str) -> tuple[list[ast.expr], list[ast.keyword], dict[str, tuple]]:
    """A sample's arguments, each input ``name[shape]`` replaced by its name."""
    text = _EMPTY_SHAPE.sub(r"\1[()]", text)
    call = ast.parse(f"f({text})", mode="eval").body
    inputs: dict[str, tuple[int, ...]] = {}

    class Inputs(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
            if not isinstance(node.value, ast.Name):
                return self.generic_visit(node)
            shape = ast.literal_eval(node.slice)
            inputs[node.value.id] = shape if isinstance(shape, tuple) else (shape,)
            return ast.Name(node.value.id, ast.Load())

    call = Inputs().visit(call)
    return call.args, call.keywords, inputs


def _call_source(spelling: str, target: Any, op: str, args, keywords) -> str:
    """The operation applied to the arguments, as the user would write it."""
    if target is not None and target in BINARY.values() and len(args) == 2:
        symbol = next(t for t, fn in BINARY.items() if fn is target)
        return ast.unparse(ast.BinOp(args[0], symbol(), args[1]))
    if target is not None and target in UNARY.values():
        symbol = next(t for t, fn in UNARY.items() if fn is target)
        return ast.unparse(ast.UnaryOp(symbol(), args[0]))
    kind, _, name = spelling.partition(" ")
    if kind == "attribute":
        return ast.unparse(ast.Attribute(args[0], name, ast.Load()))
    if kind == "method":
        func = ast.Attribute(args[0], name, ast.Load())
        return ast.unparse(ast.Call(func, args[1:], keywords))
    return ast.unparse(ast.Call(ast.Name(op, ast.Load()), args, keywords))


def _identifier(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_")


def _build() -> tuple[list[Case], list[str], list[str], dict[str, Any]]:
    """The cases, the rules without samples, the module's source and its operations.
    A rule's first spelling is checked at every sample; its other spellings (array
    methods of the same meaning) at the first."""
    cases, missing, lines, operations = [], [], ["import numpy as np", ""], {}
    checked: set[int] = set()
    for k, (spelling, rule, target) in enumerate(_spellings()):
        samples = _samples(rule)
        if samples is None:
            if not isinstance(rule.samples, CheckedElsewhere) and rule.name not in missing:
                missing.append(rule.name)
            continue
        op = f"_op{k}"
        operations[op] = target
        primary = id(rule) not in checked
        checked.add(id(rule))
        for j, sample in enumerate(samples if primary else samples[:1]):
            args, keywords, inputs = _parse_sample(sample)
            function = f"{_identifier(rule.name)}_{k}_{j}"
            body = _call_source(spelling, target, op, args, keywords)
            lines += [f"def {function}({', '.join(inputs)}):", f"    return {body}", ""]
            name = rule.name if primary else spelling
            inputs = tuple(inputs.items())
            jit = primary and j == 0 and not _is_helper(target)
            cases.append(Case(f"{name}({sample})", rule, function, inputs, primary, jit))
    return cases, missing, lines, operations


# -- inputs ------------------------------------------------------------------------------


def _domain(rule: rules.Rule, name: str) -> Any:
    domain = rule.domain
    if isinstance(domain, dict):
        domain = domain.get(name)
    return (-2.0, 2.0) if domain is None else domain


def _draw(shape: tuple[int, ...], domain: Any, rng: np.random.Generator) -> Any:
    """Values in ``domain`` that are distinct in magnitude, at least 0.1 from 0 where
    the domain contains 0 (no ties, no kinks), or matrices of a kind."""
    if domain == "bool":
        return rng.uniform(size=shape) > 0.5
    if domain in ("invertible", "spd"):
        n = shape[-1]
        m = rng.uniform(-1, 1, shape) + 4 * np.eye(n)
        return m @ np.swapaxes(m, -1, -2) + np.eye(n) if domain == "spd" else m
    low, high = domain
    size = int(np.prod(shape))
    grid = np.linspace(low, high, 4 * size + 2)[1:-1] + 0.0137 * (high - low) / (4 * size)
    if low < 0 < high:
        grid = grid[np.abs(grid) >= 0.1]
        grid = grid[np.unique(np.round(np.abs(grid), 9), return_index=True)[1]]
    values = rng.permutation(grid)[:size].reshape(shape)
    return values if shape else np.float64(values)


def _inputs(case: Case, batch: int | None = None) -> list[Any]:
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    lead = () if batch is None else (batch,)
    return [_draw(lead + shape, _domain(case.rule, name), rng) for name, shape in case.inputs]


CASES, MISSING, _LINES, _OPERATIONS = _build()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The module of the functions checked, imported from a file numbax can read."""
    path = tmp_path_factory.mktemp("rule_table") / "rule_table_functions.py"
    path.write_text("\n".join(_LINES))
    spec = importlib.util.spec_from_file_location("rule_table_functions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, target in _OPERATIONS.items():
        setattr(module, name, target)
    return module


# -- the checks --------------------------------------------------------------------------


def test_every_rule_has_samples():
    """A differentiable rule is checked from its samples (or says where it is checked)."""
    assert not MISSING, f"rules without samples= or domain=: {MISSING}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_derivatives_match_finite_differences(generated, case):
    """jacfwd and jacrev, interpreted, against central differences."""
    _check(generated, case, compiled=False)


JIT_CASES = [c for c in CASES if c.jit]


@pytest.mark.parametrize("case", JIT_CASES, ids=[c.id for c in JIT_CASES])
def test_derivatives_under_jit(generated, case):
    """The same under nx.jit, at the first sample of each NumPy operation: its JVP and
    VJP compiled, along a random direction (compiling is slow: one program per mode,
    for all the operation's arguments together; the interpreted Jacobians are the test
    above's)."""
    _check(generated, case, compiled=True)


def _check(generated: Any, case: Case, compiled: bool) -> None:
    f = getattr(generated, case.function)
    args = _inputs(case)
    argnums = [i for i, a in enumerate(args) if np.result_type(a).kind == "f"]
    check_jacobians(f, *args, argnums=argnums, name=case.id, jit=compiled, interpreted=not compiled)


BATCHED: dict[str, list[Case]] = {}  # rule name: its samples, for rules with batching
for _case in CASES:
    if _case.primary and rules.batching_rule(_case.rule) is not None:
        BATCHED.setdefault(_case.rule.name, []).append(_case)


@pytest.mark.parametrize("name", list(BATCHED))
def test_vmap_vectorized_equals_the_loop(generated, name):
    """Every input batched, at the first sample the batching rule takes (some forms are
    left to the loop: a stack of matrix products, a scan of the flattened array):
    batching the operation equals calling it once per example."""
    case, args, got = _first_vectorized(generated, name)
    f = getattr(generated, case.function)
    want = nx.vmap(f, method="loop")(*args)
    assert np.shape(got) == np.shape(want), case.id
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=case.id)


JIT_BATCHED = [
    name
    for name, cases in BATCHED.items()
    if not _is_elementwise(cases[0].rule) and any(c.jit for c in cases)
]


@pytest.mark.parametrize("name", JIT_BATCHED)
def test_vmap_vectorized_under_jit(generated, name):
    """The same batched code under nx.jit, for each NumPy operation whose batching is
    not elementwise (an elementwise one is the operation itself on the batch; forms
    Numba might not compile are the others': a shifted axis, a moved one)."""
    case, args, want = _first_vectorized(generated, name)
    f = getattr(generated, case.function)
    got = nx.jit(nx.vmap(f, method="vectorized"))(*args)
    assert np.shape(got) == np.shape(want), case.id
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=case.id)


def _first_vectorized(generated: Any, name: str) -> tuple[Case, list[Any], Any]:
    """The rule's first sample that ``vmap``'s vectorized method takes, its batched
    inputs and the (interpreted) vectorized result."""
    declined = []
    for case in BATCHED[name]:
        f = getattr(generated, case.function)
        args = _inputs(case, batch=BATCH)
        vectorized = nx.vmap(f, method="vectorized")
        try:
            got = vectorized(*args)
        except nx.TransformError as err:
            declined.append(str(err).splitlines()[0])
            continue
        assert "vectorized" in vectorized.source, case.id
        return case, args, got
    pytest.fail(f"{name}: no sample is batched by its batching rule: {declined}")
