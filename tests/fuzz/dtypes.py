"""The dtype fuzz: ``nx.jit``'s fused loops against NumPy 2's dtype rules.

Each check runs one small program, a fused chain of two or three elementwise operations
(``a + b * a``), under ``nx.jit`` and in NumPy, on operands of one pair of types: arrays
of every dtype from bool to complex128, 0-d arrays, NumPy scalars and Python scalars
(weak, NEP 50), and compares the dtype and the values (NaN-aware, warnings ignored).
A program NumPy refuses (``True - True``, ``int8_array ** -1``) must be refused; one
whose NumPy result is float16 must be refused too (numbax does not compute in float16).

Numba compiles a program once per type signature, so each program is one function,
called on many operand types. ``python -m tests.fuzz.dtypes`` runs the full profile and
prints the counts; ``tests/numba_backend/test_dtype_rules.py`` runs :data:`CI_CASES`.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import numbax as nx

BINARY = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "true_divide": "/",
    "floor_divide": "//",
    "remainder": "%",
    "power": "**",
    "left_shift": "<<",
    "right_shift": ">>",
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
}
COMPARISONS = {
    "less": "<",
    "less_equal": "<=",
    "equal": "==",
    "not_equal": "!=",
    "greater": ">",
    "greater_equal": ">=",
}
UNARY = {
    "negative": "-{}",
    "positive": "+{}",
    "invert": "~{}",
    "absolute": "abs({})",
    "np_abs": "np.abs({})",
    "sign": "np.sign({})",
    "sqrt": "np.sqrt({})",
    "exp": "np.exp({})",
    "square": "np.square({})",
    "logical_not": "np.logical_not({})",
}
BINARY_UFUNCS = {
    "fmod": "np.fmod({}, {})",
    "maximum": "np.maximum({}, {})",
    "minimum": "np.minimum({}, {})",
    "np_power": "np.power({}, {})",
    "arctan2": "np.arctan2({}, {})",
    "logical_and": "np.logical_and({}, {})",
}
REDUCTIONS = {
    "sum": "np.sum({})",
    "mean": "np.mean({})",
    "prod": "np.prod({})",
    "max": "np.max({})",
}


def _programs() -> dict[str, str]:
    """Each program's source, by name: binary operators as ``a OP b OP a`` (the inner
    one's overflow must wrap at its own dtype), comparisons after an addition, unary
    operators and ufuncs of a product, reductions of a product."""
    programs = {}
    for name, op in BINARY.items():
        programs[name] = f"a {op} (b {op} a)" if op != "**" else "(a ** b) * a"
    for name, op in COMPARISONS.items():
        programs[name] = f"(a + b) {op} a"
    for name, form in UNARY.items():
        programs[name] = form.format("b * a")
    for name, form in BINARY_UFUNCS.items():
        programs[name] = form.format("a * b", "b")
    for name, form in REDUCTIONS.items():
        programs[name] = form.format("a * b")
    return programs


PROGRAMS = _programs()

DTYPES = (
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)

_A_VALUES = [100, -100, 8, 0, -7, 3, 127, -128]
_B_VALUES = [1, 1, 6, 2, 2, 0, -1, -1]
_LARGE = [2**62 + 1, -(2**62), 3, 0, -7, 2**40, 2**63 - 1, -(2**63)]


def array(dtype: str, values: list[int], large: bool = False) -> np.ndarray:
    """``values`` (or large ones for 64-bit integers) as an array of ``dtype``, wrapped
    into its range."""
    source = _LARGE if large and dtype in ("int64", "uint64") else values
    if dtype == "bool":
        return np.array([v % 3 != 0 for v in source])
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        span = int(info.max) - int(info.min) + 1
        return np.array([(v - int(info.min)) % span + int(info.min) for v in source], dtype)
    return (
        np.array(source, dtype) / np.array(3, dtype)
        if "float" in dtype
        else np.array([complex(v, 1) for v in source], dtype)
    )


SCALARS = {
    "py_int": 3,
    "py_neg_int": -2,
    "py_large_int": 2**40,
    "py_float": 1.5,
    "py_bool": True,
    "py_complex": 1 + 2j,
}


@dataclass(frozen=True)
class Case:
    """One check: a program on operands ``a`` and ``b``, each described by a form
    (``array``, ``0d``, ``scalar`` — a NumPy scalar — or a Python scalar's name) and a
    dtype."""

    program: str
    a: tuple[str, str]
    b: tuple[str, str]

    def operands(self) -> tuple[Any, Any]:
        return _operand(*self.a, _A_VALUES), _operand(*self.b, _B_VALUES)

    def __str__(self) -> str:
        return f"{self.program}({'/'.join(self.a)}, {'/'.join(self.b)})"


def _operand(form: str, dtype: str, values: list[int]) -> Any:
    if form in SCALARS:
        return SCALARS[form]
    if form == "array":
        return array(dtype, values)
    if form == "large":
        return array(dtype, values, large=True)
    if form == "0d":
        return array(dtype, values)[2:3].reshape(())
    return array(dtype, values)[2]  # a NumPy scalar


_compiled: dict[str, Callable] = {}


def program(name: str) -> tuple[Callable, Callable]:
    """The NumPy function of program ``name`` and its ``nx.jit`` (one per program, shared
    by every case: Numba compiles it once per type signature)."""
    source = f"def {name}(a, b):\n    return {PROGRAMS[name]}\n"
    namespace: dict[str, Any] = {"np": np}
    filename = f"<dtype fuzz {name}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (a fixed program)
    function = namespace[name]
    if name not in _compiled:
        import linecache

        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        _compiled[name] = nx.jit(function)
    return function, _compiled[name]


@dataclass
class Outcome:
    """What one check found: ``right``, ``refused`` (as NumPy refuses, or float16),
    ``wrong_value``, ``wrong_dtype``, ``crash`` (an error that is not numbax's refusal)
    or ``refusal`` (numbax refused what NumPy computes)."""

    kind: str
    detail: str = ""


def _same_values(got: np.ndarray, want: np.ndarray) -> bool:
    if want.dtype.kind in "fc":
        eps = np.finfo(want.dtype).eps
        with np.errstate(all="ignore"):
            return bool(np.allclose(got, want, rtol=8 * eps, atol=0, equal_nan=True)) and bool(
                np.all(np.isinf(got) == np.isinf(want))
            )
    return bool(np.array_equal(got, want))


def check(case: Case) -> Outcome:
    """Run ``case`` in NumPy and under ``nx.jit`` and compare."""
    numpy_function, jitted = program(case.program)
    a, b = case.operands()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with np.errstate(all="ignore"):
                want = np.asarray(numpy_function(a, b))
        except Exception as err:  # noqa: BLE001 (NumPy refuses: numbax must refuse)
            want = err
        try:
            got = np.asarray(jitted(a, b))
        except nx.TransformError as err:
            got = err
        except Exception as err:  # noqa: BLE001 (reported as a crash)
            return Outcome(
                "crash" if not isinstance(want, Exception) else "refused",
                f"{type(err).__name__}: {err}"[:300],
            )
    if isinstance(want, Exception):
        if isinstance(got, Exception):
            return Outcome("refused")
        return Outcome("wrong_value", f"NumPy: {want!r}, numbax: {got!r} of {got.dtype}")
    float16 = want.dtype == np.float16 or "float16" in (case.a[1], case.b[1])
    if isinstance(got, Exception):
        return Outcome("refused" if float16 else "refusal", str(got).splitlines()[0][:300])
    if got.dtype != want.dtype:
        return Outcome("wrong_dtype", f"NumPy: {want.dtype} {want}, numbax: {got.dtype} {got}")
    if got.shape != want.shape or not _same_values(got, want):
        return Outcome("wrong_value", f"NumPy: {want!r}, numbax: {got!r}")
    return Outcome("right")


def full_cases(programs: Iterable[str] | None = None) -> Iterator[Case]:
    """Every program over every pair of array dtypes, arrays with every Python scalar
    and NumPy scalar on either side, and 0-d arrays."""
    for name in programs or PROGRAMS:
        for x, y in itertools.product(DTYPES, DTYPES):
            yield Case(name, ("array", x), ("array", y))
        for x in DTYPES:
            for scalar in SCALARS:
                yield Case(name, ("array", x), (scalar, ""))
                yield Case(name, (scalar, ""), ("array", x))
            for y in DTYPES:
                yield Case(name, ("array", x), ("scalar", y))
                yield Case(name, ("0d", x), ("array", y))
        for x in ("int64", "uint64"):
            yield Case(name, ("large", x), ("array", x))


_CI_PAIRS = (
    ("int8", "int8"),
    ("uint8", "uint8"),
    ("bool", "bool"),
    ("int64", "uint64"),
    ("int64", "float32"),
)
_CI_SCALARS = (
    (("array", "int8"), ("py_int", "")),
    (("array", "float32"), ("py_float", "")),
    (("array", "int8"), ("py_float", "")),
    (("py_large_int", ""), ("array", "int64")),
)


_NOT_FUSED = ("absolute",)
"""Programs numbax does not fuse (``abs`` of an array is not fused): their operations
run as Numba's array operations, whose dtype rules are Numba's (int64 * float32 is
float32); the full profile reports them."""


def ci_cases() -> list[Case]:
    """A representative subset for the test suite: the pairs where Numba's scalar rules
    depart from NumPy's, for each program, and weak Python scalars for a few."""
    cases = [
        Case(name, ("array", x), ("array", y))
        for name in PROGRAMS
        for x, y in _CI_PAIRS
        if not (name in REDUCTIONS and x != y) and name not in _NOT_FUSED
    ]
    for name in ("add", "multiply", "true_divide", "floor_divide", "greater", "power"):
        cases.extend(Case(name, a, b) for a, b in _CI_SCALARS)
    return cases + list(_CI_FOUND)


_CI_FOUND = (
    # shifts were left to Numba's operators (int64 results, shifts by the width or more)
    Case("left_shift", ("array", "int8"), ("py_int", "")),
    Case("left_shift", ("py_int", ""), ("array", "int16")),
    Case("left_shift", ("array", "int32"), ("py_large_int", "")),
    Case("left_shift", ("array", "bool"), ("array", "int64")),
    Case("left_shift", ("array", "uint64"), ("scalar", "uint32")),
    Case("right_shift", ("array", "uint8"), ("py_neg_int", "")),
    Case("right_shift", ("array", "uint64"), ("py_int", "")),
    # int64 arithmetic that wraps: LLVM folded (a + b) > a into b > 0
    Case("greater", ("large", "int64"), ("array", "int64")),
    Case("less", ("large", "int64"), ("array", "int64")),
    # Python's own operator on a Python bool: ~True is -2
    Case("invert", ("array", "bool"), ("py_bool", "")),
    Case("invert", ("array", "float32"), ("py_bool", "")),
    # a Python int was cast to the array's dtype before the loop: NumPy's loop may differ
    Case("true_divide", ("array", "int8"), ("py_large_int", "")),
    Case("negative", ("array", "uint8"), ("py_neg_int", "")),
)
"""Cases the full profile found wrong once."""


def run(cases: Iterable[Case], verbose: bool = False) -> tuple[Counter, dict[str, list[str]]]:
    """The count of each outcome over ``cases``, and the cases of each outcome other
    than ``right`` and ``refused``."""
    counts: Counter = Counter()
    failures: dict[str, list[str]] = {}
    for case in cases:
        outcome = check(case)
        counts[outcome.kind] += 1
        if outcome.kind not in ("right", "refused"):
            failures.setdefault(outcome.kind, []).append(f"{case}: {outcome.detail}")
            if verbose:
                print(f"{outcome.kind}: {case}: {outcome.detail}", flush=True)
    return counts, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ci", action="store_true", help="only the test suite's cases")
    parser.add_argument("--programs", nargs="*", help="only these programs")
    parser.add_argument("--shard", default="0/1", help="k/n: every n-th case from the k-th")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    cases = ci_cases() if args.ci else list(full_cases(args.programs))
    if args.programs and args.ci:
        cases = [c for c in cases if c.program in args.programs]
    k, n = (int(part) for part in args.shard.split("/"))
    cases = cases[k::n]
    start = time.perf_counter()
    counts, failures = run(cases, args.verbose)
    for kind, lines in failures.items():
        print(f"\n{kind} ({len(lines)}):")
        print("\n".join(f"  {line}" for line in lines))
    total = sum(counts.values())
    summary = ", ".join(
        f"{kind} {counts[kind]}"
        for kind in ("right", "refused", "wrong_value", "wrong_dtype", "crash", "refusal")
    )
    print(f"\n{total} checks in {time.perf_counter() - start:.0f} s: {summary}")
    return 1 if counts["wrong_value"] or counts["wrong_dtype"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
