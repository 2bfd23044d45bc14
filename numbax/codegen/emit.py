"""Turn generated gast trees into readable source text, with comments back to user lines.

ASTs carry no comments, so statements are emitted one at a time (each through astor)
and a ``# line N: <user code>`` comment is written whenever the user line a statement
came from changes. The emitter also returns which generated line came from which user
line, so errors raised in generated code can point at the user's own line.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

import astor
import gast

INDENT = "    "

ADJOINT_COLUMN = -1
"""A statement whose ``col_offset`` is this was generated as the adjoint (the reverse
sweep) of its user line: its comment reads ``# adjoint of line N: ...``. (ASTs carry no
free-form annotations across the gast → ast conversion; positions do.)"""

_COMPOUND = (ast.If, ast.While, ast.For)


@dataclass
class EmittedSource:
    """Source text plus a map from its line numbers to the user's line numbers."""

    text: str
    line_map: dict[int, int] = field(default_factory=dict)

    def user_line(self, generated_line: int) -> int | None:
        """The user line that ``generated_line`` was generated from, if known."""
        while generated_line > 0:
            if generated_line in self.line_map:
                return self.line_map[generated_line]
            generated_line -= 1
        return None


def _header(node: ast.If | ast.While | ast.For, keyword: str | None = None) -> str:
    """``if test:`` / ``while test:`` / ``for t in it:`` as astor formats the statement."""
    shell = type(node)(**{**vars(node), "body": [ast.Pass()], "orelse": []})
    line = astor.to_source(shell).splitlines()[0]
    return line if keyword is None else keyword + line[len("if") :]


class _Writer:
    def __init__(self, describe_line: Callable[[int], str] | None) -> None:
        self.lines: list[str] = []
        self.line_map: dict[int, int] = {}
        self.describe_line = describe_line
        self.last_user_line: int | None = None

    def write(self, text: str, depth: int, user_line: int | None = None) -> None:
        for part in text.splitlines():
            self.lines.append(INDENT * depth + part)
            if user_line is not None:
                self.line_map[len(self.lines)] = user_line

    def comment_for(self, node: ast.AST, depth: int) -> int | None:
        user_line = getattr(node, "lineno", None)
        if user_line is None or self.describe_line is None:
            return None
        adjoint = getattr(node, "col_offset", None) == ADJOINT_COLUMN
        key = (user_line, adjoint)
        if key != self.last_user_line:
            text = self.describe_line(user_line)
            label = f"adjoint of line {user_line}" if adjoint else f"line {user_line}"
            self.write(f"# {label}: {text}" if text else f"# {label}", depth)
            self.last_user_line = key
        return user_line

    def body(self, stmts: list[ast.stmt], depth: int) -> None:
        if not stmts:
            self.write("pass", depth)
        for stmt in stmts:
            self.statement(stmt, depth)

    def statement(self, node: ast.stmt, depth: int) -> None:
        user_line = self.comment_for(node, depth)
        if not isinstance(node, _COMPOUND):
            self.write(astor.to_source(node).rstrip("\n"), depth, user_line)
            return
        self.write(_header(node), depth, user_line)
        self.body(node.body, depth + 1)
        if node.orelse:
            # `elif` chains read better than nested if/else.
            if (
                isinstance(node, ast.If)
                and len(node.orelse) == 1
                and isinstance(node.orelse[0], ast.If)
            ):
                self.last_user_line = None
                self._elif(node.orelse[0], depth)
            else:
                self.write("else:", depth)
                self.body(node.orelse, depth + 1)
        # The statement after a block needs its comment even if on the same line.
        self.last_user_line = None

    def _elif(self, node: ast.If, depth: int) -> None:
        self.write(_header(node, "elif"), depth, getattr(node, "lineno", None))
        self.body(node.body, depth + 1)
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            self._elif(node.orelse[0], depth)
        elif node.orelse:
            self.write("else:", depth)
            self.body(node.orelse, depth + 1)


def emit_function(
    fn: gast.FunctionDef | ast.FunctionDef,
    describe_line: Callable[[int], str] | None = None,
    header: str | None = None,
) -> EmittedSource:
    """Source of one function definition.

    ``describe_line(n)`` gives the user's text of line ``n`` for the ``# line`` comments;
    ``header`` is a comment block written above the ``def`` (e.g. which transformation
    of which user function this is).
    """
    node = gast.gast_to_ast(fn) if isinstance(fn, gast.AST) else fn
    writer = _Writer(describe_line)
    if header:
        for line in header.splitlines():
            writer.write(f"# {line}" if line else "#", 0)
    shell = astor.to_source(
        ast.FunctionDef(
            name=node.name,
            args=node.args,
            body=[ast.Pass()],
            decorator_list=[],
            returns=None,
            type_comment=None,
            type_params=[],
        )
    )
    signature = shell.rstrip().rsplit("\n", 1)[0]  # a long one spans several lines
    for decorator in node.decorator_list:
        writer.write("@" + astor.to_source(decorator).strip(), 0)
    writer.write(signature, 0, getattr(node, "lineno", None))
    writer.body(_without_docstring(node.body), 1)
    return EmittedSource("\n".join(writer.lines) + "\n", writer.line_map)


def emit_module(functions: list[EmittedSource], preamble: str = "") -> EmittedSource:
    """Join several emitted functions into one module, keeping their line maps."""
    lines: list[str] = preamble.splitlines()
    line_map: dict[int, int] = {}
    for emitted in functions:
        if lines:
            lines += ["", ""]
        offset = len(lines)
        lines += emitted.text.splitlines()
        line_map.update({k + offset: v for k, v in emitted.line_map.items()})
    return EmittedSource("\n".join(lines) + "\n", line_map)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body
