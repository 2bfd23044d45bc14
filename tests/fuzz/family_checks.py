"""Checking one program of a construct family (``tests/fuzz/families.py``): values
against NumPy, derivatives against central differences, pytrees by exact structure.

A family program is a module defining ``f``, ``args()`` (fresh arguments: float or
complex arrays, floats, and lists, tuples and dicts of them) and ``ARGNUMS``; ``f``
returns a real scalar. The reference is the module itself run by NumPy, with any
``nx.<transformation>`` it calls replaced by finite differences
(``tests/fuzz/reference_transforms.py``). Derivatives are five-point central
differences in float64 along every real coordinate of every argument, a complex one's
real and imaginary parts apart; a gradient w.r.t. a complex argument is JAX's
``df/dre - 1j * df/dim``. A point is checked only where differences at two steps agree
(no branch, kink or cast flips inside the step) and one-sided differences on either side
agree (the point is not on a kink itself: ``np.max`` of tied elements, ``abs`` at 0).

Each mode ends as in ``tests/fuzz/checks.py``: ``ok``, ``wrong`` (a value, a derivative,
a dtype or a pytree structure differs), ``crash`` (an exception other than
``numbax.TransformError``/``CompileError``), ``declined`` (one of those: a documented
refusal), ``skipped`` (the mode does not apply).
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import re
import sys
import tempfile
import traceback
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import numbax as nx
from tests.fuzz import reference_transforms
from tests.fuzz.checks import Outcome, Report, time_limit
from tests.fuzz.families import FamilyProgram
from tests.fuzz.reference_transforms import five_point

#: Modes by group: the interpreted ones, and the compiled ones (a compile per program).
FAMILY_MODE_GROUPS: dict[str, tuple[str, ...]] = {
    "eager": ("value", "grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian"),
    "jit": ("jit", "jit_grad"),
}
FAMILY_MODES: tuple[str, ...] = tuple(m for g in FAMILY_MODE_GROUPS.values() for m in g)

STEP, STEP_CHECK = 1e-3, 5e-4
_COTANGENT = 1.3
_REFERENCE_IMPORT = "import tests.fuzz.reference_transforms as nx"


def family_modes_of(groups: str) -> tuple[str, ...]:
    """``"eager,jit"`` (or single mode names) as family modes; other groups (``vmap``)
    do not apply to families and are left out."""
    out: list[str] = []
    for name in (n.strip() for n in groups.split(",") if n.strip()):
        if name in FAMILY_MODE_GROUPS:
            out += FAMILY_MODE_GROUPS[name]
        elif name in FAMILY_MODES:
            out.append(name)
    return tuple(dict.fromkeys(out))


# -- pytrees (written here, not borrowed from numbax, so the reference is independent) --
def leaves(tree: Any) -> list[Any]:
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in leaves(item)]
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in leaves(tree[key])]
    return [tree]


def rebuild(tree: Any, values: Iterator[Any]) -> Any:
    """``tree`` with its leaves replaced, in order, by ``values``."""
    if isinstance(tree, (list, tuple)):
        return type(tree)(rebuild(item, values) for item in tree)
    if isinstance(tree, dict):
        return {key: rebuild(tree[key], values) for key in tree}
    return next(values)


def tree_mismatch(label: str, got: Any, want: Any, tolerance: float) -> str:
    """Empty when ``got`` has ``want``'s exact structure (container types, dict keys),
    leaf shapes, real/complex kinds and values within ``tolerance``; else what differs."""
    if isinstance(want, (list, tuple, dict)):
        if type(got) is not type(want):
            return f"{label}: structure: {type(got).__name__}, expected {type(want).__name__}"
        if isinstance(want, dict):
            if set(got) != set(want):
                return f"{label}: structure: keys {sorted(got)}, expected {sorted(want)}"
            pairs = [(f"{label}[{k!r}]", got[k], want[k]) for k in want]
        else:
            if len(got) != len(want):
                return f"{label}: structure: {len(got)} items, expected {len(want)}"
            pairs = [
                (f"{label}[{i}]", g, w) for i, (g, w) in enumerate(zip(got, want, strict=True))
            ]
        return next((m for m in (tree_mismatch(*p, tolerance) for p in pairs) if m), "")
    if isinstance(got, (list, tuple, dict)):
        return f"{label}: structure: {type(got).__name__}, expected an array"
    got_array, want_array = np.asarray(got), np.asarray(want)
    if got_array.shape != want_array.shape:
        return f"{label}: shape {got_array.shape}, expected {want_array.shape}"
    if (got_array.dtype.kind == "c") != (want_array.dtype.kind == "c"):
        return f"{label}: dtype {got_array.dtype}, expected {want_array.dtype}"
    if not np.all(np.isfinite(got_array)):
        return f"{label}: not finite: {got_array!r}"
    error = float(np.max(np.abs(got_array - want_array), initial=0.0))
    if error > tolerance:
        return f"{label}: max error {error:.3g} (got {got_array!r}, expected {want_array!r})"
    return ""


# -- loading ---------------------------------------------------------------------------
_MODULE_DIR: Path | None = None
_counter = itertools.count()


def load_source(source: str, tag: str) -> types.ModuleType:
    """Import ``source`` from a real file (numbax reads source through ``inspect``)."""
    global _MODULE_DIR
    if _MODULE_DIR is None:
        _MODULE_DIR = Path(tempfile.mkdtemp(prefix="numbax-fuzz-families-"))
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    name = f"fuzz_{tag}_{digest}_{next(_counter)}"
    path = _MODULE_DIR / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# -- the reference -----------------------------------------------------------------------
@dataclass
class _Slot:
    """One real coordinate of the arguments: argument, leaf, element, direction."""

    arg: int
    leaf: int
    index: int
    direction: complex


def _slots(args: tuple) -> list[_Slot]:
    out = []
    for a, arg in enumerate(args):
        for k, leaf in enumerate(leaves(arg)):
            size = np.size(leaf)
            complex_leaf = np.iscomplexobj(leaf)
            for i in range(size):
                out.append(_Slot(a, k, i, 1.0))
                if complex_leaf:
                    out.append(_Slot(a, k, i, 1j))
    return out


def _moved(args: tuple, slot: _Slot, t: float) -> tuple:
    """A fresh copy of ``args`` with one coordinate moved by ``t``."""
    out = []
    for a, arg in enumerate(args):
        values = []
        for k, leaf in enumerate(leaves(arg)):
            if isinstance(leaf, float):
                values.append(leaf + t if (a, k) == (slot.arg, slot.leaf) else leaf)
                continue
            copy = np.array(leaf, copy=True)
            if (a, k) == (slot.arg, slot.leaf):
                copy.reshape(-1)[slot.index] += t * slot.direction
            values.append(copy)
        out.append(rebuild(arg, iter(values)))
    return tuple(out)


def _scalar(value: Any) -> float:
    array = np.asarray(value)
    if array.shape != () or array.dtype.kind not in "fiub":
        raise ValueError(f"f returned {array.dtype} of shape {array.shape}, not a real scalar")
    return float(array)


@dataclass
class FamilyReference:
    value: Any
    slopes: list[float]  # d f / d slot, per slot
    slots: list[_Slot]
    tolerance: float


def family_reference(
    f: Callable, make_args: Callable[[], tuple]
) -> tuple[FamilyReference | None, str]:
    """The value and the slopes along every coordinate, or why they are not trusted."""
    try:
        with np.errstate(all="raise", under="ignore"):
            value = f(*make_args())
        _scalar(value)
    except (FloatingPointError, ZeroDivisionError, OverflowError):
        return None, "floating-point exception"
    except Exception as error:
        return None, f"invalid: {type(error).__name__}: {error}"
    args = make_args()
    slots = _slots(args)
    try:
        with np.errstate(all="ignore"):
            wide = [five_point(lambda t, s=s: _scalar(f(*_moved(args, s, t))), STEP) for s in slots]
            narrow = [
                five_point(lambda t, s=s: _scalar(f(*_moved(args, s, t))), STEP_CHECK)
                for s in slots
            ]
            sides = [
                _one_sided(lambda t, s=s: _scalar(f(*_moved(args, s, t))), STEP_CHECK)
                for s in slots
            ]
    except Exception as error:
        return None, f"invalid: {type(error).__name__}: {error}"
    wide_array, narrow_array = np.array(wide, dtype=float), np.array(narrow, dtype=float)
    if not (np.isfinite(_scalar(value)) and np.all(np.isfinite(wide_array))):
        return None, "not finite"
    if not np.all(np.isfinite(narrow_array)):
        return None, "not finite"
    scale = 1.0 + abs(_scalar(value)) + float(np.max(np.abs(wide_array), initial=0.0))
    spread = float(np.max(np.abs(wide_array - narrow_array), initial=0.0))
    if spread > 1e-5 * scale:
        return None, "not smooth"
    if any(abs(right - left) > 1e-3 * scale for left, right in sides):
        return None, "not smooth"
    return FamilyReference(value, list(wide), slots, 1e-6 * scale + 10 * spread), ""


def _one_sided(fun: Callable[[float], float], h: float) -> tuple[float, float]:
    """The slopes of ``fun`` at 0 from the left and from the right (second-order
    one-sided stencils): they differ where 0 is a kink."""
    at = {k: fun(k * h) for k in (-2, -1, 0, 1, 2)}
    left = (3 * at[0] - 4 * at[-1] + at[-2]) / (2 * h)
    right = (-3 * at[0] + 4 * at[1] - at[2]) / (2 * h)
    return left, right


def expected_gradient(ref: FamilyReference, args: tuple, argnum: int, factor: float = 1.0) -> Any:
    """The gradient w.r.t. ``args[argnum]`` as a pytree of its structure (JAX's
    convention for complex leaves: ``df/dre - 1j * df/dim``)."""
    arg = args[argnum]
    values = []
    for k, leaf in enumerate(leaves(arg)):
        grad = np.zeros(np.shape(leaf), dtype=complex if np.iscomplexobj(leaf) else float)
        flat = grad.reshape(-1)
        for slot, slope in zip(ref.slots, ref.slopes, strict=True):
            if (slot.arg, slot.leaf) == (argnum, k):
                flat[slot.index] += factor * slope * np.conj(slot.direction)
        values.append(float(grad) if isinstance(leaf, float) else grad)
    return rebuild(arg, iter(values))


def _tangents(args: tuple) -> tuple:
    """A fixed direction for every argument, of its structure and dtypes."""
    rng = np.random.default_rng(7)
    out = []
    for arg in args:
        values = []
        for leaf in leaves(arg):
            t = rng.uniform(-1, 1, np.shape(leaf))
            if np.iscomplexobj(leaf):
                t = t + 1j * rng.uniform(-1, 1, np.shape(leaf))
            values.append(float(t) if isinstance(leaf, float) else t)
        out.append(rebuild(arg, iter(values)))
    return tuple(out)


def _directional(ref: FamilyReference, tangents: tuple) -> float:
    total = 0.0
    for slot, slope in zip(ref.slots, ref.slopes, strict=True):
        leaf = np.asarray(leaves(tangents[slot.arg])[slot.leaf]).reshape(-1)[slot.index]
        component = leaf.real if slot.direction == 1.0 else leaf.imag
        total += slope * float(component)
    return total


def _value_tolerance(program: FamilyProgram) -> float:
    """The relative error a value may have: the reference's own where it takes a second
    derivative by differences of differences (rounding of order ``1e-16 / STEP ** 2``)."""
    return 1e-7 if "nested:second_order_inside" in program.features else 1e-9


def _value_mismatch(label: str, got: Any, want: Any, relative: float = 1e-9) -> str:
    got_array, want_array = np.asarray(got), np.asarray(want)
    if got_array.shape != want_array.shape:
        return f"{label}: shape {got_array.shape}, expected {want_array.shape}"
    if got_array.dtype != want_array.dtype and want_array.dtype.kind in "fc":
        return f"{label}: dtype {got_array.dtype}, expected {want_array.dtype}"
    tolerance = relative * (1.0 + float(np.abs(want_array)))
    error = float(np.abs(got_array.astype(complex) - want_array))
    if not np.isfinite(error) or error > tolerance:
        return f"{label}: error {error:.3g} (got {got_array!r}, expected {want_array!r})"
    return ""


# -- modes ---------------------------------------------------------------------------------
def _gradient_expectation(ref: FamilyReference, args: tuple, argnums: Any) -> Any:
    if isinstance(argnums, int):
        return expected_gradient(ref, args, argnums)
    return tuple(expected_gradient(ref, args, a) for a in argnums)


def _run(
    mode: str, program: FamilyProgram, module: Any, reference_module: Any, ref: FamilyReference
) -> tuple[str, str]:
    f, args, argnums = module.f, module.args(), module.ARGNUMS
    tol, vtol = ref.tolerance, _value_tolerance(program)
    complex_args = any(np.iscomplexobj(leaf) for leaf in leaves(args))
    if mode == "value":
        if "nx." not in program.source:
            return "skipped", "f calls no transformation: its value is NumPy's"
        return _verdict(_value_mismatch("value", f(*args), ref.value, vtol))
    if mode == "jit":
        return _verdict(_value_mismatch("value", nx.jit(f)(*args), ref.value, vtol))
    want_grad = _gradient_expectation(ref, args, argnums)
    if mode in ("grad", "jit_grad"):
        gradient = nx.grad(f, argnums=argnums)
        if mode == "jit_grad":
            gradient = nx.jit(gradient)
        return _verdict(tree_mismatch("grad", gradient(*args), want_grad, tol))
    if mode == "value_and_grad":
        result = nx.value_and_grad(f, argnums=argnums)(*args)
        if type(result) is not tuple or len(result) != 2:
            return "wrong", f"value_and_grad: structure {type(result).__name__}"
        value, grad = result
        return _verdict(
            _value_mismatch("value", value, ref.value, vtol),
            tree_mismatch("grad", grad, want_grad, tol),
        )
    if mode in ("jacfwd", "jacrev"):
        if complex_args:
            return "skipped", "complex input (JAX asks for holomorphic=True)"
        jac = getattr(nx, mode)(f, argnums=argnums)(*args)
        return _verdict(tree_mismatch(mode, jac, want_grad, tol))
    if mode == "jvp":
        tangents = _tangents(args)
        out, tangent = nx.jvp(f, args, tangents)
        return _verdict(
            _value_mismatch("primal", out, ref.value, vtol),
            tree_mismatch(
                "tangent", np.asarray(tangent), np.asarray(_directional(ref, tangents)), tol
            ),
        )
    if mode == "vjp":
        out, pullback = nx.vjp(f, *args)
        cotangents = pullback(_COTANGENT)
        want = tuple(expected_gradient(ref, args, a, _COTANGENT) for a in range(len(args)))
        return _verdict(
            _value_mismatch("primal", out, ref.value, vtol),
            tree_mismatch("cotangents", cotangents, want, _COTANGENT * tol),
        )
    if mode == "hessian":
        return _check_hessian(program, module, args, argnums)
    raise ValueError(mode)


def _check_hessian(
    program: FamilyProgram, module: Any, args: tuple, argnums: Any
) -> tuple[str, str]:
    if program.family != "nested" or argnums != 0 or not isinstance(args[0], np.ndarray):
        return "skipped", "hessian is checked on the nested family"
    # the reference's own first derivatives inside f are differences already: its Hessian
    # by differences would be a third derivative by differences, too noisy. The reference
    # is one difference of numbax's own gradient instead, which the grad mode checks.
    gradient = nx.grad(module.f)
    ref_hessian = np.asarray(reference_transforms.jacfwd(gradient)(*args), dtype=np.float64)
    if not np.all(np.isfinite(ref_hessian)):
        return "skipped", "the reference Hessian is not finite"
    got = nx.hessian(module.f)(*args)
    tol = 1e-5 * (1.0 + float(np.max(np.abs(ref_hessian))))
    verdict = _verdict(tree_mismatch("hessian", got, ref_hessian, tol))
    if verdict[0] == "wrong":
        # The differences' own error grows with the function's higher derivatives (a ** 9
        # inside a sine): a half step estimates it (the stencil's error shrinks 16-fold),
        # and the check allows it on top of the tolerance.
        finer = reference_transforms.jacfwd(gradient, step=reference_transforms.STEP / 2)
        finer_hessian = np.asarray(finer(*args), dtype=np.float64)
        error = float(np.max(np.abs(finer_hessian - ref_hessian)))
        verdict = _verdict(tree_mismatch("hessian", got, finer_hessian, tol + error))
    return verdict


def _verdict(*messages: str) -> tuple[str, str]:
    message = next((m for m in messages if m), "")
    return ("wrong", message) if message else ("ok", "")


def check_family_program(
    program: FamilyProgram, modes: tuple[str, ...] = FAMILY_MODES, timeout: float | None = None
) -> Report:
    """Run each of ``modes`` on ``program`` and classify the outcomes."""
    report = Report(program)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module = load_source(program.source, program.family)
            reference_module = load_source(
                program.source.replace("import numbax as nx", _REFERENCE_IMPORT), "ref"
            )
        except Exception as error:
            report.rejected = f"invalid: does not import: {type(error).__name__}: {error}"
            return report
        ref, why = family_reference(reference_module.f, reference_module.args)
        if ref is None:
            report.rejected = why
            return report
        for mode in modes:
            report.outcomes.append(_outcome(mode, program, module, reference_module, ref, timeout))
    return report


def _outcome(
    mode: str,
    program: FamilyProgram,
    module: Any,
    reference_module: Any,
    ref: FamilyReference,
    timeout: float | None,
) -> Outcome:
    try:
        with time_limit(timeout), np.errstate(all="ignore"):
            status, message = _run(mode, program, module, reference_module, ref)
    except nx.TransformError as error:
        return Outcome(mode, "declined", f"{type(error).__name__}: {error}")
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        place = f"{Path(where.filename).name}:{where.name}"
        text = _GOT_VALUE.sub("got <value>", str(error).splitlines()[0] if str(error) else "")
        return Outcome(mode, "crash", f"{type(error).__name__}: {text} [in {place}]")
    return Outcome(mode, status, message)


#: The value an error message quotes (``Expected an instance of list, got [array(...``):
#: blanked, so one bug met with different values is one class.
_GOT_VALUE = re.compile(r"got [\[(].*")
