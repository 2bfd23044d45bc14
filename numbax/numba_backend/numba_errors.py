"""Numba's failures in the user's terms: a :class:`CompileError` at the user's function,
file and line (through any compositions and inlined callees), naming the construct
Numba rejected. Every target's compile failures go through here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from numbax.codegen.load import GENERATED_PREFIX
from numbax.errors import CompileError
from numbax.numba_backend.pipeline import Specialization
from numbax.transform.provenance import Origin, resolve
from numbax.transform.source import display_name

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
_LOCATION = re.compile(r'File "([^"]+)", line (\d+)')
_OWN_MESSAGE = re.compile(r"^\s*(?:\w+Error: )?(numbax: .*)$", re.MULTILINE)
_UNTYPEABLE_ARGUMENT = re.compile(r"argument (\d+): Cannot determine Numba type of (<[^>]+>)")


def untypeable_argument_error(
    generated: Specialization, index: int, type_name: str, transformation: str = "jit"
) -> CompileError:
    """Argument ``index`` of the generated function is of a type compiled code cannot
    take: named, with what to pass instead."""
    params = list(inspect.signature(generated.function).parameters)
    name = params[index] if index < len(params) else f"#{index}"
    return CompileError(
        f"argument {name!r} is a {type_name}, which compiled code cannot take. Pass arrays, "
        "scalars, or pytrees of them; mark the argument static (static_argnums / "
        "static_argnames) if it only configures the function.",
        function=display_name(generated.source.func),
        transformation=transformation,
        filename=generated.source.filename,
        lineno=generated.source.firstlineno,
    )


def translate_numba_error(
    err: Exception,
    compiled: Specialization,
    transformation: str = "jit",
    instead: str = "call the function without jit",
) -> CompileError:
    """A :class:`CompileError` naming the user's function, line and the construct Numba
    rejected in ``compiled`` (for ``transformation``; ``instead``: what else to do)."""
    message = _ANSI_ESCAPE.sub("", str(err))  # Numba highlights parts of its messages
    user_line = None
    locations = _LOCATION.findall(message)
    for path, line in locations:
        if path.endswith(compiled.path.rsplit("/", 1)[-1]):
            user_line = compiled.emitted.user_line(int(line))
            break
    source = compiled.source
    filename, quoted = source.filename, None
    if user_line is not None:
        quoted = source.line(user_line)
        if Path(filename).name.startswith(GENERATED_PREFIX):  # jit of a derivative
            origin = resolve(filename, user_line)
            if origin.filename != filename:
                filename, user_line, quoted = origin.filename, origin.line, origin.text
    else:  # in a function inlined into this one: its module maps the line back
        origin = _inlined_origin(locations)
        if origin is not None:
            filename, user_line, quoted = origin.filename, origin.line, origin.text
    bad_argument = _UNTYPEABLE_ARGUMENT.search(message)
    if bad_argument:
        index, type_name = int(bad_argument[1]), bad_argument[2]
        return untypeable_argument_error(compiled, index, type_name, transformation)
    own = _OWN_MESSAGE.search(message)  # a refusal of numbax's own overloads says why
    construct = own[1] if own else _first_meaningful_line(message)
    detail = f"Numba cannot compile it: {construct}"
    if quoted:
        detail += f"\n  in: {quoted}"
    if "Cannot request literal type" in message:
        detail += f"\n  {_NOT_LITERAL}"
    detail += (
        "\n  Rewrite that line with operations Numba supports (see the generated source "
        f"in {compiled.path}), or {instead}."
    )
    return CompileError(
        detail,
        function=display_name(source.func),
        transformation=transformation,
        filename=filename,
        lineno=user_line,
        construct=construct,
    )


def _inlined_origin(locations: list[tuple[str, str]]) -> Origin | None:
    """The user's line behind the first of Numba's ``locations`` in a generated module
    (one inlined into the failing function), if any."""
    for path, line in locations:
        if Path(path).name.startswith(GENERATED_PREFIX):
            origin = resolve(path, int(line))
            if origin.filename != path:
                return origin
    return None


_NOT_LITERAL = (
    "An argument that decides the rank of a result (keepdims=, a tuple axis=, ord= of "
    "a norm, einsum's subscripts, tensordot's axes) must be known when compiling: a "
    "constant, or a parameter of the jitted function (marked static with "
    "static_argnames), not a value chosen at run time, as by an if/else. Compute both "
    "results in the branches instead (r = np.sum(x, 0, keepdims=True) if ... else ...)."
)


def _first_meaningful_line(message: str) -> str:
    for line in message.splitlines():
        line = line.strip()
        if line and not line.startswith(("-", "=", ">>>")) and "Failed in" not in line:
            return line
    return message.strip()
