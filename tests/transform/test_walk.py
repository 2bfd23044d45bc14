"""The fast walks give ``gast.walk``'s answers, ``clone`` a deep copy, and the rule
table parses its templates only when a transformation reads them (all keep a warm
start short)."""

import subprocess
import sys
from pathlib import Path

import gast
import pytest

from numbax.transform.nodes import clone
from numbax.transform.provenance import mark_rerun, reruns
from numbax.transform.walk import name_ids, name_nodes, walk

PACKAGE = Path(__file__).resolve().parents[2] / "numbax"
SOURCES = [
    "transform/ad/reverse_control.py",
    "transform/normalize/expressions.py",
    "numba_backend/lower.py",
    "numba_backend/loops/threads.py",  # global, import from, alias, class
]


@pytest.fixture(scope="module", params=SOURCES)
def tree(request):
    return gast.parse((PACKAGE / request.param).read_text())


def test_walk_yields_gast_walks_nodes_in_its_order(tree):
    assert [id(n) for n in walk(tree)] == [id(n) for n in gast.walk(tree)]


def test_name_ids_and_nodes_are_the_names_gast_walk_finds(tree):
    names = [n for n in gast.walk(tree) if isinstance(n, gast.Name)]
    assert name_ids(tree) == {n.id for n in names}
    assert {id(n) for n in name_nodes(tree)} == {id(n) for n in names}
    stored = {n.id for n in names if isinstance(n.ctx, (gast.Store, gast.Del))}
    assert name_ids(tree, gast.Store, gast.Del) == stored


def _replace_calls(nodes):
    """Walk, replacing each call's arguments as it is met: what a caller editing the
    tree as it goes sees."""
    seen = []
    for node in nodes:
        seen.append(type(node).__name__)
        if isinstance(node, gast.Call):
            node.args = [gast.Constant(0, None)]
    return seen


def test_walk_sees_edits_made_during_the_walk_as_gast_walk_does():
    text = "def f(x):\n    return g(h(x), k(x + 1))\n"
    assert _replace_calls(walk(gast.parse(text))) == _replace_calls(gast.walk(gast.parse(text)))


def test_importing_the_rules_parses_no_template():
    probe = (
        "from numbax.transform.rules import registry\n"
        "rules = [r for _, r in registry.all_rules()] + list(registry.all_methods().values())\n"
        "parsed = [r.name for r in rules for t in (r.jvp, r.vjp) if t._parsed]\n"
        "assert not parsed, parsed\n"
        "import numpy as np\n"
        "rule = registry.rule_for(np.linalg.inv)\n"
        "assert rule.vjp['a'] is rule.vjp['a']  # parsed once, when first read\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_clone_is_a_deep_copy_sharing_only_what_cannot_change(tree):
    copied = clone(tree)
    assert gast.dump(copied) == gast.dump(tree)
    originals = {id(n) for n in gast.walk(tree) if not isinstance(n, gast.expr_context)}
    assert not originals & {id(n) for n in gast.walk(copied)}


def test_clone_copies_what_numbax_notes_on_a_node():
    loop = gast.parse("for i in range(n):\n    s = s + i\n").body[0]
    count = gast.parse("n_1 = len(x)").body[0]
    loop.iter.numbax_count = [count]
    mark_rerun(loop.body[0])
    copied = clone(loop)
    assert reruns(copied.body[0]) and copied.lineno == loop.lineno
    assert gast.dump(copied.iter.numbax_count[0]) == gast.dump(count)
    assert copied.iter.numbax_count[0] is not count
