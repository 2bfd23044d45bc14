"""Inlining a function at Numba's IR level copies its scope once, not once per block.

numbax's generated callees are inlined into their callers (Numba's ``inline="always"``,
``cpu.py``). Numba inlines by copying the callee's IR (``InlineWorker.inline_ir``), and
copies it block by block, each block with a deep copy of its own. Every block's
variables refer to the function's scope, which holds every variable of the function, so
each block copies the whole scope again: blocks times variables. The VJP of a gradient
with loops and a ``while`` (a program of the fuzz's ``jit_grad_grad`` mode: 903 blocks,
9,466 variables) took 28 s to inline, most of its compile's 100 s.

While numbax compiles (``compiling.numbax_compiling``, this thread), the blocks
of one copy share one memo, as one deep copy of the whole function would: the scope is
copied once per copy and every block's variables refer to that copy. The same function
then compiled in 72 s (the inlining itself in 0.6 s). What a block copy shares with
another is what the callee's own blocks shared. Numba's own copying runs outside
numbax's compiles, and with Numba versions other than those whose ``inline_ir`` copies
this way (:data:`_MIRRORED`).
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import numba
from numba.core import inline_closurecall, ir

from numbax.numba_backend.caching.compiling import in_numbax_compile

_MIRRORED = ("0.68",)
"""Numba versions whose ``InlineWorker.inline_ir`` copies the callee with one
``copy.deepcopy`` per block (through ``inline_closurecall.copy``)."""

_copies = threading.local()
"""``memos``: while an inline_ir call copies, one memo per scope copied from."""


class _BlockCopies:
    """Stands for the ``copy`` module in ``inline_closurecall``, whose only use of it is
    ``copy.deepcopy(block)`` for each block of the callee being copied."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: dict | None = None) -> Any:
        memos = getattr(_copies, "memos", None)
        if memo is None and memos is not None and isinstance(value, ir.Block):
            # one memo per scope copied from: inline_ir copies the callee's IR, then
            # that copy (an unchanged original to return), each with one memo
            memo = memos.setdefault(id(value.scope), (value.scope, {}))[1]
        return copy.deepcopy(value, memo)


def _inline_ir(self: Any, *args: Any, **kwargs: Any) -> Any:
    """``InlineWorker.inline_ir``, its copies of the callee's blocks sharing a memo per
    copy within numbax's compiles."""
    if not in_numbax_compile():
        return _numba_inline_ir(self, *args, **kwargs)
    previous = getattr(_copies, "memos", None)
    _copies.memos = {}  # by id of the scope: each held alive by its entry
    try:
        return _numba_inline_ir(self, *args, **kwargs)
    finally:
        _copies.memos = previous


_numba_inline_ir = inline_closurecall.InlineWorker.inline_ir
if numba.__version__.startswith(_MIRRORED):
    inline_closurecall.copy = _BlockCopies()  # type: ignore[assignment]
    inline_closurecall.InlineWorker.inline_ir = _inline_ir  # type: ignore[method-assign]
