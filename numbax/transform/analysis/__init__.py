"""Analyses of core-language functions (gast trees after ``normalize``).

:mod:`.dataflow` says which names each statement defines and uses and which are live
where; :mod:`.activity` which variables carry derivatives. The transformations and the
cleanup pass ask these instead of walking trees of their own.
"""
