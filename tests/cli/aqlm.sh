#!/usr/bin/env bash
# aqlm through the binary on the embedded default model, with a light solver
# (no alternation, beam 2, few k-means and CG steps: the whole script must stay
# quick under sanitizers; the solver's quality is the representation tests'
# and docs/results.md's): compress --repr aqlm --repr-opt shape=3x5 (three 32-entry codebooks per matrix: 2.125 bits per
# weight with the codebooks and scales counted) writes a verified artifact
# whose inspect names the code, its contract and the rate; eval's fused
# kernels agree with the reference decoder, paging gives the same nll;
# held-out nll within 0.08 nats of bf16 (+0.045 measured with this light
# solver and 2 calibration samples); 2x4 under RTN runs paged and traces
# (2x8's 256-entry k-means costs minutes under ASan); bench gemv --bits 2
# (2x8) reports the bits; 1x16 on the model's 256 x 256
# experts and bad options are refused by name with nothing written.
#   usage: aqlm.sh SUBMOE_BINARY SOURCE_DIR
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

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/a3" --samples 2 --seq-len 32 \
  --repr aqlm --repr-opt shape=3x5 --repr-opt iters=0 --repr-opt beam=2 --repr-opt kmeans_iters=3 \
  --repr-opt cg_iters=6 --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress --repr aqlm: $rc: $out"
info=$("$bin" inspect "$work/a3" --verify --no-tensors 2>&1) || fail "inspect --verify: $info"
for want in "aqlm (3x5: 3 codebooks of 32 entries, 1.88 index bits per weight), gptq, grid aqlm3x5" \
  "= 2.125 bits/weight" "contracts:     [0] additive-vq, vectors of 8 along the input, sparse none, kernel aqlm_gemv v1"; do
  grep -qF -- "$want" <<<"$info" && echo "ok   inspect: $want" || fail "inspect lacks '$want': $info"
done
grep -q '"fine_tuning": "none' "$work/a3/submoe_manifest.json" && echo "ok   the provenance says no fine-tuning ran" ||
  fail "provenance: $(grep -A8 aqlm "$work/a3/submoe_manifest.json" | head -20)"
( check_eval_paths "$bin" "$work/a3" "$text" "aqlm 3x5" ) || fails=$((fails + 1))
base=$(nll_of "$model"); nll=$(nll_of "$work/a3")
if python3 -c "import sys; sys.exit(0 if abs(float('$nll') - float('$base')) < 0.08 else 1)"; then
  echo "ok   aqlm 3x5 held-out nll $nll, bf16 $base"
else fail "aqlm nll '$nll' against bf16 '$base'"; fi

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/a2" --samples 2 --seq-len 32 \
  --repr aqlm --repr-opt shape=2x4 --repr-opt iters=0 --repr-opt beam=1 --repr-opt kmeans_iters=2 --method rtn --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress aqlm 2x4 rtn: $rc: $out"
rc=0; out=$("$bin" run --model "$work/a2" --prompt "The old prince said" -n 8 --ignore-eos --expert-cache-mb 0.5 --json 2>&1) || rc=$?
grep -q '"hit_rate"' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   paged run of the 2x4 artifact" || fail "run 2x4: $rc: $out"
rc=0; out=$("$bin" trace record --model "$work/a2" --text "$calib" --max-tokens 256 --out "$work/t.trace" 2>&1) || rc=$?
[ "$rc" -eq 0 ] && echo "ok   trace record on the aqlm artifact" || fail "trace: $rc: $out"

rc=0; out=$("$bin" bench gemv --repr aqlm --bits 2 --repr-opt iters=0 --repr-opt kmeans_iters=2 --shape 256x2048 \
  --iters 3 --llc-factor 0.1 --min-matrices 4 --json 2>&1) || rc=$?
grep -q '"bits_per_weight": *2\.' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   bench gemv --repr aqlm --bits 2" || fail "bench: $rc: $out"

expect_error() { expect_compress_error "$bin" "$model" "$calib" "$work" "$@" || fails=$((fails + 1)); }
expect_error "fewer than the 65536 entries" --repr aqlm --repr-opt shape=1x16
expect_error "aqlm --bits must be a whole number" --repr aqlm --bits 2.5
expect_error "does not match shape 2x8" --repr aqlm --bits 3 --repr-opt shape=2x8
expect_error "not an aqlm option" --repr aqlm --bits 2 --repr-opt rht=on
expect_error "--group-size applies to" --repr aqlm --bits 2 --group-size 64
[ "$fails" -eq 0 ] || exit 1
