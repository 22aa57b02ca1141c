#!/usr/bin/env bash
# verify_gpu.sh: everything that needs a GPU, in one command, for a machine
# with an NVIDIA GPU, nvcc, CMake, pybind11, scikit-build-core, numpy, pytest
# and PyTorch and no network:
#
#   bash packages/backends-cuda/scripts/verify_gpu.sh
#
# 1. builds and installs lamina-ndarray, lamina-backend-cuda (and autograd/nn
#    when present) with --no-build-isolation --no-deps;
# 2. runs the conformance kit on `cuda` and the cuda tests (pytest -m cuda);
# 3. runs the autograd and nn suites with LAMINA_DEVICE=cuda and a short MNIST
#    training run, when those packages exist;
# 4. benchmarks against PyTorch on the same GPU (benchmarks/bench_cuda.py).
# Logs, JUnit XML and the benchmark table/JSON go to $OUT when set, else to
# benchmarks/results/. Every step runs even if an earlier one failed; the
# exit status is non-zero if any step failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
RESULTS="${OUT:-$ROOT/benchmarks/results}"
mkdir -p "$RESULTS"
SUMMARY="$RESULTS/verify_gpu_summary.txt"
: > "$SUMMARY"
FAILED=0

step() {  # step NAME COMMAND...: run, tee the log, record the status
  local name="$1"; shift
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$RESULTS/verify_gpu_$name.log"
  local rc=${PIPESTATUS[0]}
  echo "$name: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")" | tee -a "$SUMMARY"
  [ "$rc" -eq 0 ] || FAILED=1
}

have_tests() { [ -f "packages/$1/pyproject.toml" ] && [ -d "packages/$1/tests" ]; }

step gpu nvidia-smi

PACKAGES=(packages/ndarray)
for pkg in autograd nn; do
  [ -f "packages/$pkg/pyproject.toml" ] && PACKAGES+=("packages/$pkg")
done
# Pure packages need hatchling; without it they run from source instead.
if ! step install_pure python -m pip install --no-build-isolation --no-deps "${PACKAGES[@]}"; then
  for pkg in "${PACKAGES[@]}"; do export PYTHONPATH="$ROOT/$pkg/src${PYTHONPATH:+:$PYTHONPATH}"; done
  echo "install_pure: falling back to PYTHONPATH=$PYTHONPATH" | tee -a "$SUMMARY"
fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
step install_cuda python -m pip install --no-build-isolation --no-deps -v packages/backends-cuda
step discover python -m lamina.ndarray
step conformance python -m lamina.ndarray.conformance cuda -q -rs \
  --junitxml="$RESULTS/conformance_cuda.xml"
step cuda_tests python -m pytest packages/backends-cuda/tests -m cuda -q -rs \
  --junitxml="$RESULTS/backend_cuda_tests.xml"
for pkg in autograd nn; do
  if have_tests "$pkg"; then
    step "${pkg}_on_cuda" env LAMINA_DEVICE=cuda python -m pytest "packages/$pkg/tests" -q -rs \
      --junitxml="$RESULTS/${pkg}_on_cuda.xml"
  fi
done
if python -c "import lamina.models" 2>/dev/null; then
  step mnist_on_cuda python -c "import sys; from lamina.models._cli import main; sys.exit(main())" \
    mnist --device cuda --epochs 1 --no-progress --log "$RESULTS/mnist_cuda_log.jsonl"
fi
step bench python benchmarks/bench_cuda.py --out "$RESULTS"

echo "=== summary ($SUMMARY)"
cat "$SUMMARY"
exit "$FAILED"
