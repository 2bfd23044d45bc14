"""Test-wide set-up: a private numbax cache per test session, so runs start cold."""

import os
import tempfile

# Before numbax is imported anywhere: generated modules and Numba's disk cache go to a
# fresh directory per test process (xdist workers each get their own).
os.environ.setdefault("NUMBAX_CACHE_DIR", tempfile.mkdtemp(prefix="numbax-test-cache-"))
