#!/usr/bin/env bash
# Configures and builds one build tree.
#   scripts/build.sh [release|sanitize|tsan|debug] [extra cmake args...]
# Trees: build/ (Release, warnings as errors), build-sanitize/ (ASan + UBSan, no CUDA),
# build-tsan/ (only the concurrency tests, under ThreadSanitizer).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
shift || true
jobs=${SUBMOE_JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
case "$kind" in
  release)  dir=build;          args=(-DCMAKE_BUILD_TYPE=Release -DSUBMOE_WERROR=ON) ;;
  sanitize) dir=build-sanitize; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DSUBMOE_WERROR=ON -DSUBMOE_SANITIZE=ON -DSUBMOE_CUDA=OFF -DSUBMOE_BENCH=OFF) ;;
  tsan)     dir=build-tsan;     args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DSUBMOE_WERROR=ON -DSUBMOE_TSAN=ON -DSUBMOE_CUDA=OFF -DSUBMOE_BENCH=OFF) ;;
  debug)    dir=build-debug;    args=(-DCMAKE_BUILD_TYPE=Debug) ;;
  *) echo "usage: scripts/build.sh [release|sanitize|tsan|debug] [cmake args...]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" "${generator[@]}" "${args[@]}" "$@" >/dev/null
cmake --build "$dir" -j "$jobs"
