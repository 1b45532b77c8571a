#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU and CuPy (cupy-cuda13x): every CuPy bit-exactness
# test, then the GPU benchmarks (HEP-BNN Fashion-MNIST and CIFAR-10 shapes, 10,000 random images
# each, every configuration, Algorithm 1 and the DP mapping). Writes JSON (and logs, mapping
# tables, heatmaps) into the directory given as the argument. Designed to finish in under
# 5 minutes on an H200; needs no network access.
#
#   scripts/gpu_check.sh OUTDIR
#
# Python: the project's .venv if it can import CuPy, else python3 (the GPU machine's own, which
# may be 3.12 without the project installed: the repository is put on PYTHONPATH). Without
# pytest there, the same checks run through `python -m gpu_kernels.selfcheck`.
set -uo pipefail

out=${1:?usage: scripts/gpu_check.sh OUTDIR}
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
export GPU_KERNELS_BUILD_DIR="${GPU_KERNELS_BUILD_DIR:-$PWD/build/gpu_kernels}"

PY=python3
if [ -x .venv/bin/python ] && .venv/bin/python -c "import cupy" >/dev/null 2>&1; then
  PY=.venv/bin/python
fi
echo "[gpu_check] python: $($PY -c 'import sys; print(sys.executable, sys.version.split()[0])')"

if ! $PY -c "import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)"; then
  echo "[gpu_check] CuPy or a CUDA device is missing: nothing to check" | tee "$out/gpu_check.txt"
  exit 2
fi
{ nvidia-smi || true; } > "$out/nvidia-smi.txt" 2>&1
$PY - > "$out/environment.json" <<'PYEOF'
import json, platform, sys
import cupy, numpy
dev = cupy.cuda.runtime.getDeviceProperties(0)
name = dev["name"].decode() if isinstance(dev["name"], bytes) else dev["name"]
print(json.dumps({"python": sys.version, "numpy": numpy.__version__, "cupy": cupy.__version__,
                  "device": name, "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
                  "host": platform.node()}, indent=1))
PYEOF

status=0
start=$(date +%s)
if $PY -c "import pytest" >/dev/null 2>&1; then
  echo "[gpu_check] CuPy bit-exactness tests (pytest -m gpu)"
  $PY -m pytest -q -m gpu -p no:cacheprovider -o addopts="" --junitxml="$out/pytest_gpu.xml" \
      tests/test_gpu_cupy.py 2>&1 | tee "$out/pytest_gpu.txt" | tail -n 15
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
  echo "[gpu_check] no pytest here: gpu_kernels.selfcheck on CuPy"
  $PY -m gpu_kernels.selfcheck --backend cupy --json "$out/selfcheck_gpu.json" 2>&1 \
      | tee "$out/selfcheck_gpu.txt" | tail -n 15
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
echo "[gpu_check] tests took $(( $(date +%s) - start )) s"

echo "[gpu_check] GPU benchmarks"
$PY benchmarks/gpu_bnn.py --backend cupy --images 10000 --out "$out" --deadline-s 180 2>&1 \
    | tee "$out/gpu_bnn.txt" | grep -v '%|'
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "[gpu_check] done in $(( $(date +%s) - start )) s, status $status; results in $out"
exit $status
