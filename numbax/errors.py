"""Exceptions numbax raises for user mistakes and unsupported code."""

from __future__ import annotations


class TransformError(Exception):
    """A function cannot be transformed as written.

    The message always names the user's function, the construct that stopped the
    transformation, the transformation itself, and the file and line, so that a user
    can go straight to the line and change it.
    """

    def __init__(
        self,
        message: str,
        *,
        function: str | None = None,
        transformation: str | None = None,
        filename: str | None = None,
        lineno: int | None = None,
        construct: str | None = None,
    ) -> None:
        self.function = function
        self.transformation = transformation
        self.filename = filename
        self.lineno = lineno
        self.construct = construct
        self.detail = message
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.filename is not None:
            where = f"{self.filename}, line {self.lineno}" if self.lineno else self.filename
        head = []
        if self.transformation:
            head.append(f"numbax.{self.transformation}")
        if self.function:
            head.append(f"cannot transform {self.function!r}")
        prefix = " ".join(head)
        text = f"{prefix}: {self.detail}" if prefix else self.detail
        if where:
            text += f"\n  at {where}"
        return text


class CompileError(TransformError):
    """Numba could not compile the generated source of a user's function.

    Numba's own message is kept as ``__cause__``; this message says which user line and
    construct were rejected.
    """
