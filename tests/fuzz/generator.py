"""Hypothesis strategies for small Python + NumPy programs, emitted as module source.

numbax transforms source, so the interesting inputs are programs, not values: every
construct of the core language (straight-line NumPy, reductions, indexing, ``for`` loops
with accumulators and in-place stores, branches on reductions, ``while`` loops, helper
calls with positional and keyword arguments, tuples, lists, ``break``/``continue``,
nested loops, variables assigned in both arms of a branch in a loop or on some paths only)
combined in ways no hand-written test lists. ``programs()`` draws one module: a main
function ``f(x, s)`` over a float64 array ``x`` of shape (3,) and a float ``s``, any
helpers it calls, and the point to evaluate it at.

Each construct class is one named switch (``CONSTRUCTS``): ``programs(enabled=...)``
generates only from the classes given, so a class numbax currently gets wrong can be
left out of a deterministic test and put back by deleting one name from an exclusion
list. Options are listed simplest first, because Hypothesis shrinks a drawn choice
towards its first option: a failing program shrinks to a short straight line where it
can.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

#: Every construct class the generator knows, one switch each.
CONSTRUCTS: tuple[str, ...] = (
    "elementwise",  # + - * ** np.sin/cos/exp/tanh/abs/maximum/where, log/sqrt of positives
    "division",  # a / b with a generated denominator (safe divisions are "elementwise")
    "reductions",  # np.sum, np.mean, np.max, np.min, np.prod
    "indexing",  # v[0], v[-1], v[1:], v[::-1]
    "methods",  # v.sum(), v.mean(), v.T, v.reshape(-1)
    "for_accumulate",  # acc = acc + ... over range(n)
    "store_zeros",  # y = np.zeros_like(v); y[i] = ... / y[i] += ... in a loop
    "store_mul_copy",  # y = v * 1.0; stores into it
    "store_copy_method",  # y = v.copy(); stores into it
    "unused_loop",  # a loop whose results never reach the output
    "if_else",  # if reduction > c: ... else: ...
    "elif",  # if ...: elif ...: else:
    "if_one_sided",  # if ...: (no else) reassigning a variable defined before
    "while_tolerance",  # Newton / fixed-point iteration to a tolerance, with a guard
    "while_counter",  # while k < n: ...; k = k + 1
    "helper_positional",  # a generated helper called with positional arguments
    "helper_keyword",  # ... called with keyword arguments and defaults
    "helper_tuple",  # a helper returning a tuple, unpacked or indexed
    "tuples",  # t = (a, b); p, q = t; p, q = q, p
    "list_append",  # lst = []; lst.append(...) in a loop; lst[i]
    "break_continue",  # continue at a fixed index, break on a value
    "loop_branch_assign",  # y set in both arms of an if in a loop, read after it; break etc.
    "maybe_defined",  # y set on some paths (one-sided if, earlier iteration), read guarded
    "nested_break",  # an inner loop that may break, inside an outer accumulating loop
    "vector_output",  # f returns an array (else a scalar)
)

ALL_CONSTRUCTS: frozenset[str] = frozenset(CONSTRUCTS)

_CONSTANTS = ("0.5", "1.5", "2.0", "-0.7", "3.0", "0.25")
_THRESHOLDS = ("0.0", "0.5", "-0.5", "1.0")


@dataclass(frozen=True)
class Program:
    """One generated module and the point at which to check it.

    ``source`` is a whole module defining ``f(x, s)`` (and helpers); ``features`` names
    the construct classes it actually uses, so failures can be grouped by construct.
    """

    source: str
    x: tuple[float, float, float]
    s: float
    features: frozenset[str]
    scalar_output: bool
    vmap_in_axes: tuple[int | None, int | None] = (0, 0)

    def args(self) -> tuple[np.ndarray, float]:
        """Fresh arguments (a new array each call, so no check sees another's mutation)."""
        return np.array(self.x, dtype=np.float64), float(self.s)

    def batch(self) -> tuple[np.ndarray | float, np.ndarray | float]:
        """Three examples around the point, mapped as ``vmap_in_axes`` says."""
        x, s = self.args()
        offsets = np.array([0.0, 0.13, -0.21])
        xs: np.ndarray | float = x[None, :] + offsets[:, None] * np.array([1.0, -0.5, 0.7])
        ss: np.ndarray | float = s + offsets[::-1]
        if self.vmap_in_axes[0] is None:
            xs = x
        if self.vmap_in_axes[1] is None:
            ss = s
        return xs, ss

    def __repr__(self) -> str:
        # Hypothesis prints the falsifying example with repr: show the program itself.
        features = ", ".join(sorted(self.features))
        return (
            f"Program(x={list(self.x)!r}, s={self.s!r}, in_axes={self.vmap_in_axes}, "
            f"features=[{features}])\n{self.source}"
        )


@dataclass
class _Env:
    """What an expression may read: variables by kind, plus scalar leaf expressions
    valid only here (``x[i]`` inside a loop over ``i``)."""

    vecs: list[str]
    scals: list[str]
    leaves: list[str] = field(default_factory=list)
    defined: list[str] = field(default_factory=list)  # body variables, in order

    def copy(self) -> _Env:
        return _Env(list(self.vecs), list(self.scals), list(self.leaves), list(self.defined))

    def add(self, name: str, kind: str) -> None:
        target = self.vecs if kind == "vec" else self.scals
        if name not in target:
            target.append(name)
        if name not in self.defined:
            self.defined.append(name)


@dataclass
class _Helper:
    name: str
    returns: str  # "vec", "scal" or "tuple" (a vec and a scal)
    features: frozenset[str] = frozenset()  # what its body uses, counted where it is called


class _Builder:
    """Draws one program, line by line, recording the construct classes it uses."""

    def __init__(self, draw: Callable, enabled: frozenset[str]) -> None:
        self.draw = draw
        self.enabled = enabled
        self.features: set[str] = set()
        self.counter = 0
        self.helpers: list[_Helper] = []

    # -- drawing -------------------------------------------------------------------
    def on(self, construct: str) -> bool:
        return construct in self.enabled

    def pick(self, options: list | tuple):
        return self.draw(st.sampled_from(list(options)))

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def use(self, construct: str) -> None:
        self.features.add(construct)

    # -- expressions ---------------------------------------------------------------
    def scalar_leaf(self, env: _Env) -> str:
        options = env.scals + env.leaves + [self.pick(_CONSTANTS)]
        return self.pick(options)

    def vector_leaf(self, env: _Env) -> str:
        return self.pick(env.vecs)

    def scalar(self, env: _Env, depth: int) -> str:
        """A float-valued expression."""
        if depth <= 0:
            return self.scalar_leaf(env)
        forms: list[Callable[[], str]] = [lambda: self.scalar_leaf(env)]
        if self.on("elementwise"):
            forms += [
                lambda: self.binop(self.scalar(env, depth - 1), self.scalar(env, depth - 1)),
                lambda: self.unary(self.scalar(env, depth - 1)),
                lambda: self.power(self.scalar(env, depth - 1)),
                lambda: self.safe(self.scalar(env, depth - 1), self.scalar(env, depth - 1)),
            ]
        if self.on("division"):
            forms.append(lambda: self.divide(self.scalar(env, depth - 1), env))
        if self.on("reductions"):
            forms.append(lambda: self.reduce(self.vector(env, depth - 1)))
        if self.on("indexing"):
            forms.append(lambda: self.index(self.vector(env, depth - 1)))
        if self.on("methods"):
            forms.append(lambda: self.method_reduce(self.vector(env, depth - 1)))
        return forms[self.draw(st.integers(0, len(forms) - 1))]()

    def vector(self, env: _Env, depth: int) -> str:
        """A float64 array of shape (3,)."""
        if depth <= 0:
            return self.vector_leaf(env)
        forms: list[Callable[[], str]] = [lambda: self.vector_leaf(env)]
        if self.on("elementwise"):
            forms += [
                lambda: self.binop(self.vector(env, depth - 1), self.vector(env, depth - 1)),
                lambda: self.binop(self.vector(env, depth - 1), self.scalar(env, depth - 1)),
                lambda: self.binop(self.scalar(env, depth - 1), self.vector(env, depth - 1)),
                lambda: self.unary(self.vector(env, depth - 1)),
                lambda: self.power(self.vector(env, depth - 1)),
                lambda: self.safe(self.vector(env, depth - 1), self.scalar(env, depth - 1)),
                lambda: self.where(env, depth - 1),
            ]
        if self.on("division"):
            forms.append(lambda: self.divide(self.vector(env, depth - 1), env))
        if self.on("indexing"):
            forms.append(lambda: f"{self.paren(self.vector(env, depth - 1))}[::-1]")
        if self.on("methods"):
            forms.append(lambda: self.method_reshape(self.vector(env, depth - 1)))
        return forms[self.draw(st.integers(0, len(forms) - 1))]()

    def value(self, env: _Env, kind: str, depth: int) -> str:
        return self.vector(env, depth) if kind == "vec" else self.scalar(env, depth)

    @staticmethod
    def paren(text: str) -> str:
        """``text`` as an operand of a postfix operator (subscript, attribute)."""
        simple = text.replace("_", "").isalnum() or text.endswith(")") and text.startswith("(")
        return text if simple and not text.startswith("-") else f"({text})"

    def binop(self, a: str, b: str) -> str:
        self.use("elementwise")
        return f"({a} {self.pick(['+', '-', '*'])} {b})"

    def unary(self, a: str) -> str:
        self.use("elementwise")
        form = self.pick(
            [
                "np.sin({})",
                "np.cos({})",
                "np.tanh({})",
                "np.exp({})",
                "np.abs({})",
                "np.log(1.0 + {0} * {0})",
                "np.sqrt(0.5 + {0} * {0})",
                "np.maximum({}, 0.2)",
            ]
        )
        return form.format(a)

    def power(self, a: str) -> str:
        self.use("elementwise")
        form = self.pick(["{} ** 2", "{} ** 3", "(1.0 + {0} * {0}) ** 0.5", "{} ** 2.0"])
        return form.format(self.paren(a))

    def safe(self, a: str, b: str) -> str:
        """A division whose denominator cannot vanish (elementwise, not "division")."""
        self.use("elementwise")
        form = self.pick(["({} / (1.0 + {} ** 2))", "np.maximum({}, {})", "({} / 2.0)"])
        return form.format(a, self.paren(b)) if "**" in form else form.format(a, b)

    def divide(self, a: str, env: _Env) -> str:
        self.use("division")
        return f"({a} / {self.paren(self.scalar(env, 1))})"

    def where(self, env: _Env, depth: int) -> str:
        self.use("elementwise")
        cond = self.vector(env, depth)
        a = self.vector(env, depth)
        b = self.vector(env, depth)
        return f"np.where({cond} > {self.pick(_THRESHOLDS)}, {a}, {b})"

    def reduce(self, v: str) -> str:
        self.use("reductions")
        return f"np.{self.pick(['sum', 'mean', 'max', 'min', 'prod'])}({v})"

    def index(self, v: str) -> str:
        self.use("indexing")
        v = self.paren(v)
        form = self.pick(["{}[0]", "{}[1]", "{}[-1]", "np.sum({}[1:])", "np.sum({0}[::-1] * {0})"])
        if form.startswith("np.sum"):
            self.use("reductions")
        return form.format(v)

    def method_reduce(self, v: str) -> str:
        self.use("methods")
        return f"{self.paren(v)}.{self.pick(['sum', 'mean'])}()"

    def method_reshape(self, v: str) -> str:
        self.use("methods")
        return f"{self.paren(v)}{self.pick(['.T', '.reshape(-1)'])}"

    def absorb(self, expr: str, kind: str, env: _Env, names: list[str]) -> str:
        """``expr`` plus a term for each of ``names`` (the values a nested block just
        defined), so no computed value is left unread unless ``unused_loop`` asked."""
        for name in names:
            term = name
            if kind == "scal" and name in env.vecs:
                term = f"np.sum({name})"
            expr = f"{expr} + {term}"
        return expr

    def condition(self, env: _Env) -> str:
        """A branch test on a reduction (or a scalar when reductions are off)."""
        if self.on("reductions") and self.draw(st.booleans()):
            self.use("reductions")
            subject = f"np.{self.pick(['sum', 'max', 'mean'])}({self.vector(env, 1)})"
        else:
            subject = self.scalar(env, 1)
        return f"{subject} > {self.pick(_THRESHOLDS)}"

    # -- statements ----------------------------------------------------------------
    def block(self, env: _Env, depth: int, lines: list[str], indent: str, count: int) -> None:
        """Append ``count`` drawn statements to ``lines``."""
        for _ in range(count):
            self.statement(env, depth, lines, indent)

    def statement(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        kinds: list[Callable[[], None]] = [
            lambda: self.assign(env, lines, indent),
            lambda: self.reassign(env, lines, indent),
        ]
        if depth > 0:
            nested = {
                "for_accumulate": self.for_accumulate,
                "store_zeros": self.store_loop,
                "store_mul_copy": self.store_loop,
                "store_copy_method": self.store_loop,
                "unused_loop": self.unused_loop,
                "if_else": self.branch,
                "elif": self.branch,
                "if_one_sided": self.branch,
                "while_tolerance": self.while_tolerance,
                "while_counter": self.while_counter,
                "tuples": self.tuples,
                "list_append": self.list_append,
                "loop_branch_assign": self.loop_branch_assign,
                "maybe_defined": self.maybe_defined,
                "nested_break": self.nested_break,
            }
            seen: set[Callable] = set()
            for construct, make in nested.items():
                if self.on(construct) and make not in seen:
                    seen.add(make)
                    kinds.append(lambda make=make: make(env, depth - 1, lines, indent))
            if self.helpers:
                kinds.append(lambda: self.call(env, lines, indent))
        kinds[self.draw(st.integers(0, len(kinds) - 1))]()

    def assign(self, env: _Env, lines: list[str], indent: str) -> None:
        kind = self.pick(["vec", "scal"])
        name = self.fresh("v" if kind == "vec" else "a")
        lines.append(f"{indent}{name} = {self.value(env, kind, 2)}")
        env.add(name, kind)

    def reassign(self, env: _Env, lines: list[str], indent: str) -> None:
        kind = self.pick(["vec", "scal"])
        name = self.pick(env.vecs if kind == "vec" else env.scals)
        lines.append(f"{indent}{name} = {self.value(env, kind, 2)}")
        env.add(name, kind)

    def loop_header(self, env: _Env) -> tuple[str, str]:
        """``for i in range(...)`` over the length of some array, and the index name."""
        index = self.fresh("i")
        bound = self.pick(["3", f"{env.vecs[0]}.shape[0]", "1, 3"])
        return index, f"for {index} in range({bound}):"

    def loop_env(self, env: _Env, index: str) -> _Env:
        inner = env.copy()
        inner.leaves = (
            inner.leaves + [f"{v}[{index}]" for v in env.vecs] + [f"({index} * 0.5 + 0.25)"]
        )
        return inner

    def for_accumulate(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        self.use("for_accumulate")
        kind = self.pick(["scal", "vec"])
        acc = self.fresh("acc")
        init = self.pick(["0.0", "1.0"]) if kind == "scal" else f"np.zeros_like({env.vecs[0]})"
        if kind == "vec" and self.draw(st.booleans()):
            init = f"{self.vector(env, 1)} * 0.5"
        lines.append(f"{indent}{acc} = {init}")
        index, header = self.loop_header(env)
        lines.append(f"{indent}{header}")
        inner = self.loop_env(env, index)
        body = indent + "    "
        if self.on("break_continue") and self.draw(st.booleans()):
            self.use("break_continue")
            lines += [f"{body}if {index} == 1:", f"{body}    continue"]
        before = len(inner.defined)
        if depth > 0 and self.draw(st.booleans()):
            self.block(inner, depth, lines, body, 1)
        local = inner.defined[before:]
        inner.add(acc, kind)
        update = self.absorb(self.value(inner, kind, 2), kind, inner, local)
        form = self.pick(["{a} = {a} + {u}", "{a} += {u}", "{a} = {a} * 0.5 + {u}"])
        lines.append(body + form.format(a=acc, u=update))
        if kind == "scal" and self.on("break_continue") and self.draw(st.booleans()):
            self.use("break_continue")
            lines += [f"{body}if {acc} > {self.pick(['2.0', '0.5'])}:", f"{body}    break"]
        env.add(acc, kind)

    def store_loop(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        copies = [c for c in ("store_zeros", "store_mul_copy", "store_copy_method") if self.on(c)]
        how = self.pick(copies)
        self.use(how)
        y = self.fresh("y")
        source = self.vector_leaf(env)
        init = {
            "store_zeros": f"np.zeros_like({source})",
            "store_mul_copy": f"{source} * 1.0",
            "store_copy_method": f"{source}.copy()",
        }[how]
        lines.append(f"{indent}{y} = {init}")
        index, header = self.loop_header(env)
        lines.append(f"{indent}{header}")
        inner = self.loop_env(env, index)
        inner.leaves.append(f"{y}[{index}]")
        body = indent + "    "
        before = len(inner.defined)
        if depth > 0 and self.draw(st.booleans()):
            self.block(inner, depth, lines, body, 1)
        value = self.absorb(self.scalar(inner, 2), "scal", inner, inner.defined[before:])
        form = self.pick(["{y}[{i}] = {v}", "{y}[{i}] += {v}", "{y}[{i}] = {y}[{i}] * 0.5 + {v}"])
        lines.append(body + form.format(y=y, i=index, v=value))
        env.add(y, "vec")

    def unused_loop(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        self.use("unused_loop")
        index, header = self.loop_header(env)
        inner = self.loop_env(env, index)
        dead = self.fresh("u")
        if self.draw(st.booleans()):
            lines.append(f"{indent}{header}")
            lines.append(f"{indent}    {dead} = {self.scalar(inner, 2)}")
        else:
            lines.append(f"{indent}{dead} = 0.0")
            lines.append(f"{indent}{header}")
            lines.append(f"{indent}    {dead} = {dead} + {self.scalar(inner, 2)}")
        # ``dead`` is deliberately not added to ``env``: nothing downstream reads it.

    def branch(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        shapes = [c for c in ("if_else", "elif", "if_one_sided") if self.on(c)]
        shape = self.pick(shapes)
        self.use(shape)
        kind = self.pick(["scal", "vec"])
        body = indent + "    "
        if shape == "if_one_sided":
            target = self.pick(env.vecs if kind == "vec" else env.scals)
            arms = ["if"]
        else:
            target = self.fresh("b")
            arms = ["if", "elif", "else"] if shape == "elif" else ["if", "else"]
        for arm in arms:
            if arm == "else":
                lines.append(f"{indent}else:")
            else:
                lines.append(f"{indent}{arm} {self.condition(env)}:")
            inner = env.copy()
            before = len(inner.defined)
            if depth > 0 and self.draw(st.booleans()):
                self.block(inner, depth, lines, body, 1)
            value = self.absorb(self.value(inner, kind, 2), kind, inner, inner.defined[before:])
            lines.append(f"{body}{target} = {value}")
        env.add(target, kind)

    def while_tolerance(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        self.use("while_tolerance")
        a, z, k = self.fresh("w"), self.fresh("z"), self.fresh("k")
        lines.append(f"{indent}{a} = 1.0 + {self.paren(self.scalar(env, 1))} ** 2")
        lines.append(f"{indent}{z} = {a}")
        lines.append(f"{indent}{k} = 0")
        if self.draw(st.booleans()):  # Newton's iteration for sqrt(a)
            lines.append(f"{indent}while np.abs({z} * {z} - {a}) > 1e-13 * {a} and {k} < 60:")
            lines.append(f"{indent}    {z} = 0.5 * ({z} + {a} / {z})")
        else:  # a contraction: z = 0.5 cos(z) + a / 4 converges from anywhere
            old = self.fresh("zo")
            lines.append(f"{indent}{old} = {z} + 1.0")
            lines.append(f"{indent}while np.abs({z} - {old}) > 1e-14 and {k} < 200:")
            lines.append(f"{indent}    {old} = {z}")
            lines.append(f"{indent}    {z} = 0.5 * np.cos({z}) + 0.25 * {a}")
        lines.append(f"{indent}    {k} = {k} + 1")
        env.add(z, "scal")

    def while_counter(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        self.use("while_counter")
        kind = self.pick(["scal", "vec"])
        w, k = self.fresh("c"), self.fresh("k")
        lines.append(f"{indent}{w} = {self.value(env, kind, 1)}")
        lines.append(f"{indent}{k} = 0")
        lines.append(f"{indent}while {k} < {self.pick(['3', '2'])}:")
        inner = env.copy()
        inner.add(w, kind)
        lines.append(f"{indent}    {w} = {self.value(inner, kind, 2)}")
        lines.append(f"{indent}    {k} = {k} + 1")
        env.add(w, kind)

    def tuples(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        self.use("tuples")
        p, q = self.fresh("p"), self.fresh("q")
        form = self.pick(["pack", "direct", "swap"])
        kp, kq = self.pick(["vec", "scal"]), self.pick(["vec", "scal"])
        if form == "swap":
            kq = kp
        first, second = self.value(env, kp, 1), self.value(env, kq, 1)
        if form == "pack":
            t = self.fresh("t")
            lines.append(f"{indent}{t} = ({first}, {second})")
            lines.append(f"{indent}{p}, {q} = {t}")
        else:
            lines.append(f"{indent}{p}, {q} = {first}, {second}")
            if form == "swap":
                lines.append(f"{indent}{p}, {q} = {q}, {p}")
        env.add(p, kp)
        env.add(q, kq)

    def list_append(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        self.use("list_append")
        lst, r = self.fresh("lst"), self.fresh("r")
        index, header = self.loop_header(env)
        inner = self.loop_env(env, index)
        lines.append(f"{indent}{lst} = []")
        lines.append(f"{indent}for {index} in range(3):")
        lines.append(f"{indent}    {lst}.append({self.scalar(inner, 2)})")
        if self.draw(st.booleans()):
            lines.append(f"{indent}{r} = {lst}[0] * {lst}[2] + {lst}[1]")
        else:
            j = self.fresh("j")
            lines.append(f"{indent}{r} = 0.0")
            lines.append(f"{indent}for {j} in range(3):")
            lines.append(f"{indent}    {r} = {r} + {lst}[{j}] * {self.pick(_CONSTANTS)}")
        env.add(r, "scal")

    def read_term(self, name: str, kind: str, env: _Env) -> str:
        """A scalar that reads ``name`` (a variable of ``kind``)."""
        leaf = self.scalar_leaf(env)
        if kind == "vec":
            form = self.pick(["np.sum({n})", "np.sum(np.sin({n}))", "np.sum({n} * {l})"])
        else:
            form = self.pick(["{n}", "np.sin({n})", "{n} * {l}"])
        return form.format(n=name, l=leaf)

    def element_condition(self, env: _Env, index: str) -> str:
        """A branch test on an element of an input (``x[i]``) or on a reduction."""
        if self.draw(st.booleans()):
            return f"{self.pick(env.vecs)}[{index}] > {self.pick(_THRESHOLDS)}"
        return self.condition(env)

    def loop_branch_assign(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        """A variable assigned in both arms of an ``if`` in a loop, read after the
        branch in the same iteration, in a loop with ``break``, ``continue`` or a store."""
        self.use("loop_branch_assign")
        kind = self.pick(["vec", "scal"])
        acc, y = self.fresh("z"), self.fresh("y")
        tail = self.pick(["break", "continue", "store"])
        store = self.fresh("st")
        lines.append(f"{indent}{acc} = {self.pick(['0.0', '1.0'])}")
        if tail == "store":
            source = self.vector_leaf(env)
            lines.append(
                f"{indent}{store} = {self.pick(['np.zeros_like({})', '{} * 1.0'])}".format(source)
            )
        index, header = self.loop_header(env)
        lines.append(f"{indent}{header}")
        inner = self.loop_env(env, index)
        body = indent + "    "
        continue_where = self.pick(["top", "after_branch"]) if tail == "continue" else ""
        if continue_where == "top":
            lines += [f"{body}if {index} == 1:", f"{body}    continue"]
        for arm in ("if", "else"):
            if arm == "if":
                lines.append(f"{body}if {self.element_condition(inner, index)}:")
            else:
                lines.append(f"{body}else:")
            arm_env = inner.copy()
            before = len(arm_env.defined)
            if depth > 0 and self.draw(st.booleans()):
                self.block(arm_env, depth, lines, body + "    ", 1)
            value = self.absorb(
                self.value(arm_env, kind, 2), kind, arm_env, arm_env.defined[before:]
            )
            lines.append(f"{body}    {y} = {value}")
        if continue_where == "after_branch":
            lines += [f"{body}if {index} == 1:", f"{body}    continue"]
        inner.add(acc, "scal")
        update = f"{self.read_term(y, kind, inner)}"
        if self.draw(st.booleans()):
            update = f"{update} + {self.scalar(inner, 1)}"
        lines.append(f"{body}{acc} = {acc} + {update}")
        if tail == "break":
            threshold = self.pick(["100.0", "0.5", "2.0", "-1.0"])
            lines += [f"{body}if {acc} > {threshold}:", f"{body}    break"]
        elif tail == "store":
            lines.append(f"{body}{store}[{index}] = {self.read_term(y, kind, inner)}")
            env.add(store, "vec")
        env.add(acc, "scal")
        # the last iteration always reaches the branch: ``y`` exists after the loop, but
        # a ``y`` read there is live out of the loop, which reverse mode treats apart
        if self.draw(st.booleans()):
            env.add(y, kind)

    def maybe_defined(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        """A variable defined on some paths only (a one-sided ``if``, an earlier
        iteration), read where it surely exists, then overwritten by a statement that
        does not read it; every read is guarded by what guarantees its definition."""
        self.use("maybe_defined")
        kind = self.pick(["vec", "scal"])
        z, y = self.fresh("z"), self.fresh("y")
        lines.append(f"{indent}{z} = {self.scalar(env, 1)}")
        shape = self.pick(["guarded", "carried", "before_loop"])
        if shape == "guarded":
            # the test's operands are not assigned in between, so it is the same test
            cond = self.condition(env)
            lines.append(f"{indent}if {cond}:")
            lines.append(f"{indent}    {y} = {self.value(env, kind, 2)}")
            lines.append(f"{indent}if {cond}:")
            lines.append(f"{indent}    {z} = {z} + {self.read_term(y, kind, env)}")
            surely = self.draw(st.booleans())
            if surely:
                lines.append(f"{indent}{y} = {self.value(env, kind, 2)}")
            else:
                lines.append(f"{indent}if {self.condition(env)}:")
                lines.append(f"{indent}    {y} = {self.value(env, kind, 2)}")
            if not surely:
                final = f"{z} + {self.read_term(y, kind, env)}"
                if self.draw(st.booleans()):
                    lines.append(f"{indent}{z} = {final} if {cond} else {z}")
                else:
                    lines.append(f"{indent}if {cond}:")
                    lines.append(f"{indent}    {z} = {final}")
            env.add(z, "scal")
            if surely:
                env.add(y, kind)
            return
        cond = self.condition(env) if shape == "before_loop" else ""
        if shape == "before_loop":
            lines.append(f"{indent}if {cond}:")
            lines.append(f"{indent}    {y} = {self.value(env, kind, 2)}")
        index = self.fresh("i")
        start = self.pick(["0", "1"])
        bound = f"{start}, 3" if start == "1" else self.pick(["3", f"{env.vecs[0]}.shape[0]"])
        lines.append(f"{indent}for {index} in range({bound}):")
        inner = self.loop_env(env, index)
        inner.add(z, "scal")
        guard = f"{index} > {start}"
        if shape == "before_loop":
            guard = self.pick([cond, f"{index} > {start} or {cond}"])
        lines.append(f"{indent}    if {guard}:")
        lines.append(f"{indent}        {z} = {z} + {self.read_term(y, kind, inner)}")
        lines.append(f"{indent}    {y} = {self.value(inner, kind, 2)}")
        env.add(z, "scal")
        env.add(y, kind)  # the loop runs at least once

    def nested_break(self, env: _Env, depth: int, lines: list[str], indent: str) -> None:
        """Nested loops: an inner loop that may ``break``, an outer accumulator."""
        self.use("nested_break")
        acc, part = self.fresh("z"), self.fresh("q")
        outer_index, outer_header = self.loop_header(env)
        lines.append(f"{indent}{acc} = {self.pick(['0.0', '1.0'])}")
        lines.append(f"{indent}{outer_header}")
        outer = self.loop_env(env, outer_index)
        outer.add(acc, "scal")
        body = indent + "    "
        lines.append(f"{body}{part} = {self.scalar(outer, 1)}")
        inner_index = self.fresh("j")
        lines.append(f"{body}for {inner_index} in range({self.pick(['3', '1, 3'])}):")
        inner = self.loop_env(outer, inner_index)
        inner.add(part, "scal")
        test = self.pick(
            [
                f"{inner_index} > {outer_index}",
                f"{part} > {self.pick(['2.0', '0.5', '100.0'])}",
                f"{self.pick(env.vecs)}[{inner_index}] > {self.pick(_THRESHOLDS)}",
            ]
        )
        brk = [f"{body}    if {test}:", f"{body}        break"]
        update = [f"{body}    {part} = {part} + {self.scalar(inner, 2)}"]
        lines += brk + update if self.draw(st.booleans()) else update + brk
        form = self.pick(["{a} = {a} + {p}", "{a} += {p} * {l}", "{a} = {a} * 0.5 + np.sin({p})"])
        lines.append(body + form.format(a=acc, p=part, l=self.scalar_leaf(outer)))
        env.add(acc, "scal")

    def call(self, env: _Env, lines: list[str], indent: str) -> None:
        helper = self.pick(self.helpers)
        self.features |= helper.features
        v, s = self.vector(env, 1), self.scalar(env, 1)
        if helper.returns == "tuple":
            self.use("helper_tuple")
            p, q = self.fresh("p"), self.fresh("q")
            if self.draw(st.booleans()):
                lines.append(f"{indent}{p}, {q} = {helper.name}({v}, {s})")
            else:
                t = self.fresh("t")
                lines.append(f"{indent}{t} = {helper.name}({v}, {s})")
                lines.append(f"{indent}{p} = {t}[0]")
                lines.append(f"{indent}{q} = {t}[1]")
            env.add(p, "vec")
            env.add(q, "scal")
            return
        styles = []
        if self.on("helper_positional"):
            styles += ["{h}({v}, {s})", "{h}({v}, {s}, {c})"]
        if self.on("helper_keyword"):
            styles += ["{h}({v}, b={s})", "{h}(b={s}, a={v})", "{h}({v}, {s}, c={c})"]
        style = self.pick(styles)
        self.use("helper_keyword" if "=" in style else "helper_positional")
        name = self.fresh("h")
        c = self.scalar(env, 1)
        lines.append(f"{indent}{name} = " + style.format(h=helper.name, v=v, s=s, c=c))
        env.add(name, helper.returns)

    # -- whole functions -----------------------------------------------------------
    def helper(self) -> tuple[_Helper, str]:
        outer, self.features = self.features, set()
        returns = []
        if self.on("helper_positional") or self.on("helper_keyword"):
            returns += ["vec", "scal"]
        if self.on("helper_tuple"):
            returns.append("tuple")
        kind = self.pick(returns)
        name = self.fresh("g")
        env = _Env(vecs=["a"], scals=["b", "c"])
        lines = [f"def {name}(a, b, c=0.5):" if kind != "tuple" else f"def {name}(a, b):"]
        if kind == "tuple":
            env.scals.remove("c")
        self.block(env, 1, lines, "    ", self.draw(st.integers(0, 2)))
        local = list(env.defined)
        if kind == "tuple":
            vec = self.absorb(self.vector(env, 2), "vec", env, local)
            ret = f"{vec}, {self.scalar(env, 2)}"
        else:
            ret = self.absorb(self.value(env, kind, 2), kind, env, local)
        lines.append(f"    return {ret}")
        used, self.features = frozenset(self.features), outer
        return _Helper(name, kind, used), "\n".join(lines)

    def main(self) -> tuple[str, bool]:
        env = _Env(vecs=["x"], scals=["s"])
        lines = ["def f(x, s):"]
        self.block(env, 2, lines, "    ", self.draw(st.integers(1, 4)))
        scalar_output = not (self.on("vector_output") and self.draw(st.booleans()))
        lines.append(f"    return {self.result(env, scalar_output)}")
        return "\n".join(lines), scalar_output

    def result(self, env: _Env, scalar_output: bool) -> str:
        """The output: every variable the body defined contributes to it, so each one's
        derivative is checked (only ``unused_loop`` leaves values unread, on purpose)."""
        names = env.defined or ["x"]
        if scalar_output:
            terms = [n if n in env.scals else f"np.sum({n})" for n in names]
        else:
            vecs = [n for n in names if n in env.vecs] or ["x"]
            terms = vecs + [n for n in names if n in env.scals]
        out = terms[0]
        for term in terms[1:]:
            out = f"{out} {self.pick(['+', '*', '-'])} {term}"
            if self.draw(st.booleans()):
                out = f"np.tanh({out})" if self.draw(st.booleans()) else out
        return out


# Points on a grid offset from zero: exact zeros (and Hypothesis' favourite tiny floats)
# sit on the kinks of abs, maximum and where, where no derivative exists to check.
_coordinate = st.integers(-150, 150).map(lambda k: round(k * 0.01 + 0.0137, 4))


@st.composite
def programs(draw: Callable, enabled: frozenset[str] = ALL_CONSTRUCTS) -> Program:
    """A generated module defining ``f(x, s)``, with its evaluation point."""
    builder = _Builder(draw, frozenset(enabled))
    helper_texts = []
    helper_allowed = {"helper_positional", "helper_keyword", "helper_tuple"} & builder.enabled
    if helper_allowed:
        for _ in range(draw(st.integers(0, 2))):
            helper, text = builder.helper()
            builder.helpers.append(helper)
            helper_texts.append(text)
    main, scalar_output = builder.main()
    if not scalar_output:
        builder.use("vector_output")
    # a helper defined but never called is not a use of the helper constructs
    source = "\n\n\n".join(["import numpy as np", *helper_texts, main]) + "\n"
    x = tuple(draw(_coordinate) for _ in range(3))
    s = draw(_coordinate)
    in_axes = draw(st.sampled_from([(0, 0), (0, None), (None, 0)]))
    return Program(
        source=source,
        x=x,  # type: ignore[arg-type]
        s=s,
        features=frozenset(builder.features),
        scalar_output=scalar_output,
        vmap_in_axes=in_axes,
    )
