#!/usr/bin/env bash
# Reproduces the compression results of docs/results.md on the embedded model:
# compresses models/default-moe with each method/grid, evaluates the held-out
# loss of every artifact (and of the bf16 original) in the same run, and prints
# one markdown table. Usage: scripts/results_compress.sh [WORK_DIR] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/submoe-results}
threads=${2:-$(nproc)}
bin=${SUBMOE_BIN:-build/submoe}
# shellcheck source=lib/heldout.sh
. scripts/lib/heldout.sh
mkdir -p "$work"

# name method grid code p0
configs=(
  "gptq-ternary gptq ternary qmoe 0.885"
  "rtn-ternary rtn ternary qmoe 0.885"
  "gptq-ternary-tunstall gptq ternary tunstall 0.78"
  "gptq-int2 gptq int2 qmoe 0.885"
  "rtn-int2 rtn int2 qmoe 0.885"
  "gptq-int3 gptq int3 qmoe 0.885"
  "rtn-int3 rtn int3 qmoe 0.885"
  "gptq-int4 gptq int4 qmoe 0.885"
)
for c in "${configs[@]}"; do
  set -- $c
  [ -f "$work/$1/model.safetensors" ] && continue
  echo "compress $1" >&2
  dict=()  # the dictionary options belong to ternary_dict only (an int grid refuses them)
  [ "$3" = ternary ] && dict=(--code "$4" --dict-p0 "$5")
  $bin compress --model $model --calib $calib --out "$work/$1" --method "$2" --grid "$3" "${dict[@]}" \
    --threads "$threads" --quiet --json --overwrite > "$work/$1.compress.json"
done


echo "| model | method | grid | expert bits/w | model bits/w | experts vs bf16 | model vs bf16 | sparsity | loss W&P | loss Shakespeare | held-out loss |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
read -r a b m <<< "$(heldout $model)"
echo "| bf16 original | - | - | 16 | 16 | 1.00x | 1.00x | - | $a | $b | $m |"
for c in "${configs[@]}"; do
  set -- $c
  read -r a b m <<< "$(heldout "$work/$1")"
  python3 - "$work/$1.compress.json" "$1" "$2" "$3" "$a" "$b" "$m" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
name, method, grid, a, b, m = sys.argv[2:]
print(f"| {name} | {method} | {grid} | {s['expert_bits_per_weight']:.3f} | {s['model_bits_per_weight']:.3f} | "
      f"{s['compression_vs_bf16_experts']:.2f}x | {s['compression_vs_bf16_model']:.2f}x | "
      f"{100 * s['natural_sparsity']:.1f}% | {a} | {b} | {m} |")
PY
done
