"""``python -m numbax precompile``: compile numbax's runtime once, at installation.

The programs of ``numbax/precompile_programs.py`` run in a new process whose cache is a
scratch directory; the runtime cache they fill becomes the installed runtime
(``codegen/installed_runtime.py``), which every cache falls back on. Nothing of the
programs' own generated code is kept.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from numbax.codegen.cache import RUNTIME_SUBDIR, version_dirname
from numbax.codegen.installed_runtime import (
    INSTALLED_ENV,
    install,
    installed_runtime_dir,
    usable_installed_runtime,
)

PROGRAMS = "numbax.precompile_programs"


def precompile(force: bool = False, programs: str = PROGRAMS) -> str:
    """Compile and install numbax's runtime unless an installed one is current (or
    ``force``), by running the module ``programs``; a line saying what was done."""
    target = installed_runtime_dir()
    if target is None:
        return f"{INSTALLED_ENV}=0: the installed runtime is turned off; nothing was compiled"
    if not force and usable_installed_runtime() is not None:
        return f"numbax's installed runtime in {target} is current"
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="numbax-precompile-") as scratch:
        env = {
            **os.environ,
            "NUMBAX_CACHE_DIR": str(Path(scratch, "cache")),
            "NUMBA_CACHE_DIR": str(Path(scratch, "numba")),
            "NUMBAX_COMPILE_LOG": "0",
            INSTALLED_ENV: "0",  # compiled from nothing, not from an older one
        }
        command = [sys.executable, "-m", programs]
        subprocess.run(command, env=env, check=True)
        built = Path(scratch, "cache", version_dirname(), RUNTIME_SUBDIR)
        count = install(built, target)
    seconds = time.perf_counter() - start
    return f"compiled {count} of numbax's runtime helpers in {seconds:.0f} s into {target}"
