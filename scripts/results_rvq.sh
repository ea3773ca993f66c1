#!/usr/bin/env bash
# Held-out loss of the embedded model compressed with rvq at several rates, each
# with its ablations (--no-ldl, --no-rht) and popularity-conditioned rates
# (--alloc thirds, waterfill), beside GPTQ / RTN int grids with groups of
# 128 and GPTQ ternary, all at their measured expert bits per weight
# (docs/results.md, "Residual VQ"). Held-out text: data/heldout-war-and-peace.txt,
# windows of 256 tokens.
#   scripts/results_rvq.sh [WORK_DIR] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/submoe-results-rvq}
threads=${2:-$(nproc)}
bin=${SUBMOE_BIN:-build/submoe}
model=models/default-moe
calib=data/calib-train-excerpt.txt
text=data/heldout-war-and-peace.txt
mkdir -p "$work"
configs=(
  "bf16 -"
  "rvq1.0 --repr rvq --bits 1"
  "rvq1.0-no-ldl --repr rvq --bits 1 --no-ldl"
  "rvq1.0-no-rht --repr rvq --bits 1 --no-rht"
  "rvq1.0-thirds --repr rvq --bits 1 --alloc thirds"
  "rvq1.0-waterfill --repr rvq --bits 1 --alloc waterfill"
  "rvq1.5 --repr rvq --bits 1.5"
  "rvq1.5-no-ldl --repr rvq --bits 1.5 --no-ldl"
  "rvq1.5-no-rht --repr rvq --bits 1.5 --no-rht"
  "rvq1.5-thirds --repr rvq --bits 1.5 --alloc thirds"
  "rvq1.5-waterfill --repr rvq --bits 1.5 --alloc waterfill"
  "rvq2.0 --repr rvq --bits 2"
  "rvq2.0-no-ldl --repr rvq --bits 2 --no-ldl"
  "rvq2.0-no-rht --repr rvq --bits 2 --no-rht"
  "rvq2.0-thirds --repr rvq --bits 2 --alloc thirds"
  "rvq2.0-waterfill --repr rvq --bits 2 --alloc waterfill"
  "rvq2.5 --repr rvq --bits 2.5"
  "rvq2.5-no-ldl --repr rvq --bits 2.5 --no-ldl"
  "rvq2.5-no-rht --repr rvq --bits 2.5 --no-rht"
  "rvq2.5-thirds --repr rvq --bits 2.5 --alloc thirds"
  "rvq2.5-waterfill --repr rvq --bits 2.5 --alloc waterfill"
  "rvq3.0 --repr rvq --bits 3"
  "rvq3.0-no-ldl --repr rvq --bits 3 --no-ldl"
  "rvq3.0-no-rht --repr rvq --bits 3 --no-rht"
  "rvq3.0-thirds --repr rvq --bits 3 --alloc thirds"
  "rvq3.0-waterfill --repr rvq --bits 3 --alloc waterfill"
  "gptq-int2-g128 --repr int --bits 2 --group-size 128"
  "rtn-int2-g128 --repr int --bits 2 --group-size 128 --method rtn"
  "rtn-int3-g128 --repr int --bits 3 --group-size 128 --method rtn"
  "gptq-int3-g128 --repr int --bits 3 --group-size 128"
  "gptq-ternary --repr ternary_dict"
)
printf "| config | expert bits/weight | held-out nll | compress s |\n| --- | --- | --- | --- |\n"
for c in "${configs[@]}"; do
  set -- $c
  name=$1; shift
  dir=$model bits=16 secs=0
  if [ "$1" != - ]; then
    dir=$work/$name
    if [ ! -f "$dir/model.safetensors" ]; then
      "$bin" compress --model $model --calib $calib --out "$dir" "$@" --threads "$threads" --quiet --json \
        --overwrite > "$work/$name.compress.json"
    fi
    bits=$(python3 -c "import json,sys; print('%.4f' % json.load(open(sys.argv[1]))['expert_bits_per_weight'])" "$work/$name.compress.json")
    secs=$(python3 -c "import json,sys; print('%.0f' % json.load(open(sys.argv[1]))['seconds'])" "$work/$name.compress.json")
  fi
  nll=$("$bin" eval --model "$dir" --text $text --ctx 256 --threads "$threads" --json 2>/dev/null |
        python3 -c "import json,sys; print('%.6f' % json.load(sys.stdin)['nll'])")
  printf "| %s | %s | %s | %s |\n" "$name" "$bits" "$nll" "$secs"
done
