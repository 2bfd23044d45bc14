"""Numba's settings that change every function's machine code are part of the disk
cache's keys: code compiled without ``NUMBA_BOUNDSCHECK=1`` (or at another
``NUMBA_OPT``...) is not loaded by a process that sets it.

Numba reads them from the environment when it is imported, so one test runs two real
processes on one cache; the others change the setting in this process and look at the
keys (a new dispatcher of the same function stands for a new process).
"""

import json
import os
import subprocess
import sys

import numba
import pytest
from numba.core import config

from numbax.numba_backend.caching import (
    disk_cache,
    runtime_cache,
)
from numbax.numba_backend.generated import define

PROGRAM = """
import json, sys
import numpy as np
import numbax as nx

def at(x, i):
    return x[i]

x = np.arange(8.0)[:3]  # index 5 reads the buffer's 5.0 when nothing checks it
at_unchecked = nx.jit(at, boundscheck=False)  # numbax's own checks left out: Numba's alone
try:
    print(json.dumps({"value": float(at_unchecked(x, int(sys.argv[1])))}))
except IndexError as err:
    print(json.dumps({"error": str(err)}))
"""


@pytest.mark.jit
def test_code_compiled_without_numba_boundscheck_is_not_loaded_with_it(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    env = {**os.environ, "NUMBAX_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("NUMBA_BOUNDSCHECK", None)

    def run(index: int, **settings: str) -> dict:
        done = subprocess.run(
            [sys.executable, str(script), str(index)],
            env={**env, **settings},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    assert run(1) == {"value": 1.0}  # the cache is warm
    assert run(5, NUMBA_BOUNDSCHECK="1") == {"error": "index is out of bounds"}
    assert run(5) == {"value": 5.0}  # and it still serves a process without


def test_the_key_holds_the_settings(monkeypatch):
    before = disk_cache.code_settings()
    monkeypatch.setattr(config, "BOUNDSCHECK", 1)
    assert disk_cache.code_settings() != before
    assert "BOUNDSCHECK=1" in disk_cache.code_settings()


def test_a_runtime_helper_compiled_at_another_setting_compiles_again(cache_dir, monkeypatch):
    def helper():
        return runtime_cache.njit(define("def impl(x):\n    return x * 5.0\n", {}, "test"))

    first = helper()
    assert first(2.0) == 10.0 and sum(first.stats.cache_misses.values()) == 1
    monkeypatch.setattr(config, "OPT", numba.core.config._OptLevel(1))
    again = helper()
    assert again(2.0) == 10.0
    assert sum(again.stats.cache_hits.values()) == 0
