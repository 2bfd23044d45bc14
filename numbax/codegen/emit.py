"""Turn generated gast trees into readable source text, with comments back to user lines.

ASTs carry no comments, so statements are emitted one at a time (each through astor)
and a ``# line N: <user code>`` comment (``# adjoint of line N: ...`` in an adjoint
sweep) is written where the user line a statement comes from changes. That line is the
statement's :class:`~numbax.transform.provenance.Origin`, which the transformations
annotate; each emitted module records the origin of its lines, so that code generated
from generated code is still commented with the user's own lines. The emitter also
returns which generated line came from which line of the function's source, so errors
raised in generated code can point at it.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import astor
import gast

from numbax.transform.provenance import Origin, lines_of, origin_of, record_module

INDENT = "    "

_COMPOUND = (ast.If, ast.While, ast.For)


@dataclass
class EmittedSource:
    """Source text plus a map from its line numbers to the user's line numbers."""

    text: str
    line_map: dict[int, int] = field(default_factory=dict)
    origins: dict[int, Origin] = field(default_factory=dict)  # the user's line of each line

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
    def __init__(
        self,
        describe_line: Callable[[int], str] | None,
        origins: dict[int, Origin],
        home: str | None,
        lines_from: str | None,
    ) -> None:
        self.lines: list[str] = []
        self.line_map: dict[int, int] = {}
        self.origins: dict[int, Origin] = {}
        self.describe_line = describe_line
        self.statement_origins = origins  # id of an ast statement → its origin
        self.home = home  # the file the function's own origin is in
        # the user's line behind a line of the file the statements' numbers are lines of
        self.line_origin = lines_of(lines_from) if lines_from is not None else None
        self.last_comment: tuple[Origin, int] | None = None  # and its depth
        self.commented: set[Origin] = set()

    def write(
        self, text: str, depth: int, user_line: int | None = None, origin: Origin | None = None
    ) -> None:
        for part in text.splitlines():
            self.lines.append(INDENT * depth + part)
            if user_line is not None:
                self.line_map[len(self.lines)] = user_line
            if origin is not None and origin.filename:  # annotated by a transformation
                self.origins[len(self.lines)] = origin

    def origin(self, node: ast.AST) -> Origin | None:
        origin = self.statement_origins.get(id(node))
        if origin is None and getattr(node, "lineno", None) is not None:
            if self.line_origin is not None:
                return self.line_origin(node.lineno)
            return Origin("", node.lineno)  # described by describe_line
        return origin

    def comment_for(self, node: ast.stmt, depth: int) -> Origin | None:
        """Write the comment naming ``node``'s user line where that line changes (or
        where the last comment is inside a block this statement follows); a ``return``
        does not repeat a line commented already."""
        origin = self.origin(node)
        if origin is None:
            return None
        last = self.last_comment
        if last is not None and last[0] == origin and last[1] <= depth:
            return origin
        if isinstance(node, ast.Return) and origin in self.commented:
            return origin
        if origin.filename or self.describe_line is not None:
            self.write(f"# {self._describe(origin)}", depth)
        self.last_comment = (origin, depth)
        self.commented.add(origin)
        return origin

    def _describe(self, origin: Origin) -> str:
        if origin.filename:
            text = origin.text
        else:
            text = self.describe_line(origin.line) if self.describe_line else ""
        label = origin.label
        if origin.filename and self.home is not None and origin.filename != self.home:
            label = f"{os.path.basename(origin.filename)}, {label}"
        return f"{label}: {text}" if text else label

    def body(self, stmts: list[ast.stmt], depth: int) -> None:
        if not stmts:
            self.write("pass", depth)
        for stmt in stmts:
            self.statement(stmt, depth)

    def statement(self, node: ast.stmt, depth: int) -> None:
        origin = self.comment_for(node, depth)
        user_line = getattr(node, "lineno", None)
        if not isinstance(node, _COMPOUND):
            self.write(astor.to_source(node).rstrip("\n"), depth, user_line, origin)
            return
        self.write(_header(node), depth, user_line, origin)
        self.body(node.body, depth + 1)
        if node.orelse:
            # `elif` chains read better than nested if/else.
            if (
                isinstance(node, ast.If)
                and len(node.orelse) == 1
                and isinstance(node.orelse[0], ast.If)
            ):
                self._elif(node.orelse[0], depth)
            else:
                self.write("else:", depth)
                self.body(node.orelse, depth + 1)

    def _elif(self, node: ast.If, depth: int) -> None:
        origin = self.origin(node)
        self.write(_header(node, "elif"), depth, getattr(node, "lineno", None), origin)
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
    lines_from: str | None = None,
) -> EmittedSource:
    """Source of one function definition.

    A statement annotated with its origin is commented with it. One that is not (made
    by a pass that only gave it a ``lineno``) is commented with the user's line behind
    line ``lineno`` of ``lines_from``, the file the tree was read from; without that
    file, ``describe_line(n)`` gives the text of line ``n``. When ``describe_line`` is
    a :class:`~numbax.transform.source.FunctionSource`'s ``line``, its file is
    ``lines_from``. ``header`` is a comment block written above the ``def`` (e.g. which
    transformation of which user function this is).
    """
    node = gast.gast_to_ast(fn) if isinstance(fn, gast.AST) else fn
    origins = _statement_origins(fn, node) if isinstance(fn, gast.AST) else {}
    if lines_from is None:
        lines_from = getattr(getattr(describe_line, "__self__", None), "filename", None)
    home = origin_of(fn)
    if home is None and lines_from is not None and getattr(node, "lineno", None):
        home = lines_of(lines_from)(node.lineno)
    writer = _Writer(describe_line, origins, home.filename if home else None, lines_from)
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
    writer.write(signature, 0, getattr(node, "lineno", None), home)
    writer.body(_without_docstring(node.body), 1)
    return EmittedSource("\n".join(writer.lines) + "\n", writer.line_map, writer.origins)


def _statement_origins(tree: gast.FunctionDef, node: ast.FunctionDef) -> dict[int, Origin]:
    """The origins the gast statements of ``tree`` carry, by the id of the ast statement
    ``gast_to_ast`` made of each (which keeps no attribute of its own)."""
    found: dict[int, Origin] = {}

    def walk(before: list[gast.stmt], after: list[ast.stmt]) -> None:
        for old, new in zip(before, after, strict=True):
            origin = origin_of(old)
            if origin is not None:
                found[id(new)] = origin
            for block in ("body", "orelse"):
                walk(getattr(old, block, []), getattr(new, block, []))

    walk(tree.body, node.body)
    return found


def emit_module(functions: list[EmittedSource], preamble: str = "") -> EmittedSource:
    """Join several emitted functions into one module, keeping their line maps."""
    lines: list[str] = preamble.splitlines()
    line_map: dict[int, int] = {}
    origins: dict[int, Origin] = {}
    for emitted in functions:
        if lines:
            lines += ["", ""]
        offset = len(lines)
        lines += emitted.text.splitlines()
        line_map.update({k + offset: v for k, v in emitted.line_map.items()})
        origins.update({k + offset: v for k, v in emitted.origins.items()})
    text = "\n".join(lines) + "\n"
    record_module(text, origins)  # what reads this module again maps its lines back
    return EmittedSource(text, line_map, origins)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body
