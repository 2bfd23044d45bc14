"""The collective a mapped function calls, if any (a distributed map refuses it).

Collectives (``nx.lax.psum``...) work in the body of the mapped function itself
(``numbax/lax.py``): that body is read here as ``vmap`` reads it, and the first call
resolving to one is named."""

from __future__ import annotations

from typing import Any

from numbax.errors import TransformError
from numbax.transform.batch.collectives import collective_of
from numbax.transform.normalize import normalize
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import read_function
from numbax.transform.walk import walk


def collective_in(fun: Any) -> str | None:
    """The name of the first collective ``fun``'s body calls (None: none, or a
    function numbax cannot read, which the workers then refuse or map as ``vmap``)."""
    try:
        source = read_function(fun, "vmap")
        fn = normalize(source, "vmap")
    except (TransformError, TypeError, OSError):
        return None
    resolver = Resolver(source, local_names(fn))
    for node in walk(fn):
        found = collective_of(node, resolver)
        if found is not None:
            return found.__name__
    return None
