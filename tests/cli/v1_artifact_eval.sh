#!/usr/bin/env bash
# A format-version-1 artifact written by the version-1 writer (commit 849d55e,
# `compress --grid int4 --group-size 0 --samples 8 --seq-len 64` of
# tests/fixtures/qwen3_moe) still loads and scores exactly as it did then:
# the nll values below were printed by that commit's `submoe eval`.
#   usage: v1_artifact_eval.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
art=$src/tests/fixtures/artifact_v1_int4
text=$src/tests/fixtures/calib/shakespeare-excerpt.txt
check() {  # execution expected_nll
  local out nll
  out=$("$bin" eval --model "$art" --text "$text" --ctx 64 --max-tokens 256 --threads 1 --execution "$1" --json 2>/dev/null)
  nll=$(sed -n 's/.*"nll":\([-0-9.eE+]*\).*/\1/p' <<<"$out")
  awk -v got="$nll" -v want="$2" -v ex="$1" 'BEGIN {
    d = got - want; if (d < 0) d = -d;  # 1e-6: build types may order float sums differently
    if (got == "" || d > 1e-6) { printf "FAIL %s: nll %s, the version-1 reader gave %s\n", ex, got, want; exit 1 }
    printf "ok %s: nll %s\n", ex, got }'
}
check reference 7.784753450868912
check fused 7.784753462443429
# inspect reports the format version and the record.
out=$("$bin" inspect "$art" --no-tensors)
grep -q 'format 1: int (4 bits, per row), gptq, grid int4' <<<"$out" ||
  { echo "FAIL inspect: no 'format 1: int (4 bits, per row)' line in:"; echo "$out"; exit 1; }
echo "ok inspect"
