#!/usr/bin/env bash
# DeepSeek-V3 and Kimi-K2 configs through the binary: inspect reads the MLA
# attention and shows its KV cache per token ((kv_lora_rank + qk_rope_head_dim)
# x layers x 4 bytes), project --config projects DeepSeek-V3's 671 B, an
# inconsistent config is refused naming its field, run without the weights
# names the missing tensor (exit 1, no crash), run on the tiny DeepSeek-V3
# fixtures writes transformers' greedy ids, and an FP8 block-scaled copy runs,
# evaluates and compresses exactly like its dequantized reference (bad FP8
# checkpoints refused by tensor name).
#   usage: deepseek_config.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
source "$(dirname "$0")/lib/artifact_checks.bash"
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# A checkpoint directory: the hub config.json and a one-tensor safetensors file.
make_model() {  # dir model_type [key=json-value ...]
  python3 - "$@" <<'PY'
import json, struct, sys, os
d, mt = sys.argv[1], sys.argv[2]
os.makedirs(d, exist_ok=True)
cfg = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": mt, "vocab_size": 129280, "hidden_size": 7168,
       "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
       "num_attention_heads": 128, "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
       "routed_scaling_factor": 2.5, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
       "v_head_dim": 128, "qk_nope_head_dim": 128, "topk_method": "noaux_tc", "n_group": 8, "topk_group": 4,
       "num_experts_per_tok": 8, "moe_layer_freq": 1, "first_k_dense_replace": 3, "norm_topk_prob": True,
       "scoring_func": "sigmoid", "max_position_embeddings": 163840, "rms_norm_eps": 1e-06, "rope_theta": 10000,
       "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                        "original_max_position_embeddings": 4096, "type": "yarn"},
       "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    cfg[k] = json.loads(v)
json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=1)
header = json.dumps({"model.norm.weight": {"dtype": "BF16", "shape": [8], "data_offsets": [0, 16]}}).encode()
header += b" " * (-len(header) % 8)
with open(os.path.join(d, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + bytes(16))
PY
}

make_model "$work/dsv3" deepseek_v3
out=$("$bin" inspect "$work/dsv3" 2>&1) || fail "inspect deepseek_v3: $out"
for want in "architecture:  deepseek_v3" "layers:        61 (58 MoE)" "multi-head latent, 128 heads, kv_lora_rank 512" \
            "kv cache:      140544 bytes per token"; do
  if ! grep -qF -- "$want" <<<"$out"; then fail "inspect text lacks '$want': $out"; fi
done
json=$("$bin" inspect "$work/dsv3" --json 2>&1) || fail "inspect --json: $json"
python3 - "$json" <<'PY' || fails=$((fails + 1))
import json, sys
c = json.loads(sys.argv[1])["config"]
want = {"attention": "mla", "kv_lora_rank": 512, "qk_rope_head_dim": 64, "kv_cache_bytes_per_token": (512 + 64) * 61 * 4,
        "num_moe_layers": 58, "num_shared_experts": 1, "routed_scaling_factor": 2.5, "n_group": 8, "topk_group": 4}
bad = {k: (c.get(k), v) for k, v in want.items() if c.get(k) != v}
if bad:
    print("FAIL inspect --json:", bad); sys.exit(1)
print("ok   inspect --json: MLA ranks, 140544 KV bytes per token, 58 MoE layers")
PY
echo "ok   inspect deepseek_v3"

make_model "$work/kimi" kimi_k2 n_routed_experts=384 num_attention_heads=64 num_key_value_heads=64 n_group=1 topk_group=1 first_k_dense_replace=1
out=$("$bin" inspect "$work/kimi" 2>&1) || fail "inspect kimi_k2: $out"
grep -qF "architecture:  kimi_k2" <<<"$out" && grep -qF "384 routed" <<<"$out" && echo "ok   inspect kimi_k2" || fail "inspect kimi_k2: $out"

out=$("$bin" project --config "$work/dsv3/config.json" --rate 1 --dram-gb 64 2>&1) || fail "project: $out"
grep -qE "67[01]\.[0-9]+ ?B|6\.7[01][0-9]*e\+11|671" <<<"$out" && echo "ok   project deepseek_v3" || fail "project output lacks 671 B: $out"

make_model "$work/bad" deepseek_v3 topk_group=9
rc=0; out=$("$bin" inspect "$work/bad" 2>&1) || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -qF "'topk_group' (9) exceeds n_group (8)" <<<"$out"; then
  echo "ok   inconsistent config refused -> $rc"
else fail "bad config: status $rc, output: $out"; fi

# The hub config without its weights: run names the first missing tensor.
rc=0; out=$("$bin" run --model "$work/dsv3" --prompt hi -n 1 2>&1) || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -qF "model.embed_tokens.weight" <<<"$out"; then
  echo "ok   run without the weights refused by tensor name -> $rc"
else fail "run without weights: status $rc, output: $out"; fi

# The forward through the binary: greedy ids of the tiny DeepSeek-V3 fixture
# (MLA, grouped sigmoid router, YaRN) equal transformers' generated ids.
for fx in deepseek_v3 deepseek_v3_plain_q; do check_greedy_ids "$bin" "$src/tests/fixtures/$fx" || fails=$((fails + 1)); done

# The pipeline on DeepSeek-V3 (MLA, shared expert, dense first layer, grouped
# router): GPTQ ternary and rvq 2-bit artifacts compress, verify, evaluate
# within reach of the checkpoint's loss, run with experts paged through a tiny
# cache, and trace record reads the artifact's routing.
printf 'The quick brown fox jumps over the lazy dog. A second sentence follows it here. And a third one ends it.\n' >"$work/calib.txt"
fx="$src/tests/fixtures/deepseek_v3"
base=$("$bin" eval --model "$fx" --text "$work/calib.txt" --ctx 16 --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])')
for repr in "ternary_dict" "rvq --bits 2 --repr-opt train_vectors=4096 --repr-opt iters=3"; do
  name=${repr%% *}
  rc=0; out=$("$bin" compress --model "$fx" --calib "$work/calib.txt" --out "$work/ds-$name" --samples 2 --seq-len 16 \
    --repr $repr 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || { fail "compress deepseek_v3 --repr $repr: $rc: $out"; continue; }
  "$bin" inspect "$work/ds-$name" --verify >/dev/null 2>&1 || fail "inspect --verify ds-$name"
  nll=$("$bin" eval --model "$work/ds-$name" --text "$work/calib.txt" --ctx 16 --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])')
  if python3 -c "import sys; b, n = float('$base'), float('$nll'); sys.exit(0 if abs(n - b) < 0.5 else 1)"; then
    echo "ok   deepseek_v3 --repr $repr: nll $nll against the checkpoint's $base"
  else fail "deepseek_v3 --repr $repr: nll '$nll' against '$base'"; fi
  rc=0; out=$("$bin" run --model "$work/ds-$name" --prompt "The quick" -n 6 --ignore-eos --expert-cache-mb 0.01 --json 2>&1) || rc=$?
  grep -q '"hit_rate"' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   deepseek_v3 --repr $repr: paged run" ||
    fail "paged run ds-$name: $rc: $out"
done
rc=0; out=$("$bin" trace record --model "$work/ds-ternary_dict" --text "$work/calib.txt" --out "$work/ds.trace" 2>&1) || rc=$?
[ "$rc" -eq 0 ] && grep -q "2 layers, 8 experts, top-2" <<<"$("$bin" trace stats "$work/ds.trace" 2>&1)" &&
  echo "ok   trace record on the deepseek_v3 artifact: 2 MoE layers, 8 experts, top-2" || fail "trace: $rc: $out"

# synth-model writes DeepSeek-V3-shaped checkpoints that inspect reads as MLA and run generates from.
rc=0; out=$("$bin" synth-model --arch deepseek_v3 --layers 3 --experts 8 --top-k 2 --hidden 128 --ffn 32 \
  --tokenizer-from "$src/models/default-moe" --out "$work/synth-ds" 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && grep -qF "multi-head latent, 1 heads, kv_lora_rank 512" <<<"$("$bin" inspect "$work/synth-ds" 2>&1)" &&
   "$bin" run --model "$work/synth-ds" --prompt hi -n 4 --ignore-eos >/dev/null 2>&1; then
  echo "ok   synth-model deepseek_v3: MLA checkpoint inspected and run"
else fail "synth-model deepseek_v3: $rc: $out"; fi
rc=0; out=$("$bin" synth-model --arch deepseek_v3 --layers 2 --experts 4 --hidden 72 --heads 4 --ffn 16 \
  --out "$work/synth-bad" 2>&1) || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -qF "must be a multiple of 4" <<<"$out" && [ ! -e "$work/synth-bad/model.safetensors" ]; then
  echo "ok   synth-model deepseek_v3 with an odd RoPE part refused -> $rc, nothing written"
else fail "synth-model odd rope: $rc: $out"; fi

# FP8 block-scaled checkpoints as the hub stores DeepSeek-V3 and Kimi-K2:
# tools/make_fp8_checkpoint.py rewrites the fixture's projections as F8_E4M3
# with a float32 weight_scale_inv per block (blocks of 16 x 24 here, so that
# the 64-wide matrices have several blocks and ragged edges) and writes the
# same values dequantized in float64 and rounded to float32 as a reference
# checkpoint. submoe reads the FP8 one through its scales: the same greedy
# ids and the same loss to the last digit as the reference.
python3 "$src/tools/make_fp8_checkpoint.py" "$fx" "$work/fp8" "$work/fp8ref" --block 16 24 >/dev/null || fail "make_fp8_checkpoint"
run_ids() { "$bin" run --model "$1" --prompt "The quick brown fox jumps." -n 8 --ignore-eos --json 2>&1 |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["token_ids"])'; }
a=$(run_ids "$work/fp8"); b=$(run_ids "$work/fp8ref")
if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "ok   FP8 checkpoint: greedy ids equal the dequantized reference's $a"
else fail "fp8 run: '$a' vs reference '$b'"; fi
printf 'The quick brown fox jumps over the lazy dog. A second sentence follows it here.\n' >"$work/text.txt"
nll() { "$bin" eval --model "$1" --text "$work/text.txt" --ctx 16 --json 2>/dev/null |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print(repr(j["nll"]))'; }
a=$(nll "$work/fp8"); b=$(nll "$work/fp8ref")
if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "ok   FP8 checkpoint: eval nll $a, bit-equal to the reference"
else fail "fp8 eval: '$a' vs reference '$b'"; fi
# compress from FP8: the artifact holds no FP8 (dense weights dequantized to BF16) and runs.
rc=0; out=$("$bin" compress --model "$work/fp8" --calib "$work/text.txt" --out "$work/fp8art" --samples 1 --seq-len 16 \
  --method rtn --repr int --bits 4 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && ! grep -q F8_E4M3 "$work/fp8art/model.safetensors" && "$bin" run --model "$work/fp8art" \
   --prompt hi -n 4 --ignore-eos >/dev/null 2>&1; then echo "ok   compress from FP8: artifact without FP8 runs"
else fail "compress from fp8: status $rc: $out"; fi

# Bad FP8 checkpoints: an FP8 weight without its scale, a scale of the wrong
# shape, a scale without a weight: refused at open, naming the tensor.
for bad in drop-scale wrong-shape orphan-scale; do
  python3 "$src/tools/make_fp8_checkpoint.py" "$fx" "$work/bad-$bad" "" --block 16 24 --break "$bad" >/dev/null ||
    { fail "make_fp8_checkpoint --break $bad"; continue; }
  rc=0; out=$("$bin" run --model "$work/bad-$bad" --prompt hi -n 1 --allow-extra-tensors 2>&1) || rc=$?
  case $bad in
    drop-scale) want="has no block scale 'model.layers.1.mlp.experts.0.down_proj.weight_scale_inv'" ;;
    wrong-shape) want="block scale 'model.layers.1.mlp.experts.0.down_proj.weight_scale_inv' has shape [1, 1]" ;;
    orphan-scale) want="block scale 'model.layers.1.mlp.experts.0.nothing.weight_scale_inv' has no weight" ;;
  esac
  if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -qF "$want" <<<"$out"; then echo "ok   FP8 $bad refused -> $rc"
  else fail "fp8 $bad: status $rc, output: $out"; fi
done

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "ok   all"
