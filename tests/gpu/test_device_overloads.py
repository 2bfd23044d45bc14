"""How numbax's helpers are registered with numba-cuda, which the simulator never reads
(it runs their Python).

numba-cuda 0.30 miscompiles an overload inlined into its caller's Numba IR
(``inline="always"``) where control flow merges: a loop with an early exit, a branch.
On an H200, ``nxrt.weak`` inlined so gave a loop's result at half its value and the
gradient of a loop with a tape as 1.6e-20. So on the device ``weak`` is an ordinary call
(NVVM inlines it later, in LLVM), and only ``local_tape``, whose local array must live in
its caller's frame, is inlined. ``python -m benchmarks.gpu.replay`` runs what numba-cuda
compiles for such functions on the CPU, where numba-cuda is installed.
"""

from __future__ import annotations

import sys
import types

from numbax.numba_backend.cuda import random as random_device
from numbax.numba_backend.cuda import target as gpu
from numbax.numba_backend.loops import tapes
from numbax.numba_backend.np import weak


def test_only_the_local_tape_is_inlined_on_the_device(monkeypatch):
    registered = {}

    def overload(function, target=None, **options):
        def register(implementation):
            registered[function] = (target, options)
            return implementation

        return register

    extending = types.ModuleType("numba.cuda.extending")
    extending.overload = overload
    monkeypatch.setitem(sys.modules, "numba.cuda.extending", extending)
    monkeypatch.setattr(gpu, "simulated", lambda: False)
    monkeypatch.setattr(gpu, "_registered", [])
    monkeypatch.setattr(random_device, "register", lambda cuda, overload: None)
    gpu._register_device_overloads(cuda=None)

    assert registered[weak.weak] == ("cuda", {})
    inlined = [f for f, (_, options) in registered.items() if options.get("inline") == "always"]
    assert inlined == [tapes.local_tape]
    assert all(target == "cuda" for target, _ in registered.values())
