"""NumPy under Numba: numbax's versions of the NumPy functions Numba lacks, lacks
arguments of, or compiles with other semantics, one module per family.

numbax promises that a function which runs under NumPy runs the same once jitted, and its
automatic differentiation emits NumPy calls in the code it generates, so each must
compile. Where Numba 0.68 falls short, a module here holds a function of the same name
and meaning, declared with ``@redirect(np.<function>)``: the lowering rewrites a call
that resolves to the NumPy function (by identity) into ``nxrt.<name>(...)``. Called from
plain Python, the function simply calls NumPy; a ``numba.extending.overload`` registered
on it (never on the NumPy function itself: Numba's own functions are left alone) compiles
the same call in nopython mode with NumPy's semantics, delegating to Numba's own
implementation where that one is right. What Numba must know when it compiles (a
result's rank, an ``axis`` tuple's length) is taken from the argument types, and made a
compile-time constant with ``numba.literally`` where it has to be.

Where Numba lacks ``np.F``, the family of ``F`` says where it goes:

* ``elementwise.py``: elementwise functions that are not ufuncs (``sinc``, ``angle``,
  ``clip``);
* ``products.py``: products and contractions (``dot``, ``matmul``, ``vdot``, ``inner``,
  ``tensordot``, ``einsum``, ``@`` of two dtypes);
* ``norms.py``: a number of each vector or matrix (``linalg.norm``, ``trace``,
  ``linalg.det``, ``linalg.slogdet``);
* ``linalg.py``: the rest of ``numpy.linalg`` (decompositions, solvers, NumPy 2's
  ``linalg`` names);
* ``shapes.py``: shapes, joins and repetitions (``reshape``, ``squeeze``, ``concatenate``,
  ``stack``, ``flip``, ``roll``, ``tile``, ``repeat``, ``atleast_1d``...);
* ``selection.py``: sorting, ``take``, ``choose``, ``select``, indexing with a list, and
  Python builtins on arrays;
* ``reductions.py``: ``sum``, ``mean``, ``max``, ``argmax``, ``var``, ``cumsum``... (its
  loops in ``reduction_loops.py``, their folds in ``reduction_folds.py``);
* ``grids.py``: ``meshgrid``.

What they all read from argument types (None, constants, axes, NumPy's dtypes) is
``_typing.py``'s, shared with the runtime helpers' Numba versions (``runtime/``). NumPy's
scalar rules under Numba (``scalars.py``, ``scalar_rules.py``) and Python scalars next to
arrays (``weak.py``) are here too. ``numba_backend/registered.py`` imports every module,
which registers its overloads.
"""
