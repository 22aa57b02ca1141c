#!/usr/bin/env bash
# verify_gpu.sh: everything that needs a GPU, in one command, for a machine
# with an NVIDIA GPU, nvcc, CMake, pybind11, scikit-build-core, numpy, pytest
# and PyTorch and no network:
#
#   bash packages/backends-cuda/scripts/verify_gpu.sh
#
# 1. builds and installs lamina-ndarray, lamina-backend-cuda (and autograd/nn
#    when present) with --no-build-isolation --no-deps;
# 2. benchmarks against PyTorch on the same GPU (benchmarks/bench_cuda.py),
#    first, while nothing else runs on the GPU;
# 3. runs the conformance kit on `cuda` and the cuda tests (pytest -m cuda);
# 4. runs the autograd and nn suites with LAMINA_DEVICE=cuda and a short MNIST
#    training run, when those packages exist.
# Logs, JUnit XML and the benchmark table/JSON go to $OUT when set, else to
# benchmarks/results/. Every step runs even if an earlier one failed; the
# exit status is non-zero if any step failed.
#
# For a machine lent for minutes (all optional):
#   VERIFY_PARALLEL=1       steps 3 and 4 run at the same time (each logs to
#                           its own file; the summary is printed at the end)
#   VERIFY_JOBS=N           pytest-xdist workers for the autograd, nn and
#                           cuda test suites, where pytest-xdist is installed
#   VERIFY_STEP_TIMEOUT=S   each step of 3 and 4 is interrupted (SIGINT, so
#                           pytest still prints its failures) after S seconds
#   CUDAARCHS=90-real       build for the one GPU at hand (faster build)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
RESULTS="${OUT:-$ROOT/benchmarks/results}"
mkdir -p "$RESULTS"
SUMMARY="$RESULTS/verify_gpu_summary.txt"
: > "$SUMMARY"
PARALLEL="${VERIFY_PARALLEL:-0}"
JOBS="${VERIFY_JOBS:-0}"
LIMIT=()
[ -n "${VERIFY_STEP_TIMEOUT:-}" ] && LIMIT=(timeout -s INT -k 30 "$VERIFY_STEP_TIMEOUT")

step() {  # step NAME COMMAND...: run, log, record the status (with its seconds)
  local name="$1"; shift
  local log="$RESULTS/verify_gpu_$name.log" start=$SECONDS rc
  echo "=== $name: $*"
  if [ "$PARALLEL" = 1 ] && [ "${IN_PARALLEL:-0}" = 1 ]; then
    "$@" > "$log" 2>&1; rc=$?
  else
    "$@" 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}
  fi
  echo "$name: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)") ($((SECONDS - start)) s)" \
    | tee -a "$SUMMARY"
  return 0
}

# The lent GPU machines run commands as root and their mpi4py is Open MPI's, whose
# mpiexec refuses root unless told (the nn suite's distributed tests start it).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

have_tests() { [ -f "packages/$1/pyproject.toml" ] && [ -d "packages/$1/tests" ]; }

workers() {  # pytest arguments for $JOBS xdist workers, when asked for and installed
  if [ "$JOBS" -gt 1 ] && python -c "import xdist" >/dev/null 2>&1; then echo "-n $JOBS"; fi
}

step gpu nvidia-smi

PACKAGES=(packages/ndarray)
for pkg in autograd nn; do
  [ -f "packages/$pkg/pyproject.toml" ] && PACKAGES+=("packages/$pkg")
done
# Pure packages need hatchling; without it they run from source instead.
step install_pure python -m pip install --no-build-isolation --no-deps "${PACKAGES[@]}"
if grep -q '^install_pure: FAILED' "$SUMMARY"; then
  for pkg in "${PACKAGES[@]}"; do export PYTHONPATH="$ROOT/$pkg/src${PYTHONPATH:+:$PYTHONPATH}"; done
  echo "install_pure: falling back to PYTHONPATH=$PYTHONPATH" | tee -a "$SUMMARY"
fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
step install_cuda python -m pip install --no-build-isolation --no-deps -v packages/backends-cuda
step discover python -m lamina.ndarray
step bench python benchmarks/bench_cuda.py --out "$RESULTS"

# shellcheck disable=SC2046  # workers() is empty or "-n N": split on purpose
checks() {
  step conformance "${LIMIT[@]}" python -m lamina.ndarray.conformance cuda -q -rfEs \
    --junitxml="$RESULTS/conformance_cuda.xml" &
  [ "$PARALLEL" = 1 ] || wait
  step cuda_tests "${LIMIT[@]}" python -m pytest packages/backends-cuda/tests -m cuda -q -rfEs \
    $(workers) --junitxml="$RESULTS/backend_cuda_tests.xml" &
  [ "$PARALLEL" = 1 ] || wait
  for pkg in autograd nn; do
    if have_tests "$pkg"; then
      step "${pkg}_on_cuda" "${LIMIT[@]}" env LAMINA_DEVICE=cuda python -m pytest \
        "packages/$pkg/tests" -q -rfEs $(workers) --junitxml="$RESULTS/${pkg}_on_cuda.xml" &
      [ "$PARALLEL" = 1 ] || wait
    fi
  done
  if python -c "import lamina.models" 2>/dev/null; then
    step mnist_on_cuda "${LIMIT[@]}" python -c \
      "import sys; from lamina.models._cli import main; sys.exit(main())" \
      mnist --device cuda --epochs 1 --no-progress --log "$RESULTS/mnist_cuda_log.jsonl" &
  fi
  wait
}
IN_PARALLEL=1 checks

echo "=== summary ($SUMMARY)"
cat "$SUMMARY"
! grep -q FAILED "$SUMMARY"
