"""The GPU benchmark script at tiny sizes, on the simulator: what the device check runs
on a GPU (``benchmarks/gpu/check.sh``), its results checked against the CPU."""

from __future__ import annotations

import numpy as np

import numbax as nx
from benchmarks.gpu import workloads
from benchmarks.gpu.__main__ import main


def test_the_benchmarks_run_and_agree_with_the_cpu(capsys):
    assert main(["--tiny"]) == 0
    table = capsys.readouterr().out
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(rows) == 7  # the header and a row per workload


def test_a_kernel_is_generated_ahead_of_a_call_without_moving_data():
    """What ``benchmarks/gpu/ptx.py`` compiles on a machine without a GPU."""
    compiled = nx.jit(nx.vmap(nx.value_and_grad(workloads.newton(), argnums=(0, 1))), backend="gpu")
    kernel = compiled.kernel(np.array([1.0, 2.0]), np.array([3.0, -4.0]))
    assert kernel.results.dtypes == (np.dtype(np.float64),) * 3
    assert "def _kernel_value_and_grad_root(_size, a, b, _out_0, _out_1, _out_2):" in kernel.text
    assert "_out_2[_example] = _result[1][1]" in kernel.text
