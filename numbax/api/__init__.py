"""numbax's public face: every callable numbax hands out (jit, the grad family, vmap,
custom rules, checkpoint) and :func:`show`. ``numbax/__init__.py`` re-exports them."""
