"""Devices and moving values between them, as JAX spells it: ``nx.devices()``,
``nx.local_device_count()``, ``nx.device_put``, ``nx.device_get``,
``nx.block_until_ready``.

numbax's default backend is the CPU, where values are NumPy arrays, and its devices
are the cores this process may run on (``nx.pmap`` maps over them), or as many as
``JAX_NUM_CPU_DEVICES`` or ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` say,
as JAX makes its CPU devices. A GPU (numba-cuda's,
or Numba's CUDA simulator) holds device arrays: what ``nx.jit(..., backend="gpu")``
returns stays there until ``device_get`` (or ``np.asarray``) copies it back, and device
arrays of other libraries (anything with ``__cuda_array_interface__``: CuPy, PyTorch,
JAX) are taken without a copy.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from numbax import tree_util
from numbax.numba_backend.cuda import target as gpu

_GPU_NAMES = ("gpu", "cuda")


@dataclass(frozen=True)
class Device:
    """One device: ``platform`` is ``"cpu"`` or ``"gpu"``; ``id`` its number there."""

    platform: str
    id: int
    device_kind: str

    def __repr__(self) -> str:
        kind = "CpuDevice" if self.platform == "cpu" else "CudaDevice"
        return f"{kind}(id={self.id})"


CPU = Device("cpu", 0, "cpu")

_FORCED_COUNT = re.compile(r"--xla_force_host_platform_device_count=(\d+)")


def cpu_count() -> int:
    """The CPU's devices: ``JAX_NUM_CPU_DEVICES`` or the XLA flag where set (in that
    order, as JAX reads them), else the cores this process may run on."""
    given = os.environ.get("JAX_NUM_CPU_DEVICES", "").strip()
    if given:
        try:
            count = int(given)
        except ValueError:
            raise ValueError(f"JAX_NUM_CPU_DEVICES={given!r} is not a number of devices") from None
        if count >= 1:
            return count
    forced = _FORCED_COUNT.findall(os.environ.get("XLA_FLAGS", ""))
    if forced and int(forced[-1]) >= 1:
        return int(forced[-1])
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` (``"cpu"``, ``"gpu"``/``"cuda"``; None: numbax's default,
    the CPU). The CPU's are its cores (see :func:`local_device_count`). Asking for the
    GPU on a machine without one raises, saying what is missing."""
    if backend is None or str(backend).lower() == "cpu":
        return [Device("cpu", k, "cpu") for k in range(cpu_count())]
    if str(backend).lower() in _GPU_NAMES:
        return [Device("gpu", k, name) for k, name in enumerate(gpu.gpu_names())]
    raise RuntimeError(f"unknown backend {backend!r}: use 'cpu' or 'gpu'")


def local_device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` has (JAX's ``jax.local_device_count``): for the CPU,
    numbax's default, the cores this process may run on, or ``JAX_NUM_CPU_DEVICES``, or
    the ``--xla_force_host_platform_device_count=N`` of ``XLA_FLAGS`` where set. ``nx.pmap``
    runs on as many threads at most."""
    if backend is None or str(backend).lower() == "cpu":
        return cpu_count()
    return len(devices(backend))


def platform_of(device: Any) -> str:
    """``"cpu"`` or ``"gpu"`` for a :class:`Device` or a backend's name."""
    if isinstance(device, Device):
        return device.platform
    name = str(device).lower()
    if name in _GPU_NAMES:
        return "gpu"
    if name == "cpu":
        return "cpu"
    raise RuntimeError(f"unknown device or backend {device!r}: use 'cpu', 'gpu' or nx.devices()")


def device_put(x: Any, device: Any = None) -> Any:
    """``x`` (a pytree) on ``device``: device arrays for a GPU, NumPy arrays for the CPU
    (the default). A value already there is not copied."""
    on_gpu = device is not None and platform_of(device) == "gpu"
    if on_gpu:
        return tree_util.tree_map(gpu.to_device, x, is_leaf=gpu.is_device_array)
    return device_get(x)


def device_get(x: Any) -> Any:
    """``x`` (a pytree) with every device array copied to a NumPy array."""
    return tree_util.tree_map(gpu.to_host, x, is_leaf=gpu.is_device_array)


def block_until_ready(x: Any) -> Any:
    """Wait until every array in ``x`` (a pytree) is computed, and return ``x``.

    CPU results are NumPy arrays, computed by the time a call returns; device arrays
    wait for the kernels launched so far, and another library's arrays for their own
    ``block_until_ready``. So JAX-style timing code runs unchanged."""
    leaves = tree_util.tree_leaves(x, is_leaf=gpu.is_device_array)
    if any(gpu.is_device_array(leaf) for leaf in leaves):
        gpu.synchronize()
    for leaf in leaves:
        wait = getattr(leaf, "block_until_ready", None)
        if callable(wait):
            wait()
    return x
