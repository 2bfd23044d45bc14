"""Comparing pytrees: the same structure, and each leaf of the same shape and close."""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax import tree_util


def assert_tree_close(
    got: Any, want: Any, label: str = "", *, rtol: float = 1e-5, atol: float = 1e-6
) -> None:
    """``got`` has ``want``'s tree structure and each of its leaves ``want``'s leaf's
    shape and values (within ``rtol`` and ``atol``); a failure names ``label`` and the
    leaf."""
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    assert got_tree == want_tree, f"{label}: structure {got_tree}, expected {want_tree}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        where = f"{label}, leaf {i}"
        assert np.shape(g) == np.shape(w), f"{where}: shape {np.shape(g)}, expected {np.shape(w)}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=where)
