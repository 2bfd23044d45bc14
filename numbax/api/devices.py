"""Devices and moving values between them, as JAX spells it: ``nx.devices()``,
``nx.device_put``, ``nx.device_get``, ``nx.block_until_ready``.

numbax's default backend is the CPU, where values are NumPy arrays. A GPU (numba-cuda's,
or Numba's CUDA simulator) holds device arrays: what ``nx.jit(..., backend="gpu")``
returns stays there until ``device_get`` (or ``np.asarray``) copies it back, and device
arrays of other libraries (anything with ``__cuda_array_interface__``: CuPy, PyTorch,
JAX) are taken without a copy.
"""

from __future__ import annotations

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


def devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` (``"cpu"``, ``"gpu"``/``"cuda"``; None: numbax's default,
    the CPU). Asking for the GPU on a machine without one raises, saying what is missing."""
    if backend is None or str(backend).lower() == "cpu":
        return [CPU]
    if str(backend).lower() in _GPU_NAMES:
        return [Device("gpu", k, name) for k, name in enumerate(gpu.gpu_names())]
    raise RuntimeError(f"unknown backend {backend!r}: use 'cpu' or 'gpu'")


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
