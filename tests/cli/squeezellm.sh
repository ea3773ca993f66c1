#!/usr/bin/env bash
# squeezellm through the binary on the embedded default model: compress --repr
# squeezellm --bits 3 with SqueezeLLM's 0.45% exceptions (GPTQ) writes a
# verified artifact whose inspect names its tables, exceptions and contract
# (replacement semantics); eval's fused kernels agree with the reference
# decoder and paging gives the same nll; held-out nll within 0.02 nats of
# bf16; --bits 4 dense-only RTN runs and traces; bench gemv reports the bits;
# bad options are refused by name with nothing written.
#   usage: squeezellm.sh SUBMOE_BINARY SOURCE_DIR
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

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/sq3" --samples 8 --seq-len 128 \
  --repr squeezellm --bits 3 --outliers 0.004 --repr-opt sensitive=0.0005 --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress --repr squeezellm: $rc: $out"
info=$("$bin" inspect "$work/sq3" --verify --no-tensors 2>&1) || fail "inspect --verify: $info"
for want in "squeezellm (3-bit row tables, with exceptions), gptq, grid squeezellm3-sparse" \
  "contracts:     [0] scalar-lut-rowwise, scalar codes, sparse replacement, kernel squeezellm_gemv v1"; do
  grep -qF -- "$want" <<<"$info" && echo "ok   inspect: $want" || fail "inspect lacks '$want': $info"
done
grep -qE "^sparse: +layer 0: 0\.450% exceptions \([0-9]+ of [0-9.]+M\), break-even 1\.[0-9]+%" <<<"$info" &&
  echo "ok   inspect prints the sparse ledger (0.45% realized, break-even per layer)" || fail "sparse ledger: $info"
grep -q '"outliers": 0.004' "$work/sq3/submoe_manifest.json" && echo "ok   the manifest's provenance records the fractions" ||
  fail "provenance: $(grep -A8 squeezellm "$work/sq3/submoe_manifest.json" | head -20)"
( check_eval_paths "$bin" "$work/sq3" "$text" "squeezellm 3-bit + exceptions" ) || fails=$((fails + 1))
check_int8_eval "$bin" "$work/sq3" "$text" "squeezellm 3-bit + exceptions" || fails=$((fails + 1))
base=$(nll_of "$model"); nll=$(nll_of "$work/sq3")
if python3 -c "import sys; sys.exit(0 if abs(float('$nll') - float('$base')) < 0.02 else 1)"; then
  echo "ok   squeezellm 3-bit held-out nll $nll, bf16 $base"
else fail "squeezellm nll '$nll' against bf16 '$base'"; fi

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/sq4" --samples 2 --seq-len 32 \
  --repr squeezellm --bits 4 --method rtn --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress squeezellm 4-bit rtn: $rc: $out"
rc=0; out=$("$bin" run --model "$work/sq4" --prompt "The old prince said" -n 8 --ignore-eos --expert-cache-mb 0.5 --json 2>&1) || rc=$?
grep -q '"hit_rate"' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   paged run of the 4-bit artifact" || fail "run: $rc: $out"
rc=0; out=$("$bin" trace record --model "$work/sq4" --text "$calib" --max-tokens 256 --out "$work/t.trace" 2>&1) || rc=$?
[ "$rc" -eq 0 ] && echo "ok   trace record on the squeezellm artifact" || fail "trace: $rc: $out"

rc=0; out=$("$bin" bench gemv --repr squeezellm --bits 3 --repr-opt outliers=0.01 --shape 64x512 --iters 3 --llc-factor 0.1 --min-matrices 4 --json 2>&1) || rc=$?
grep -q '"bits_per_weight": *3\.' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   bench gemv --repr squeezellm" || fail "bench: $rc: $out"

expect_error() { expect_compress_error "$bin" "$model" "$calib" "$work" "$@" || fails=$((fails + 1)); }
expect_error "squeezellm needs --bits 3 or 4" --repr squeezellm
expect_error "squeezellm needs --bits 3 or 4" --repr squeezellm --bits 2
expect_error "expected a fraction from 0 to 0.1" --repr squeezellm --bits 3 --repr-opt outliers=5
expect_error "not a squeezellm option" --repr squeezellm --bits 3 --repr-opt beam=4
expect_error "expected a fraction from 0 to 0.1" --repr squeezellm --bits 3 --outliers 0.5
expect_error "outliers is not a spqr option" --repr spqr --outliers 0.01
[ "$fails" -eq 0 ] || exit 1
