#!/usr/bin/env bash
# compress --repr rvq end to end on the qwen3_moe fixture: the artifact records
# rvq, inspect shows it, eval's fused kernels agree with the reference decoder,
# paging the experts through a small DRAM cache changes nothing, run generates,
# and the --no-rht / --no-ldl ablations write their own records.
#   usage: rvq_artifact.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/lib/artifact_checks.bash"
bin=$1
src=$2
model=$src/tests/fixtures/qwen3_moe
calib=$src/tests/fixtures/calib/shakespeare-excerpt.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fast=(--samples 4 --seq-len 64 --quiet --repr-opt train_vectors=4096 --repr-opt iters=5)
"$bin" compress --model "$model" --calib "$calib" --out "$work/a" --repr rvq --bits 2 "${fast[@]}" >/dev/null
grep -q '"representation": "rvq"' "$work/a/config.json" || { echo "FAIL: config.json has no rvq record"; exit 1; }
"$bin" inspect "$work/a" --no-tensors | grep -q "format 2: rvq (4 stages = 2.0 bits" ||
  { echo "FAIL: inspect does not show the rvq record"; exit 1; }
check_eval_paths "$bin" "$work/a" "$calib" "rvq"
# eval --chunk 1 scores token by token through the batch-1 kernels: the same
# tokens; with the reference decoder exactly the batched nll (chunking changes
# nothing but the kernels), with the fused kernels within the int8 tables'
# rounding (measured 0.011 nats on this 64-wide random fixture).
nll_chunk() { "$bin" eval --model "$work/a" --text "$calib" --ctx 64 --max-tokens 192 --threads 1 --chunk "$@" --json |
              python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["nll"], d["tokens"], d["chunk"])'; }
read -r n1 t1 c1 < <(nll_chunk 1)
read -r n64 t64 c64 < <(nll_chunk 64)
read -r r1 _ _ < <(nll_chunk 1 --execution reference)
read -r r64 _ _ < <(nll_chunk 64 --execution reference)
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) < 0.03 else 1)" "$n1" "$n64" &&
  [ "$r1" = "$r64" ] && [ "$t1" = "$t64" ] && [ "$c1" = 1 ] && [ "$c64" = 64 ] ||
  { echo "FAIL eval --chunk: fused chunk 1 nll $n1 ($t1 tokens) vs chunk 64 $n64 ($t64 tokens); reference $r1 vs $r64"; exit 1; }
if "$bin" eval --model "$work/a" --text "$calib" --chunk 0 >/dev/null 2>"$work/err"; then
  echo "FAIL: eval --chunk 0 accepted"; exit 1
fi
grep -q -- "--chunk must be at least 1" "$work/err" || { echo "FAIL: eval --chunk 0: $(cat "$work/err")"; exit 1; }
echo "ok   eval --chunk: token by token $n1, batched $n64, reference $r1 both ways"
out=$("$bin" run --model "$work/a" --prompt "To be" -n 4 --threads 1 2>&1)
grep -q "4 generated" <<<"$out" || { echo "FAIL run: $out"; exit 1; }
echo "ok   run"
"$bin" compress --model "$model" --calib "$calib" --out "$work/b" --repr rvq --bits 1.5 --no-rht --no-ldl "${fast[@]}" \
  --repr-opt metric=euclidean --repr-opt gain=none >/dev/null
grep -q '"rotation": "none"' "$work/b/config.json" || { echo "FAIL: --no-rht did not record rotation none"; exit 1; }
grep -q '"method": "rtn"' "$work/b/config.json" || { echo "FAIL: --no-ldl did not compress without feedback"; exit 1; }
grep -q 'beam search, Euclidean distance' "$work/b/submoe_manifest.json" ||
  { echo "FAIL: metric=euclidean not in the provenance"; exit 1; }
grep -q 'none: scale = f16(RMS)' "$work/b/submoe_manifest.json" || { echo "FAIL: gain=none not in the provenance"; exit 1; }
grep -q "solver's block metric" "$work/a/submoe_manifest.json" && grep -q 'unbiased: scale' "$work/a/submoe_manifest.json" ||
  { echo "FAIL: the default encoder choices are not in the provenance"; exit 1; }
echo "ok   ablations"
