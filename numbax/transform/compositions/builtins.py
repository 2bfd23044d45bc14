"""Python's ``max`` and ``min`` of one sequence, read as the loops they are:
normalization calls these in place of ``max(items)`` and ``min(items)``
(``normalize/values.py``), whose rules are of two numbers.
"""

from numbax.runtime import nxrt


def maximum_of(items):
    """Python's ``max(items)`` of one sequence (a list, tuple or array, read by index;
    a dict or set by its keys, as Python reads it): the larger of each pair in turn, so
    that the derivative at ties is shared as ``max(a, b)`` (``np.maximum``) shares it."""
    items = nxrt.as_sequence(items)
    best = items[0]
    for k in range(1, len(items)):
        best = max(best, items[k])
    return best


def minimum_of(items):
    """Python's ``min(items)`` of one sequence, as :func:`maximum_of`."""
    items = nxrt.as_sequence(items)
    best = items[0]
    for k in range(1, len(items)):
        best = min(best, items[k])
    return best
