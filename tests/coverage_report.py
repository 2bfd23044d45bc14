"""How much of NumPy numbax reads: each public callable of ``numpy``, ``numpy.linalg``
and ``numpy.fft`` and each method of ``np.ndarray``, counted as

* ruled: it has a derivative rule (or numbax reads it as a composition of ruled
  operations, ``numbax/transform/compositions/``);
* non-differentiable: declared without derivative (shapes, comparisons, rounding,
  constructors), so its result is a constant to the transformations;
* refused: applied to a value that carries a derivative, it is a ``TransformError``
  naming it (``tests/autodiff/test_no_silent_inactivity.py`` checks that each one is).

``python -m tests.coverage_report`` prints the counts; ``-v`` also lists what is refused.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import numpy as np

from numbax.transform import rules
from numbax.transform.compositions import composition_for

NAMESPACES = {"numpy": np, "numpy.linalg": np.linalg, "numpy.fft": np.fft}
KINDS = ("ruled", "non-differentiable", "refused")


def kind_of(rule: rules.Rule | None, composed: bool = False) -> str:
    """Which of :data:`KINDS` an operation with this rule (None: none) is."""
    if composed:
        return "ruled"
    if rule is None:
        return "refused"
    return "ruled" if rule.differentiable else "non-differentiable"


def is_composed(value: Any) -> bool:
    """Whether numbax reads ``value`` as a composition of ruled operations."""
    return composition_for(value, sys.maxsize) is not None


def coverage() -> dict[str, dict[str, list[str]]]:
    """Per namespace (and ``ndarray methods``), the names of each kind."""
    out: dict[str, dict[str, list[str]]] = {}
    for prefix, namespace in NAMESPACES.items():
        kinds: dict[str, list[str]] = {k: [] for k in KINDS}
        for name in sorted(n for n in dir(namespace) if not n.startswith("_")):
            value = getattr(namespace, name)
            if inspect.ismodule(value) or not callable(value):
                continue
            kinds[kind_of(rules.rule_for(value), is_composed(value))].append(name)
        out[prefix] = kinds
    kinds = {k: [] for k in KINDS}
    array = np.zeros((2, 2))
    for name in sorted(n for n in dir(np.ndarray) if not n.startswith("_")):
        if callable(getattr(array, name)):
            kinds[kind_of(rules.method_rule(name))].append(name)
    out["ndarray methods"] = kinds
    return out


def main(argv: list[str]) -> None:
    for namespace, kinds in coverage().items():
        counts = ", ".join(f"{len(kinds[k])} {k}" for k in KINDS)
        print(f"{namespace}: {counts}")
        if "-v" in argv:
            print("  refused: " + " ".join(kinds["refused"]))


if __name__ == "__main__":
    main(sys.argv[1:])
