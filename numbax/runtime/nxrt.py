"""The namespace generated code calls its helpers through: ``nxrt.<name>(...)``.

Empty as written: every function here is put here by registration, the runtime's
helpers by ``@helper`` (``numbax/runtime/registry.py``) and the names only compiled
code calls (the jit pipeline's redirects of NumPy functions) by ``numba_backend``. It
is a module, not a mapping, so that Numba resolves ``nxrt.<name>`` as a global like any
module attribute, and one object, bound as ``nxrt`` in generated code interpreted and
compiled alike. Import ``numbax.runtime`` (which registers every helper) rather than
this module directly.
"""
