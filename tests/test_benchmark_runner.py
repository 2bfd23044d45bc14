"""The side-by-side benchmark runner's bookkeeping (``benchmarks/runner.py``): page faults
per call, and how ``--repeat`` merges runs. Pure Python, nothing is compiled."""

import json

import numpy as np
import pytest

from benchmarks import report
from benchmarks.runner import Row, merge_runs, parse_args, time_steady


def test_time_steady_counts_the_page_faults_of_fresh_memory():
    def fill_fresh_block():
        # 64 MiB is above glibc's largest mmap threshold: each call maps new memory and
        # faults its pages in (fewer faults with transparent huge pages, never none).
        np.ones(64 * 1024**2, dtype=np.uint8)

    assert time_steady(fill_fresh_block, target_s=0.01).faults_per_call >= 1
    assert time_steady(lambda: None, target_s=0.01).faults_per_call < 1


def _run(numbax_median, numpy_median, numpy_error=""):
    numbax = Row("w", "numbax", first_s=1.0, median_s=numbax_median, min_s=numbax_median / 2)
    numpy = Row("w", "numpy", first_s=0.1, median_s=numpy_median, min_s=numpy_median / 2)
    numpy.faults_per_call = numpy_median * 10
    numpy.error = numpy_error
    return [numpy, numbax]


def test_merge_runs_takes_the_median_of_medians_and_the_min_of_mins():
    runs = [_run(2.0, 1.0), _run(4.0, 9.0), _run(3.0, 2.0)]
    numpy, numbax = merge_runs(runs)
    assert (numpy.median_s, numpy.min_s, numpy.faults_per_call) == (2.0, 0.5, 20.0)
    assert (numbax.median_s, numbax.min_s) == (3.0, 1.0)
    assert numpy.ratio == pytest.approx(3.0 / 2.0)  # ratio of the merged medians
    assert numpy.first_s == 0.1 and numpy.extra["run_medians"] == [1.0, 9.0, 2.0]


def test_merge_runs_keeps_a_failure_of_any_run():
    numpy, _ = merge_runs([_run(2.0, 1.0), _run(2.0, 1.0, numpy_error="MISMATCH")])
    assert numpy.error == "MISMATCH"


def test_merge_runs_keeps_ratios_of_workloads_without_a_numbax_row():
    runs = [[Row("c", "jax", median_s=m, ratio=r)] for m, r in ((1.0, 2.0), (1.0, 4.0))]
    (row,) = merge_runs(runs)
    assert row.ratio == 3.0


def test_repeat_must_be_positive():
    assert parse_args(["--repeat", "3"]).repeat == 3
    with pytest.raises(SystemExit):
        parse_args(["--repeat", "0"])


def test_json_records_repeat_faults_and_every_runs_median(tmp_path):
    rows = merge_runs([_run(2.0, 1.0), _run(2.0, 3.0)])
    path = tmp_path / "results.json"
    report.write_json(str(path), rows, ["--repeat", "2"], repeat=2)
    payload = json.loads(path.read_text())
    assert payload["repeat"] == 2
    assert payload["rows"][0]["faults_per_call"] == 20.0
    assert payload["rows"][0]["extra"]["run_medians"] == [1.0, 3.0]


def test_the_table_has_a_faults_column():
    row = Row("w", "numpy", median_s=1.0, faults_per_call=2.5)
    header, _, line = report.format_table([row]).splitlines()
    assert "faults/call" in header and "| 2.5 " in line
