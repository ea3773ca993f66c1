#!/usr/bin/env bash
# nf4 through the binary on the embedded default model: compress --repr nf4
# (GPTQ, dq8 absmax) writes a verified artifact whose inspect line and ledger
# say 4.127 bits and whose recorded contract is verified; eval's fused kernels agree with the reference decoder and
# paging gives the same nll; held-out nll stays within 0.01 nats of bf16;
# --repr-opt scales=fp16 --group-size 128 --method rtn writes 4.125 bits;
# run and trace work on it; bench gemv --repr nf4 reports the bits; bad
# options are refused by name with nothing written.
#   usage: nf4.sh SUBMOE_BINARY SOURCE_DIR
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
nll_of() { "$bin" eval --model "$1" --text "$text" --ctx 128 --max-tokens 1024 --json 2>/dev/null |
           python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])'; }

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/nf4" --samples 8 --seq-len 128 \
  --repr nf4 --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress --repr nf4: $rc: $out"
info=$("$bin" inspect "$work/nf4" --verify --no-tensors 2>&1) || fail "inspect --verify: $info"
for want in "nf4 (block 64, dq8 absmax, 4.127 bits), gptq, grid nf4-g64-dq8" "= 4.127 bits/weight" \
  "contracts:     [0] scalar-lut, scalar codes, sparse none, kernel nf4_gemv v1" "recorded and verified"; do
  grep -qF -- "$want" <<<"$info" && echo "ok   inspect: $want" || fail "inspect lacks '$want': $info"
done
( check_eval_paths "$bin" "$work/nf4" "$text" "nf4 dq8" ) || fails=$((fails + 1))
check_int8_eval "$bin" "$work/nf4" "$text" "nf4 dq8" || fails=$((fails + 1))
base=$(nll_of "$model"); nll=$(nll_of "$work/nf4")
if python3 -c "import sys; sys.exit(0 if abs(float('$nll') - float('$base')) < 0.01 else 1)"; then
  echo "ok   nf4 held-out nll $nll, bf16 $base"
else fail "nf4 nll '$nll' against bf16 '$base'"; fi

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/fp16" --samples 2 --seq-len 32 \
  --repr nf4 --repr-opt scales=fp16 --group-size 128 --method rtn --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress nf4 fp16: $rc: $out"
grep -qF "nf4 (block 128, fp16 absmax, 4.125 bits), rtn" <<<"$("$bin" inspect "$work/fp16" --no-tensors 2>&1)" &&
  echo "ok   nf4 fp16 absmax, block 128" || fail "inspect fp16: $("$bin" inspect "$work/fp16" --no-tensors 2>&1)"
rc=0; out=$("$bin" run --model "$work/fp16" --prompt "The old prince said" -n 8 --ignore-eos --expert-cache-mb 0.5 --json 2>&1) || rc=$?
grep -q '"hit_rate"' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   paged run of the nf4 artifact" || fail "run: $rc: $out"
rc=0; out=$("$bin" trace record --model "$work/fp16" --text "$calib" --max-tokens 256 --out "$work/t.trace" 2>&1) || rc=$?
[ "$rc" -eq 0 ] && echo "ok   trace record on the nf4 artifact" || fail "trace: $rc: $out"

rc=0; out=$("$bin" bench gemv --repr nf4 --shape 64x512 --iters 3 --llc-factor 0.1 --min-matrices 4 --json 2>&1) || rc=$?
grep -q '"bits_per_weight": *4.12' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   bench gemv --repr nf4" || fail "bench: $rc: $out"

expect_error() { expect_compress_error "$bin" "$model" "$calib" "$work" "$@" || fails=$((fails + 1)); }
expect_error "nf4 scales 'fp8': expected dq8" --repr nf4 --repr-opt scales=fp8
expect_error "block size 48" --repr nf4 --group-size 48
expect_error "nf4 stores 4-bit codes" --repr nf4 --bits 3
expect_error "blocks of 4096 columns need a positive multiple of 4096 columns" --repr nf4 --group-size 4096 --method rtn
[ "$fails" -eq 0 ] || exit 1
