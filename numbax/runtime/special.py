"""SciPy's special functions that derivative rules emit: the derivatives of
``scipy.special``'s functions are themselves special functions (``gammaln``'s is
``digamma``, ``digamma``'s is ``polygamma(1, .)``, ``i0e``'s involves ``i1e``...).

They are SciPy's own function objects, published under ``nxrt`` so that derivative
code can call them whatever the user's module imported: ``nxrt.digamma`` *is*
``scipy.special.psi``, so its derivative rule and its Numba version are those of the
function the user calls (``transform/rules/special.py``,
``numba_backend/runtime/special.py``).

Importing SciPy's special functions takes about half a second, so this module is not
imported with the rest of the runtime: the rules of ``scipy.special`` import it when a
function being transformed is found to call one of them (``rules/registry.py``).
"""

from __future__ import annotations

import scipy.special

from numbax.runtime.registry import helper

# called by vmap's batched form of math.erf, math.erfc, math.lgamma and math.gamma
erf = helper(scipy.special.erf, "erf")
erfc = helper(scipy.special.erfc, "erfc")
gammaln = helper(scipy.special.gammaln, "gammaln")
gamma = helper(scipy.special.gamma, "gamma")
# called by derivatives
digamma = helper(scipy.special.psi, "digamma")
polygamma = helper(scipy.special.polygamma, "polygamma")
i0 = helper(scipy.special.i0, "i0")
i1 = helper(scipy.special.i1, "i1")
i0e = helper(scipy.special.i0e, "i0e")
i1e = helper(scipy.special.i1e, "i1e")
