"""numbax.tree_util follows jax.tree_util; numbax.tree_util is its fast path at jit's boundary."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict
from typing import Any, NamedTuple

import numpy as np
import optree
import pytest

import numbax.tree_util as tu
from numbax import tree_util as fast


class Point(NamedTuple):
    x: Any
    y: Any


class Pair:
    """Registered through register_pytree_node; ``tag`` is aux data."""

    def __init__(self, a: Any, b: Any, tag: str = "p") -> None:
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other: object) -> bool:
        return type(other) is Pair and (self.a, self.b, self.tag) == (other.a, other.b, other.tag)


tu.register_pytree_node(
    Pair, lambda p: ((p.a, p.b), p.tag), lambda tag, children: Pair(*children, tag=tag)
)


@tu.register_pytree_node_class
class Box:
    """Registered through register_pytree_node_class."""

    def __init__(self, *items: Any) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        return type(other) is Box and self.items == other.items

    def tree_flatten(self) -> tuple[tuple, None]:
        return self.items, None

    @classmethod
    def tree_unflatten(cls, aux_data: None, children: tuple) -> Box:
        return cls(*children)


@tu.register_pytree_with_keys_class
class Named:
    """Registered with keys: its children are named by DictKey."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def __eq__(self, other: object) -> bool:
        return type(other) is Named and self.fields == other.fields

    def tree_flatten_with_keys(self) -> tuple[list, tuple]:
        names = sorted(self.fields)
        return [(tu.DictKey(n), self.fields[n]) for n in names], tuple(names)

    @classmethod
    def tree_unflatten(cls, names: tuple, children: tuple) -> Named:
        return cls(**dict(zip(names, children, strict=True)))


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: Any
    b: Any
    name: str = dataclasses.field(default="layer", metadata={"static": True})


# name, tree, leaves, keystr of each leaf's path
TREES = [
    ("tuple", (1, (2, 3)), [1, 2, 3], ["[0]", "[1][0]", "[1][1]"]),
    ("list", [1, [2], []], [1, 2], ["[0]", "[1][0]"]),
    ("dict", {"b": 1, "a": 2}, [2, 1], ["['a']", "['b']"]),
    (
        "nested",
        {"x": [1, (2, {"y": 3})], "w": 4},
        [4, 1, 2, 3],
        ["['w']", "['x'][0]", "['x'][1][0]", "['x'][1][1]['y']"],
    ),
    ("none", None, [], []),
    ("none_inside", [None, 1, {"a": None}], [1], ["[1]"]),
    ("namedtuple", Point(1, Point(2, 3)), [1, 2, 3], [".x", ".y.x", ".y.y"]),
    ("ordereddict", OrderedDict(b=1, a=2), [1, 2], ["['b']", "['a']"]),
    ("defaultdict", defaultdict(int, {"b": 1, "a": 2}), [2, 1], ["['a']", "['b']"]),
    ("node", Pair(1, [2]), [1, 2], ["[<flat index 0>]", "[<flat index 1>][0]"]),
    ("node_class", Box(1, (2,)), [1, 2], ["[<flat index 0>]", "[<flat index 1>][0]"]),
    ("keyed", Named(v=1, u=[2]), [2, 1], ["['u'][0]", "['v']"]),
    ("dataclass", Params(w=1, b=[2]), [1, 2], [".w", ".b[0]"]),
    ("leaf", 1.5, [1.5], [""]),
]
TREE_IDS = [name for name, *_ in TREES]


@pytest.mark.parametrize(("name", "tree", "leaves", "paths"), TREES, ids=TREE_IDS)
def test_leaves_follow_jax_order(name: str, tree: Any, leaves: list, paths: list) -> None:
    assert tu.tree_leaves(tree) == leaves
    assert tu.tree_flatten(tree)[0] == leaves
    assert tu.tree_structure(tree).num_leaves == len(leaves)


@pytest.mark.parametrize(("name", "tree", "leaves", "paths"), TREES, ids=TREE_IDS)
def test_round_trip(name: str, tree: Any, leaves: list, paths: list) -> None:
    flat, treedef = tu.tree_flatten(tree)
    rebuilt = tu.tree_unflatten(treedef, flat)
    assert type(rebuilt) is type(tree)
    assert rebuilt == tree
    assert treedef.unflatten(flat) == tree
    assert tu.tree_structure(rebuilt) == treedef


@pytest.mark.parametrize(("name", "tree", "leaves", "paths"), TREES, ids=TREE_IDS)
def test_key_paths(name: str, tree: Any, leaves: list, paths: list) -> None:
    with_path, treedef = tu.tree_flatten_with_path(tree)
    assert [tu.keystr(p) for p, _ in with_path] == paths
    assert [leaf for _, leaf in with_path] == leaves
    assert treedef == tu.tree_structure(tree)
    assert tu.tree_leaves_with_path(tree) == with_path


@pytest.mark.parametrize(("name", "tree", "leaves", "paths"), TREES, ids=TREE_IDS)
def test_tree_map_keeps_structure(name: str, tree: Any, leaves: list, paths: list) -> None:
    doubled = tu.tree_map(lambda x: 2 * x, tree)
    assert tu.tree_structure(doubled) == tu.tree_structure(tree)
    assert tu.tree_leaves(doubled) == [2 * x for x in leaves]
    tagged = tu.tree_map_with_path(lambda p, x: tu.keystr(p), tree)
    assert tu.tree_leaves(tagged) == paths


def test_key_classes_print_like_jax() -> None:
    assert tu.keystr((tu.DictKey("a"), tu.SequenceKey(0))) == "['a'][0]"
    assert tu.keystr((tu.GetAttrKey("name"),)) == ".name"
    assert tu.keystr((tu.FlattenedIndexKey(2),)) == "[<flat index 2>]"
    assert tu.keystr(()) == ""
    assert repr(tu.SequenceKey(0)) == "SequenceKey(idx=0)"
    assert repr(tu.DictKey("a")) == "DictKey(key='a')"
    assert repr(tu.GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert repr(tu.FlattenedIndexKey(1)) == "FlattenedIndexKey(key=1)"
    path = (tu.DictKey("a"), tu.SequenceKey(0), tu.GetAttrKey("x"), tu.FlattenedIndexKey(1))
    assert tu.keystr(path, simple=True, separator="/") == "a/0/x/1"


def test_keys_compare_and_hash_by_value() -> None:
    assert tu.SequenceKey(0) == tu.SequenceKey(0) != tu.FlattenedIndexKey(0)
    assert len({tu.DictKey("a"), tu.DictKey("a"), tu.GetAttrKey("a")}) == 2


def test_arrays_and_numpy_scalars_are_leaves() -> None:
    a, s = np.arange(3.0), np.float32(2.0)
    leaves = tu.tree_leaves({"a": a, "s": s})
    assert leaves[0] is a and leaves[1] is s
    assert tu.tree_map(lambda x: x + 1, {"a": a})["a"].tolist() == [1.0, 2.0, 3.0]


def test_none_is_an_empty_node() -> None:
    treedef = tu.tree_structure(None)
    assert treedef.num_leaves == 0
    assert tu.treedef_is_leaf(treedef)
    assert tu.tree_map(lambda x: x + 1, {"a": None, "b": 1}) == {"a": None, "b": 2}
    assert not tu.all_leaves([None])


def test_treedef_equality_hash_and_repr() -> None:
    t1 = tu.tree_structure({"a": 1, "b": (2, 3)})
    t2 = tu.tree_structure({"b": ("x", "y"), "a": "z"})
    assert t1 == t2 and hash(t1) == hash(t2)
    assert t1 != tu.tree_structure({"a": 1, "b": [2, 3]})
    assert isinstance(t1, tu.PyTreeDef)
    assert "{'a': *, 'b': (*, *)}" in repr(t1)
    assert tu.tree_structure(Pair(1, 2, tag="p")) != tu.tree_structure(Pair(1, 2, tag="q"))


def test_treedef_children_and_tuple() -> None:
    tree = [(1, 2), 3, {"a": 4}]
    treedef = tu.tree_structure(tree)
    assert tu.treedef_children(treedef) == [tu.tree_structure(x) for x in tree]
    assert treedef.children() == tu.treedef_children(treedef)
    pair = tu.treedef_tuple([tu.tree_structure([1]), tu.tree_structure({"a": 1})])
    assert pair == tu.tree_structure(([1], {"a": 1}))


def test_treedef_is_leaf() -> None:
    assert tu.treedef_is_leaf(tu.tree_structure(1))
    assert not tu.treedef_is_leaf(tu.tree_structure([1, 2]))


def test_tree_map_over_several_trees() -> None:
    out = tu.tree_map(
        lambda x, y, z: x + y + z,
        {"a": 1, "b": (2,)},
        {"a": 10, "b": (20,)},
        {"a": 100, "b": (200,)},
    )
    assert out == {"a": 111, "b": (222,)}


def test_tree_map_rest_may_be_deeper() -> None:
    # The first tree is a prefix: the other's subtree at a leaf is passed whole.
    assert tu.tree_map(lambda x, y: (x, y), [1, 2], [(3, 4), {"k": 5}]) == [
        (1, (3, 4)),
        (2, {"k": 5}),
    ]


def test_is_leaf_stops_the_walk() -> None:
    tree = {"a": (1, 2), "b": [3, (4, 5)]}
    is_pair = lambda x: isinstance(x, tuple)
    assert tu.tree_leaves(tree, is_leaf=is_pair) == [(1, 2), 3, (4, 5)]
    total = lambda x: sum(x) if is_pair(x) else x
    assert tu.tree_map(total, tree, is_leaf=is_pair) == {"a": 3, "b": [3, 9]}
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree, is_leaf=is_pair)]
    assert paths == ["['a']", "['b'][0]", "['b'][1]"]
    assert tu.tree_structure(tree, is_leaf=is_pair).num_leaves == 3


def test_tree_map_with_path_over_several_trees() -> None:
    out = tu.tree_map_with_path(
        lambda p, x, y: f"{tu.keystr(p)}={x + y}", {"a": [1], "b": 2}, {"a": [10], "b": 20}
    )
    assert out == {"a": ["['a'][0]=11"], "b": "['b']=22"}


@pytest.mark.parametrize(
    ("tree", "other", "message"),
    [
        ((1, 2), (1, 2, 3), "arity mismatch"),
        ((1, 2), [1, 2], "tuple"),
        ({"a": 1}, {"b": 1}, "key"),
        (Pair(1, 2), (1, 2), "Custom node type mismatch"),
        (Pair(1, 2), Box(1, 2), "Custom node type mismatch"),
        ([None], [1], "None"),
    ],
)
def test_structure_mismatch_says_what_differs(tree: Any, other: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tu.tree_map(lambda x, y: x, tree, other)
    with pytest.raises(ValueError, match=message):
        tu.tree_map_with_path(lambda p, x, y: x, tree, other)


def test_unflatten_with_wrong_leaf_count() -> None:
    treedef = tu.tree_structure((1, 2))
    with pytest.raises(ValueError, match="Too few leaves"):
        tu.tree_unflatten(treedef, [1])
    with pytest.raises(ValueError, match="Too many leaves"):
        tu.tree_unflatten(treedef, [1, 2, 3])


def test_double_registration_is_an_error() -> None:
    class Once:
        pass

    tu.register_pytree_node(Once, lambda o: ((), None), lambda aux, ch: Once())
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        tu.register_pytree_node(Once, lambda o: ((), None), lambda aux, ch: Once())
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        tu.register_pytree_node(tuple, lambda o: (o, None), lambda aux, ch: tuple(ch))


def test_registrations_stay_in_numbax_namespace() -> None:
    # Other optree users still see a numbax-registered class as a leaf.
    pair = Pair(1, 2)
    assert optree.tree_leaves(pair) == [pair]
    assert tu.tree_leaves(pair) == [1, 2]


def test_register_pytree_node_with_keys_func() -> None:
    class Coord:
        def __init__(self, lat: Any, lon: Any) -> None:
            self.lat, self.lon = lat, lon

    tu.register_pytree_node(
        Coord,
        lambda c: ((c.lat, c.lon), None),
        lambda aux, ch: Coord(*ch),
        flatten_with_keys_func=lambda c: (
            ((tu.GetAttrKey("lat"), c.lat), (tu.GetAttrKey("lon"), c.lon)),
            None,
        ),
    )
    paths = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path([Coord(1, 2)])]
    assert paths == ["[0].lat", "[0].lon"]
    assert tu.tree_map(lambda x: -x, Coord(1, 2)).lon == -2


def test_register_dataclass_meta_fields_are_structure() -> None:
    p = Params(w=1, b=2, name="a")
    assert tu.tree_leaves(p) == [1, 2]
    assert tu.tree_structure(p) != tu.tree_structure(Params(w=1, b=2, name="b"))
    assert tu.tree_map(lambda x: x * 10, p) == Params(w=10, b=20, name="a")


def test_register_dataclass_with_explicit_fields() -> None:
    @dataclasses.dataclass
    class Layer:
        kernel: Any
        act: str

    tu.register_dataclass(Layer, data_fields=["kernel"], meta_fields=["act"])
    assert tu.tree_leaves(Layer(3, "relu")) == [3]
    with pytest.raises(ValueError, match="init fields"):
        tu.register_dataclass(Layer, data_fields=["kernel"], meta_fields=[])
    with pytest.raises(TypeError, match="both"):
        tu.register_dataclass(Layer, data_fields=["kernel"])


def test_register_static_puts_the_value_in_the_structure() -> None:
    @tu.register_static
    @dataclasses.dataclass(frozen=True)
    class Mode:
        name: str

    assert tu.tree_leaves([Mode("train"), 1]) == [1]
    assert tu.tree_structure(Mode("a")) != tu.tree_structure(Mode("b"))
    assert tu.tree_map(lambda x: x, [Mode("a")]) == [Mode("a")]


def test_reductions() -> None:
    tree = {"a": [1, 2], "b": (3,)}
    assert tu.tree_reduce(lambda x, y: x + y, tree) == 6
    assert tu.tree_reduce(lambda x, y: x + y, tree, 10) == 16
    assert tu.tree_all(tree)
    assert not tu.tree_all({"a": [1, 0]})
    assert tu.tree_all(None)
    assert tu.tree_all([(1, 2), 0], is_leaf=lambda x: isinstance(x, tuple)) is False


def test_all_leaves() -> None:
    assert tu.all_leaves([1, np.ones(2), "s"])
    assert not tu.all_leaves([1, (2,)])
    assert tu.all_leaves([(1,)], is_leaf=lambda x: isinstance(x, tuple))


def test_tree_transpose() -> None:
    outer, inner = tu.tree_structure([0, 0]), tu.tree_structure((0, 0, 0))
    tree = [(1, 2, 3), (4, 5, 6)]
    assert tu.tree_transpose(outer, inner, tree) == ([1, 4], [2, 5], [3, 6])
    assert tu.tree_transpose(outer, None, tree) == ([1, 4], [2, 5], [3, 6])
    with pytest.raises(TypeError, match="mismatch"):
        tu.tree_transpose(outer, inner, [(1, 2, 3), (4, 5)])


# --- numbax.tree_util: the jit-boundary fast path ----------------------------------------------


@pytest.mark.parametrize(
    "args",
    [(), (np.ones(3), np.ones(2), np.ones(1)), (1, 2.0, 3j, True), (np.float32(1), np.int64(2))],
)
def test_is_flat_for_arrays_and_scalars(args: tuple) -> None:
    assert fast.is_flat(args)


class _ArraySub(np.ndarray):
    pass


@pytest.mark.parametrize(
    "args",
    [(np.ones(2), [1]), ({"a": 1},), (None,), ("s",), (np.ones(2).view(_ArraySub),)],
)
def test_is_flat_rejects_everything_else(args: tuple) -> None:
    assert not fast.is_flat(args)


# --- against JAX itself, where it is installed --------------------------------------------


def test_matches_jax_tree_util() -> None:
    jtu = pytest.importorskip("jax.tree_util")
    # JAX's registry is separate from numbax's: teach it this module's classes too.
    jtu.register_pytree_node(
        Pair, lambda p: ((p.a, p.b), p.tag), lambda tag, children: Pair(*children, tag=tag)
    )
    jtu.register_pytree_node_class(Box)
    jtu.register_pytree_with_keys_class(Named)
    jtu.register_dataclass(Params)

    mixed = {"p": Pair(1, [Box(2), Named(z=3)]), "q": Point(Params(4, (5,)), None), "r": [6]}
    for tree in [tree for _, tree, *_ in TREES] + [mixed]:
        assert tu.tree_leaves(tree) == jtu.tree_leaves(tree)
        ours = [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree)]
        theirs = [jtu.keystr(p) for p, _ in jtu.tree_leaves_with_path(tree)]
        assert ours == theirs
        doubled = jtu.tree_map(lambda x: 2 * x, tree)
        assert tu.tree_map(lambda x: 2 * x, tree) == doubled
