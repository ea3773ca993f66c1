#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU (written for an H200, sm_90; 16 cores;
# a fresh checkout; no internet needed when the packages are present):
#   1. checks the build dependencies (installs missing Debian packages with apt
#      when it can),
#   2. configures Release with CUDA (warnings are errors) in build-gpu/ and builds
#      only the CUDA test binary, then (after the tests) the CUDA benchmark,
#   3. runs the CUDA tests (label "cuda": the host emulation and planner tests
#      and the device tests, which must not be skipped here),
#   4. runs the CUDA benchmark (ternary dictionary kernels vs dense bf16 cuBLAS,
#      2080x6144, 6144x2080, 4096x14336, batch 1 and 8) and prints its summary.
# Everything is logged; with $OUT set, the log, the test report and the benchmark
# summary (text + JSON) are written there. Expected: about 2-4 minutes; the
# phases share a deadline (SUBMOE_GPU_DEADLINE_S, default 450 s) and each is cut
# off when it would overrun it, so the whole run stays under 8 minutes.
#   scripts/gpu_check.sh                 # full run
#   SUBMOE_GPU_BENCH_MIN_TIME=0.5 scripts/gpu_check.sh   # longer benchmark samples
# Exit status: 0 when everything passed, 1 on any failure (the summary says which).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# A GPU machine without cmake/ninja packages can be handed the PyPI builds in
# .gpu-tools/ (pip install --target .gpu-tools cmake ninja; not committed).
[ -x "$ROOT/.gpu-tools/cmake/data/bin/cmake" ] && export PATH="$ROOT/.gpu-tools/cmake/data/bin:$ROOT/.gpu-tools/bin:$PATH"
BUILD=${SUBMOE_GPU_BUILD_DIR:-build-gpu}
RESULTS=${OUT:-$ROOT/$BUILD/gpu_check}
mkdir -p "$RESULTS"
LOG="$RESULTS/gpu_check.log"
: >"$LOG"
JOBS=$(nproc 2>/dev/null || echo 8)
MIN_TIME=${SUBMOE_GPU_BENCH_MIN_TIME:-0.2}
DEADLINE=${SUBMOE_GPU_DEADLINE_S:-450}
START=$(date +%s)
declare -a SUMMARY=()
FAILED=0

log() { echo "$@" | tee -a "$LOG"; }
elapsed() { echo $(( $(date +%s) - START ))s; }
phase() { log ""; log "== [$(elapsed)] $*"; }
fail() { SUMMARY+=("FAIL: $*"); FAILED=1; log "FAIL: $*"; }
pass() { SUMMARY+=("ok:   $*"); log "ok: $*"; }
finish() {
  log ""
  log "== gpu_check summary ($(elapsed) total)"
  for line in "${SUMMARY[@]}"; do log "  $line"; done
  if [ -f "$RESULTS/cuda_bench_summary.txt" ]; then
    log ""
    tee -a "$LOG" <"$RESULTS/cuda_bench_summary.txt"
  fi
  log ""
  log "results in $RESULTS"
  exit "$FAILED"
}
# Seconds a phase may take: its own cap, or what is left before the deadline.
budget() {
  local cap=$1
  local left=$(( DEADLINE - ($(date +%s) - START) ))
  echo $(( left < cap ? left : cap ))
}
# Runs a command with a time limit (seconds), output to the log and the terminal.
run_logged() {
  local limit=$1
  shift
  if [ "$limit" -le 5 ]; then
    log "no time left for: $*"
    return 124
  fi
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
  return "${PIPESTATUS[0]}"
}

phase "machine"
log "$(uname -srm), $JOBS cores"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 | tee -a "$LOG"
else
  log "nvidia-smi not found"
fi

phase "dependencies"
NVCC=""
for c in "${CUDACXX:-}" "$(command -v nvcc 2>/dev/null)" /usr/local/cuda/bin/nvcc /usr/lib/nvidia-cuda-toolkit/bin/nvcc; do
  if [ -n "$c" ] && [ -x "$c" ]; then NVCC=$c; break; fi
done
if [ -z "$NVCC" ]; then
  fail "nvcc not found (install the CUDA toolkit or set CUDACXX)"
  finish
fi
log "nvcc: $NVCC ($("$NVCC" --version | tail -1))"
# Debian package -> a file that proves it is installed (cheaper and more robust
# than dpkg when the toolchain came from elsewhere).
declare -A NEED=(
  [cmake]=/usr/bin/cmake [g++]=/usr/bin/g++ [ninja-build]=/usr/bin/ninja
  [libgtest-dev]=/usr/include/gtest/gtest.h [libbenchmark-dev]=/usr/include/benchmark/benchmark.h
  [nlohmann-json3-dev]=/usr/include/nlohmann/json.hpp [libcli11-dev]=/usr/include/CLI/CLI.hpp
  [libopenblas-dev]=/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h [liblapack-dev]=/usr/lib/x86_64-linux-gnu/liblapack.so
)
missing=()
for pkg in "${!NEED[@]}"; do
  case "$pkg" in
    cmake) command -v cmake >/dev/null && continue ;;
    ninja-build) command -v ninja >/dev/null && continue ;;
  esac
  if [ ! -e "${NEED[$pkg]}" ] && ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  log "missing: ${missing[*]}; trying apt"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
  export DEBIAN_FRONTEND=noninteractive
  if ! run_logged "$(budget 120)" $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    run_logged "$(budget 60)" $SUDO apt-get update -q || true
    run_logged "$(budget 120)" $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" || true
  fi
  still=()
  for pkg in "${missing[@]}"; do
    [ -e "${NEED[$pkg]}" ] || still+=("$pkg")
  done
  if [ ${#still[@]} -gt 0 ]; then
    # ninja is optional (make works); everything else is required.
    if [ "${still[*]}" != "ninja-build" ]; then
      fail "dependencies missing and not installable: ${still[*]}"
      finish
    fi
  fi
fi
pass "dependencies present"

phase "configure (Release, CUDA, warnings as errors) in $BUILD"
ARCH=90
if command -v nvidia-smi >/dev/null; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  [[ "$cap" =~ ^[0-9]+$ ]] && ARCH=$cap
fi
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if ! run_logged "$(budget 90)" cmake -S . -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DSUBMOE_WERROR=ON \
    -DSUBMOE_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC" -DSUBMOE_CUDA_ARCHITECTURES="$ARCH" \
    -DSUBMOE_TESTS=ON -DSUBMOE_BENCH=ON; then
  fail "cmake configure"
  finish
fi
if ! grep -q "CUDA kernels enabled" "$LOG"; then
  fail "CMake did not enable CUDA"
  finish
fi
pass "configured for sm_$ARCH"

# The tests first: they need only core, codec and kernels, so a broken module
# elsewhere in the tree costs the benchmark (which links everything), not them.
phase "build test_kernels_cuda (-j$JOBS)"
if ! run_logged "$(budget 240)" cmake --build "$BUILD" -j "$JOBS" --target test_kernels_cuda; then
  fail "build of test_kernels_cuda"
  finish
fi
pass "test_kernels_cuda built ($(elapsed) since start)"

phase "CUDA tests (ctest label cuda = test_kernels_cuda)"
TEST_OUT="$RESULTS/cuda_tests.txt"
run_logged "$(budget 150)" "$BUILD/tests/test_kernels_cuda" --gtest_output="xml:$RESULTS/cuda_tests.xml" >"$TEST_OUT"
test_rc=$?
cat "$TEST_OUT"
passed=$(grep -c '^\[       OK \]' "$TEST_OUT")
failed=$(grep -c '^\[  FAILED  \] [A-Za-z].*(' "$TEST_OUT")
device_skipped=$(grep -c '^\[  SKIPPED \] CudaDevice\.[A-Za-z0-9_]* (' "$TEST_OUT")
device_ok=$(grep -c '^\[       OK \] CudaDevice\.' "$TEST_OUT")
if [ "$test_rc" -ne 0 ]; then
  fail "CUDA tests: exit $test_rc, $passed passed, $failed failed"
elif [ "$device_skipped" -gt 0 ] || [ "$device_ok" -eq 0 ]; then
  fail "CUDA tests: device tests skipped ($device_skipped) — no usable GPU?"
else
  pass "CUDA tests: $passed passed ($device_ok on the device), 0 failed"
fi

phase "build bench_cuda_ternary_dict (-j$JOBS)"
if ! run_logged "$(budget 200)" cmake --build "$BUILD" -j "$JOBS" --target bench_cuda_ternary_dict; then
  fail "build of bench_cuda_ternary_dict"
  finish
fi
pass "bench_cuda_ternary_dict built ($(elapsed) since start)"

phase "CUDA benchmark (min time $MIN_TIME s per case)"
BENCH_OUT="$RESULTS/cuda_bench_output.txt"
run_logged "$(budget 150)" "$BUILD/bench/bench_cuda_ternary_dict" --benchmark_min_time="$MIN_TIME" \
  --summary_out="$RESULTS/cuda_bench_summary.txt" >"$BENCH_OUT"
bench_rc=$?
cat "$BENCH_OUT"
if [ "$bench_rc" -ne 0 ]; then
  fail "benchmark: exit $bench_rc (MISMATCH in the summary means the kernel and cuBLAS disagree)"
elif grep -q "skipped:" "$BENCH_OUT"; then
  fail "benchmark skipped: $(grep "skipped:" "$BENCH_OUT")"
else
  pass "benchmark"
fi

# The device host's CPU usually has AVX-512, which the CI host lacks: run the
# CPU kernel tests there with SUBMOE_REQUIRE_AVX512=1, so the AVX-512 kernels
# are exercised somewhere (tests/kernels/isa_coverage_test.cpp).
if grep -q avx512f /proc/cpuinfo; then
  phase "CPU kernel tests with AVX-512 (SUBMOE_REQUIRE_AVX512=1)"
  if run_logged "$(budget 150)" cmake --build "$BUILD" -j "$JOBS" --target test_kernels; then
    AVX_OUT="$RESULTS/avx512_kernel_tests.txt"
    SUBMOE_REQUIRE_AVX512=1 run_logged "$(budget 150)" "$BUILD/tests/test_kernels" >"$AVX_OUT"
    avx_rc=$?
    tail -n 30 "$AVX_OUT"
    if [ "$avx_rc" -ne 0 ]; then
      fail "CPU kernel tests with AVX-512: exit $avx_rc"
    else
      pass "CPU kernel tests with AVX-512: $(grep -c '^\[       OK \]' "$AVX_OUT") passed, $(grep -c '^\[  SKIPPED \]' "$AVX_OUT") skipped"
    fi
  else
    fail "build of test_kernels"
  fi
else
  echo "(device host CPU has no AVX-512: AVX-512 kernels not exercised here either)"
fi
finish
