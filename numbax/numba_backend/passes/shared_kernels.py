"""One fused loop for each distinct computation: identical kernels compiled once.

Fusion (``fuse.py``) writes one kernel per run of elementwise statements. Derivative
code repeats itself: the adjoint of an adjoint recomputes the same forward values
(``y = np.exp(-2.0 * x)``) and applies the same local derivatives in several places,
so one function can hold dozens of kernels that differ only in the names of their
parameters and temporaries. The 4th derivative of ``tanh`` had 109 kernels and 24
computations. Numba compiles each kernel's loop separately (about 0.2 s each) and
again links each one into its caller, so here every call of a kernel that repeats an
earlier one calls the earlier one, and the repeat is not emitted.

Two kernels are the same when their declarations (``@nxrt.elementwise(...)``, weak
parameters by position) and their statements, with parameters named by position and
temporaries by order of assignment, are equal, and their statements come from the same
lines of the user's code (so the comments the kept kernel shows are true of both).
"""

from __future__ import annotations

from collections.abc import Callable

import gast

from numbax.transform.provenance import Origin, lines_of, origin_of
from numbax.transform.walk import walk


def share_kernels(
    fn: gast.FunctionDef, kernels: list[gast.FunctionDef], lines_from: str | None = None
) -> list[gast.FunctionDef]:
    """The kernels to emit, each distinct one once; ``fn``'s calls of a repeat (and a
    later kernel's ``also=`` naming one) now name the first of its kind. ``lines_from``:
    the file the trees were read from, whose lines map back to the user's (as
    ``codegen.emit`` maps them in its comments)."""
    user_line = lines_of(lines_from) if lines_from is not None else None
    first_of: dict[tuple, str] = {}  # a kernel's computation → the first kernel making it
    renamed: dict[str, str] = {}  # a repeated kernel → the first of its kind
    kept = []
    for kernel in kernels:
        _rename_names(kernel.decorator_list, renamed)
        key = _computation(kernel, user_line)
        if key in first_of:
            renamed[kernel.name] = first_of[key]
            continue
        first_of[key] = kernel.name
        kept.append(kernel)
    if renamed:
        _rename_names([fn], renamed)
    return kept


def _rename_names(nodes: list[gast.AST], renamed: dict[str, str]) -> None:
    for node in nodes:
        for name in walk(node):
            if isinstance(name, gast.Name) and name.id in renamed:
                name.id = renamed[name.id]


def _computation(kernel: gast.FunctionDef, user_line: Callable[[int], Origin] | None) -> tuple:
    """``kernel``'s declaration and statements up to the names it chooses, and the user's
    lines they come from."""
    params = [a.id for a in kernel.args.args]
    canonical = {name: f"p{k}" for k, name in enumerate(params)}
    constants = dict(canonical)  # weak=("x", ...) names parameters
    decorators = tuple(_layout(d, constants, {}) for d in kernel.decorator_list)
    body = tuple(_layout(stmt, {}, canonical) for stmt in kernel.body)
    lines = tuple(_comment_of(stmt, user_line) for stmt in kernel.body)
    return decorators, len(params), lines, body


def _layout(node: object, constants: dict[str, str], names: dict[str, str]) -> object:
    """``node`` as nested tuples of node types and leaf values, each ``Name`` by its
    canonical name in ``names`` (a name first stored gets the next one) and each string
    constant found in ``constants`` by its value there. Equal layouts: equal code up to
    those names."""
    if isinstance(node, gast.Name):
        if node.id not in names and isinstance(node.ctx, gast.Store):
            names[node.id] = f"t{len(names)}"
        return ("Name", names.get(node.id, node.id), type(node.ctx).__name__)
    if isinstance(node, gast.Constant) and isinstance(node.value, str):
        return ("Constant", constants.get(node.value, node.value))
    if isinstance(node, gast.AST):
        fields = (_layout(getattr(node, f, None), constants, names) for f in node._fields)
        return (type(node).__name__, *fields)
    if isinstance(node, list):
        return tuple(_layout(item, constants, names) for item in node)
    return (type(node).__name__, repr(node))


def _comment_of(stmt: gast.stmt, user_line: Callable[[int], Origin] | None) -> str:
    """What decides the comment emitted above ``stmt``: the user's line it computes (or
    computes the adjoint of), else the user's line behind its own line."""
    origin = origin_of(stmt)
    line = getattr(stmt, "lineno", None)
    if origin is None and line is not None and user_line is not None:
        origin = user_line(line)
    return repr(origin) if origin is not None else f"line {line}"
