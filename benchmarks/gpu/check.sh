#!/usr/bin/env bash
# The device check, on a machine with an NVIDIA GPU (benchmarks/gpu/README.md): the GPU
# tests on the device, its kernels compiled to PTX, then the GPU benchmarks. Under 8
# minutes on an H200. Wheels of numbax's pure-Python dependencies that the machine lacks
# (gast, astor, optree), if carried in .whl/, are installed first.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
if compgen -G ".whl/*.whl" >/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/numbax-site .whl/*.whl
    export PYTHONPATH=/tmp/numbax-site:$PWD
else
    export PYTHONPATH=$PWD
fi
export NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1
NUMBAX_CACHE_DIR=$(mktemp -d)
export NUMBAX_CACHE_DIR
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
echo "== GPU tests on the device"
timeout 240 $PY -m pytest -q -p no:cacheprovider tests/gpu
echo "== kernels to PTX (the device's compute capability)"
CC=$($PY -c "from numba import cuda; print('.'.join(map(str, cuda.get_current_device().compute_capability)))")
timeout 120 $PY -m benchmarks.gpu.ptx --cc "$CC"
echo "== benchmarks"
timeout 300 $PY -m benchmarks.gpu
