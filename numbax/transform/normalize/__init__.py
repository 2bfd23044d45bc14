"""Lower a user function to numbax's *core language*, which every later pass consumes.

Forward and reverse mode, batching, Numba lowering and the emitter each handle a few
statement shapes instead of all of Python. :func:`normalize` produces them, computing
exactly what the original computes, and :func:`check_core` (``check.py``) asserts
them. Each of the package's other modules is one of its passes, or a part of the
flattener, the pass that lowers the body statement by statement: ``flatten.py`` (its
state and the names it reads), with ``expressions.py``, ``statements.py`` and
``loops.py`` mixed in.

Core language
=============

::

    function := def NAME(<the user's signature, defaults included>):
                    stmt*
                    return atom                  # the only return, always last

    atom     := Name | Constant                  # numbers (negative literals folded:
                                                 # -3, -1.5), True/False/None, str, ...
    index    := atom | slice | Tuple((atom | slice)*)
    slice    := Slice(atom?, atom?, atom?)
    callee   := Name
              | global_chain                     # np.linalg.norm, math.sqrt (whole)
              | Name(local).method               # x.sum, out.append
    call     := callee(atom*, name=atom*)
    global_chain := Name(non-local) (.attr)+     # rooted at a global/closure name

    value    := atom
              | atom binop atom | unaryop atom
              | atom cmpop atom                  # one operator: <, ==, is, in, ...
              | call
              | Name(local).attr                 # x.T, x.shape
              | global_chain                     # np.pi, np.newaxis, cfg.eps
              | Name[index]
              | (atom, ...) | [atom, ...] | {atom: atom, ...}

    stmt     := Name = value
              | Name, Name, ... = Name           # unpacking (nested targets flattened)
              | Name[index] = atom               # in-place store
              | call                             # kept for its effect: print(x)
              | raise call | raise Name
              | if Name: stmt+ [else: stmt+]
              | for Name in range(atom[, atom[, atom]]): stmt+
              | while Name: stmt+                # a computed test is recomputed at the
                                                 # end of the body and before each continue
              | break | continue
              | pass                             # only as a block's only statement

Every statement carries ``lineno`` (and ``end_lineno``): the line, in the user's file,
of the statement it was lowered from; compound statements keep their header's line.

Lowerings
=========

* One operation per assignment; nested expressions become temporaries in Python's
  evaluation order, named after what they hold (``_exp``, ``_sum``, ``_add``, ``_neg``,
  ``_gt``, ``_x_at`` for ``x[...]``, ``_x_shape`` for ``x.shape``; see ``names.py``).
  When a statement's outermost operation assigns to a user variable it assigns
  directly: ``y = np.exp(x) + 1`` is ``_exp = np.exp(x)``, ``y = _exp + 1``.
* ``x op= v`` is ``x = x op v``. This is *functional*: ``a += 1`` on an array (or a
  list) rebinds ``a`` instead of mutating the object, so a caller's array is not
  changed (and NumPy's in-place casting errors, such as adding a float to an int array
  in place, do not occur); other names of the function for the same array (``c = a``,
  a view ``b = a[:2]``) follow it as in NumPy (normalize/aliases.py). ``a[i] op= v`` is
  ``_a_at = a[i]; _add = _a_at op v; a[i] = _add``, the index computed once, and does
  mutate ``a`` exactly as Python does.
* ``and``/``or``, conditional expressions and chained comparisons become ``if``
  statements that evaluate only what Python evaluates, with Python's value semantics
  (``a or b`` is ``a`` when ``a`` is truthy); the middle operand of ``a < b < c`` is
  evaluated once. ``x := v`` is an assignment. Comprehensions (list and dict) become
  loops that append/store into a fresh container; their loop variables stay private
  (renamed when they would clash with a name of the function).
* Transformations built inside the function from known arguments are built once
  beforehand (normalize/transformations.py), and ``nx.jvp``/``nx.linearize``/``nx.vjp``
  called there become calls of the generated derivative (normalize/jvp_vjp.py).
* Functions defined inside the function are lifted out of it first (nested.py),
  methods of objects it reads from its globals bound to them (methods.py), and starred
  arguments whose length the source says spelled out (normalize/starred.py).
* A write through a name that shares memory with another (``b = a[:2]; b[0] = v``),
  or into an array that another name views, is made explicit on the names it changes
  (``a[:2] = b``, ``b = a[:2]`` again), or refused: normalize/aliases.py.
* ``assert c, msg`` is ``_not = not c; if _not: raise AssertionError(msg)``.
* Loops: see normalize/loops.py (every ``for`` becomes a ``range`` loop) and, for
  ``for/while ... else`` and early returns, normalize/exits.py.
* ``if``/``while`` on a literal test are decided now (``while True:`` loops on
  ``_forever = True``). Docstrings, ``pass``, expression statements without effect and
  statements that can never run are dropped. ``x: T = v`` is ``x = v``.
* Lowered code calls ``range``, ``len``, ``min`` and ``AssertionError`` by name, so a
  local variable with one of those names is renamed (``_range``); a parameter or global
  that hides one of them, where it is needed, is refused.

Where this differs from Python, on purpose: besides the functional ``op=`` above, a
``for`` loop reads its sequence's length once (a body that grows the list it walks
sees only the old items), and iterating needs ``len`` and indexing (arrays, lists,
tuples, ranges; not dicts, sets or iterators). ``obj.method(args)`` looks the method up
after evaluating ``args``, and ``x op= v`` reads ``x`` after ``v``: different only
when ``args``/``v`` rebind ``obj``/``x`` with ``:=``.

Rejected constructs (normalize/reject.py) raise :class:`~numbax.errors.TransformError`
before anything is rewritten; the few refusals that depend on context (a loop over
``d.items()``, a hidden builtin, ``for a, b in zip(x, y, z)``) are raised while
lowering, with the same message shape.
"""

from __future__ import annotations

import gast

from numbax.transform.methods import bind_methods
from numbax.transform.names import Namer
from numbax.transform.nested import lift_nested
from numbax.transform.nodes import clone
from numbax.transform.normalize.aliases import write_through_aliases
from numbax.transform.normalize.check import CoreGrammarError, check_core
from numbax.transform.normalize.exits import lower_loop_else, prune, single_exit
from numbax.transform.normalize.flatten import _Flattener
from numbax.transform.normalize.jvp_vjp import fold_derivative_calls
from numbax.transform.normalize.ravel import rewrite_ravels
from numbax.transform.normalize.reject import reject_matrices, reject_unsupported
from numbax.transform.normalize.starred import expand_starred_arguments
from numbax.transform.normalize.transformations import fold_transformations
from numbax.transform.normalize.values import rewrite_values
from numbax.transform.provenance import annotate
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource

__all__ = ["normalize", "check_core", "CoreGrammarError"]


def normalize(source: FunctionSource, transformation: str = "jit") -> gast.FunctionDef:
    """A new tree for ``source``'s function in the core language (``source`` is untouched,
    but for the transformations built inside the function: see normalize/transformations.py).

    ``transformation`` names the transformation being applied, for error messages.
    """
    fn = lift_nested(clone(source.tree), source, transformation)
    bind_methods(fn, source, transformation)
    expand_starred_arguments(fn, Resolver(source, local_names(fn)))
    reject_unsupported(source, transformation, fn)
    reject_matrices(source, transformation, fn, Resolver(source, local_names(fn)))
    fn = fold_transformations(fn, source)
    fn = fold_derivative_calls(fn, source, transformation)
    fn = rewrite_ravels(fn, source, transformation)
    fn = rewrite_values(fn, source, transformation)
    namer = Namer.for_function(fn)
    body = prune(_without_docstring(fn.body))
    body = lower_loop_else(body, namer)
    body = single_exit(body, namer, fn.lineno)
    fn.body = _Flattener(source, transformation, namer, fn).block(body)
    write_through_aliases(fn, source, transformation)
    annotate(fn, source.filename)
    return fn


def _without_docstring(body: list[gast.stmt]) -> list[gast.stmt]:
    first = body[0] if body else None
    if isinstance(first, gast.Expr) and isinstance(first.value, gast.Constant):
        if isinstance(first.value.value, str):
            return body[1:]
    return body
