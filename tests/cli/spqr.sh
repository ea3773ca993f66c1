#!/usr/bin/env bash
# spqr through the binary on the embedded default model: compress --repr spqr
# (3 bits, SpQR's outlier threshold 0.2, GPTQ) writes a verified artifact
# whose inspect names its groups, contract (correction semantics) and sparse
# ledger; eval's fused kernels agree with the reference decoder, paging gives
# the same nll and the int8-activation kernels land within 0.01 nats;
# held-out nll within 0.02 nats of bf16; --bits 2 without exceptions
# under RTN runs paged and traces; bench gemv reports the bits; bad options
# are refused by name with nothing written.
#   usage: spqr.sh SUBMOE_BINARY SOURCE_DIR
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

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/s3" --samples 8 --seq-len 128 \
  --repr spqr --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress --repr spqr: $rc: $out"
info=$("$bin" inspect "$work/s3" --verify --no-tensors 2>&1) || fail "inspect --verify: $info"
for want in "spqr (3-bit groups of 16, 3-bit statistics, outlier threshold 0.2), gptq, grid spqr3-g16" \
  "contracts:     [0] scalar-affine-two-level, scalar codes, sparse correction, kernel spqr_gemv v1"; do
  grep -qF -- "$want" <<<"$info" && echo "ok   inspect: $want" || fail "inspect lacks '$want': $info"
done
grep -qE "^sparse: +layer 0: [0-9.]+% exceptions \([0-9]+ of [0-9.]+M\), break-even 0\.7[0-9]+%" <<<"$info" &&
  echo "ok   inspect prints the sparse ledger (density and break-even per layer)" || fail "sparse ledger: $info"
"$bin" inspect "$work/s3" --json --no-tensors 2>/dev/null | python3 -c '
import json, sys
q = json.load(sys.stdin)["quantization"]
s = q["sparse_ledger"]
assert len(s) == 6 and all(0 < l["density"] < 0.05 and 0.005 < l["break_even_density"] < 0.01 for l in s), s
' && echo "ok   inspect --json: sparse_ledger" || fail "inspect --json sparse_ledger"
grep -q '"outlier_threshold": 0.2' "$work/s3/submoe_manifest.json" && echo "ok   the manifest's provenance records the threshold" ||
  fail "provenance: $(grep -A8 spqr "$work/s3/submoe_manifest.json" | head -20)"
( check_eval_paths "$bin" "$work/s3" "$text" "spqr 3-bit" ) || fails=$((fails + 1))
base=$(nll_of "$model"); nll=$(nll_of "$work/s3")
nll8=$("$bin" eval --model "$work/s3" --text "$text" --ctx 128 --max-tokens 1024 --execution fused-int8 --json 2>/dev/null |
       python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])')
if python3 -c "import sys; sys.exit(0 if abs(float('$nll8') - float('$nll')) < 0.01 else 1)"; then
  echo "ok   eval --execution fused-int8 (the integer-sum kernels) nll $nll8 against fused $nll"
else fail "fused-int8 nll '$nll8' against fused '$nll'"; fi
if python3 -c "import sys; sys.exit(0 if abs(float('$nll') - float('$base')) < 0.02 else 1)"; then
  echo "ok   spqr 3-bit held-out nll $nll, bf16 $base"
else fail "spqr nll '$nll' against bf16 '$base'"; fi

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/s2" --samples 2 --seq-len 32 \
  --repr spqr --bits 2 --repr-opt outlier_threshold=none --method rtn --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress spqr 2-bit rtn: $rc: $out"
rc=0; out=$("$bin" run --model "$work/s2" --prompt "The old prince said" -n 8 --ignore-eos --expert-cache-mb 0.5 --json 2>&1) || rc=$?
grep -q '"hit_rate"' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   paged run of the 2-bit artifact" || fail "run: $rc: $out"
rc=0; out=$("$bin" trace record --model "$work/s2" --text "$calib" --max-tokens 256 --out "$work/t.trace" 2>&1) || rc=$?
[ "$rc" -eq 0 ] && echo "ok   trace record on the spqr artifact" || fail "trace: $rc: $out"

# An exception budget (tau per matrix for about that share): the realized share
# inspect prints is within a factor 2 of it, and the provenance records it.
rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/sb" --samples 2 --seq-len 32 \
  --repr spqr --repr-opt outlier_budget=0.01 --method rtn --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress spqr outlier_budget: $rc: $out"
"$bin" inspect "$work/sb" --json --no-tensors 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)["quantization"]["sparse_ledger"]
assert s and all(0.005 < l["density"] < 0.02 for l in s), s
' && grep -q '"outlier_budget": 0.01' "$work/sb/submoe_manifest.json" &&
  echo "ok   outlier_budget=0.01: realized share within a factor 2, recorded" || fail "outlier_budget share or provenance"

rc=0; out=$("$bin" bench gemv --repr spqr --bits 3 --shape 64x512 --iters 3 --llc-factor 0.1 --min-matrices 4 --json 2>&1) || rc=$?
grep -q '"bits_per_weight": *[34]\.' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   bench gemv --repr spqr" || fail "bench: $rc: $out"

expect_error() { expect_compress_error "$bin" "$model" "$calib" "$work" "$@" || fails=$((fails + 1)); }
expect_error "spqr needs --bits 2, 3 or 4" --repr spqr --bits 5
expect_error "outlier_threshold=abc" --repr spqr --repr-opt outlier_threshold=abc
expect_error "not a spqr option" --repr spqr --repr-opt outliers=0.01
expect_error "--group-size 64 is not supported" --repr spqr --group-size 64
expect_error "outlier_budget=0.5" --repr spqr --repr-opt outlier_budget=0.5
expect_error "not both" --repr spqr --repr-opt outlier_budget=0.01 --repr-opt outlier_threshold=0.2
[ "$fails" -eq 0 ] || exit 1
