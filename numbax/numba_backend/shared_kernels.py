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

from numbax.transform.normalize_nodes import clone
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
    first_of: dict[str, str] = {}  # a kernel's computation → the first kernel making it
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


def _computation(kernel: gast.FunctionDef, user_line: Callable[[int], Origin] | None) -> str:
    """``kernel``'s declaration and statements up to the names it chooses, and the user's
    lines they come from."""
    params = [a.id for a in kernel.args.args]
    canonical = {name: f"p{k}" for k, name in enumerate(params)}
    decorators = [clone(d) for d in kernel.decorator_list]
    for decorator in decorators:  # weak=("x", ...) names parameters
        for node in walk(decorator):
            if isinstance(node, gast.Constant) and node.value in canonical:
                node.value = canonical[node.value]
    body = [clone(stmt) for stmt in kernel.body]
    for stmt in body:
        for node in walk(stmt):
            if not isinstance(node, gast.Name):
                continue
            if node.id not in canonical and isinstance(node.ctx, gast.Store):
                canonical[node.id] = f"t{len(canonical)}"
            node.id = canonical.get(node.id, node.id)
    lines = [_comment_of(stmt, user_line) for stmt in kernel.body]
    return "\n".join(
        [*(gast.dump(d) for d in decorators), str(len(params)), str(lines)]
        + [gast.dump(stmt) for stmt in body]
    )


def _comment_of(stmt: gast.stmt, user_line: Callable[[int], Origin] | None) -> str:
    """What decides the comment emitted above ``stmt``: the user's line it computes (or
    computes the adjoint of), else the user's line behind its own line."""
    origin = origin_of(stmt)
    line = getattr(stmt, "lineno", None)
    if origin is None and line is not None and user_line is not None:
        origin = user_line(line)
    return repr(origin) if origin is not None else f"line {line}"
