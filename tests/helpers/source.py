"""Where a test's own code is: the file line an error or a generated comment must name."""

from __future__ import annotations

import inspect
from typing import Any


def line_of(function: Any, text: str) -> int:
    """The file line of the one source line of ``function`` that contains ``text``."""
    lines, first = inspect.getsourcelines(function)
    matches = [first + k for k, line in enumerate(lines) if text in line]
    assert len(matches) == 1, f"{text!r} is on {len(matches)} lines of {function.__name__}"
    return matches[0]
