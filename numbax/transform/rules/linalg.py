"""Linear algebra: products (``dot``, ``matmul``, ``einsum``...) and decompositions."""
