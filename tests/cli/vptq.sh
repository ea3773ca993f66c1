#!/usr/bin/env bash
# vptq through the binary on the embedded default model: compress --repr vptq
# --repr-opt shape=6+6 with 2% outlier columns (per matrix a 64-entry main, a
# 64-entry residual and a 64-entry outlier codebook, vectors of 8 output
# rows: 1.5 index bits + codebooks, column and row scales and 5 outlier columns = 2.00 bits per weight) writes a
# verified artifact whose inspect names the code, its contract and the rate;
# eval's fused kernels agree with the reference decoder, paging gives the
# same nll; held-out nll within 0.15 nats of bf16 (measured +0.07 on this
# 2-sample calibration with 4 k-means steps; VPTQ's output-axis vectors mix rows of different
# scales, docs/results.md section 9); --bits 1 (4+4) under RTN
# runs paged and traces (8+8's k-means init alone costs minutes under ASan); bench gemv reports the bits; bad options and a
# matrix smaller than its codebooks are refused by name with nothing written.
#   usage: vptq.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
model=$src/models/default-moe
calib=$src/data/calib-train-excerpt.txt
text=$src/data/heldout-war-and-peace.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
source "$(dirname "$0")/lib/artifact_checks.bash"
nll_of() { "$bin" eval --model "$1" --text "$text" --ctx 128 --max-tokens 1024 "${@:2}" --json 2>/dev/null |
           python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])'; }

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/v6" --samples 2 --seq-len 32 \
  --repr vptq --repr-opt shape=6+6 --repr-opt outliers=0.02 --repr-opt kmeans_iters=4 --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress --repr vptq: $rc: $out"
info=$("$bin" inspect "$work/v6" --verify --no-tensors 2>&1) || fail "inspect --verify: $info"
for want in "vptq (6+6r: v 8 along the output, 64-entry codebook + 64 residual, 1.50 index bits per weight), gptq, grid vptq6+6r" \
  "= 2.002 bits/weight" "contracts:     [0] vector-lut, vectors of 8 along the output, sparse none, kernel vptq_gemv v1"; do
  grep -qF -- "$want" <<<"$info" && echo "ok   inspect: $want" || fail "inspect lacks '$want': $info"
done
grep -q '"fine_tuning": "none' "$work/v6/submoe_manifest.json" && echo "ok   the provenance says no fine-tuning ran" ||
  fail "provenance: $(grep -A8 vptq "$work/v6/submoe_manifest.json" | head -20)"
( check_eval_paths "$bin" "$work/v6" "$text" "vptq 6+6" ) || fails=$((fails + 1))
base=$(nll_of "$model"); nll=$(nll_of "$work/v6")
if python3 -c "import sys; sys.exit(0 if abs(float('$nll') - float('$base')) < 0.15 else 1)"; then
  echo "ok   vptq 6+6 held-out nll $nll, bf16 $base"
else fail "vptq nll '$nll' against bf16 '$base'"; fi

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/v2" --samples 2 --seq-len 32 \
  --repr vptq --bits 1 --method rtn --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress vptq 4+4 rtn: $rc: $out"
rc=0; out=$("$bin" run --model "$work/v2" --prompt "The old prince said" -n 8 --ignore-eos --expert-cache-mb 0.5 --json 2>&1) || rc=$?
grep -q '"hit_rate"' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   paged run of the 4+4 artifact" || fail "run 4+4: $rc: $out"
rc=0; out=$("$bin" trace record --model "$work/v2" --text "$calib" --max-tokens 256 --out "$work/t.trace" 2>&1) || rc=$?
[ "$rc" -eq 0 ] && echo "ok   trace record on the vptq artifact" || fail "trace: $rc: $out"

rc=0; out=$("$bin" bench gemv --repr vptq --bits 2 --repr-opt kmeans_iters=2 --shape 64x2048 --iters 3 --llc-factor 0.1 --min-matrices 4 --json 2>&1) || rc=$?
grep -q '"bits_per_weight": *2\.' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   bench gemv --repr vptq --bits 2" || fail "bench: $rc: $out"

expect_error() { expect_compress_error "$bin" "$model" "$calib" "$work" "$@" || fails=$((fails + 1)); }
expect_error "fewer than the 65536 entries" --repr vptq --repr-opt shape=16
expect_error "vptq --bits must be 1, 2, 3 or 4" --repr vptq --bits 2.5
expect_error "does not match shape 8" --repr vptq --bits 2 --repr-opt shape=8
expect_error "outliers=2" --repr vptq --bits 2 --repr-opt outliers=2
expect_error "--group-size applies to" --repr vptq --bits 2 --group-size 64
[ "$fails" -eq 0 ] || exit 1
