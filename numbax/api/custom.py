"""User-supplied derivative rules and rematerialization: ``custom_jvp``, ``custom_vjp``,
``checkpoint``, with JAX's decorator API.

A function with a custom rule is still an ordinary function to call and to ``jit`` (the
primal is compiled as written). What the derivative transformations do with a call to it
is decided here: instead of reading its source, they call a small generated function
built from the user's rule, written to the cache like every other generated module so
that it can be read, compiled by Numba, and differentiated again (a Hessian through a
custom rule differentiates the rule itself, as in JAX):

* ``custom_jvp``: the JVP calls ``rule(primals, tangents)``. Its VJP is the transpose of
  the rule's tangent output, which is linear in the tangents: numbax reverse-
  differentiates that output with respect to the tangents (at zero tangents), so one
  JVP rule serves both modes, as in JAX.
* ``custom_vjp``: the VJP calls ``fwd`` then ``bwd``; forward mode is refused, as in JAX.
* ``checkpoint``: reverse mode stores only the call's arguments and recomputes the
  function's intermediates in the backward pass.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from numbax.api.callable import callable_target
from numbax.api.rewritten import (
    Rewritten,
    binding,
    load_generated,
    tangent_name,
    user_origin,
    where,
)
from numbax.api.transformed import Generated, callee_derivative
from numbax.transform.ad.common import RUNTIME
from numbax.transform.normalize.calls import keyword_only_function, positional_view
from numbax.transform.source import display_name

__all__ = ["checkpoint", "custom_jvp", "custom_vjp", "remat"]


class custom_jvp(Rewritten):
    """A function with a user-supplied JVP rule (JAX's ``jax.custom_jvp``)::

        @nx.custom_jvp
        def f(x, y):
            return np.sin(x) * y

        @f.defjvp
        def f_jvp(primals, tangents):
            x, y = primals
            x_dot, y_dot = tangents
            return f(x, y), np.cos(x) * x_dot * y + np.sin(x) * y_dot

    The rule gets ``(primals, tangents)`` as tuples (after the ``nondiff_argnums``
    arguments, passed first) and returns ``(primal_out, tangent_out)``; tangents of
    arguments that are not being differentiated are zeros. Reverse mode uses the same
    rule, transposed, so ``grad``, ``jacrev`` and ``hessian`` honour it too. The rule
    must be linear in the tangents, as JAX requires.
    """

    transformation = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums, "nondiff_argnums")
        self.jvp: Callable | None = None
        self.jvps: tuple[Callable | None, ...] | None = None

    def _key(self) -> tuple:
        return (*self.static, self.jvp, *(self.jvps or ()))

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule ``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        if symbolic_zeros:
            raise NotImplementedError(
                "custom_jvp.defjvp(symbolic_zeros=True): numbax passes zero arrays for "
                "tangents of arguments that are not differentiated; leave it False."
            )
        self.jvp, self.jvps = jvp, None
        self._forget_derivatives()
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """Set one rule per argument: ``jvps[i](tangent_i, primal_out, *primals)`` is
        argument ``i``'s contribution to the output's tangent (None: it has none)."""
        self.jvp, self.jvps = None, jvps
        self._forget_derivatives()

    def _derive(self, mode: str, positions: tuple[int, ...], params: list[str]) -> Generated:
        if self.jvp is None and self.jvps is None:
            raise AttributeError(
                f"No JVP defined for custom_jvp function {display_name(self.fun)} using defjvp."
            )
        if mode == "jvp":
            return self._jvp(positions, params)
        return self._vjp(positions, params)

    def _rule_call(self, params: list[str], tangents: list[str]) -> tuple[list[str], dict]:
        """Lines computing ``_out, _tangent_out`` by the rule, and what they bind."""
        namespace: dict[str, Any] = {}
        if self.jvp is not None:
            rule = binding(self.jvp, "_jvp_rule", params)
            namespace[rule] = self.jvp
            fixed = [params[i] for i in self.static]
            differentiable = [i for i in range(len(params)) if i not in self.static]
            primals = _tuple([params[i] for i in differentiable])
            tangent_tuple = _tuple([tangents[i] for i in differentiable])
            args = ", ".join([*fixed, primals, tangent_tuple])
            return [f"    _out, _tangent_out = {rule}({args})"], namespace
        custom = f"_custom_{self.name}"
        namespace[custom] = self
        args = ", ".join(params)
        lines = [f"    _out = {custom}({args})"]
        terms = []
        for i, rule_i in enumerate(self.jvps):
            if rule_i is None or i >= len(params):
                continue
            name = binding(rule_i, f"_jvp_{params[i]}", params)
            if name in namespace:
                name = f"_jvp_{params[i]}"
            namespace[name] = rule_i
            terms.append(f"{name}({tangents[i]}, _out, {args})")
        total = " + ".join(terms) if terms else f"{RUNTIME}.zeros_like(_out)"
        return [*lines, f"    _tangent_out = {total}"], namespace

    def _tangent_args(self, params: list[str], positions: tuple[int, ...]) -> list[str]:
        """Each parameter's tangent: a parameter where differentiated, else zeros."""
        return [
            tangent_name(p) if i in positions else f"{RUNTIME}.zeros_like({p})"
            for i, p in enumerate(params)
        ]

    def _jvp(self, positions: tuple[int, ...], params: list[str]) -> Generated:
        name = f"jvp_{self.name}"
        signature = ", ".join([*params, *(tangent_name(params[i]) for i in positions)])
        lines, namespace = self._rule_call(params, self._tangent_args(params, positions))
        return load_generated(
            name,
            [f"JVP of {where(self.fun)}", f"by its custom rule {self._rule_names()}"],
            [f"def {name}({signature}):", *lines, "    return _out, _tangent_out"],
            namespace,
            of=self.__numbax_function__(),
        )

    def _vjp(self, positions: tuple[int, ...], params: list[str]) -> Generated:
        """The transpose of the rule's tangent output: its VJP w.r.t. the tangents."""
        function_name = f"tangent_{self.name}"
        tangents = [tangent_name(p) for p in params]
        lines, namespace = self._rule_call(params, tangents)
        tangent_fn = load_generated(
            function_name,
            [
                f"tangent output of {where(self.fun)}'s custom rule {self._rule_names()}:",
                "linear in the tangents, so its VJP in them is the rule's transpose",
            ],
            [
                f"def {function_name}({', '.join(params + tangents)}):",
                *lines,
                "    return _tangent_out",
            ],
            namespace,
            origin=user_origin(self.fun),
        )
        wrt = tuple(len(params) + i for i in positions)
        transpose = callee_derivative(tangent_fn.function, "vjp", wrt)
        name = f"vjp_{self.name}"
        zeros = [f"{RUNTIME}.zeros_like({p})" for p in params]
        call = ", ".join([*params, *zeros, "_ct_out"])
        return load_generated(
            name,
            [
                f"VJP of {where(self.fun)}",
                f"by its custom rule {self._rule_names()}, transposed",
            ],
            [f"def {name}({', '.join(params)}, _ct_out):", f"    return _transpose({call})"],
            {"_transpose": transpose.function},
            of=self.__numbax_function__(),
        )

    def _rule_names(self) -> str:
        if self.jvp is not None:
            return where(self.jvp)
        return ", ".join(where(r) for r in self.jvps if r is not None) or "(no term)"


class custom_vjp(Rewritten):
    """A function with a user-supplied VJP rule (JAX's ``jax.custom_vjp``)::

        @nx.custom_vjp
        def f(x):
            return np.log1p(np.exp(x))

        def f_fwd(x):
            return f(x), np.exp(x)            # output, residuals

        def f_bwd(e, g):
            return (g * e / (1 + e),)         # one cotangent per argument

        f.defvjp(f_fwd, f_bwd)

    ``bwd(*nondiff_args, residuals, g)`` returns a tuple with one cotangent per
    differentiable argument (None for a zero). Forward mode (``jvp``, ``jacfwd``) is
    refused, as in JAX.
    """

    transformation = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums, "nondiff_argnums")
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def _key(self) -> tuple:
        return (*self.static, self.fwd, self.bwd)

    def defvjp(
        self,
        fwd: Callable,
        bwd: Callable,
        symbolic_zeros: bool = False,
        optimize_remat: bool = False,
    ) -> None:
        """Set the rule: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, g)``."""
        if symbolic_zeros:
            raise NotImplementedError(
                "custom_vjp.defvjp(symbolic_zeros=True) is not supported by numbax; leave it False."
            )
        self.fwd, self.bwd = fwd, bwd
        self._forget_derivatives()

    def _derive(self, mode: str, positions: tuple[int, ...], params: list[str]) -> Generated:
        if mode == "jvp":
            raise TypeError(
                "can't apply forward-mode autodiff (jvp) to a custom_vjp function "
                f"({where(self.fun)}). Use reverse mode (grad, vjp, jacrev), or define "
                "the rule with custom_jvp, which serves both modes."
            )
        if self.fwd is None or self.bwd is None:
            raise AttributeError(
                f"No VJP defined for custom_vjp function {display_name(self.fun)} using defvjp."
            )
        fwd = binding(self.fwd, "_fwd", params)
        bwd = binding(self.bwd, "_bwd", [*params, fwd])
        differentiable = [i for i in range(len(params)) if i not in self.static]
        fixed = [params[i] for i in self.static]
        primals = _tuple([params[i] for i in differentiable])
        bwd_args = ", ".join([*fixed, "_residuals", "_ct_out"])
        picked = [f"_cts[{differentiable.index(i)}]" for i in positions]
        name = f"vjp_{self.name}"
        body = [
            f"def {name}({', '.join(params)}, _ct_out):",
            f"    _residuals = {fwd}({', '.join(params)})[1]",
            f"    _cts = {RUNTIME}.custom_cotangents({bwd}({bwd_args}), {primals}, {bwd!r})",
            f"    return {_tuple(picked)}",
        ]
        return load_generated(
            name,
            [
                f"VJP of {where(self.fun)}",
                f"by its custom rule {where(self.fwd)}, then {where(self.bwd)}",
            ],
            body,
            {fwd: self.fwd, bwd: self.bwd},
            of=self.__numbax_function__(),
        )


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


class _Checkpointed(Rewritten):
    """``checkpoint(f)``: see :func:`checkpoint`."""

    transformation = "checkpoint"
    _by_position: _Checkpointed | None = None

    @property
    def keyword_only(self) -> bool:
        """Keyword-only parameters are taken where numbax reads them by position: a
        Python function's (or ``jit`` of one), not a transformation's."""
        return keyword_only_function(self.fun) is not None

    def __numbax_function__(self) -> Callable:
        """Transformations read ``f`` itself: only calls to it are treated differently."""
        fun = self.fun.fun if hasattr(self.fun, "nested_dispatcher") else self.fun
        return callable_target(fun)

    def _derive(self, mode: str, positions: tuple[int, ...], params: list[str]) -> Generated:
        return callee_derivative(self.fun, mode, positions)

    def __numbax_by_position__(self, n_positional: int, keywords: tuple[str, ...]) -> Any:
        """The checkpoint of the function's positional view (its keyword-only parameters
        taken by position after the others), which calls passing keywords call instead."""
        function = keyword_only_function(self.fun)
        if function is None:  # what numbax cannot read by position: say so
            return super().__numbax_by_position__(n_positional, keywords)
        if self._by_position is None:
            view = positional_view(function, self.transformation)
            self._by_position = _Checkpointed(view, self.static, self.static_what)
        return self._by_position


def checkpoint(
    fun: Callable | None = None,
    *,
    prevent_cse: bool = True,
    policy: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Any:
    """Recompute ``fun``'s intermediates in the backward pass instead of storing them
    (JAX's ``jax.checkpoint``, also ``nx.remat``).

    Reverse mode through a call to the result stores only the call's arguments; the
    backward pass runs ``fun``'s own generated VJP, which repeats its forward
    computation. In a long loop whose body is a checkpointed function, the tape then
    holds the loop-carried state, once per iteration, and nothing of the body's
    temporaries. This is how numbax differentiates every call to a user function;
    ``checkpoint`` makes the choice explicit, so that code written for JAX keeps it.

    ``prevent_cse`` is accepted for JAX compatibility (numbax does not merge repeated
    computations across a call). ``policy`` must be None: saving some intermediates
    by a policy is not supported. Arguments in ``static_argnums`` must not depend on
    the differentiated input.
    """
    if policy is not None:
        raise NotImplementedError(
            "numbax.checkpoint(policy=...) is not supported: a checkpointed function saves "
            "nothing but its arguments. Leave policy=None, or call the function without "
            "checkpoint to let reverse mode store what it needs."
        )
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if fun is None:
        return functools.partial(
            checkpoint, prevent_cse=prevent_cse, policy=policy, static_argnums=static
        )
    return _Checkpointed(fun, static, "static_argnums")


remat = checkpoint
