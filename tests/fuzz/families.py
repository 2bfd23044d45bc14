"""Hypothesis strategies for programs of one construct family each: the NumPy semantics
that straight-line differentiable code rarely meets, drawn one family at a time so a
run can say which family numbax gets wrong.

Each program is a whole module: ``f`` (returning a real scalar), ``args()`` (fresh
arguments at the point; float or complex arrays, floats, lists, tuples and dicts of
them) and ``ARGNUMS`` (what ``grad`` differentiates); ``tests/fuzz/family_checks.py``
checks it. The families (``FAMILIES``):

* ``aliases``: writes through a second name, a view (basic slices, ``.T``, ``reshape``,
  ``ravel``, rows and columns) or a helper's parameter, then reads of the base;
* ``repeated``: ``x[idx] = w``, ``x[idx] += v`` (``-=``, ``*=``) with duplicate and
  negative indices (NumPy's buffered semantics);
* ``addat``: ``np.add.at`` (unbuffered: every duplicate adds);
* ``intdtypes``: int8...uint64 and bool arrays mixed into the differentiated
  computation: comparisons, masks, ``astype``, integer arithmetic (wrapping included);
* ``containers``: lists, tuples and dicts of arrays through helpers, unpacking, loops
  and ``ravel_pytree``, with gradients w.r.t. the container;
* ``loops_value``: accumulating ``for`` and ``while`` loops whose value is checked
  (``value_and_grad``, the primal of ``jvp``/``vjp``), the accumulator often returned;
* ``nested``: functions that call ``nx.jacfwd``/``jacrev``/``grad``/``hessian``/``jvp``/
  ``vjp`` inside, under outer transformations;
* ``complex_linalg``: complex matrices through ``svd``, ``eigvalsh``, ``eigh``,
  ``solve``, ``inv``, ``det``, ``slogdet``, ``norm``, ``cond``, ``cholesky``, ``qr``,
  ``pinv``, ``eigvals`` and products;
* ``partial``: ``functools.partial`` binding positional, keyword and list-keyword
  arguments, nested partials, partials called inside ``f``.

``features`` names the constructs a program uses (``alias:view_slice``...), so failures
group by construct. Options are listed simplest first: Hypothesis shrinks towards them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from tests.fuzz.generator import _Builder, _Env

FAMILIES: tuple[str, ...] = (
    "aliases",
    "repeated",
    "addat",
    "intdtypes",
    "containers",
    "loops_value",
    "nested",
    "complex_linalg",
    "partial",
)

_SMOOTH = frozenset({"elementwise", "reductions", "indexing"})
_HEADER = "import numpy as np\n\nimport numbax as nx\n"


@dataclass(frozen=True)
class FamilyProgram:
    """One generated module of ``family``; ``source`` holds ``f``, ``args`` and
    ``ARGNUMS``."""

    family: str
    source: str
    features: frozenset[str]

    def __repr__(self) -> str:
        features = ", ".join(sorted(self.features))
        return f"FamilyProgram({self.family}, features=[{features}])\n{self.source}"


def _grid(draw: Callable) -> float:
    """A coordinate off zero and off the integers (kinks, casts)."""
    return round(draw(st.integers(-150, 150)) * 0.01 + 0.0137, 4)


def _vector(draw: Callable, n: int = 3) -> str:
    return "np.array([" + ", ".join(repr(_grid(draw)) for _ in range(n)) + "])"


def _weights(n: int, offset: float = 0.3) -> str:
    """A fixed array of ``n`` distinct weights, so every element's derivative counts."""
    return (
        "np.array([" + ", ".join(f"{offset + 0.37 * k - 0.11 * k * k:.2f}" for k in range(n)) + "])"
    )


class _Family:
    """Helpers shared by the family strategies: expressions over ``x`` and ``s``."""

    def __init__(self, draw: Callable) -> None:
        self.draw = draw
        self.builder = _Builder(draw, _SMOOTH)
        self.features: set[str] = set()
        self.counter = 0

    def pick(self, options: list | tuple):
        return self.draw(st.sampled_from(list(options)))

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def use(self, feature: str) -> None:
        self.features.add(feature)

    def vec(self, vecs: list[str], scals: list[str], depth: int = 1) -> str:
        return self.builder.vector(_Env(list(vecs), list(scals)), depth)

    def scal(self, vecs: list[str], scals: list[str], depth: int = 1) -> str:
        return self.builder.scalar(_Env(list(vecs), list(scals)), depth)

    def program(self, family: str, lines: list[str], extra_header: str = "") -> FamilyProgram:
        source = _HEADER + extra_header + "\n\n" + "\n".join(lines) + "\n"
        return FamilyProgram(family, source, frozenset(self.features))


def _args_xs(draw: Callable) -> list[str]:
    return [
        "def args():",
        f"    return ({_vector(draw)}, {_grid(draw)!r})",
        "",
        "ARGNUMS = (0, 1)",
    ]


# -- aliases -----------------------------------------------------------------------------
@st.composite
def aliases(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    matrix = draw(st.booleans())
    body: list[str] = []
    helpers: list[str] = []
    reads: list[str] = []
    vecs, scals = ["x"], ["s"]
    if matrix:
        base = "M"
        form = fam.pick(["np.outer({}, {})", "np.outer({}, {}) + np.eye(3) * s"])
        body.append(f"    M = {form.format(fam.vec(vecs, scals), fam.vec(vecs, scals))}")
        vecs = vecs + ["M[0]"]
        final = f"np.sum(np.sin(M) * {_weights(9)}.reshape(3, 3))"
    else:
        base = "a"
        form = fam.pick(["x * 1.0", "x.copy()", "np.zeros(3) + {}", "{}", "x"])
        if form == "x":
            fam.use("alias:input_written")
        body.append(f"    a = {form.format(fam.vec(vecs, scals, 2))}")
        vecs = vecs + ["a"]
        final = f"np.sum(np.sin(a) * {_weights(3)})"
    for _ in range(draw(st.integers(1, 3))):
        value = fam.scal(vecs, scals)
        vector = fam.vec(vecs, scals)
        name = fam.fresh("b")
        if matrix:
            kind = fam.pick(
                ["rebind", "row", "column", "transpose", "reshape", "ravel", "block", "helper"]
            )
            i, j, k = fam.pick([0, 1, 2]), fam.pick([0, 1, 2]), fam.pick(range(9))
            view, writes = {
                "rebind": ("M", [f"{name}[{i}, {j}] = {value}", f"{name} += {value}"]),
                "row": (
                    f"M[{i}]",
                    [f"{name} += {vector}", f"{name} *= {value}", f"{name}[{j}] = {value}"],
                ),
                "column": (f"M[:, {j}]", [f"{name} -= {vector}", f"{name}[{i}] = {value}"]),
                "transpose": (
                    "M.T",
                    [
                        f"{name}[{i}, {j}] = {value}",
                        f"{name}[{i}] += {vector}",
                        f"{name} *= {value}",
                    ],
                ),
                "reshape": (
                    fam.pick(["M.reshape(-1)", "M.reshape(9)", "M.reshape(3, 3)"]),
                    [
                        f"{name}[{k % 3}] = {value}",
                        f"{name} *= {value}",
                        f"{name}[{k % 3}] += {value}",
                    ],
                ),
                "ravel": ("M.ravel()", [f"{name}[{k}] = {value}", f"{name} += {value}"]),
                "block": (
                    fam.pick(["M[1:, :2]", "M[:2]", "M[::2, ::2]"]),
                    [f"{name} *= {value}", f"{name}[0, 0] = {value}", f"{name} += {value}"],
                ),
                "helper": (fam.pick([f"M[{i}]", "M.T", f"M[:, {j}]", "M"]), []),
            }[kind]
        else:
            kind = fam.pick(["rebind", "slice", "helper", "reversed"])
            sl = fam.pick([":2", "1:", "::2", "1:3", "-2:", ":"])
            length = {":2": 2, "1:": 2, "::2": 2, "1:3": 2, "-2:": 2, ":": 3}[sl]
            j = fam.pick(range(length))
            view, writes = {
                "rebind": (
                    "a",
                    [
                        f"{name}[{fam.pick([0, 1, 2, -1])}] = {value}",
                        f"{name} += {vector}",
                        f"{name} *= {value}",
                        f"{name}[1:] = {value}",
                    ],
                ),
                "slice": (
                    f"a[{sl}]",
                    [
                        f"{name}[{j}] = {value}",
                        f"{name} *= {value}",
                        f"{name} += {value}",
                        f"{name} -= {value}",
                        f"{name}[:] = {value}",
                    ],
                ),
                "reversed": (
                    "a[::-1]",
                    [f"{name}[0] = {value}", f"{name} *= {value}", f"{name} += {vector}"],
                ),
                "helper": (fam.pick(["a", f"a[{sl}]", "a[::-1]"]), []),
            }[kind]
        fam.use(f"alias:{kind}")
        if kind == "helper":
            h = fam.fresh("w")
            op = fam.pick(["u[0] = t * 2.0", "u *= t", "u += t", "u[-1] = np.sin(t) + u[0]"])
            returns = draw(st.booleans())
            helpers += [f"def {h}(u, t):", f"    {op}"]
            if returns:
                helpers.append("    return np.sum(u * u)")
                r = fam.fresh("r")
                body.append(f"    {r} = {h}({view}, {value})")
                reads.append(r)
            else:
                body.append(f"    {h}({view}, {value})")
            helpers += ["", ""]
            continue
        body.append(f"    {name} = {view}")
        body.append(f"    {fam.pick(writes)}")
        if draw(st.booleans()):
            r = fam.fresh("r")
            body.append(f"    {r} = np.sum({base} * {base})")
            reads.append(r)
        if draw(st.booleans()):
            reads.append(f"np.sum(np.cos({name}))")
    result = " + ".join([final, *reads])
    lines = helpers + ["def f(x, s):", *body, f"    return {result}", "", "", *_args_xs(draw)]
    return fam.program("aliases", lines)


# -- repeated indices ------------------------------------------------------------------------
def _indices(draw: Callable, n: int) -> list[int]:
    """2-5 indices into ``n`` elements, some negative, with a duplicate."""
    count = draw(st.integers(2, 5))
    chosen = [draw(st.integers(-n, n - 1)) for _ in range(count)]
    positions = {c % n for c in chosen}
    if len(positions) == len(chosen):  # force a duplicate (possibly written negatively)
        first = chosen[0] % n
        chosen[-1] = first - n if draw(st.booleans()) else first
    return chosen


def _index_text(fam: _Family, chosen: list[int]) -> str:
    literal = "[" + ", ".join(map(str, chosen)) + "]"
    return fam.pick([f"np.array({literal})", literal])


def _base(fam: _Family, n: int) -> str:
    v = fam.vec(["x"], ["s"])
    if n == 3:
        return fam.pick([f"{v} * 1.0", "x.copy()", f"np.zeros(3) + {v}"])
    return f"np.concatenate(({v}, {fam.builder.paren(fam.vec(['x'], ['s']))}[:2]))"


def _values(fam: _Family, count: int) -> str:
    """A scalar, or ``count`` values gathered from a vector expression."""
    if fam.draw(st.booleans()):
        return fam.scal(["x"], ["s"])
    gather = [fam.draw(st.integers(0, 2)) for _ in range(count)]
    return f"{fam.builder.paren(fam.vec(['x'], ['s']))}[np.array({gather})]"


@st.composite
def repeated(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    n = fam.pick([3, 5])
    body = [f"    y = {_base(fam, n)}"]
    for _ in range(draw(st.integers(1, 2))):
        chosen = _indices(draw, n)
        idx = fam.fresh("idx")
        body.append(f"    {idx} = {_index_text(fam, chosen)}")
        op = fam.pick(["=", "+=", "-=", "*="])
        fam.use(f"repeated:{op}")
        body.append(f"    y[{idx}] {op} {_values(fam, len(chosen))}")
        if draw(st.booleans()):
            fam.use("repeated:gather_after")
            body.append(f"    y = y + 0.5 * np.sum(y[{idx}])")
    if draw(st.booleans()):
        fam.use("repeated:rows")
        chosen = _indices(draw, 3)
        body.append("    M = np.outer(x, y[:3])")
        body.append(
            f"    M[{_index_text(fam, chosen)}] {fam.pick(['=', '+='])} {fam.vec(['x'], ['s'])}"
        )
        body.append(f"    y = y + np.sum(M * {_weights(9)}.reshape(3, 3))")
    lines = [
        "def f(x, s):",
        *body,
        f"    return np.sum(np.sin(y) * {_weights(n)})",
        "",
        "",
        *_args_xs(draw),
    ]
    return fam.program("repeated", lines)


@st.composite
def addat(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    n = fam.pick([3, 5])
    body = [f"    y = {_base(fam, n)}"]
    for _ in range(draw(st.integers(1, 2))):
        chosen = _indices(draw, n)
        idx = fam.fresh("idx")
        body.append(f"    {idx} = {_index_text(fam, chosen)}")
        ufunc = fam.pick(["add", "add", "subtract"])
        fam.use(f"addat:{ufunc}")
        body.append(f"    np.{ufunc}.at(y, {idx}, {_values(fam, len(chosen))})")
        if draw(st.booleans()):
            fam.use("addat:then_store")
            body.append(f"    y[{idx}] += {fam.scal(['x'], ['s'])}")
    if draw(st.booleans()):
        fam.use("addat:rows")
        chosen = _indices(draw, 3)
        body.append("    M = np.outer(x, y[:3])")
        body.append(f"    np.add.at(M, {_index_text(fam, chosen)}, {fam.vec(['x'], ['s'])})")
        body.append(f"    y = y + np.sum(M * {_weights(9)}.reshape(3, 3))")
    lines = [
        "def f(x, s):",
        *body,
        f"    return np.sum(np.sin(y) * {_weights(n)})",
        "",
        "",
        *_args_xs(draw),
    ]
    return fam.program("addat", lines)


# -- integer and bool dtypes ------------------------------------------------------------------
_INT_VALUES: dict[str, list[int]] = {
    "int8": [1, -3, 5, 50, -100, 120, 127],
    "int16": [2, -7, 300, -30000, 32000],
    "int32": [3, -11, 70000, 2_000_000_000],
    "int64": [4, -13, 10**12, 2**62],
    "uint8": [1, 5, 200, 255],
    "uint16": [2, 9, 60000],
    "uint32": [3, 7, 4_000_000_000],
    "uint64": [1, 6, 2**63],
}


_BOOL_OPS = ("m1 & m2", "m1 | m2", "m1 ^ m2", "~m1", "np.logical_not(m2)")
_CASTS = ("int64", "int32", "int8")
_INT_SCALARS = ("2", "-3", "np.int8(3)", "np.uint8(7)")


def _int_array(fam: _Family) -> tuple[str, str, np.ndarray]:
    dtype = fam.pick(list(_INT_VALUES))
    values = [fam.pick(_INT_VALUES[dtype]) for _ in range(3)]
    return f"np.array({values}, dtype=np.{dtype})", dtype, np.array(values, dtype=dtype)


def _int_term(fam: _Family, kind: str, v: str, op: str, ints: dict[str, np.ndarray]) -> str:
    """A float term of ``kind`` mixing the vector ``v`` with the masks ``m1``, ``m2`` and
    the integer arrays ``k1``, ``k2`` of ``f``'s body (their values: ``ints``). A term
    multiplying ``v`` by integers is scaled by their largest magnitude: a derivative
    term of 2**62 would swallow every other term added to it in floating point (any
    order of accumulation, JAX's included), which no checker could tell from an error."""
    vecs, scals = ["x"], ["s"]
    terms = {  # kind: (the term, the integer factor multiplying v; None: no such factor)
        "int_times_float": lambda: _times_factor(v, "k1"),
        "mask_times_float": lambda: (f"np.sum({v} * m1)", None),
        "where": lambda: (f"np.sum(np.where(m1, {v}, {fam.vec(vecs, scals)}))", None),
        "count": lambda: (f"np.sum(m1) * {fam.scal(vecs, scals)}", None),
        "bool_add": lambda: (f"np.sum((m1 + m2) * {v})", None),
        "bool_mul": lambda: (f"np.sum((m1 * m2) * {v})", None),
        "bool_logic": lambda: (f"np.sum(({fam.pick(_BOOL_OPS)}) * {v})", None),
        "int_arith": lambda: (
            f"np.sum((k1 {op} k1 * k1).astype(np.float64) * {v})",
            f"(k1 {op} k1 * k1).astype(np.float64)",
        ),
        "int_compare": lambda: (f"np.sum(((k1 {op} k2) > k1) * {v})", None),
        "astype_float": lambda: (
            f"np.sum(m1.astype(np.float64) * {v} + {fam.pick(['k1', 'k2'])}.astype(np.float64))",
            None,
        ),
        "astype_int": lambda: (
            f"np.sum({v} * ({fam.vec(vecs, scals)} * 3.0).astype(np.{fam.pick(_CASTS)}))",
            None,
        ),
        "int_scalar": lambda: _times_factor(v, f"(k1 {op} {fam.pick(_INT_SCALARS)})"),
        "mixed_ints": lambda: (f"np.sum((k1 {op} k2) * 1e-9 * {v})", f"(k1 {op} k2) * 1e-9"),
        "true_divide": lambda: _times_factor(v, f"(k1 / {fam.pick(['k2', '7', 'np.int16(3)'])})"),
        "float32": lambda: (f"np.sum(k1.astype(np.float32) * {v})", "k1.astype(np.float32)"),
        "mask_index": lambda: (
            f"np.sum(np.sin({fam.builder.paren(v)}[m1])) + np.sum(x[k1 % 3])",
            None,
        ),
    }
    term, factor = terms[kind]()
    if factor is None:
        return term
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            magnitude = float(np.max(np.abs(eval(factor, {"np": np}, dict(ints)))))  # noqa: S307
        except (OverflowError, TypeError):  # NumPy refuses the program: nothing to scale
            return term
    return term if magnitude <= 1e3 else f"{term} * {1.0 / magnitude:.3g}"


def _times_factor(v: str, factor: str) -> tuple[str, str]:
    return f"np.sum({v} * {factor})", factor


@st.composite
def intdtypes(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    vecs, scals = ["x"], ["s"]
    body = [f"    m1 = {fam.vec(vecs, scals)} > {fam.pick(['0.0', '0.5', '-0.5'])}"]
    body.append(f"    m2 = {fam.vec(vecs, scals)} < {fam.pick(['0.0', '0.3'])}")
    k1, d1, k1_values = _int_array(fam)
    k2, d2, k2_values = _int_array(fam)
    body += [f"    k1 = {k1}", f"    k2 = {k2}"]
    fam.use(f"int:{d1}")
    terms = []
    for _ in range(draw(st.integers(1, 3))):
        v = fam.vec(vecs, scals)
        kind = fam.pick(
            [
                "int_times_float",
                "mask_times_float",
                "where",
                "count",
                "bool_add",
                "bool_mul",
                "bool_logic",
                "int_arith",
                "int_compare",
                "astype_float",
                "astype_int",
                "int_scalar",
                "mixed_ints",
                "true_divide",
                "float32",
                "mask_index",
            ]
        )
        fam.use(f"int:{kind}")
        op = fam.pick(["+", "-", "*"])
        term = _int_term(fam, kind, v, op, {"k1": k1_values, "k2": k2_values})
        terms.append(term)
    if "mixed_ints" in " ".join(fam.features):
        fam.use(f"int:{d1}+{d2}")
    # integer values can be large: the output is scaled so its derivative is comparable
    result = f"1e-3 * ({' + '.join(terms)})"
    lines = ["def f(x, s):", *body, f"    return {result}", "", "", *_args_xs(draw)]
    return fam.program("intdtypes", lines)


# -- containers ------------------------------------------------------------------------------
_STRUCTURES: dict[str, tuple[str, list[tuple[str, tuple[int, ...]]]]] = {
    # name: (the tree with {0}, {1}... for leaves, [(path, shape)] of each leaf)
    "list": ("[{0}, {1}]", [("[0]", (3,)), ("[1]", (3,))]),
    "tuple": ("({0}, {1})", [("[0]", (3, 3)), ("[1]", (3,))]),
    "dict": ('{{"w": {0}, "b": {1}}}', [('["w"]', (3, 3)), ('["b"]', (3,))]),
    "layers": (
        "[({0}, {1}), ({2}, {3})]",
        [("[0][0]", (3, 3)), ("[0][1]", (3,)), ("[1][0]", (3, 3)), ("[1][1]", (3,))],
    ),
    "nested_list": ("[[{0}, {1}], {2}]", [("[0][0]", (3,)), ("[0][1]", (3,)), ("[1]", (3,))]),
    "dict_of_list": (
        '{{"a": {0}, "bs": [{1}, {2}]}}',
        [('["a"]', (3,)), ('["bs"][0]', (3,)), ('["bs"][1]', (3,))],
    ),
    "tuple_of_dict": ('({{"u": {0}}}, {1})', [('[0]["u"]', (3,)), ("[1]", (3,))]),
}


def _leaf_literal(draw: Callable, shape: tuple[int, ...]) -> str:
    if shape == (3,):
        return _vector(draw)
    return f"{_vector(draw, 9)}.reshape(3, 3)"


def _use_leaf(fam: _Family, expr: str, shape: tuple[int, ...], x: str = "x") -> str:
    """A scalar reading a leaf (``W @ x`` for matrices)."""
    if shape == (3, 3):
        return fam.pick([f"np.sum(np.tanh({expr} @ {x}))", f"np.sum({expr} * {expr}) * 0.1"])
    return fam.pick(
        [f"np.sum(np.sin({expr}) * {x})", f"np.sum({expr} ** 2)", f"np.sum({expr} * {x})"]
    )


@st.composite
def containers(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    name = fam.pick(list(_STRUCTURES))
    tree, paths = _STRUCTURES[name]
    fam.use(f"container:{name}")
    helpers: list[str] = []
    body: list[str] = []
    terms: list[str] = []
    size = sum(9 if shape == (3, 3) else 3 for _, shape in paths)
    for _ in range(draw(st.integers(1, 3))):
        kind = fam.pick(
            [
                "direct",
                "helper",
                "ravel",
                "ravel_unravel",
                "unpack",
                "layers_loop",
                "build",
                "helper_returns",
                "ravel_built",
            ]
        )
        if kind == "unpack" and name not in ("list", "tuple", "nested_list", "layers"):
            kind = "direct"
        if kind == "layers_loop" and name != "layers":
            kind = "helper"
        fam.use(f"container:{kind}")
        path, shape = fam.pick(paths)
        t = fam.fresh("t")
        if kind == "direct":
            body.append(f"    {t} = {_use_leaf(fam, 'p' + path, shape)}")
        elif kind == "helper":
            h = fam.fresh("h")
            reads = " + ".join(_use_leaf(fam, "q" + p, sh, "y") for p, sh in paths)
            helpers += [f"def {h}(q, y):", f"    return {reads}", "", ""]
            body.append(f"    {t} = {h}(p, x)")
        elif kind in ("ravel", "ravel_unravel"):
            flat, unravel = fam.fresh("flat"), fam.fresh("unravel")
            body.append(f"    {flat}, {unravel} = ravel_pytree(p)")
            if kind == "ravel":
                body.append(
                    f"    {t} = "
                    + fam.pick(
                        [
                            "np.sum({0} ** 2) * 0.5",
                            "np.sum(np.sin({0}) * np.linspace(-1.0, 1.0, {1}))",
                        ]
                    ).format(flat, size)
                )
            else:
                q = fam.fresh("q")
                body.append(f"    {q} = {unravel}({flat} * s)")
                body.append(f"    {t} = {_use_leaf(fam, q + path, shape)}")
        elif kind == "unpack":
            e1, e2 = fam.fresh("e"), fam.fresh("e")
            body.append(f"    {e1}, {e2} = p")
            first, first_shape = {
                "list": (e1, (3,)),
                "tuple": (e1, (3, 3)),
                "nested_list": (f"{e1}[1]", (3,)),
                "layers": (f"{e1}[0]", (3, 3)),
            }[name]
            body.append(f"    {t} = {_use_leaf(fam, first, first_shape)}")
        elif kind == "layers_loop":
            h = fam.fresh("hid")
            body += [f"    {h} = x", "    for W, b in p:", f"        {h} = np.tanh(W @ {h} + b)"]
            body.append(f"    {t} = np.sum({h} * {_weights(3)})")
        elif kind == "build":
            h = fam.fresh("h")
            shape_kind = fam.pick(["list", "dict", "tuple"])
            built = {
                "list": f"[x * s, p{path}]",
                "dict": f'{{"a": x * s, "b": p{path}}}',
                "tuple": f"(x * s, p{path})",
            }[shape_kind]
            access = {"list": ("[0]", "[1]"), "dict": ('["a"]', '["b"]'), "tuple": ("[0]", "[1]")}[
                shape_kind
            ]
            helpers += [
                f"def {h}(c, y):",
                f"    return np.sum(np.sin(c{access[0]})) + "
                + _use_leaf(fam, "c" + access[1], shape, "y"),
                "",
                "",
            ]
            body.append(f"    {t} = {h}({built}, x)")
        elif kind == "helper_returns":
            h = fam.fresh("h")
            helpers += [f"def {h}(y):", '    return {"u": y * 2.0, "v": [y, y ** 2]}', "", ""]
            d = fam.fresh("d")
            body.append(f"    {d} = {h}(p{path})")
            body.append(f'    {t} = np.sum({d}["v"][1]) + np.sum({d}["u"] * {d}["v"][0])')
        else:  # ravel_built
            flat = fam.fresh("flat")
            body.append(f"    {flat}, _ = ravel_pytree((x, p{path}))")
            body.append(f"    {t} = np.sum(np.sin({flat}))")
        terms.append(t)
    if draw(st.booleans()):  # a direct use besides (autograd's L2 penalty)
        fam.use("container:direct_besides")
        path, shape = fam.pick(paths)
        terms.append(_use_leaf(fam, "p" + path, shape))
    leaves = [_leaf_literal(draw, shape) for _, shape in paths]
    argnums = fam.pick(["0", "(0, 1)", "(0,)"])
    lines = helpers + [
        "def f(p, x, s):",
        *body,
        f"    return {' + '.join(terms)}",
        "",
        "",
        "def args():",
        f"    return ({tree.format(*leaves)}, {_vector(draw)}, {_grid(draw)!r})",
        "",
        f"ARGNUMS = {argnums}",
    ]
    return fam.program("containers", lines, "from numbax.flatten_util import ravel_pytree\n")


# -- values of loops -------------------------------------------------------------------------
_LOOPS = frozenset(
    {
        "elementwise",
        "reductions",
        "indexing",
        "for_accumulate",
        "while_counter",
        "while_tolerance",
        "nested_break",
        "list_append",
        "store_zeros",
        "break_continue",
    }
)


@st.composite
def loops_value(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    form = fam.pick(["horner", "accumulate", "while", "iterate", "generated"])
    fam.use(f"loop:{form}")
    w = fam.scal(["x"], ["s"])
    v = fam.vec(["x", "acc"], ["s"])
    if form == "horner":
        body = [
            "    acc = 0.0",
            "    for i in range(3):",
            f"        acc = acc * s + {fam.pick(['x[i]', 'np.sin(x[i])', 'x[2 - i]'])}",
        ]
        ret = "acc"
    elif form == "accumulate":
        start = fam.pick(["0.0", "np.zeros(3)", "x * 0.5"])
        update = fam.pick(["acc = acc + {}", "acc += {}", "acc = 0.5 * acc + {}"])
        body = [
            f"    acc = {start}",
            f"    for i in range({fam.pick(['3', '1, 3', 'x.shape[0]'])}):",
        ]
        body.append("        " + update.format(f"{v} * x[i]" if start != "0.0" else f"x[i] * {w}"))
        ret = "acc" if start == "0.0" else fam.pick(["np.sum(acc)", "acc[0]", "np.sum(acc * acc)"])
    elif form == "while":
        start = fam.pick(["s", "0.0", "np.sum(x)"])
        body = [f"    acc = {start}", "    k = 0", f"    while k < {fam.pick(['3', '2'])}:"]
        body += [
            f"        acc = {fam.pick(['acc * 0.5', 'np.sin(acc)', 'acc'])} + {w}",
            "        k = k + 1",
        ]
        ret = fam.pick(["acc", "acc * s"])
    elif form == "iterate":
        body = [
            "    acc = 0.0",
            "    for xi in x:",
            f"        acc = acc + np.sin(xi) * {fam.pick(['s', 'acc', '0.5'])}",
        ]
        ret = "acc"
    else:
        b = _Builder(draw, _LOOPS)
        env = _Env(vecs=["x"], scals=["s"])
        body = []
        b.block(env, 2, body, "    ", draw(st.integers(1, 2)))
        fam.features |= {f"loop:{c}" for c in b.features}
        last = env.defined[-1] if env.defined else "x"
        ret = last if last in env.scals else f"np.sum({last})"
        if draw(st.booleans()):
            ret = b.result(env, True)
    lines = ["def f(x, s):", *body, f"    return {ret}", "", "", *_args_xs(draw)]
    return fam.program("loops_value", lines)


# -- transformations inside transformations ---------------------------------------------
@st.composite
def nested(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    helpers = [
        "def h(a, b):",
        f"    return {fam.vec(['a'], ['b'], 2)}",
        "",
        "",
        "def hs(a, b):",
        f"    return {fam.scal(['a'], ['b'], 2)} + np.sum({fam.vec(['a'], ['b'], 1)} ** 2)",
        "",
        "",
    ]
    if draw(st.booleans()):  # a helper that itself calls a transformation
        fam.use("nested:helper_transforms")
        helpers += [
            "def hg(a, b):",
            f"    return np.sum(nx.{fam.pick(['grad', 'jacfwd', 'jacrev'])}(hs)(a, b) * "
            f"{_weights(3)}) + b * np.sum(a)",
            "",
            "",
        ]
        scalar_helpers = ["hs", "hg"]
    else:
        scalar_helpers = ["hs"]
    terms = []
    body = []
    for _ in range(draw(st.integers(1, 2))):
        kind = fam.pick(
            [
                "jacfwd",
                "jacrev",
                "jacobian",
                "grad",
                "hessian",
                "value_and_grad",
                "jvp",
                "vjp",
                "jacfwd_jacrev",
                "hessian_helper",
            ]
        )
        fam.use(f"nested:{kind}")
        t = fam.fresh("t")
        hsn = fam.pick(scalar_helpers)
        if kind in ("hessian", "jacfwd_jacrev", "hessian_helper") or (
            hsn == "hg" and kind in ("grad", "value_and_grad")
        ):
            # the checker takes this Hessian by differences of the (checked) gradient
            fam.use("nested:second_order_inside")
        if kind in ("jacfwd", "jacrev", "jacobian"):
            body.append(f"    {t} = np.sum(nx.{kind}(h)(x, s) * {_weights(9)}.reshape(3, 3))")
        elif kind == "grad":
            body.append(f"    {t} = np.sum(np.sin(nx.grad({hsn})(x, s)) * x)")
        elif kind == "hessian":
            body.append(f"    {t} = np.sum(nx.hessian(hs)(x, s) * {_weights(9)}.reshape(3, 3))")
        elif kind == "value_and_grad":
            value, grad = fam.fresh("val"), fam.fresh("g")
            body.append(f"    {value}, {grad} = nx.value_and_grad({hsn})(x, s)")
            body.append(f"    {t} = {value} * np.sum({grad} * {_weights(3)})")
        elif kind == "jvp":
            body.append(f"    _, {t} = nx.jvp(h, (x, s), ({_weights(3, -0.4)}, 0.5))")
            body.append(f"    {t} = np.sum({t} * x)")
        elif kind == "vjp":
            pb = fam.fresh("pb")
            body.append(f"    _, {pb} = nx.vjp(h, x, s)")
            body.append(f"    {t} = np.sum({pb}({_weights(3, 0.2)})[0] ** 2)")
        elif kind == "jacfwd_jacrev":
            inner = fam.pick(
                ["nx.jacfwd(nx.jacrev(hs))", "nx.jacrev(nx.jacfwd(hs))", "nx.jacfwd(nx.grad(hs))"]
            )
            body.append(f"    {t} = np.sum({inner}(x, s) * {_weights(9)}.reshape(3, 3))")
        else:
            body.append(f"    {t} = np.sum(nx.hessian({hsn})(x, s) * {_weights(9)}.reshape(3, 3))")
        terms.append(t)
    if draw(st.booleans()):
        terms.append(fam.scal(["x"], ["s"]))
    lines = helpers + [
        "def f(x, s):",
        *body,
        f"    return {' + '.join(terms)}",
        "",
        "",
        *_args_xs(draw)[:-1],
        "ARGNUMS = 0",
    ]
    return fam.program("nested", lines)


# -- complex linear algebra ----------------------------------------------------------------
_HERMITIAN = ("Z @ Z.conj().T + np.eye(3)", "Z + Z.conj().T + 4.0 * np.eye(3)")
_GENERAL = ("Z", "Z * x[0]", "Z + np.diag(x)", "Z @ Z")
#: Operations whose weights sit inside ``np.real``: they may be complex.
_COMPLEX_WEIGHTS = (
    "svd_reconstruct",
    "inv",
    "cholesky",
    "pinv",
    "dot_real_scalar",
    "matmul",
    "elementwise",
)


@st.composite
def complex_linalg(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    W = f"{_weights(9)}.reshape(3, 3)"
    ops = {
        "svd_values": ("general", "np.sum(np.linalg.svd({A}, compute_uv=False) * {w3})"),
        "svd_uv": ("general", "np.sum(np.abs(U) ** 2 * {W}) + np.real(np.trace(U @ Vh @ {W}))"),
        "svd_reconstruct": ("general", "np.real(np.sum((U * sv) @ Vh * {W}))"),
        "eigvalsh": ("hermitian", "np.sum(np.linalg.eigvalsh({A}) * {w3})"),
        "eigh": (
            "hermitian",
            "np.sum(np.linalg.eigh({A})[0] * {w3})"
            " + np.sum(np.abs(np.linalg.eigh({A})[1]) ** 2 * {W})",
        ),
        "solve": ("general", "np.real(np.vdot(sol, sol)) + np.imag(np.sum(sol))"),
        "inv": (
            "general",
            "np.real(np.sum(np.linalg.inv({A}) * {W})) + np.abs(np.trace(np.linalg.inv({A})))",
        ),
        "det": ("general", "{part}(np.linalg.det({A}))"),
        "slogdet": ("general", "np.linalg.slogdet({A})[1]"),
        "norm": ("general", "np.linalg.norm({norm_arg})"),
        "cond": ("general", "np.linalg.cond({A})"),
        "cholesky": ("hermitian", "np.real(np.sum(np.linalg.cholesky({A}) * {W}))"),
        "qr": ("general", "np.sum(np.abs(np.linalg.qr({A})[1]) ** 2 * {W})"),
        "pinv": ("general", "np.real(np.sum(np.linalg.pinv({A}) * {W}))"),
        "eigvals": ("general", "np.real(np.sum(np.linalg.eigvals({A}) ** 2))"),
        "dot_real_scalar": ("general", "np.real(np.sum(np.dot(x[0], {A}) * {W}))"),
        "matmul": ("general", "np.real(np.trace({A} @ {A}.conj().T @ {W}))"),
        "elementwise": (
            "general",
            "np.real(np.sum({A} * np.conj({A}) * {W} + np.exp(0.3 * {A}) * {W}))",
        ),
    }
    terms, body = [], []
    for _ in range(draw(st.integers(1, 2))):
        op = fam.pick(list(ops))
        fam.use(f"complex:{op}")
        kind, form = ops[op]
        A = fam.fresh("A")
        prep = fam.pick(_HERMITIAN if kind == "hermitian" else _GENERAL)
        body.append(f"    {A} = {prep}")
        if op in ("svd_uv", "svd_reconstruct"):
            body.append(f"    U, sv, Vh = np.linalg.svd({A})")
        if op == "solve":
            body.append(f"    sol = np.linalg.solve({A}, Z[0] * 1j + x)")
        text = form.format(
            w3=_weights(3),
            W=fam.pick([W, f"({W} * (1.0 + 0.5j))"]) if op in _COMPLEX_WEIGHTS else W,
            part=fam.pick(["np.real", "np.imag", "np.abs"]),
            norm_arg=fam.pick(
                [A, f"{A}, 'fro'", f"{A}, 2", f"{A}, 'nuc'", f"{A}[0]", "Z[:, 1], 1"]
            ),
            A=A,
        )
        terms.append(text)
    real = [[_grid(draw) for _ in range(3)] for _ in range(3)]
    imag = [[_grid(draw) for _ in range(3)] for _ in range(3)]
    # a distinct diagonal keeps singular values and eigenvalues apart even where every
    # drawn entry is the same: a repeated one has no derivative (JAX's rules neither)
    z = f"np.array({real}) + 1j * np.array({imag}) + np.diag([2.0, 2.9, 3.7])"
    lines = [
        "def f(Z, x):",
        *body,
        f"    return {' + '.join(terms)}",
        "",
        "",
        "def args():",
        f"    return ({z}, {_vector(draw)})",
        "",
        "ARGNUMS = (0, 1)",
    ]
    return fam.program("complex_linalg", lines)


# -- functools.partial -------------------------------------------------------------------------
@st.composite
def partial(draw: Callable) -> FamilyProgram:
    fam = _Family(draw)
    # g(a, x, s, ws, scale=1.0): which arguments are bound decides f's signature
    g = [
        "def g(a, x, s, ws, scale=1.0):",
        f"    t = {fam.scal(['a', 'x'], ['s'], 2)}",
        "    for w in ws:",
        "        t = t + np.sum(w * x)",
        "    return t * scale",
        "",
        "",
    ]
    a0, w1, w2 = _vector(draw), _vector(draw), _vector(draw)
    ws = fam.pick([f"[{w1}, {w2}]", f"({w1},)", f"[{w1}]"])
    point = {
        "a": _vector(draw),
        "x": _vector(draw),
        "s": repr(_grid(draw)),
        "ws": f"[{_vector(draw)}, {_vector(draw)}]",
    }
    kind = fam.pick(
        [
            "positional",
            "list_keyword",
            "list_and_keyword",
            "keyword_for_positional",
            "positional_and_keywords",
            "nested",
            "list_positional_free",
        ]
    )
    fam.use(f"partial:{kind}")
    binding, free = {
        "positional": (f"functools.partial(g, {a0})", ["x", "s", "ws"]),
        "list_keyword": (f"functools.partial(g, ws={ws})", ["a", "x", "s"]),
        "list_and_keyword": (f"functools.partial(g, ws={ws}, scale=0.5)", ["a", "x", "s"]),
        "keyword_for_positional": (f"functools.partial(g, s=0.3, ws={ws})", ["a", "x"]),
        "positional_and_keywords": (f"functools.partial(g, {a0}, scale=2.0, ws={ws})", ["x", "s"]),
        "nested": (
            f"functools.partial(functools.partial(g, {a0}), ws={ws}, scale=1.5)",
            ["x", "s"],
        ),
        "list_positional_free": (f"functools.partial(g, {a0}, scale=0.7)", ["x", "s", "ws"]),
    }[kind]
    if draw(st.booleans()):
        fam.use("partial:called_inside")
        params = ", ".join(free)
        main = [
            f"fp = {binding}",
            "",
            "",
            f"def f({params}):",
            f"    return fp({params}) * 2.0 + np.sum(x)"
            if "x" in free
            else f"    return fp({params}) * 2.0",
        ]
    else:
        main = [f"f = {binding}"]
    lines = (
        g
        + main
        + [
            "",
            "",
            "def args():",
            f"    return ({', '.join(point[p] for p in free)},)",
            "",
            f"ARGNUMS = {tuple(range(len(free)))}",
        ]
    )
    return fam.program("partial", lines, "import functools\n")


STRATEGIES: dict[str, Callable[[], st.SearchStrategy[FamilyProgram]]] = {
    "aliases": aliases,
    "repeated": repeated,
    "addat": addat,
    "intdtypes": intdtypes,
    "containers": containers,
    "loops_value": loops_value,
    "nested": nested,
    "complex_linalg": complex_linalg,
    "partial": partial,
}


def family_programs(family: str) -> st.SearchStrategy[FamilyProgram]:
    """Programs of one family."""
    return STRATEGIES[family]()
