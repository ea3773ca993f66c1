#!/usr/bin/env bash
# `codec rvq-synth` and `bench gemv --repr NAME`: a small valid run of each
# prints its JSON keys; bad rates, widths and names exit non-zero with a
# message naming the flag.
#   usage: rvq_commands.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
fails=0
expect_error() {  # message-substring command...
  local want=$1; shift
  local out rc=0
  out=$("$bin" "$@" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $*: status $rc, output: $out (wanted '$want')"; fails=$((fails + 1))
  else
    echo "ok   $* -> $want"
  fi
}
expect_keys() {  # keys... -- command...
  local keys=() out
  while [ "$1" != -- ]; do keys+=("$1"); shift; done; shift
  out=$("$bin" "$@" 2>/dev/null) || { echo "FAIL $*: non-zero status"; fails=$((fails + 1)); return; }
  for k in "${keys[@]}"; do
    grep -q "\"$k\":" <<<"$out" || { echo "FAIL $*: no key $k"; fails=$((fails + 1)); return; }
  done
  echo "ok   $*"
}
expect_keys bits_per_weight mse mse_train gaussian_bound lloyd_max_scalar_mse -- \
  codec rvq-synth --bits 1 --rows 16 --cols 64 --train-vectors 512 --iters 2 --json
expect_error "--bits must be a multiple of 0.5" codec rvq-synth --bits 2.3
expect_error "--bits must be a multiple of 0.5" codec rvq-synth --bits 4.5
expect_error "--cols must be a positive multiple of 16" codec rvq-synth --bits 2 --cols 40
fast_rvq=(--repr-opt train_vectors=4096 --repr-opt iters=3)
expect_keys repr bits_per_weight ratio_vs_bf16 compressed -- \
  bench gemv --repr rvq --bits 2 "${fast_rvq[@]}" --shape 64x64 --iters 2 --min-matrices 2 --llc-factor 0 --threads 1 --json
expect_keys repr bits_per_weight ratio_vs_bf16 compressed_batch1 per_token_ratio_vs_batch1 -- \
  bench gemv --repr int --bits 4 --group-size 32 --shape 64x64 --batch 3 --iters 2 --min-matrices 2 --llc-factor 0 --json
expect_error "rvq --bits must be 0.5 to 4 in steps of 0.5" bench gemv --repr rvq --bits 2.25 "${fast_rvq[@]}" --shape 64x64
expect_error "multiple of 16" bench gemv --repr rvq --bits 2 "${fast_rvq[@]}" --shape 64x40
expect_error "unknown representation 'hqq' (registered: ternary_dict, int, rvq, mxfp4, nf4, squeezellm, spqr, e8p, aqlm, vptq)" bench gemv --repr hqq
expect_error "need --repr NAME" bench gemv --bits 2
expect_error "need --repr NAME" bench gemv --execution fused-int8
expect_error "the dense kernels are timed already" bench gemv --repr mxfp4 --execution reference
expect_error "--isa applies to the built-in" bench gemv --repr int --bits 4 --isa scalar
expect_error "--repr-opt must be KEY=VALUE" bench gemv --repr rvq --repr-opt beam
fixture=$2/tests/fixtures/qwen3_moe
expect_keys mse_global mse_layer mse_layer_train test_vectors -- \
  codec rvq-fit --model "$fixture" --bits 1 --train-vectors 512 --iters 2 --beam 1 --threads 1 --json
expect_error "steps of 0.5" codec rvq-fit --model "$fixture" --bits 0.7
expect_error "config.json" codec rvq-fit --model "$2/tests/fixtures/calib"
[ "$fails" -eq 0 ] || exit 1
