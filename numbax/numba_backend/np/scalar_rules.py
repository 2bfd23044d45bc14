"""The user's own loops compute on NumPy scalars as NumPy does, not by Numba's rules.

An element of an int8 array is an ``np.int8``: NumPy adds two at int8 and wraps (100 +
100 is -56), adds a Python int at int8 too (NEP 50: a Python int is weak), and a bool
and a bool is a bool (a logical or). Numba types every integer operation as Python
does, in int64, so ``x[i] + y[i] > 100`` would hold for int8 100 and 100.

So the user's functions are compiled by :class:`NumPyScalarsCompiler`, whose type
inference (:class:`_NumPyScalarTyping`) types the function as Numba does and then, where
Numba's types depart from NumPy's, rewrites the IR and types it again, until nothing is
left to rewrite:

* an operator or NumPy ufunc on scalars of which one is neither int64, float64 nor
  complex128 (int8…uint64, bool, float32 with another type: where Numba's result may
  differ from NumPy's) calls ``numpy_scalars``' stand-in for its ufunc, which computes
  at the loop NumPy picks (its operands that hold Python scalars weak);
* ``nxrt.weak(value, like)`` (``lower.py`` wraps each operand that may hold a Python
  scalar in it) next to such a scalar: a value that is never a Python scalar keeps its
  own type (an ``np.int64`` next to an ``np.int8`` is int64), and a Python int that
  does not fit ``like``'s integer type raises NumPy's ``OverflowError``;
* a variable that holds a Python scalar before a loop and a NumPy scalar of one type
  after (``s = 0`` then ``s = s + x[i]``) holds that type from the start, as the Python
  scalar takes it at its first use there.

Which values are Python scalars (:func:`_python_scalars`): constants, parameters given
Python scalars, ``range``'s values, ``len``, ``.size``, ``.ndim`` and ``.shape``'s
entries, and arithmetic on those alone. Functions that compute only with int64, float64
and complex128 (the usual loops over float arrays with int indices) are typed once and
their IR is left as it is, so their machine code is Numba's own.
"""

from __future__ import annotations

import functools
import types as types_
from pathlib import Path
from typing import Any

import numpy as np
from numba import types
from numba.core import errors, ir
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import register_pass
from numba.core.registry import cpu_target
from numba.core.typed_passes import NopythonTypeInference
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax.codegen.load import GENERATED_PREFIX
from numbax.numba_backend.loops.array_operators import PYTHON_OPERATORS
from numbax.numba_backend.np.scalars import (
    COMPARISONS,
    UFUNC_OF_OPERATOR,
    call_stand_in,
    operands_of,
    ufunc_of,
)
from numbax.numba_backend.np.weak import weak, weak_cast, weak_target
from numbax.numba_backend.redirects import replaced_by

PYTHON_SCALAR_PARAMETERS = "__numbax_python_scalar_parameters__"
"""On a generated function: the names of its parameters given Python scalars (weakly
typed, NEP 50), or None where any of them may be one."""

_AS_NUMBA_TYPES = frozenset([types.int64, types.float64, types.complex128])
"""Types on which Numba's scalar arithmetic is NumPy's."""

_WEAK, _STRONG, _MIXED = "weak", "strong", "mixed"
"""What a variable holds: a Python scalar, a NumPy scalar (or anything else), or either
(by the path taken)."""

_PYTHON_SCALAR_CALLS = frozenset([len, int, float, complex])
_PYTHON_SCALAR_OF_PYTHON_SCALARS = frozenset([abs, min, max, round])
_PYTHON_SCALAR_ATTRIBUTES = frozenset(["size", "ndim", "shape"])
_MOST_ROUNDS = 32


def weak_checked(value: Any, like: Any) -> Any:
    """:func:`~numbax.numba_backend.np.weak.weak` of a Python scalar next to a NumPy
    scalar whose type is not Numba's: an int beyond ``like``'s integer type raises
    NumPy's ``OverflowError`` (``np.int8(1) + 300``) rather than wrapping."""
    return value


@overload(weak_checked, inline="always")
def _weak_checked(value, like):  # noqa: ANN001, ANN202 (Numba reads annotations as types)
    target = weak_target(value, like) if isinstance(value, types.Number) else None
    if target is None:
        return lambda value, like: value
    cast = weak_cast(types.unliteral(value), target)
    return lambda value, like: cast(value)


@functools.cache
def python_scalar_as(target: types.Type) -> Any:
    """A function compiled code calls on a Python scalar to give it NumPy scalar type
    ``target``, raising ``OverflowError`` for an int beyond ``target``'s range."""
    if not isinstance(target, types.Integer):
        return as_dtype(target).type
    cast = weak_cast(types.int64, target)
    cpu_target.typing_context.refresh()  # registers its type, for the compile under way
    return cast


@register_pass(mutates_CFG=True, analysis_only=False)
class _NumPyScalarTyping(NopythonTypeInference):
    """Numba's type inference, then NumPy's scalar rules where its types depart from
    them, typing again after each rewrite (see the module's docstring)."""

    _name = "numbax_numpy_scalar_typing"

    def run_pass(self, state: Any) -> bool:
        requested = state.return_type
        super().run_pass(state)
        weak_parameters = getattr(state.func_id.func, PYTHON_SCALAR_PARAMETERS, None)
        for _ in range(_MOST_ROUNDS):
            if not _rewrite(state.func_ir, state.typemap, weak_parameters):
                break
            state.return_type = requested
            super().run_pass(state)
        return True


class NumPyScalarsCompiler(CompilerBase):
    """Numba's nopython pipeline with :class:`_NumPyScalarTyping` for its type inference."""

    def define_pipelines(self) -> list:
        manager = DefaultPassBuilder.define_nopython_pipeline(self.state)
        manager.passes = [
            (_NumPyScalarTyping, description)
            if pass_ is NopythonTypeInference
            else (pass_, description)
            for pass_, description in manager.passes
        ]
        manager.finalize()
        return [manager]


def _rewrite(func_ir: ir.FunctionIR, typemap: dict, weak_parameters: Any) -> bool:
    """One round of rewrites; whether anything changed."""
    if not _anything_departs(func_ir, typemap):
        return False  # the usual case, found without the dataflow below
    holds = _python_scalars(func_ir, typemap, weak_parameters)
    changed = _settle_mixed(func_ir, typemap, holds)
    for block in func_ir.blocks.values():
        body = []
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and _users_own(stmt):
                replaced = _operation(func_ir, block, stmt, typemap, holds)
                if replaced is None:
                    replaced = _weak_call(func_ir, stmt, typemap, holds)
                if replaced is None:
                    replaced = _python_int(func_ir, stmt, typemap)
                if replaced is not None:
                    body.extend(replaced)
                    changed = True
                    continue
            body.append(stmt)
        block.body = body
    if not changed:  # typed as NumPy would, but for what one type cannot hold
        _refuse_differing_integers(func_ir, typemap, holds)
    return changed


def _anything_departs(func_ir: ir.FunctionIR, typemap: dict) -> bool:
    """Whether the function holds a scalar (or an array of scalars) of a type other than
    int64, float64, complex128 and bool, or applies an operation to scalars that
    :func:`_departs`."""
    for t in typemap.values():
        scalar = _scalar(t.dtype if isinstance(t, types.Array) else t)
        if scalar is not None and scalar not in _AS_NUMBA_TYPES and scalar != types.boolean:
            return True
    return any(
        isinstance(stmt, ir.Assign)
        and _ufunc(func_ir, stmt.value, typemap) is not None
        and _departs([_scalar(typemap.get(v.name)) for v in operands_of(stmt.value)])
        for block in func_ir.blocks.values()
        for stmt in block.body
    )


def _users_own(stmt: ir.Stmt) -> bool:
    """Whether ``stmt`` comes from generated code (the user's function or a helper of
    theirs inlined), not from a function of numbax's or Numba's inlined into it."""
    return Path(stmt.loc.filename or "").name.startswith(GENERATED_PREFIX)


def _scalar(t: types.Type | None) -> types.Type | None:
    t = types.unliteral(t) if t is not None else None
    return t if isinstance(t, types.Number | types.Boolean) else None


def _departs(operand_types: list[types.Type | None]) -> bool:
    """Whether Numba's typing of an operation on scalars of these types may depart from
    NumPy's: not all int64, float64 or complex128, and not one float or complex type."""
    if not operand_types or any(t is None for t in operand_types):
        return False
    if all(t in _AS_NUMBA_TYPES for t in operand_types):
        return False
    same = len(set(operand_types)) == 1
    return not (same and isinstance(operand_types[0], types.Float | types.Complex))


def _ufunc(func_ir: ir.FunctionIR, value: Any, typemap: dict) -> np.ufunc | None:
    """The ufunc ``value`` applies: an operator's, a NumPy ufunc's, or that of the
    operator an ``nxrt.op_<name>`` call stands for (``array_operators``)."""
    callee = _callee(value, typemap)
    if callee is abs and len(value.args) == 1:
        return np.absolute
    operator_ = PYTHON_OPERATORS.get(callee)
    if operator_ is not None:
        return UFUNC_OF_OPERATOR.get(operator_)
    return ufunc_of(func_ir, value)


def _operation(
    func_ir: ir.FunctionIR, block: ir.Block, stmt: ir.Assign, typemap: dict, holds: dict
) -> list[ir.Stmt] | None:
    ufunc = _ufunc(func_ir, stmt.value, typemap)
    if ufunc is None:
        return None
    operands = operands_of(stmt.value)
    if not _departs([_scalar(typemap.get(v.name)) for v in operands]):
        return None
    weak_ = tuple(holds.get(v.name) != _STRONG for v in operands)
    return call_stand_in(func_ir, block, stmt, ufunc, weak_)


def _callee(expr: Any, typemap: dict) -> Any:
    """The function ``expr`` calls; for numbax's replacement of a builtin (``abs`` is
    ``nxrt.builtin_abs``, ``redirects.py``), the builtin."""
    if not (isinstance(expr, ir.Expr) and expr.op == "call"):
        return None
    callee = getattr(typemap.get(expr.func.name), "typing_key", None)
    replaced = replaced_by(callee)
    return replaced if isinstance(replaced, types_.BuiltinFunctionType) else callee


def _weak_call(
    func_ir: ir.FunctionIR, stmt: ir.Assign, typemap: dict, holds: dict
) -> list[ir.Stmt] | None:
    """``nxrt.weak(value, like)`` next to a scalar of a type Numba's rules depart on: the
    value as it is where it is a NumPy scalar, else :func:`weak_checked`."""
    expr = stmt.value
    if _callee(expr, typemap) is not weak or len(expr.args) != 2:
        return None
    value, like = expr.args
    like_type = typemap.get(like.name)
    like_type = like_type.dtype if isinstance(like_type, types.Array) else _scalar(like_type)
    if like_type is None or like_type in _AS_NUMBA_TYPES:
        return None
    if holds.get(value.name) == _STRONG:
        stmt.value = value
        return [stmt]
    return _call_instead(func_ir, stmt, "weak_checked", weak_checked, [value, like])


def _python_int(func_ir: ir.FunctionIR, stmt: ir.Assign, typemap: dict) -> list[ir.Stmt] | None:
    """``int(x)`` of a NumPy integer, which Numba types as ``x``'s own type: an int64,
    as the Python int it is (a Python int beyond int64 wraps, as Python ints do in
    compiled code)."""
    expr = stmt.value
    result = _scalar(typemap.get(stmt.target.name))
    if _callee(expr, typemap) is not int or result is None or result == types.int64:
        return None
    return _call_instead(func_ir, stmt, "int64", np.int64, expr.args)


def _call_instead(
    func_ir: ir.FunctionIR, stmt: ir.Assign, name: str, function: Any, args: list
) -> list[ir.Stmt]:
    """``stmt`` made to assign ``function(*args)``: the statements in its place."""
    loc = stmt.loc
    callee = stmt.target.scope.redefine(f"${name}", loc)
    global_ = ir.Global(name, function, loc)
    func_ir._definitions[callee.name] = [global_]
    stmt.value = ir.Expr.call(callee, list(args), (), loc)
    return [ir.Assign(global_, callee, loc), stmt]


def _definitions(func_ir: ir.FunctionIR) -> dict[str, tuple[ir.Block, ir.Assign]]:
    return {
        stmt.target.name: (block, stmt)
        for block in func_ir.blocks.values()
        for stmt in block.body
        if isinstance(stmt, ir.Assign)
    }


def _python_scalars(func_ir: ir.FunctionIR, typemap: dict, weak_parameters: Any) -> dict:
    """For each variable, whether it holds a Python scalar (weak), a NumPy scalar or
    anything else (strong), or either by the path taken (mixed): a fixed point over
    the IR's definitions, phis merging what reaches them."""
    definitions = _definitions(func_ir)
    holds: dict[str, str] = {}

    def of(var: Any) -> str | None:  # a phi's value may be undefined on a path
        return holds.get(var.name) if isinstance(var, ir.Var) else None

    def kind(name: str, value: Any) -> str | None:
        if isinstance(value, ir.Const):
            return _WEAK if type(value.value) in (int, float, complex) else _STRONG
        if isinstance(value, ir.Global | ir.FreeVar):
            return _WEAK if type(value.value) in (int, float, complex) else _STRONG
        if isinstance(value, ir.Arg):
            if weak_parameters is None:
                python_like = types.unliteral(typemap.get(name)) in _AS_NUMBA_TYPES
                return _WEAK if python_like else _STRONG
            return _WEAK if value.name in weak_parameters else _STRONG
        if isinstance(value, ir.Var):
            return of(value)
        if not isinstance(value, ir.Expr):
            return _STRONG
        if value.op == "phi":
            return _merged([of(v) for v in value.incoming_values])
        if value.op == "pair_first":  # a range's value
            pair = definitions.get(value.value.name)
            iterator = pair[1].value if pair else None
            if isinstance(iterator, ir.Expr) and iterator.op == "iternext":
                iterated = typemap.get(iterator.value.name)
                return _WEAK if isinstance(iterated, types.RangeIteratorType) else _STRONG
            return _STRONG
        if value.op == "getattr":
            array = isinstance(typemap.get(value.value.name), types.Array)
            return _WEAK if array and value.attr in _PYTHON_SCALAR_ATTRIBUTES else _STRONG
        if value.op in ("static_getitem", "getitem", "exhaust_iter"):
            tuple_ = isinstance(typemap.get(value.value.name), types.BaseTuple)
            return of(value.value) if tuple_ else _STRONG
        callee = _callee(value, typemap)
        if callee in _PYTHON_SCALAR_CALLS:
            return _WEAK
        if callee in _PYTHON_SCALAR_OF_PYTHON_SCALARS:
            return _merged_operands([of(v) for v in value.args])
        if callee in (weak, weak_checked) and value.args:
            return of(value.args[0])
        operator_ = value.op != "call" or callee in PYTHON_OPERATORS
        if operator_ and _ufunc(func_ir, value, typemap) not in (None, *COMPARISONS):
            return _merged_operands([of(v) for v in operands_of(value)])
        return _STRONG

    changed = True
    while changed:
        changed = False
        for name, (_, stmt) in definitions.items():
            found = kind(name, stmt.value)
            if found is not None and holds.get(name) != found:
                holds[name] = found
                changed = True
    return holds


def _merged(kinds: list[str | None]) -> str | None:
    known = {k for k in kinds if k is not None}
    if not known:
        return None
    return known.pop() if len(known) == 1 else _MIXED


def _merged_operands(kinds: list[str | None]) -> str | None:
    """An operation's result: a Python scalar only of Python scalars alone."""
    if _STRONG in kinds:
        return _STRONG
    if _MIXED in kinds:
        return _MIXED
    return _WEAK if kinds and all(k == _WEAK for k in kinds) else None


def _settle_mixed(func_ir: ir.FunctionIR, typemap: dict, holds: dict) -> bool:
    """Give the Python scalars reaching a phi its NumPy scalars' type, where they all
    have one (``s = 0`` before ``s = s + x[i]`` on int8 ``x``): cast where they enter."""
    definitions = _definitions(func_ir)
    changed = False
    for block in func_ir.blocks.values():
        for stmt in block.body:
            value = stmt.value if isinstance(stmt, ir.Assign) else None
            if not (isinstance(value, ir.Expr) and value.op == "phi"):
                continue
            if holds.get(stmt.target.name) != _MIXED or not _users_own(stmt):
                continue
            leaves, phis = _web(stmt.target.name, definitions)
            kinds = {n: holds.get(n) for n in leaves}
            strong = {_scalar(typemap.get(n)) for n, k in kinds.items() if k == _STRONG}
            weak_ = {n for n, k in kinds.items() if k == _WEAK}
            if len(strong) != 1 or not weak_ or _MIXED in kinds.values():
                continue
            (target,) = strong
            if target is None or target in _AS_NUMBA_TYPES:
                continue
            if not all(_takes(_scalar(typemap.get(n)), target) for n in weak_):
                continue
            cast = _Casts(func_ir, definitions, target)
            for phi in phis:
                phi.incoming_values = [
                    cast(v) if isinstance(v, ir.Var) and _root(v.name, definitions) in weak_ else v
                    for v in phi.incoming_values
                ]
            changed = True
    return changed


def _refuse_differing_integers(func_ir: ir.FunctionIR, typemap: dict, holds: dict) -> None:
    """Refuse a variable that holds NumPy integers of different types by the path taken,
    one of them not int64 (``t = x[0]`` of int8 ``x``, or ``t = z[0]`` of int64 ``z``):
    NumPy computes with each at its own type, compiled code would hold one."""
    definitions = _definitions(func_ir)
    for block in func_ir.blocks.values():
        for stmt in block.body:
            value = stmt.value if isinstance(stmt, ir.Assign) else None
            if not (isinstance(value, ir.Expr) and value.op == "phi" and _users_own(stmt)):
                continue
            leaves, _ = _web(stmt.target.name, definitions)
            found = {
                n: t
                for n in leaves
                if holds.get(n) == _STRONG
                and isinstance(t := _scalar(typemap.get(n)), types.Integer)
            }
            kinds = set(found.values())
            if len(kinds) < 2 or kinds <= _AS_NUMBA_TYPES:
                continue
            name = stmt.target.name.split(".")[0]
            narrow = next(n for n, t in found.items() if t not in _AS_NUMBA_TYPES)
            raise errors.TypingError(
                f"numbax: {name!r} holds NumPy integers of different dtypes by the path "
                f"taken ({', '.join(sorted(str(k) for k in kinds))}), and NumPy computes with "
                "each at its own dtype while compiled code holds one: cast the values it is "
                f"given to one dtype (np.int64(...), or x.astype(...) first)",
                loc=definitions[narrow][1].loc,
            )


def _takes(python: types.Type | None, target: types.Type) -> bool:
    """Whether a Python scalar of Numba type ``python`` takes NumPy type ``target`` next
    to it (a Python int next to an int8; not a Python float next to one)."""
    kind = {types.int64: int, types.float64: float, types.complex128: complex}.get(python)
    if kind is None:
        return False
    return np.result_type(as_dtype(target), kind(0)) == as_dtype(target)


class _Casts:
    """Casts of Python scalars to ``target``, each made right after the value's
    definition, once per value."""

    def __init__(self, func_ir: ir.FunctionIR, definitions: dict, target: types.Type) -> None:
        self.func_ir, self.definitions, self.target = func_ir, definitions, target
        self.made: dict[str, ir.Var] = {}

    def __call__(self, var: ir.Var) -> ir.Var:
        if var.name not in self.made:
            block, stmt = self.definitions[var.name]
            loc = stmt.loc
            function = python_scalar_as(self.target)
            callee = block.scope.redefine("$as_numpy_scalar", loc)
            cast = block.scope.redefine(f"{var.name}_as_{self.target}", loc)
            global_ = ir.Global(f"as_{self.target}", function, loc)
            call = ir.Expr.call(callee, [var], (), loc)
            self.func_ir._definitions[callee.name] = [global_]
            self.func_ir._definitions[cast.name] = [call]
            at = block.body.index(stmt) + 1
            block.body[at:at] = [ir.Assign(global_, callee, loc), ir.Assign(call, cast, loc)]
            self.made[var.name] = cast
        return self.made[var.name]


def _root(name: str, definitions: dict) -> str:
    """The variable ``name`` copies (through plain assignments)."""
    seen = set()
    while name in definitions and name not in seen:
        seen.add(name)
        value = definitions[name][1].value
        if not isinstance(value, ir.Var):
            break
        name = value.name
    return name


def _web(name: str, definitions: dict) -> tuple[set[str], list[ir.Expr]]:
    """The variables whose values reach ``name`` through phis and copies, and those
    phis."""
    seen, leaves, phis, todo = set(), set(), [], [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        value = definitions[current][1].value if current in definitions else None
        if isinstance(value, ir.Var):
            todo.append(value.name)
        elif isinstance(value, ir.Expr) and value.op == "phi":
            phis.append(value)
            todo.extend(v.name for v in value.incoming_values if isinstance(v, ir.Var))
        else:
            leaves.add(current)
    return leaves, phis
