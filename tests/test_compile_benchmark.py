"""The compile-latency benchmark's harness (``benchmarks/compile.py``) on its smallest
workload: cold and warm processes run, and the table and JSON say what they measured."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_compile_benchmark_measures_cold_and_warm_first_calls(tmp_path):
    out = tmp_path / "compile.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "benchmarks.compile", "--only", "tiny", "--quick"]
    proc = subprocess.run(
        [*command, "--json", str(out)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| tiny" in proc.stdout and "cold/JAX" in proc.stdout
    assert "cold, installed" in proc.stdout
    (result,) = json.loads(out.read_text())
    assert result["error"] == ""
    assert result["cold_s"] > 0 and result["warm_s"] > 0 and result["warm_import_s"] > 0
    assert result["source_lines"] > 0  # the generated module, counted in the cold cache
    assert result["cold_compiles"] == result["warm_compiles"] == 0  # interpreted: no Numba
    assert result["installed_s"] is None  # the tests turn the installed runtime off
