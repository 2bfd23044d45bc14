"""Operations that numbax reads as the compositions they are.

Many functions of NumPy and SciPy are short programs of operations that have rules:
``np.kron(a, b)`` is an outer product with its axes interleaved, ``cond(a, p)`` is
``norm(a, p) * norm(inv(a), p)``, ``scipy.stats.norm.logpdf`` a formula of ``log`` and
products. Rather than a rule each (whose templates would spell out the chain rule
through the whole program, with helpers for the adjoints and Numba versions of those),
such an operation is written once, in NumPy, as a plain function with a docstring in
the module of its family here, and declared with :func:`composes`::

    @composes(np.kron)
    def kron(a, b):
        ...

Normalization reads a call of the operation as a call of the function
(``normalize/values.py``, through :func:`composition_for`), and the transformations read
the function as they read a helper of the user's (every module of this package is read
as user code: ``operations.READ_AS_USER_CODE``): its derivatives of every order and its
batching come from the rules of what it calls, and under ``jit`` it compiles as the
user's code does. Each function computes what the operation computes, in the same order
of operations where it matters for rounding.

The functions are plain NumPy in numbax's core language, without annotations (generated
code is loaded without their module's imports); a refusal inside one names the function
and its line. A family of SciPy's operations is imported the first time a call of one
of that SciPy module's objects is read, so that a program that never imports SciPy does
not pay for it.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from numbax.transform.rules.registry import qualified_name


class Composition(NamedTuple):
    """A declared composition: the function, the operation's name as messages write it
    (``numpy.kron``), and how many arguments a call must pass beyond which it is read
    as the function (up to that many, the operation's own rule covers the call)."""

    function: Callable[..., Any]
    name: str
    beyond: int


_BY_KEY: dict[Any, Composition] = {}
_KEEP_ALIVE: list[Any] = []  # the objects keyed by identity stay alive

_FAMILIES = {"scipy.stats": "numbax.transform.compositions.stats"}
"""A module of SciPy → the family of compositions of its operations, imported the first
time a call of one of that module's objects is read."""
_LOADED: set[str] = set()


def _owner(operation: Any) -> Any:
    """The object ``operation`` is a method of (a ``scipy.stats`` distribution for
    ``norm.logpdf``), or None for a function."""
    owner = getattr(operation, "__self__", None)
    return None if owner is None or inspect.ismodule(owner) else owner


def _key(operation: Any) -> Any:
    """How a call's target finds its composition: the operation's identity, or for a
    method (a new bound method at each access) the identity of its object and its name."""
    owner = _owner(operation)
    return id(operation) if owner is None else (id(owner), operation.__name__)


def _name(operation: Any) -> str:
    """``numpy.kron``, ``scipy.stats.norm.logpdf``: how messages name the operation."""
    owner = _owner(operation)
    if owner is None:
        return qualified_name(operation)
    module = sys.modules[type(owner).__module__.split("._")[0]]
    name = next(k for k, v in vars(module).items() if v is owner and not k.startswith("_"))
    return f"{module.__name__}.{name}.{operation.__name__}"


def composes(operation: Any, *, beyond: int = 0) -> Callable[[Callable], Callable]:
    """Declare the decorated function what a call of ``operation`` is read as. With
    ``beyond``, only calls that pass more arguments than that are (the operation has a
    rule for the shorter calls: ``np.linalg.cond(a)``)."""

    def declare(function: Callable) -> Callable:
        owner = _owner(operation)
        _KEEP_ALIVE.append(operation if owner is None else owner)
        _BY_KEY[_key(operation)] = Composition(function, _name(operation), beyond)
        return function

    return declare


def composition_for(target: Any, arguments: int) -> Composition | None:
    """The composition a call of ``target`` passing ``arguments`` arguments is read as,
    or None."""
    _load_family_of(target)
    try:
        composition = _BY_KEY.get(_key(target))
    except (AttributeError, TypeError):  # a method without a name: no operation of ours
        return None
    if composition is None or arguments <= composition.beyond:
        return None
    return composition


def is_composition_module(module: str) -> bool:
    """Whether ``module`` is one of this package's, whose functions are read as user code."""
    return module == __name__ or module.startswith(__name__ + ".")


def _load_family_of(target: Any) -> None:
    """Import the family of compositions of the SciPy module ``target`` belongs to, if
    it has one and it is not imported yet."""
    module = getattr(target, "__module__", None)
    if not isinstance(module, str):
        return
    for prefix, family in _FAMILIES.items():
        if family not in _LOADED and (module == prefix or module.startswith(prefix + ".")):
            _LOADED.add(family)
            importlib.import_module(family)


from numbax.transform.compositions import linalg  # noqa: E402, F401  (NumPy's: always declared)
