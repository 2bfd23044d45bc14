"""Checking one generated program under every numbax transformation, and classifying
what happened.

For a program ``f(x, s)`` the reference is plain Python: central differences (float64)
for derivatives, a Python loop over the examples for ``vmap``, ``f`` itself for ``jit``.
A program is checked only where the reference is trustworthy: ``f`` must run and be
finite at the point, central differences at two step sizes must agree, and forward and
backward differences too (a branch switching, a kink of ``abs``/``maximum`` or a trip
count changing inside the step breaks one of these, and there is no derivative to
check).

Each mode ends in one outcome:

* ``ok``: the result matches the reference;
* ``wrong``: it does not (the worst kind: a silent wrong number);
* ``crash``: an exception other than ``numbax.TransformError``;
* ``declined``: ``numbax.TransformError`` (numbax refused clearly: acceptable, counted);
* ``skipped``: the mode does not apply (``grad`` of an array output) or the reference
  could not be computed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import itertools
import re
import signal
import sys
import tempfile
import traceback
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import numbax as nx
from tests.fuzz.generator import Program

#: Modes by group, so a runner can run the cheap interpreted ones apart from ``jit``
#: (each ``jit`` mode compiles a fresh function: 0.5-2 s each).
MODE_GROUPS: dict[str, tuple[str, ...]] = {
    "eager": ("grad", "jacfwd", "jacrev", "jvp", "vjp"),
    "vmap": ("vmap",),
    "jit": ("jit", "jit_grad", "jit_grad_grad", "jit_vmap"),
}
ALL_MODES: tuple[str, ...] = tuple(m for group in MODE_GROUPS.values() for m in group)
OUTCOMES: tuple[str, ...] = ("ok", "wrong", "crash", "declined", "skipped")
FAILURES: frozenset[str] = frozenset({"wrong", "crash"})

#: Central-difference steps: derivatives are compared with the first; the second only
#: tells whether differences are stable at the point.
STEP, STEP_CHECK = 1e-5, 1e-6
_TANGENT_X = np.array([0.3, -0.8, 0.5])
_TANGENT_S = 0.7
_COTANGENT_VECTOR = np.array([0.6, -1.1, 0.9])
_COTANGENT_SCALAR = 1.3
_SLOPE_WEIGHTS = np.array([0.4, -0.9, 1.3])
"""``jit_grad_grad`` differentiates the sum of ``f``'s gradient in ``x`` times these."""


def modes_of(groups: str | list[str]) -> tuple[str, ...]:
    """``"eager,jit"`` (or single mode names) as the modes they stand for, in order."""
    names = groups.split(",") if isinstance(groups, str) else groups
    out: list[str] = []
    for name in (n.strip() for n in names if n.strip()):
        if name in MODE_GROUPS:
            out += MODE_GROUPS[name]
        elif name in ALL_MODES:
            out.append(name)
        else:
            raise ValueError(f"unknown mode {name!r}: use {sorted(MODE_GROUPS)} or {ALL_MODES}")
    return tuple(dict.fromkeys(out))


@dataclass
class Outcome:
    """What one mode did on one program."""

    mode: str
    status: str
    message: str = ""

    @property
    def signature(self) -> str:
        """The failure's class: the mode, the outcome and the message without names,
        numbers and paths (so one bug found through many programs is one class)."""
        message = self.message
        if self.status == "wrong":  # which output and how, not the numbers
            message = message.split(" (got")[0].split(": array")[0]
        return f"{self.mode} | {self.status} | {normalize_message(message)}"


@dataclass
class Report:
    """Every mode's outcome on one program (``rejected`` says why none was checked)."""

    program: Program
    outcomes: list[Outcome] = field(default_factory=list)
    rejected: str = ""

    @property
    def valid(self) -> bool:
        return not self.rejected

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in FAILURES]

    def declined(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "declined"]

    def describe(self) -> str:
        lines = [repr(self.program)]
        for o in self.outcomes:
            if o.status != "ok":
                lines.append(f"{o.mode}: {o.status}: {o.message}")
        return "\n".join(lines)


_GENERATED_NAME = re.compile(
    r"(?<![A-Za-z0-9])(?:v|a|acc|y|i|u|b|w|z|zo|k|c|p|q|t|lst|r|j|h|g)\d+(?![0-9])"
)


def normalize_message(message: str) -> str:
    """A message's first lines with generated names, numbers and file paths blanked."""
    text = " ".join(message.strip().splitlines()[:2])
    text = re.sub(r"(/[^\s,:'\"]+)+\.py", "<file>", text)
    text = re.sub(r"fuzz_[0-9a-f]+_\d+", "<module>", text)
    text = re.sub(r"numbax_generated_\w+\.py", "<generated>", text)
    text = _GENERATED_NAME.sub("<v>", text)
    text = re.sub(r"[0-9a-f]{8,}", "H", text)
    text = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", text)
    return text[:240]


# -- loading -------------------------------------------------------------------------
_MODULE_DIR: Path | None = None
_counter = itertools.count()


def load(program: Program) -> types.ModuleType:
    """Import the program from a real file: numbax reads source through ``inspect``."""
    global _MODULE_DIR
    if _MODULE_DIR is None:
        _MODULE_DIR = Path(tempfile.mkdtemp(prefix="numbax-fuzz-modules-"))
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:12]
    name = f"fuzz_{digest}_{next(_counter)}"
    path = _MODULE_DIR / f"{name}.py"
    path.write_text(program.source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class FuzzTimeout(Exception):
    """One mode ran longer than the runner allows (a hang is a crash)."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`FuzzTimeout` after ``seconds`` (main thread on Unix; else no limit)."""
    usable = seconds and hasattr(signal, "setitimer")
    if usable:
        try:
            previous = signal.signal(signal.SIGALRM, _on_alarm)
        except ValueError:  # not the main thread
            usable = False
    if not usable:
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def _on_alarm(signum: int, frame: Any) -> None:
    raise FuzzTimeout("timed out")


# -- references ------------------------------------------------------------------------
def _value(f: Callable, x: np.ndarray, s: float) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(f(x.copy(), float(s)), dtype=np.float64)


def difference_jacobians(
    f: Callable, x: np.ndarray, s: float, eps: float
) -> tuple[list[np.ndarray], float]:
    """[d f / d x (shape out + (3,)), d f / d s (shape out)] by central differences, and
    the largest gap between the forward and backward differences: a kink at the point
    (``abs`` at 0, ``maximum`` at a tie) opens it by the jump in slope, where central
    differences alone would average the two slopes and look smooth."""
    center = _value(f, x, s)
    columns, gap = [], 0.0

    def column(plus: np.ndarray, minus: np.ndarray) -> np.ndarray:
        nonlocal gap
        gap = max(gap, float(np.max(np.abs((plus - center) - (center - minus)))) / eps)
        return (plus - minus) / (2 * eps)

    for k in range(x.size):
        step = np.zeros_like(x)
        step[k] = eps
        columns.append(column(_value(f, x + step, s), _value(f, x - step, s)))
    jac_s = column(_value(f, x, s + eps), _value(f, x, s - eps))
    return [np.stack(columns, axis=-1), jac_s], gap


@dataclass
class _Reference:
    value: np.ndarray
    jac: list[np.ndarray]
    tolerance: float


def reference(program: Program, f: Callable) -> tuple[_Reference | None, str]:
    """The value and difference Jacobians at the point, or why they are not trusted."""
    x, s = program.args()
    try:
        with np.errstate(all="raise", under="ignore"):
            f(x.copy(), float(s))
    except (FloatingPointError, ZeroDivisionError, OverflowError):
        # an inf or nan inside (0/0, an overflow) that the output hides: derivatives
        # through it are nan in numbax as in JAX, while differences see a flat function
        return None, "floating-point exception"
    except Exception as error:
        return None, f"invalid: {type(error).__name__}: {error}"
    try:
        value = _value(f, x, s)
        wide, _ = difference_jacobians(f, x, s, STEP)
        narrow, gap = difference_jacobians(f, x, s, STEP_CHECK)
    except Exception as error:  # a generated program that Python itself rejects
        return None, f"invalid: {type(error).__name__}: {error}"
    arrays = [value, *wide, *narrow]
    if not all(np.all(np.isfinite(a)) for a in arrays):
        return None, "not finite"
    if program.scalar_output != (value.shape == ()):
        return None, f"invalid: output shape {value.shape}"
    scale = 1.0 + float(np.max(np.abs(value))) + max(float(np.max(np.abs(j))) for j in wide)
    spread = max(float(np.max(np.abs(a - b))) for a, b in zip(wide, narrow, strict=True))
    if spread > 1e-6 * scale or not np.isfinite(gap) or gap > 1e-4 * scale:
        return None, "not smooth"
    return _Reference(value, wide, 1e-5 * scale + 10 * spread), ""


def _mismatch(label: str, got: Any, want: np.ndarray, tolerance: float) -> str:
    """Empty when ``got`` matches ``want``, else what differs."""
    got_array = np.asarray(got, dtype=np.float64)
    if got_array.shape != want.shape:
        return f"{label}: shape {got_array.shape}, expected {want.shape}"
    if not np.all(np.isfinite(got_array)):
        return f"{label}: not finite: {got_array!r}"
    error = float(np.max(np.abs(got_array - want), initial=0.0))
    if error > tolerance:
        return f"{label}: max error {error:.3g} (got {got_array!r}, expected {want!r})"
    return ""


def _first(*messages: str) -> str:
    return next((m for m in messages if m), "")


# -- modes -----------------------------------------------------------------------------
def _check_derivative_mode(
    mode: str, program: Program, f: Callable, ref: _Reference
) -> tuple[str, str]:
    x, s = program.args()
    tol = ref.tolerance
    jx, js = ref.jac
    if mode in ("grad", "jit_grad"):
        if not program.scalar_output:
            return "skipped", "array output"
        gradient = nx.grad(f, argnums=(0, 1))
        if mode == "jit_grad":
            gradient = nx.jit(gradient)
        gx, gs = gradient(x, s)
        return _status(_mismatch("d/dx", gx, jx, tol), _mismatch("d/ds", gs, js, tol))
    if mode == "jit_grad_grad":
        return _check_second_order(program, f)
    if mode in ("jacfwd", "jacrev"):
        jx_got, js_got = getattr(nx, mode)(f, argnums=(0, 1))(x, s)
        return _status(_mismatch("d/dx", jx_got, jx, tol), _mismatch("d/ds", js_got, js, tol))
    if mode == "jvp":
        out, tangent = nx.jvp(f, (x, s), (_TANGENT_X.copy(), _TANGENT_S))
        want = jx @ _TANGENT_X + js * _TANGENT_S
        return _status(
            _mismatch("primal", out, ref.value, 1e-9 * (1 + np.max(np.abs(ref.value)))),
            _mismatch("tangent", tangent, want, tol),
        )
    if mode == "vjp":
        out, pullback = nx.vjp(f, x, s)
        ct = _COTANGENT_SCALAR if program.scalar_output else _COTANGENT_VECTOR.copy()
        cx, cs = pullback(ct)
        want_x = np.tensordot(ct, jx, axes=np.ndim(ct))
        want_s = np.sum(np.asarray(ct) * js)
        return _status(
            _mismatch("primal", out, ref.value, 1e-9 * (1 + np.max(np.abs(ref.value)))),
            _mismatch("cotangent x", cx, want_x, tol),
            _mismatch("cotangent s", cs, want_s, tol),
        )
    raise ValueError(mode)


def _check_second_order(program: Program, f: Callable) -> tuple[str, str]:
    """``grad`` of a weighted sum of ``grad(f)`` (the VJP of a VJP) under ``jit``, against
    the same derivative interpreted: how the compiled code fuses an adjoint of an adjoint
    (its cotangents' shapes, ``numba_backend/passes/kept_shapes.py``) must not change a number."""
    if not program.scalar_output:
        return "skipped", "array output"
    x, s = program.args()
    slope = nx.grad(f)

    def weighted_slope(x, s):
        return np.sum(slope(x, s) * _SLOPE_WEIGHTS)

    second = nx.grad(weighted_slope, argnums=(0, 1))
    want_x, want_s = (np.asarray(w, dtype=np.float64) for w in second(x, s))
    if not (np.all(np.isfinite(want_x)) and np.isfinite(want_s)):
        return "skipped", "the interpreted second derivative is not finite"
    got_x, got_s = nx.jit(second)(x, s)
    tol = 1e-7 * (1.0 + max(float(np.max(np.abs(want_x))), float(np.abs(want_s))))
    return _status(_mismatch("d2/dx", got_x, want_x, tol), _mismatch("d2/ds", got_s, want_s, tol))


def _status(*messages: str) -> tuple[str, str]:
    message = _first(*messages)
    return ("wrong", message) if message else ("ok", "")


def _check_batch_mode(mode: str, program: Program, f: Callable) -> tuple[str, str]:
    xs, ss = program.batch()
    size = 3
    try:
        rows = []
        for b in range(size):
            xb = np.array(xs[b] if program.vmap_in_axes[0] == 0 else xs, dtype=np.float64)
            sb = float(ss[b] if program.vmap_in_axes[1] == 0 else ss)
            rows.append(_value(f, xb, sb))
        want = np.stack(rows)
    except Exception as error:
        return "skipped", f"the loop reference raised {type(error).__name__}"
    if not np.all(np.isfinite(want)):
        return "skipped", "the loop reference is not finite"
    batched = nx.vmap(f, in_axes=program.vmap_in_axes)
    if mode == "jit_vmap":
        batched = nx.jit(batched)
    got = batched(xs.copy() if isinstance(xs, np.ndarray) else xs, ss)
    tol = 1e-9 * (1.0 + float(np.max(np.abs(want))))
    return _status(_mismatch("batch", got, want, tol))


def _check_jit(program: Program, f: Callable, ref: _Reference) -> tuple[str, str]:
    x, s = program.args()
    got = nx.jit(f)(x, s)
    return _status(_mismatch("value", got, ref.value, 1e-9 * (1 + np.max(np.abs(ref.value)))))


def check_program(
    program: Program, modes: tuple[str, ...] = ALL_MODES, timeout: float | None = None
) -> Report:
    """Run each of ``modes`` on ``program`` and classify the outcomes."""
    report = Report(program)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            module = load(program)
        except Exception as error:
            report.rejected = f"invalid: does not import: {type(error).__name__}: {error}"
            return report
        f = module.f
        ref, why = reference(program, f)
        if ref is None:
            report.rejected = why
            return report
        for mode in modes:
            report.outcomes.append(_run_mode(mode, program, f, ref, timeout))
    return report


def _run_mode(
    mode: str, program: Program, f: Callable, ref: _Reference, timeout: float | None
) -> Outcome:
    try:
        with time_limit(timeout), np.errstate(all="ignore"):
            if mode in ("vmap", "jit_vmap"):
                status, message = _check_batch_mode(mode, program, f)
            elif mode == "jit":
                status, message = _check_jit(program, f, ref)
            else:
                status, message = _check_derivative_mode(mode, program, f, ref)
    except nx.TransformError as error:
        return Outcome(mode, "declined", f"{type(error).__name__}: {error}")
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        place = f"{Path(where.filename).name}:{where.name}"
        return Outcome(mode, "crash", f"{type(error).__name__}: {error} [in {place}]")
    return Outcome(mode, status, message)
