"""GPU benchmarks and the device check (``benchmarks/gpu/README.md``)."""
