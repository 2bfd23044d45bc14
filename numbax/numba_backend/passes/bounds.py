"""NumPy's ``IndexError`` in compiled code: a check before each of the user's subscripts.

NumPy checks every index; Numba checks none (its ``boundscheck`` option checks every
subscript, numbax's own ones too, and says only "index is out of bounds"), so under
``nx.jit`` an index past the end read whatever memory lay there, or ended the process.
This pass, the CPU target's, writes a check before each subscript of the function's
own code that indexes with an integer or an integer array on some axis (a slice clips,
and needs none), in NumPy's words, naming the user's line:

    # line 5: s += x[i]
    nxrt.check_index(x, i, 'model.py, line 5')
    _x_at = x[i]

A check is not written where the index provably holds: the variable of a loop over
``range(x.shape[k])`` (or ``len(x)``), indexing axis ``k`` of that ``x``, as long as
nothing rebinds them; and reverse mode's adjoint statements index cotangents with the
indices their forward sweep checked.

Loops pay for a check once, not per iteration: a check whose index is the loop's
variable, ``for i in range(a, b, s)``, and which reads nothing else the loop changes,
moves before the loop with that component as ``range(a, b, s)``, which checks the
range's first and last values (NumPy's message names the first value out of bounds,
found only then). It moves only out of a loop that runs every iteration to its end
(no ``break``, ``continue``, ``raise``) and from its body's own statements (not from a
branch, which may not run): so it fails exactly when the loop would, only before the
loop's first iteration instead of at the failing one. A check that does not read the
loop's variable (``x[i, 0]`` in a loop over ``j``) moves before the loop too, holding
``during=range(a, b, s)``: nothing is checked if the loop runs no iteration. A check
holds one loop's range at most (a nested loop's check moves out of the inner loop, and
runs once per iteration of the outer one). Checks repeated with nothing rebound in
between (``x[i] += v`` reads and writes ``x[i]``), or inside a loop whose check moved
before it, are written once.

``nxrt.check_index`` (``loops/bounds.py``) makes the check, interpreted and compiled;
this module is the pass alone, which writes the calls and imports no Numba.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import gast

from numbax.transform.nodes import clone, range_arguments
from numbax.transform.provenance import origin_of
from numbax.transform.walk import walk

_RUNTIME = "nxrt"
_CHECK = "check_index"
_MARK = "numbax_bounds_check"  # on the statements this pass writes
_IMPLIED = "numbax_bounds_implied"  # on a loop: its body's checks made before it


def bounds_checks(fn: gast.FunctionDef, user_line: Callable[[str, int], str]) -> gast.FunctionDef:
    """Write the checks of ``fn``'s subscripts (see the module's docstring), in place.
    ``user_line(filename, line)``: the user's line as the error names it (the pipeline
    knows how generated text names files)."""
    facts = _Definitions(fn)
    fn.body = _with_checks(fn.body, (), facts, user_line)
    _hoist(fn.body)
    _drop_repeated(fn.body, {})
    return fn


class _Definitions:
    """The assignments of each name of a function, and which are its parameters."""

    def __init__(self, fn: gast.FunctionDef) -> None:
        args = fn.args
        self.params = {a.id for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        self.sites: dict[str, list[gast.AST]] = {}
        for node in walk(fn):
            if isinstance(node, gast.Assign):
                for target in node.targets:
                    for name in _stored_names(target):
                        self.sites.setdefault(name, []).append(node.value)
            elif isinstance(node, (gast.For, gast.AugAssign, gast.AnnAssign)):
                for name in _stored_names(node.target):
                    self.sites.setdefault(name, []).append(node)

    def value(self, name: str) -> gast.AST | None:
        """The value of ``name``'s one assignment (None for a parameter, or for a name
        assigned more than once or by a compound target)."""
        sites = self.sites.get(name, [])
        if name in self.params or len(sites) != 1 or not isinstance(sites[0], gast.expr):
            return None
        return sites[0]

    def one_value(self, name: str) -> bool:
        """Whether ``name`` holds one value all along: an unassigned parameter, or a
        name assigned once."""
        if name in self.params:
            return name not in self.sites
        return self.value(name) is not None

    def not_array(self, name: str) -> bool:
        """Whether every value ``name`` is given is a shape or a tuple literal."""
        values = self.sites.get(name, [])
        return (
            name not in self.params
            and bool(values)
            and all(
                (isinstance(v, gast.Attribute) and v.attr in ("shape", "strides"))
                or isinstance(v, gast.Tuple)
                for v in values
            )
        )


def _stored_names(target: gast.AST) -> list[str]:
    return [
        n.id for n in walk(target) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    ]


def _with_checks(
    stmts: list[gast.stmt],
    loops: tuple[gast.For, ...],
    facts: _Definitions,
    user_line: Callable[[str, int], str],
) -> list:
    out: list[gast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, (gast.For, gast.While, gast.If)):
            inner = (*loops, stmt) if isinstance(stmt, gast.For) else loops
            stmt.body = _with_checks(stmt.body, inner, facts, user_line)
            stmt.orelse = _with_checks(stmt.orelse, loops, facts, user_line)
        else:
            for subscript in _subscripts(stmt):
                check = _check(subscript, stmt, loops, facts, user_line)
                if check is not None:
                    out.append(check)
        out.append(stmt)
    return out


def _subscripts(stmt: gast.stmt) -> Iterator[gast.Subscript]:
    """The subscripts ``stmt`` evaluates, in the order it evaluates them (an assignment's
    value before its targets, an index before the subscript it is in)."""
    parts = [stmt.value, *stmt.targets] if isinstance(stmt, gast.Assign) else [stmt]
    for part in parts:
        yield from _in_order(part)


def _in_order(node: gast.AST) -> Iterator[gast.Subscript]:
    for _, child in gast.iter_fields(node):
        for item in child if isinstance(child, list) else [child]:
            if isinstance(item, gast.AST):
                yield from _in_order(item)
    if isinstance(node, gast.Subscript) and not isinstance(node.ctx, gast.Del):
        yield node


def _components(index: gast.expr) -> list[gast.expr]:
    return list(index.elts) if isinstance(index, gast.Tuple) else [index]


def _check(
    subscript: gast.Subscript,
    stmt: gast.stmt,
    loops: tuple[gast.For, ...],
    facts: _Definitions,
    user_line: Callable[[str, int], str],
) -> gast.Expr | None:
    """The check of ``subscript`` (a statement to put before ``stmt``), or None where it
    needs none: no integer component, a base that is no array, an index that holds."""
    origin = origin_of(stmt)
    if origin is not None and origin.adjoint:
        return None  # indexes as the forward sweep did, with the values it checked
    base = subscript.value
    if not _pure(base) or not _pure(subscript.slice):
        return None
    if isinstance(base, gast.Name) and facts.not_array(base.id):
        return None
    parts = _components(subscript.slice)
    if any(isinstance(p, gast.Constant) and isinstance(p.value, (str, bytes)) for p in parts):
        return None  # a record's field
    checked = [
        p
        for p in parts
        if not isinstance(p, gast.Slice)
        and not (isinstance(p, gast.Constant) and (p.value is None or p.value is Ellipsis))
    ]
    if not checked:
        return None
    if all(_holds(parts, p, base, loops, facts) for p in checked):
        return None
    where = ""
    if origin is not None:
        where = user_line(origin.filename, origin.line)
    call = gast.Call(
        gast.Attribute(gast.Name(_RUNTIME, gast.Load(), None, None), _CHECK, gast.Load()),
        [clone(base), _index_value(subscript.slice), gast.Constant(where, None)],
        [],
    )
    check = gast.copy_location(gast.Expr(call), stmt)
    for key, value in vars(stmt).items():
        if key.startswith("numbax_"):
            setattr(check, key, value)
    setattr(check, _MARK, True)
    return check


def _pure(node: gast.AST) -> bool:
    """Whether evaluating ``node`` again reads the same value and changes nothing."""
    allowed = (
        gast.Name,
        gast.Constant,
        gast.Attribute,
        gast.Subscript,
        gast.Tuple,
        gast.Slice,
        gast.UnaryOp,
        gast.BinOp,
        gast.expr_context,
        gast.unaryop,
        gast.operator,
    )
    return all(isinstance(n, allowed) for n in walk(node))


def _index_value(index: gast.expr) -> gast.expr:
    """The index as a value: its slices as ``slice(...)`` calls."""
    if isinstance(index, gast.Tuple):
        return gast.Tuple([_index_value(e) for e in index.elts], gast.Load())
    if isinstance(index, gast.Slice):
        bounds = [index.lower, index.upper, index.step]
        args = [clone(b) if b is not None else gast.Constant(None, None) for b in bounds]
        while len(args) > 1 and isinstance(args[-1], gast.Constant) and args[-1].value is None:
            args.pop()
        return gast.Call(gast.Name("slice", gast.Load(), None, None), args, [])
    return clone(index)


def _holds(
    parts: list[gast.expr],
    part: gast.expr,
    base: gast.expr,
    loops: tuple[gast.For, ...],
    facts: _Definitions,
) -> bool:
    """Whether component ``part`` of a subscript of ``base`` is in bounds whenever it runs:
    the variable of a loop over ``range(x.shape[k])`` (from 0 or a positive start, by a
    positive step) indexing axis ``k`` of the same ``x``."""
    if not (isinstance(part, gast.Name) and isinstance(base, gast.Name)):
        return False
    loop_variables = {loop.target.id for loop in loops if isinstance(loop.target, gast.Name)}
    axis = parts.index(part)
    for before in parts[:axis]:  # each takes one axis
        if not (
            isinstance(before, gast.Slice)
            or _int(before) is not None
            or (isinstance(before, gast.Name) and before.id in loop_variables)
        ):
            return False
    loop = next(
        (
            loop
            for loop in reversed(loops)
            if isinstance(loop.target, gast.Name) and loop.target.id == part.id
        ),
        None,
    )
    if loop is None or part.id in _assigned(loop.body) or not facts.one_value(base.id):
        return False
    args = range_arguments(loop.iter)
    if args is None or not 1 <= len(args) <= 3:
        return False
    start = 0 if len(args) == 1 else _int(args[0])
    step = 1 if len(args) < 3 else _int(args[2])
    if start is None or start < 0 or step is None or step <= 0:
        return False
    return _length_of(args[0] if len(args) == 1 else args[1], facts) == (base.id, axis)


def _length_of(stop: gast.expr, facts: _Definitions) -> tuple[str, int] | None:
    """``(x, k)`` when ``stop`` holds ``x.shape[k]`` (or ``len(x)``: ``k = 0``) for an
    ``x`` bound once."""
    if not isinstance(stop, gast.Name):
        return None
    value = facts.value(stop.id)
    if (
        isinstance(value, gast.Call)
        and isinstance(value.func, gast.Name)
        and value.func.id == "len"
        and len(value.args) == 1
        and isinstance(value.args[0], gast.Name)
        and facts.one_value(value.args[0].id)
    ):
        return value.args[0].id, 0
    if not (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name)):
        return None
    k = _int(value.slice)
    shape = facts.value(value.value.id)
    if k is None or k < 0 or not (isinstance(shape, gast.Attribute) and shape.attr == "shape"):
        return None
    if not (isinstance(shape.value, gast.Name) and facts.one_value(shape.value.id)):
        return None
    return shape.value.id, k


def _int(node: gast.expr) -> int | None:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    return None


def _assigned(stmts: list[gast.stmt]) -> set[str]:
    """The names stored anywhere in ``stmts`` (loop variables included)."""
    return {
        n.id
        for stmt in stmts
        for n in walk(stmt)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    }


def _is_check(stmt: gast.stmt) -> bool:
    return getattr(stmt, _MARK, False)


def _hoist(block: list[gast.stmt]) -> None:
    """Move the checks of each loop's body before the loop, innermost loops first."""
    for stmt in block:
        for name in ("body", "orelse"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and inner:
                _hoist(inner)
    out: list[gast.stmt] = []
    for stmt in block:
        if isinstance(stmt, gast.For) and _runs_to_the_end(stmt):
            body, implied = [], []
            for inner in stmt.body:
                moved = _before_loop(inner, stmt) if _is_check(inner) else None
                if moved is None:
                    body.append(inner)
                else:
                    out.append(moved)
                    implied.append(inner)
            stmt.body = body
            setattr(stmt, _IMPLIED, implied)
        out.append(stmt)
    block[:] = out


def _runs_to_the_end(loop: gast.For) -> bool:
    """Whether ``loop`` is a loop over ``range(...)`` whose every iteration runs its body
    to the end (nothing leaves it early) and that does not rebind its variable."""
    if range_arguments(loop.iter) is None or loop.orelse or not isinstance(loop.target, gast.Name):
        return False
    if loop.target.id in _assigned(loop.body):
        return False
    for node in walk(gast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, (gast.Raise, gast.Return, gast.Yield, gast.YieldFrom)):
            return False
    return not _leaves(loop.body)


def _leaves(stmts: list[gast.stmt]) -> bool:
    """Whether a ``break`` or ``continue`` of the loop whose body is ``stmts`` is in it."""
    for stmt in stmts:
        if isinstance(stmt, (gast.Break, gast.Continue)):
            return True
        if isinstance(stmt, gast.If) and (_leaves(stmt.body) or _leaves(stmt.orelse)):
            return True
        if isinstance(stmt, (gast.For, gast.While)) and _leaves(stmt.orelse):
            return True
    return False


def _before_loop(check: gast.Expr, loop: gast.For) -> gast.Expr | None:
    """``check`` (a statement of ``loop``'s body) made once for every iteration, to put
    before the loop: its components that are the loop's variable become the loop's
    range; one without the variable holds ``during`` the loop's range. None where it
    cannot move: it reads what the loop changes, or holds a range already (one loop's
    to a check)."""
    variable = loop.target.id
    call = check.value
    parts = _components(call.args[1])
    if call.keywords or any(range_arguments(p) is not None for p in parts):
        return None
    read = {n.id for n in walk(call) if isinstance(n, gast.Name)} - {variable}
    if read & _assigned(loop.body):
        return None
    positions = [j for j, p in enumerate(parts) if isinstance(p, gast.Name) and p.id == variable]
    mentions = sum(1 for n in walk(call) if isinstance(n, gast.Name) and n.id == variable)
    if mentions != len(positions):
        return None  # the variable in a bound or in the array's expression
    moved = clone(check)
    every = gast.Call(
        gast.Name("range", gast.Load(), None, None), clone(range_arguments(loop.iter)), []
    )
    if not positions:
        moved.value.keywords = [gast.keyword("during", every)]
    elif isinstance(call.args[1], gast.Tuple):
        for j in positions:
            moved.value.args[1].elts[j] = clone(every)
    else:
        moved.value.args[1] = every
    return moved


def _key(check: gast.Expr) -> str:
    """What a check checks: its array, index and loop (the line it names aside)."""
    call = check.value
    return gast.dump(gast.Tuple([*call.args[:2], *[k.value for k in call.keywords]], gast.Load()))


def _drop_repeated(block: list[gast.stmt], done: dict[str, set[str]]) -> None:
    """Remove each check that one before it, on every path, made already with the same
    names holding the same values. ``done``: those made before ``block``, by
    :func:`_key`, with the names each reads. In a loop's body, a check moved before the
    loop holds for every iteration (it moved only if nothing it reads changes there)."""
    out: list[gast.stmt] = []
    for stmt in block:
        if _is_check(stmt):
            key = _key(stmt)
            if key in done:
                continue
            done[key] = {n.id for n in walk(stmt) if isinstance(n, gast.Name)}
            out.append(stmt)
            continue
        if isinstance(stmt, (gast.For, gast.While)):
            _forget(done, _assigned([stmt]))  # what the loop changes, for its next iteration
            inside = dict(done)
            for implied in getattr(stmt, _IMPLIED, ()):
                inside[_key(implied)] = set()  # its names keep their values in the body
            _drop_repeated(stmt.body, inside)
            _drop_repeated(stmt.orelse, dict(done))
        elif isinstance(stmt, gast.If):
            _drop_repeated(stmt.body, dict(done))
            _drop_repeated(stmt.orelse, dict(done))
        _forget(done, _assigned([stmt]))
        out.append(stmt)
    block[:] = out


def _forget(done: dict[str, set[str]], assigned: set[str]) -> None:
    for key in [k for k, names in done.items() if names & assigned]:
        del done[key]
