"""Names in groups that a relation joins, transitively (union-find): the names that may
share memory, for passes that must know what a write into one of them reaches."""

from __future__ import annotations


class Groups:
    """Disjoint groups of names: :meth:`join` merges two names' groups, :meth:`root`
    names the group a name is in (itself while it is alone)."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def root(self, name: str) -> str:
        while self._parent.get(name, name) != name:
            name = self._parent[name]
        return name

    def join(self, a: str, b: str) -> None:
        root_a, root_b = self.root(a), self.root(b)
        if root_a != root_b:
            self._parent[root_a] = root_b
