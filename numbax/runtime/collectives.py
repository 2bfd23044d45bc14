"""The collectives of ``numbax.lax`` (``psum``, ``pmean``, ``pmax``, ``pmin``,
``axis_index``) as runtime helpers: derivative rules emit them (the JVP of a ``psum`` is
a ``psum``), and ``vmap`` rewrites each call under a named axis into a reduction over
the batch. They are defined with the other operations users call, in ``numbax.lax``;
registering them here gives generated code ``nxrt.psum`` and puts them under the check
that every helper has its rules.
"""

from __future__ import annotations

from numbax import lax
from numbax.runtime.registry import helper

psum = helper(lax.psum)
pmean = helper(lax.pmean)
pmax = helper(lax.pmax)
pmin = helper(lax.pmin)
axis_index = helper(lax.axis_index)
