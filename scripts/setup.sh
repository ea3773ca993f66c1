#!/usr/bin/env bash
# One command on a fresh Debian machine: install dependencies, build in Release,
# then run the main job on the embedded defaults:
#   1. the sub-1-bit ternary codec on generated i.i.d. data (QMoE's dictionary
#      code and the Tunstall code), round trip checked, bits per weight reported;
#   2. the fused compressed kernel against dense f32 / bf16 GEMV on a working set
#      larger than the last-level cache;
#   3. the embedded default MoE model (models/default-moe): generation and
#      held-out loss on a WikiText-2 excerpt;
#   4. the main job: compress its experts to ternary with GPTQ (QMoE pipeline),
#      then evaluate and generate straight from the compressed artifact, with the
#      experts paged through a DRAM cache of half their size.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh release
threads=$(nproc)
echo
echo "== 1. codec: 2048 x 8192 i.i.d. ternary weights, p0 = 0.885"
build/submoe codec synth --p0 0.885 --rows 2048 --cols 8192 --code qmoe --threads "$threads"
build/submoe codec synth --p0 0.885 --rows 2048 --cols 8192 --code tunstall --threads "$threads"
echo
echo "== 2. kernels: 2080 x 6144 (rows x cols), batch 1 and 8, $threads threads"
build/submoe bench gemv --shape 2080x6144 --threads "$threads"
build/submoe bench gemv --shape 2080x6144 --threads "$threads" --batch 8
echo
echo "== 3. embedded model: generation and held-out loss"
build/submoe inspect models/default-moe --no-tensors
build/submoe run --model models/default-moe --prompt "The old prince said" -n 48 --seed 1 --threads "$threads"
build/submoe eval --model models/default-moe --text data/wikitext2-valid-excerpt.txt --ctx 256 \
  --max-tokens 16384 --threads "$threads"
echo
echo "== 4. compress the embedded model (GPTQ ternary) and run it compressed"
build/submoe compress --model models/default-moe --calib data/calib-train-excerpt.txt \
  --out build/default-moe-ternary --threads "$threads" --overwrite
build/submoe eval --model build/default-moe-ternary --text data/heldout-war-and-peace.txt --ctx 256 \
  --threads "$threads"
build/submoe eval --model models/default-moe --text data/heldout-war-and-peace.txt --ctx 256 \
  --threads "$threads"
build/submoe run --model build/default-moe-ternary --prompt "The old prince said" -n 48 --seed 1 \
  --threads "$threads" --expert-cache-mb 2
