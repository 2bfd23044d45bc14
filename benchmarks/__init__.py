"""numbax's benchmark suite: ``python -m benchmarks`` (or ``make bench``); see README.md.

Kept free of imports so that the cold-start workload's child processes, which import
``benchmarks.kernels``, pay nothing for the package itself.
"""
