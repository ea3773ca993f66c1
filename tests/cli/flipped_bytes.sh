#!/usr/bin/env bash
# Flipped-byte campaign (issue 12): artifacts of every representation written
# by compress; every single-bit flip in model.safetensors (targeted fields of
# each layer's first expert, shared and dense tensors, header, random offsets)
# is detected by inspect --verify, and every flip in config.json,
# tokenizer.json and the manifest is detected by eval or leaves its output
# identical. tests/cli/lib/flip_campaign.py does the flipping.
#   usage: flipped_bytes.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
model=$src/tests/fixtures/qwen3_moe
calib=$src/tests/fixtures/calib/shakespeare-excerpt.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fast=(--samples 4 --seq-len 64 --quiet)
fails=0
campaign() {  # label compress-args...
  local label=$1; shift
  "$bin" compress --model "$model" --calib "$calib" --out "$work/$label" "${fast[@]}" "$@" >/dev/null
  python3 "$src/tests/cli/lib/flip_campaign.py" "$bin" "$work/$label" "$calib" "$label" || fails=$((fails + 1))
  rm -rf "${work:?}/$label"
}
campaign ternary_dict --repr ternary_dict
campaign int4 --repr int --bits 4
campaign int2 --repr int --bits 2
campaign rvq2 --repr rvq --bits 2 --repr-opt train_vectors=4096 --repr-opt iters=5
[ "$fails" -eq 0 ] || { echo "FAIL: $fails campaigns had undetected or harmful flips"; exit 1; }
echo "ok   every flip detected or harmless"
