"""``vmap``'s transformation: a function of one example made a function of a batch.

Each module one job, all building gast trees (``nodes.py``) that ``numbax.api.vmap``
emits and loads:

* ``loop.py``: the loop method, a generated loop that calls the function once per
  example (always applies); ``axes.py`` spells pytree prefixes of axes out leaf by leaf;
* ``vectorize.py``: the vectorized method, the body rewritten to run on the whole batch,
  each operation by its batching rule (``rules/batch_kinds.py``), or :class:`Decline`
  saying why not; its statements and control flow are ``vectorize_statements.py``, its
  expressions ``vectorize_expressions.py``;
* ``collectives.py``: for the loop method, the body split at each collective
  (``nx.lax.psum``...), one loop per part and the reductions between them;
* ``derivatives.py``: the JVP and VJP of a batched function, which call the batched
  JVP and VJP of the function.
"""
