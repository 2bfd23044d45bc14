"""NumPy's ufuncs on one GPU thread's numbers.

numba-cuda compiles only some ufuncs in device code (the trigonometric ones, ``log``,
comparisons, ``maximum``...), not ``np.sqrt``, ``np.abs``, ``np.square`` or the
arithmetic ufuncs: such a call runs on the simulator and fails to compile on a GPU. In
a device function each is written as what it means on numbers: an operator, the
builtin ``abs``, or ``nxrt.device_<name>`` (``math.<name>`` or libdevice's function on a
GPU, NumPy's ufunc on the simulator, which runs the generated Python).
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from numbax.numba_backend.cuda import random as random_device
from numbax.numba_backend.math import elementary
from numbax.numba_backend.redirects import lowering_helper
from numbax.transform.ad.common import RUNTIME, runtime_call

_BINARY = {
    np.add: gast.Add,
    np.subtract: gast.Sub,
    np.multiply: gast.Mult,
    np.true_divide: gast.Div,
    np.floor_divide: gast.FloorDiv,
    np.remainder: gast.Mod,
    np.power: gast.Pow,
}
_UNARY = {np.negative: gast.USub, np.positive: gast.UAdd}


@lowering_helper
def device_sqrt(x: Any) -> Any:
    """``np.sqrt`` of a number in device code (``math.sqrt`` on a GPU)."""
    return np.sqrt(x)


@lowering_helper
def device_isfinite(x: Any) -> Any:
    """``np.isfinite`` of a number in device code (``math.isfinite`` on a GPU)."""
    return np.isfinite(x)


@lowering_helper
def device_isinf(x: Any) -> Any:
    """``np.isinf`` of a number in device code (``math.isinf`` on a GPU)."""
    return np.isinf(x)


@lowering_helper
def device_copysign(x1: Any, x2: Any) -> Any:
    """``np.copysign`` of numbers in device code (``math.copysign`` on a GPU)."""
    return np.copysign(x1, x2)


MATH = {
    np.sqrt: device_sqrt,
    np.isfinite: device_isfinite,
    np.isinf: device_isinf,
    np.copysign: device_copysign,
}
"""The ufuncs written as a helper whose numba-cuda overload is ``math``'s function of
the same name (``cuda._register_device_overloads``)."""


@lowering_helper
def device_floor(x: Any) -> Any:
    """``np.floor`` of a number in device code (libdevice's ``floor``/``floorf``)."""
    return np.floor(x)


@lowering_helper
def device_ceil(x: Any) -> Any:
    """``np.ceil`` of a number in device code (libdevice's ``ceil``/``ceilf``)."""
    return np.ceil(x)


@lowering_helper
def device_trunc(x: Any) -> Any:
    """``np.trunc`` of a number in device code (libdevice's ``trunc``/``truncf``)."""
    return np.trunc(x)


@lowering_helper
def device_rint(x: Any) -> Any:
    """``np.rint`` of a number in device code (libdevice's ``rint``/``rintf``: to the
    nearest integer, halves to even, as NumPy)."""
    return np.rint(x)


@lowering_helper
def device_sign(x: Any) -> Any:
    """``np.sign`` of a number in device code: -1, 0 or 1 in its dtype, NaN kept."""
    return np.sign(x)


LIBDEVICE = {
    np.floor: device_floor,
    np.ceil: device_ceil,
    np.trunc: device_trunc,
    np.rint: device_rint,
}
"""The ufuncs written as a helper whose numba-cuda overload is libdevice's function of
the same name (float32: its ``f`` variant); NumPy gives a float of an integer too."""

ON_NUMBERS = {**MATH, **LIBDEVICE, np.sign: device_sign}
"""Every ufunc written as a ``device_<name>`` helper."""

COMPILED_BY_NUMBA_CUDA = frozenset(
    "arccos arccosh arcsin arcsinh arctan arctan2 arctanh bitwise_and bitwise_or "
    "bitwise_xor conjugate cos cosh deg2rad degrees divide equal fmax fmin greater "
    "greater_equal hypot invert isnan left_shift less less_equal log log10 log2 "
    "logical_and logical_not logical_or logical_xor maximum minimum not_equal rad2deg "
    "radians right_shift sin sinh tan tanh".split()
)
"""The ufuncs numba-cuda (0.30) compiles in device code, by name (its ``ufunc_db``)."""


class NotOnDevice(Exception):
    """What device code cannot call (a ufunc that neither numba-cuda compiles nor this
    module writes on numbers, a draw of numbax.random with no device version), at
    ``line`` of the function being compiled."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def _ufunc_refused(ufunc: np.ufunc, line: int | None) -> NotOnDevice:
    return NotOnDevice(
        f"np.{ufunc.__name__} is not compiled by numba-cuda in device code. Write it "
        "with math's functions or arithmetic (math.floor, x - y...), or run the "
        "function on the CPU (backend='cpu').",
        line,
    )


def scalar_ufuncs(fn: gast.FunctionDef, resolve: Any) -> gast.FunctionDef:
    """Each call in lowered ``fn`` of a ufunc numba-cuda does not compile, written as
    what it means on numbers (see the module's docstring); :class:`NotOnDevice` for one
    that cannot be, so the simulator does not run what a GPU would not compile.
    ``resolve(node)``: the object a call's function names."""
    return _OnNumbers(resolve).visit(fn)


class _OnNumbers(gast.NodeTransformer):
    def __init__(self, resolve: Any) -> None:
        self.resolve = resolve

    def visit_Call(self, call: gast.Call) -> gast.expr:  # noqa: N802 (the visitor's name)
        self.generic_visit(call)  # the arguments first
        ufunc, args = self._ufunc(call.func), call.args
        if ufunc is None:
            self._refuse_draws(call)
            return call
        if call.keywords:  # dtype=, out=...: as written, where numba-cuda compiles it
            return self._compiled(ufunc, call)
        if ufunc in _BINARY and len(args) == 2:
            return gast.copy_location(gast.BinOp(args[0], _BINARY[ufunc](), args[1]), call)
        if ufunc in _UNARY and len(args) == 1:
            return gast.copy_location(gast.UnaryOp(_UNARY[ufunc](), args[0]), call)
        if ufunc is np.absolute and len(args) == 1:
            builtin = gast.Name("abs", gast.Load(), None, None)
            return gast.copy_location(gast.Call(builtin, args, []), call)
        if ufunc is np.square and len(args) == 1:
            square = gast.BinOp(args[0], gast.Pow(), gast.Constant(2, None))
            if isinstance(args[0], gast.Name):
                square = gast.BinOp(args[0], gast.Mult(), args[0])
            return gast.copy_location(square, call)
        helper = ON_NUMBERS.get(ufunc)
        if helper is not None and len(args) == helper.__code__.co_argcount:
            return gast.copy_location(runtime_call(helper.__name__, *args), call)
        return self._compiled(ufunc, call)

    def _refuse_draws(self, call: gast.Call) -> None:
        """A draw of numbax.random a thread has no version of (``randint``, ``beta``...)
        is refused here: the simulator would run the CPU's."""
        name = random_device.sampler_name(self.resolve(call.func))
        if name is not None and name not in random_device.IN_A_THREAD:
            raise NotOnDevice(
                f"nx.random.{name} has no version for a GPU thread yet (a thread draws "
                f"with {', '.join(sorted(random_device.IN_A_THREAD))}); draw it on the CPU "
                "and pass the draws in, or run the function on the CPU (backend='cpu').",
                getattr(call, "lineno", None),
            )

    @staticmethod
    def _compiled(ufunc: np.ufunc, call: gast.Call) -> gast.Call:
        """``call`` as it is, where numba-cuda compiles ``ufunc``; else refused."""
        if ufunc.__name__ not in COMPILED_BY_NUMBA_CUDA:
            raise _ufunc_refused(ufunc, getattr(call, "lineno", None))
        return call

    def _ufunc(self, func: gast.expr) -> np.ufunc | None:
        """The NumPy ufunc ``func`` names, directly or as the lowering redirected it
        (``nxrt.power``: ``elementary.power``)."""
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
            if func.value.id == RUNTIME and func.attr == elementary.power.__name__:
                return np.power
        found = self.resolve(func)
        return found if isinstance(found, np.ufunc) else None
