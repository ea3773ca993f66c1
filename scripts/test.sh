#!/usr/bin/env bash
# The whole test suite: Release build (warnings are errors, CUDA compiled and
# linked when nvcc exists) + all tests, then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
#   SUBMOE_SKIP_SANITIZE=1 scripts/test.sh   # only the Release pass
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${SUBMOE_JOBS:-$(nproc)}
echo "== Release build and tests"
scripts/build.sh release
ctest --test-dir build --output-on-failure -j "$jobs"
if [ "${SUBMOE_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== ASan + UBSan build and tests"
  scripts/build.sh sanitize
  # Slow, large-shape cases are labelled "slow" and skipped under sanitizers.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-sanitize --output-on-failure -j "$jobs" -LE slow
fi
echo "== all tests passed"
