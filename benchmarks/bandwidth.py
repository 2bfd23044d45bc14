"""STREAM-style triad: the memory bandwidth that bounds any elementwise workload.

``a = b + s*c`` over arrays much larger than the last-level cache moves three arrays
through memory and does almost no arithmetic, so its rate is the machine's practical
bandwidth. ``selu`` and ``poly`` are quoted against it (see
:func:`benchmarks.runner.annotate_bandwidth`). Bytes are counted as STREAM does: two
arrays read and one written, 24 bytes per float64 element. The Numba loop is one pass
(the true rate); NumPy needs two passes (``multiply`` then ``add``, with ``out=`` so no
temporaries), so its figure, counted the same way, is lower: it is what NumPy code gets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from benchmarks.runner import Config, Row, time_first, time_steady

SCALAR = 3.0
_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}


def triad_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: float) -> np.ndarray:
    """The best NumPy can do: two in-place passes, no temporaries."""
    np.multiply(c, s, out=a)
    np.add(a, b, out=a)
    return a


@numba.njit(fastmath=False, parallel=False)
def triad_numba(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: float) -> np.ndarray:
    """One pass, single-threaded: what a compiled elementwise loop can reach."""
    for i in range(a.size):
        a[i] = b[i] + s * c[i]
    return a


def last_level_cache_bytes() -> int:
    """Largest CPU cache reported by Linux sysfs (32 MiB if it cannot be read)."""
    sizes = []
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip()
        if text[-1:] in _UNITS and text[:-1].isdigit():
            sizes.append(int(text[:-1]) * _UNITS[text[-1]])
    return max(sizes, default=32 * 1024**2)


def triad_length(quick: bool) -> int:
    """Elements per array: each array twice the last-level cache (at least 256 MiB), but
    no more than a sixteenth of physical memory. ``--quick`` uses 32 MiB arrays, which may
    sit in cache: a smoke test, not a bandwidth figure."""
    if quick:
        return 4 * 1024**2
    wanted = max(2 * last_level_cache_bytes(), 256 * 1024**2)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min(wanted, memory // 16) // 8


@dataclass(frozen=True)
class Triad:
    """The triad as a workload: one row per implementation, bandwidth in ``extra["gbs"]``."""

    id: str = "triad"
    description: str = "STREAM triad a = b + s*c, float64 arrays larger than the cache (GB/s)"

    def run(self, config: Config) -> list[Row]:
        n = triad_length(config.quick)
        a, b, c = np.zeros(n), np.full(n, 1.0), np.full(n, 2.0)
        moved = 3 * a.nbytes
        rows = []
        for peer, kernel in (("numpy", triad_numpy), ("numba", triad_numba)):
            call = lambda kernel=kernel: kernel(a, b, c, SCALAR)
            first_s, result = time_first(call)
            mismatch = "" if np.all(result == 1.0 + SCALAR * 2.0) else "wrong triad result"
            timing = time_steady(call, config.target_s)
            gbs = moved / timing.min_s / 1e9
            rows.append(
                Row(
                    self.id,
                    peer,
                    first_s=first_s,
                    median_s=timing.median_s,
                    min_s=timing.min_s,
                    faults_per_call=timing.faults_per_call,
                    note=f"{gbs:.1f} GB/s (best run), arrays {a.nbytes / 1024**2:.0f} MiB",
                    error=mismatch,
                    extra={"gbs": gbs, "array_bytes": a.nbytes, "repeats": timing.repeats},
                )
            )
        return rows


WORKLOADS = [Triad()]
