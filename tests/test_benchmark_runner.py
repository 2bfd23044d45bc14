"""The side-by-side benchmark runner's bookkeeping (``benchmarks/runner.py``): page faults
per call. Pure Python, nothing is compiled."""

import numpy as np

from benchmarks import report
from benchmarks.runner import Row, time_steady


def test_time_steady_counts_the_page_faults_of_fresh_memory():
    def fill_fresh_block():
        # 64 MiB is above glibc's largest mmap threshold: each call maps new memory and
        # faults its pages in (fewer faults with transparent huge pages, never none).
        np.ones(64 * 1024**2, dtype=np.uint8)

    assert time_steady(fill_fresh_block, target_s=0.01).faults_per_call >= 1
    assert time_steady(lambda: None, target_s=0.01).faults_per_call < 1


def test_the_table_has_a_faults_column():
    row = Row("w", "numpy", median_s=1.0, faults_per_call=2.5)
    header, _, line = report.format_table([row]).splitlines()
    assert "faults/call" in header and "| 2.5 " in line
