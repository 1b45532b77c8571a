#!/usr/bin/env bash
# The GPU check, made for a first short run on a machine with an NVIDIA GPU that has its own
# Python (numpy, cupy-cuda13x, pytest) and no network: nothing is installed, the repository is
# put on PYTHONPATH. Every phase runs under its own `timeout`, the whole within 8 minutes
# (GPU_CHECK_TOTAL_S, 470 s, bounds everything including each phase's kill grace):
#
#   1. preflight    versions (CuPy, CUDA driver and runtime, NVRTC), device, the kernel module
#                   compiled once, every kernel's registers / local memory / largest block, a
#                   smoke test; stops everything at the first systematic problem
#   2. exactness    tests/test_gpu_cupy.py (every layer type x seven configurations x word
#                   sizes x channels x padding x batch, every fused kernel on its layer's
#                   cases, whole networks, also fused) against the golden model; stops after
#                   GPU_CHECK_MAXFAIL failures
#   3. fashion      benchmarks/gpu_bnn.py --fused, Fashion-MNIST shape, 10,000 images, own
#                   budget: the fused kernels timed against their layers' kernels, the DP
#                   mapping with and without them
#   4. cifar10      the same for the CIFAR-10 shape
#   5. summary      OUT/gpu_check.json and the headline numbers
#
#   scripts/gpu_check.sh OUT        (or: make gpu-check OUT=dir)
#
# Exit status: 0 all exact; 1 a check failed (a test, an inexact benchmark run); 2 usage;
# 3 no CuPy; 4 no usable CUDA device (none, driver too old); 5 NVRTC missing or the kernels do
# not compile; 6 compiled kernels unusable (block size, smoke test); 7 a phase ran out of time.
#
# Environment (defaults in brackets): GPU_CHECK_PYTHON [the first of python3, python3.12,
# python that imports numpy and CuPy]; budgets in seconds
# GPU_CHECK_TOTAL_S [470], GPU_CHECK_PREFLIGHT_S [75], GPU_CHECK_TESTS_S [120],
# GPU_CHECK_FASHION_S [90], GPU_CHECK_CIFAR10_S [150]; GPU_CHECK_MAXFAIL [3];
# GPU_CHECK_IMAGES [10000]; GPU_CHECK_FASHION_EXP ["6 12"]; GPU_CHECK_CIFAR10_EXP ["6 10"];
# GPU_CHECK_PYTEST_K [all cases] (a pytest -k expression), GPU_CHECK_BENCH_ARGS [none]
# (more benchmarks/gpu_bnn.py arguments) and GPU_CHECK_FUSED_SHAPES ["fashion cifar10"]: the
# shapes benchmarked with --fused, for trials.
set -uo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/gpu_check.sh OUT   (OUT: directory for the JSON results and logs)" >&2
  exit 2
fi
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$1" || { echo "gpu_check: cannot create $1" >&2; exit 2; }
out=$(cd "$1" && pwd)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1           # the image's plugins are not needed here
export GPU_KERNELS_BUILD_DIR="${GPU_KERNELS_BUILD_DIR:-$PWD/build/gpu_kernels}"
export CUPY_CACHE_DIR="${CUPY_CACHE_DIR:-$PWD/build/cupy_kernel_cache}"
export GPU_KERNELS_PROGRESS=plain                  # progress as a line every few seconds
TOTAL=${GPU_CHECK_TOTAL_S:-470}
MAXFAIL=${GPU_CHECK_MAXFAIL:-3}
IMAGES=${GPU_CHECK_IMAGES:-10000}
read -r -a FASHION_EXP <<< "${GPU_CHECK_FASHION_EXP:-6 12}"
read -r -a CIFAR10_EXP <<< "${GPU_CHECK_CIFAR10_EXP:-6 10}"
read -r -a BENCH_ARGS <<< "${GPU_CHECK_BENCH_ARGS:-}"
FUSED_SHAPES=" ${GPU_CHECK_FUSED_SHAPES-fashion cifar10} "
RESERVE=15                                         # kept back for the summary
GRACE=10                                           # SIGINT -> SIGKILL delay of each phase

start=$SECONDS
phases="$out/phases.tsv"
printf 'phase\trc\tseconds\tlimit_s\tstatus\n' > "$phases"
say() { echo "[gpu_check] $*"; }
have_timeout=1
command -v timeout >/dev/null 2>&1 || { have_timeout=0; say "warning: no 'timeout' here: phases run unbounded"; }

# The interpreter: GPU_CHECK_PYTHON, else the first of python3, python3.12, python that imports
# numpy and CuPy (else python3, and the preflight says what is missing).
pick_python() {
  if [ -n "${GPU_CHECK_PYTHON:-}" ]; then echo "$GPU_CHECK_PYTHON"; return; fi
  local c
  for c in python3 python3.12 python; do
    command -v "$c" >/dev/null 2>&1 || continue
    if (( have_timeout )); then timeout 30 "$c" -c "import numpy, cupy" >/dev/null 2>&1 && { echo "$c"; return; }
    else "$c" -c "import numpy, cupy" >/dev/null 2>&1 && { echo "$c"; return; }; fi
  done
  echo python3
}
PY=$(pick_python)

# phase_limit SECONDS: the phase's own budget, cut to what the total leaves (after the reserve
# for the summary and the phase's own kill grace), so the whole never exceeds TOTAL
phase_limit() {
  local left=$(( TOTAL - RESERVE - GRACE - (SECONDS - start) ))
  echo $(( $1 < left ? $1 : left ))
}

# run_phase NAME LIMIT LOG COMMAND...: the command under `timeout` (SIGINT first, so Python
# writes what it has; SIGKILL 10 s later), its output shown and logged; records the phase.
run_phase() {
  local name=$1 limit=$2 log=$3; shift 3
  if (( limit < 5 )); then
    say "phase $name: skipped, the total budget of $TOTAL s is used up"
    printf '%s\t\t0\t%s\tskipped\n' "$name" "$limit" >> "$phases"
    return 124
  fi
  say "phase $name (at most $limit s): $*"
  local t0=$SECONDS rc
  if (( have_timeout )); then
    timeout -s INT -k "$GRACE" "$limit" "$@" 2>&1 | tee "$log"
  else
    "$@" 2>&1 | tee "$log"
  fi
  rc=${PIPESTATUS[0]}
  local status=ok
  if (( rc == 124 || rc == 137 )); then status=timeout; elif (( rc != 0 )); then status=failed; fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$(( SECONDS - t0 ))" "$limit" "$status" >> "$phases"
  say "phase $name: $status (exit $rc) in $(( SECONDS - t0 )) s"
  return "$rc"
}

finish() {
  local code=$1
  if [ -n "${prebuild:-}" ]; then kill "$prebuild" 2>/dev/null; wait "$prebuild" 2>/dev/null; fi
  if (( have_timeout )); then
    timeout -k 5 "$(( RESERVE - 5 ))" "$PY" -m gpu_kernels.check_summary "$out" --exit-code "$code" --total-s "$TOTAL"
  else
    "$PY" -m gpu_kernels.check_summary "$out" --exit-code "$code" --total-s "$TOTAL"
  fi || say "summary failed; results are in $out"
  say "exit $code after $(( SECONDS - start )) s; results in $out"
  exit "$code"
}

say "python: $PY ($(command -v "$PY" || echo 'not found')); output: $out"
{ timeout 20 nvidia-smi || true; } > "$out/nvidia-smi.txt" 2>&1

# 1. preflight: its exit status is the script's when it is not 0
run_phase preflight "$(phase_limit "${GPU_CHECK_PREFLIGHT_S:-75}")" "$out/preflight.txt" \
  "$PY" -m gpu_kernels.preflight --out "$out"
rc=$?
if (( rc == 124 || rc == 137 )); then finish 7; elif (( rc != 0 )); then finish "$rc"; fi

# The g++ builds later phases use (the CPU implementation: the mapper's "cpu" and the mixed
# mappings; the emulation: one cross-check test), built while the GPU is being tested. Without
# g++ those tests skip and the mapper maps the GPU configurations only.
if (( have_timeout )) && command -v g++ >/dev/null 2>&1; then
  say "building the CPU implementation and the emulation library in the background (g++)"
  timeout 150 "$PY" -c "from gpu_kernels.cpu_impl import cpu_impl; from gpu_kernels.build import \
emulation_library; cpu_impl(); emulation_library(); print('g++ builds ready')" > "$out/gxx_builds.txt" 2>&1 &
  prebuild=$!
fi

failed=0; timed_out=0
note() { if (( $1 == 124 || $1 == 137 )); then timed_out=1; elif (( $1 != 0 )); then failed=1; fi; }

# 2. exactness
if "$PY" -c "import pytest" >/dev/null 2>&1; then
  kexpr=()
  [ -n "${GPU_CHECK_PYTEST_K:-}" ] && kexpr=(-k "$GPU_CHECK_PYTEST_K")
  run_phase exactness "$(phase_limit "${GPU_CHECK_TESTS_S:-120}")" "$out/pytest_gpu.txt" \
    "$PY" -m pytest -q -m gpu --maxfail="$MAXFAIL" -p no:cacheprovider -o addopts="" -rfE \
    --junitxml="$out/pytest_gpu.xml" ${kexpr[@]+"${kexpr[@]}"} tests/test_gpu_cupy.py
else
  say "no pytest here: gpu_kernels.selfcheck on CuPy instead"
  run_phase exactness "$(phase_limit "${GPU_CHECK_TESTS_S:-120}")" "$out/selfcheck_gpu.txt" \
    "$PY" -m gpu_kernels.selfcheck --backend cupy --maxfail "$MAXFAIL" --json "$out/selfcheck_gpu.json"
fi
note $?

# 3, 4. benchmarks, one shape per phase, each with its own budget
for shape in fashion cifar10; do
  if [ "$shape" = fashion ]; then limit=${GPU_CHECK_FASHION_S:-90}; exp=("${FASHION_EXP[@]}")
  else limit=${GPU_CHECK_CIFAR10_S:-150}; exp=("${CIFAR10_EXP[@]}"); fi
  limit=$(phase_limit "$limit")
  fused=(); [[ "$FUSED_SHAPES" == *" $shape "* ]] && fused=(--fused)
  run_phase "$shape" "$limit" "$out/gpu_bnn_$shape.txt" \
    "$PY" benchmarks/gpu_bnn.py --backend cupy ${fused[@]+"${fused[@]}"} --shapes "$shape" --images "$IMAGES" \
    "--$shape-exp" "${exp[@]}" --budget-s "$(( limit > 20 ? limit - 10 : limit / 2 ))" --out "$out" \
    ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}
  note $?
done

if (( failed )); then finish 1; elif (( timed_out )); then finish 7; else finish 0; fi
