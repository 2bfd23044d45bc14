"""Checking derivatives against central finite differences, in float64.

``check_jacobians(f, *args)`` compares numbax's ``jacfwd`` and ``jacrev`` of ``f`` (each
differentiable argument in turn) with a central-difference Jacobian, interpreted; then
``nx.jvp`` and ``nx.vjp`` of ``f`` under ``nx.jit``, along a random direction, with the
Jacobian contracted (one compile per mode for all the arguments). A failure names the
function, the argument, the mode and the largest error, so it points at the rule that
broke.
"""

from __future__ import annotations

import importlib.util
import itertools
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import numbax as nx
from numbax import tree_util

EPS = 1e-6


def numeric_jacobian(f: Callable, args: Sequence[Any], argnum: int, eps: float = EPS) -> np.ndarray:
    """d f(*args) / d args[argnum], shape f.shape + x.shape, by central differences."""
    args = list(args)
    x = np.asarray(args[argnum], dtype=np.float64)
    out = np.asarray(f(*args))
    jac = np.zeros(out.shape + x.shape)
    flat = jac.reshape(out.size, x.size)
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        plus = list(args)
        minus = list(args)
        plus[argnum] = _like(x + step, args[argnum])
        minus[argnum] = _like(x - step, args[argnum])
        diff = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * eps)
        flat[:, k] = diff.ravel()
    return jac


def fd_gradient(f: Callable, x: Any, eps: float = EPS) -> np.ndarray:
    """The gradient of the scalar ``f`` at ``x`` (an array of any shape), by central
    differences in float64."""
    return numeric_jacobian(f, [x], 0, eps)


def numeric_tree_jacobian(f: Callable, args: Sequence[Any], argnum: int, eps: float = EPS) -> Any:
    """d f(*args) / d args[argnum] by central differences, in JAX's structure: the output's
    structure holding, at each output leaf, the argument's structure, each leaf shaped
    ``out_leaf.shape + in_leaf.shape``."""
    x_leaves, x_tree = tree_util.tree_flatten(args[argnum])
    out_leaves, out_tree = tree_util.tree_flatten(f(*args))
    rows = [[None] * len(x_leaves) for _ in out_leaves]
    for j, leaf in enumerate(x_leaves):

        def with_leaf(value, i, j=j):
            leaves = list(x_leaves)
            leaves[j] = value
            changed = list(args)
            changed[argnum] = tree_util.tree_unflatten(x_tree, leaves)
            return tree_util.tree_leaves(f(*changed))[i]

        for i in range(len(out_leaves)):
            rows[i][j] = numeric_jacobian(lambda v, i=i: with_leaf(v, i), [leaf], 0, eps)
    return tree_util.tree_unflatten(out_tree, [tree_util.tree_unflatten(x_tree, r) for r in rows])


def numeric_grad(f: Callable, args: Sequence[Any], argnum: int = 0, eps: float = EPS) -> Any:
    """The gradient of the scalar ``f`` w.r.t. ``args[argnum]`` (any pytree), in the
    argument's structure, by central differences."""
    return numeric_tree_jacobian(f, args, argnum, eps)


def _like(value: np.ndarray, original: Any) -> Any:
    return float(value) if isinstance(original, float) else value


def _compare(label: str, got: Any, want: np.ndarray, rtol: float, atol: float) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, f"{label}: shape {got.shape}, expected {want.shape}"
    err = np.max(np.abs(got - want), initial=0.0)
    np.testing.assert_allclose(
        got, want, rtol=rtol, atol=atol, err_msg=f"{label}: max abs error {err:.3g}"
    )


def check_jacobians(
    f: Callable,
    *args: Any,
    argnums: Sequence[int] | None = None,
    name: str | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    jit: bool = True,
    interpreted: bool = True,
) -> None:
    """jacfwd and jacrev of ``f`` w.r.t. each of ``argnums`` (default: every float
    argument) agree with finite differences, interpreted (``interpreted``: a test that
    checks them interpreted already passes False) and (``jit``) compiled.

    Interpreted, each argument is differentiated on its own; under ``jit`` a JVP and a
    VJP along a random direction are compiled once for all of them, as compiling is most
    of the check's time: the compiled code holds the same rules, and a failure of the
    VJP still names the argument."""
    name = name or getattr(f, "__name__", repr(f))
    if argnums is None:
        argnums = [i for i, a in enumerate(args) if np.result_type(a).kind == "f"]
    argnums = list(argnums)
    wants, places = {}, {}
    for i in argnums:
        wants[i] = numeric_jacobian(f, args, i)
        places[i] = f"{name} w.r.t. argument {i} at {_describe(args)}"
        for mode, transform in MODES if interpreted else ():
            got = transform(f, argnums=i)(*args)
            _compare(f"{mode} of {places[i]}, interpreted", got, wants[i], rtol, atol)
    if not jit or not argnums:
        return
    _check_directions_under_jit(f, args, argnums, wants, places, rtol, atol)


def _check_directions_under_jit(
    f: Callable,
    args: Sequence[Any],
    argnums: list[int],
    wants: dict[int, np.ndarray],
    places: dict[int, str],
    rtol: float,
    atol: float,
) -> None:
    """``nx.jvp`` and ``nx.vjp`` of ``f`` compiled (one program each, for all of
    ``argnums``), at a random tangent and cotangent, against the finite-difference
    Jacobians contracted with them.

    The compiled programs hold the same JVP and VJP rules as the Jacobians the caller
    checks interpreted; one direction checks them (a wrong Jacobian agrees with the
    right one along a random direction with probability zero) at a fraction of the
    compile time of ``jit(jacfwd)`` and ``jit(jacrev)``, whose batching of the JVP over
    the basis adds most of it; ``test_rule_table`` compiles each operation's batching."""
    programs = directional_programs(f, len(args))
    rng = np.random.default_rng(len(args))
    check_jvp_under_jit(programs, args, argnums, wants, places[argnums[0]], rng, rtol, atol)
    check_vjp_under_jit(programs, args, argnums, wants, places, rng, rtol, atol)


def check_jvp_under_jit(
    programs: Any,
    args: Sequence[Any],
    argnums: list[int],
    wants: dict[int, np.ndarray],
    place: str,
    rng: np.random.Generator,
    rtol: float,
    atol: float,
) -> None:
    """The compiled JVP (``programs.directional_jvp``) at a random tangent of every
    argument in ``argnums`` (zero for the others) against ``sum_i wants[i] @ t_i``."""
    tangents = [
        _direction(a, rng) if i in argnums else _zero_tangent(a) for i, a in enumerate(args)
    ]
    want = sum(np.tensordot(wants[i], np.asarray(tangents[i]), np.ndim(args[i])) for i in argnums)
    got = nx.jit(programs.directional_jvp)(*args, *tangents)
    _compare(f"jvp of {place} (all arguments at once), under jit", got, want, rtol, atol)


def check_vjp_under_jit(
    programs: Any,
    args: Sequence[Any],
    argnums: list[int],
    wants: dict[int, np.ndarray],
    places: dict[int, str],
    rng: np.random.Generator,
    rtol: float,
    atol: float,
) -> None:
    """The compiled VJP (``programs.directional_vjp``) at a random cotangent ``c``
    against ``c @ wants[i]`` for each argument in ``argnums``."""
    cotangent = _cotangent_like(programs.f(*args), rng)
    cotangents = nx.jit(programs.directional_vjp)(*args, cotangent)
    flat = np.asarray(cotangent)
    for i in argnums:
        want = np.tensordot(flat, wants[i], flat.ndim)
        _compare(f"vjp of {places[i]}, under jit", cotangents[i], want, rtol, atol)


def _direction(value: Any, rng: np.random.Generator) -> Any:
    """A random tangent of ``value``'s shape and dtype."""
    direction = rng.uniform(-1.0, 1.0, np.shape(value))
    if isinstance(value, float):
        return float(direction)
    return direction.astype(np.result_type(value))


def _zero_tangent(value: Any) -> Any:
    """The tangent of an argument not differentiated: zeros (a float for a Python
    number, as numbax takes it)."""
    if isinstance(value, int | float):
        return 0.0
    return np.zeros(np.shape(value), np.result_type(np.result_type(value), np.float64))


def _cotangent_like(out: Any, rng: np.random.Generator) -> Any:
    """A random real cotangent of ``out``'s structure, in its dtype (a vjp is linear over
    real cotangents, so contracting with the Jacobian gives what it returns)."""
    if isinstance(out, tuple | list):
        return type(out)(_cotangent_like(o, rng) for o in out)
    values = rng.uniform(-1.0, 1.0, np.shape(out))
    return values.astype(np.result_type(out)) if np.ndim(out) else np.result_type(out).type(values)


_DIRECTIONAL = """\
import numbax as nx


def directional_jvp({primals}, {tangents}):
    return nx.jvp(f, ({primals},), ({tangents},))[1]


def directional_vjp({primals}, cotangent):
    _, back = nx.vjp(f, {primals})
    return back(cotangent)
"""

_directory: list[Path] = []


def directional_programs(f: Callable, arity: int) -> Any:
    """A new module (numbax reads source from a file) whose functions take ``f``'s JVP
    and VJP, ``f`` bound as its global: one per call, as a compiled function keeps the
    globals it was compiled with."""
    if not _directory:
        _directory.append(Path(tempfile.mkdtemp(prefix="numbax_directional_")))
    name = f"directional_{next(_serial)}"
    path = _directory[0] / f"{name}.py"
    primals = ", ".join(f"a{k}" for k in range(arity))
    tangents = ", ".join(f"t{k}" for k in range(arity))
    path.write_text(_DIRECTIONAL.format(primals=primals, tangents=tangents))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.f = f
    return module


_serial = itertools.count()


MODES = (("jacfwd", nx.jacfwd), ("jacrev", nx.jacrev))


def _describe(args: Sequence[Any]) -> str:
    parts = []
    for a in args:
        if isinstance(a, np.ndarray):
            parts.append(f"array{a.shape}")
        else:
            parts.append(repr(a))
    return "(" + ", ".join(parts) + ")"
