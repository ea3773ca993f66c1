#!/usr/bin/env bash
# The quality cost of storing the embedded model's dense weights packed
# (compress --dense-repr, docs/format.md 9.6), as docs/results.md reports it:
# GPTQ ternary experts (the default job) with each dense choice, every artifact
# and the bf16 original evaluated on the held-out texts in the same run.
# Usage: scripts/results_dense.sh [WORK_DIR] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/submoe-results-dense}
threads=${2:-$(nproc)}
bin=${SUBMOE_BIN:-build/submoe}
# shellcheck source=lib/heldout.sh
. scripts/lib/heldout.sh
mkdir -p "$work"

# name | --dense-repr arguments (empty: every dense weight bf16)
configs=(
  "bf16-dense|"
  "attention-int4-g32|attention=int,bits=4,group_size=32"
  "lm_head-int4-g32|lm_head=int,bits=4,group_size=32"
  "all-int4-g32|all=int,bits=4,group_size=32"
  "all-int4-g128|all=int,bits=4,group_size=128"
  "all-int3-g32|all=int,bits=3,group_size=32"
  "all-int2-g32|all=int,bits=2,group_size=32"
  "all-ternary|all=ternary_dict"
)
for c in "${configs[@]}"; do
  name=${c%%|*}
  spec=${c#*|}
  [ -f "$work/$name/model.safetensors" ] && continue
  echo "compress $name" >&2
  dense=()
  [ -n "$spec" ] && dense=(--dense-repr "$spec")
  $bin compress --model $model --calib $calib --out "$work/$name" "${dense[@]}" --threads "$threads" --quiet \
    --json --overwrite >"$work/$name.compress.json"
done


echo "| experts | dense weights | dense bits/w | model bits/w | loss W&P | loss Shakespeare | held-out loss | with --execution fused-int8 |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
read -r a b m <<<"$(heldout $model)"
echo "| bf16 | bf16 (the original) | 16 | 16 | $a | $b | $m | - |"
for c in "${configs[@]}"; do
  name=${c%%|*}
  spec=${c#*|}
  read -r a b m <<<"$(heldout "$work/$name")"
  read -r _ _ m8 <<<"$(heldout "$work/$name" fused-int8)"
  python3 - "$work/$name/submoe_manifest.json" "${spec:-bf16}" "$a" "$b" "$m" "$m8" <<'PY'
import json, sys
ledger = json.load(open(sys.argv[1]))["ledger"]
spec, a, b, m, m8 = sys.argv[2:]
print(f"| gptq ternary | {spec} | {8 * ledger['dense_bytes'] / ledger['dense_weights']:.3f} | "
      f"{ledger['model_bits_per_weight']:.3f} | {a} | {b} | {m} | {m8} |")
PY
done
