#!/usr/bin/env bash
# Side-by-side batch-1 GEMV against llama.cpp's CPU kernels (BF16, F16, TQ1_0,
# TQ2_0, IQ2_XXS, Q2_K, Q3_K, IQ4_NL, MXFP4) and submoe's (dense bf16, ternary, rvq 1.5 / 2
# / 3 bits, mxfp4 with f32 and int8 activations, nf4 dq8, squeezellm 3 / 4 bits, spqr 2 / 3 bits, e8p 2 / 3 / 4 bits with their rotations, aqlm 2x8 / 1x16, vptq 8+8) in one process, interleaved call by call (tools/peers/llamacpp_gemv.cpp).
#
# llama.cpp's source is taken from the llama-cpp-python sdist on PyPI and built
# out of the tree under build/peers/ (nothing of it enters the project); the
# harness links that static ggml and submoe's Release libraries (build/).
#
#   scripts/peer_llamacpp.sh                       # 2080x6144 and 6144x2080, 1 and 2 threads
#   scripts/peer_llamacpp.sh 4096x14336 1          # one shape, one thread count
#   LLAMA_CPP_PYTHON_VERSION=0.3.36 scripts/peer_llamacpp.sh
# Output: JSON lines (kernel, bits_per_weight, matrices, median_us, min_us) on
# stdout; the same lines in build/peers/results.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
jobs=${SUBMOE_JOBS:-$(nproc)}
peers=build/peers
src=$peers/llama_cpp_python-$version/vendor/llama.cpp
mkdir -p "$peers"

if [ ! -d "$src" ]; then
  echo "peer_llamacpp: downloading llama-cpp-python $version (source) from PyPI" >&2
  python3 -m pip download "llama-cpp-python==$version" --no-binary :all: --no-deps -d "$peers" >&2
  tar -xzf "$peers/llama_cpp_python-$version.tar.gz" -C "$peers"
fi
if [ ! -f "$peers/ggml-build/ggml/src/libggml.a" ]; then
  echo "peer_llamacpp: building ggml (CPU, native, static)" >&2
  cmake -S "$src" -B "$peers/ggml-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF >/dev/null
  cmake --build "$peers/ggml-build" --target ggml ggml-cpu ggml-base -j "$jobs" >&2
fi
if [ -f build/build.ninja ] || [ -f build/Makefile ]; then
  cmake --build build --target submoe_kernels submoe_codec submoe_core -j "$jobs" >&2
else
  scripts/build.sh release >&2
fi
g="$peers/ggml-build/ggml/src"
c++ -std=c++20 -O2 -march=native -Iinclude -I"$src/ggml/include" tools/peers/llamacpp_gemv.cpp \
  -o "$peers/llamacpp_gemv" -Lbuild/src -lsubmoe_kernels -lsubmoe_codec -lsubmoe_core \
  "$g/libggml.a" "$g/libggml-cpu.a" "$g/libggml-base.a" -lpthread -ldl -lm

shapes=(2080x6144 6144x2080)
threads=(1 2)
if [ $# -ge 1 ]; then shapes=("$1"); fi
if [ $# -ge 2 ]; then threads=("$2"); fi
# Results go to a temporary file, renamed when every run has finished.
: >"$peers/results.jsonl.tmp"
for s in "${shapes[@]}"; do
  for t in "${threads[@]}"; do
    "$peers/llamacpp_gemv" "${s%x*}" "${s#*x}" "$t" 100 | tee -a "$peers/results.jsonl.tmp"
  done
done
mv "$peers/results.jsonl.tmp" "$peers/results.jsonl"
