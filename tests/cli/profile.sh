#!/usr/bin/env bash
# run --profile and eval --profile: the table names the op classes, the JSON
# carries the prefill and decode breakdowns whose classes sum to no more than
# the forward time, and the decode profile counts exactly the decode steps.
#   usage: profile.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
model=$src/tests/fixtures/qwen3_moe
calib=$src/tests/fixtures/calib/shakespeare-excerpt.txt
"$bin" run --model "$model" --prompt "To be" -n 6 --threads 2 --ignore-eos --profile --json | python3 -c '
import json, sys
d = json.load(sys.stdin); p = d["profile"]
dec, pre = p["decode"], p["prefill"]
assert dec["forwards"] == d["decode_steps"] == 5, (dec["forwards"], d["decode_steps"])
assert pre["tokens"] == d["prompt_tokens"], (pre["tokens"], d["prompt_tokens"])
for prof in (dec, pre):
    total = sum(c["ms"] for n, c in prof["classes"].items() if n != "sampling")
    assert total <= prof["forward_ms"] * 1.0001, (total, prof["forward_ms"])
    for need in ("attn projections", "attn core", "router", "expert kernels", "lm_head"):
        assert need in prof["classes"], need
assert dec["classes"]["sampling"]["calls"] == 6
assert "thread_pool" in dec
print("ok   run --profile --json:", ", ".join("%s %.3f" % (n, c["ms_per_token"]) for n, c in dec["classes"].items()))
'
out=$("$bin" run --model "$model" --prompt "To be" -n 4 --threads 1 --profile 2>&1 >/dev/null)
grep -q "\[profile\] decode: 3 tokens in 3 forwards" <<<"$out" && grep -q "expert kernels" <<<"$out" ||
  { echo "FAIL run --profile table: $out"; exit 1; }
"$bin" eval --model "$model" --text "$calib" --ctx 64 --max-tokens 128 --threads 1 --profile --json | python3 -c '
import json, sys
d = json.load(sys.stdin); p = d["profile"]
assert p["tokens"] == d["tokens_processed"], (p["tokens"], d["tokens_processed"])
assert "expert kernels" in p["classes"]
print("ok   eval --profile --json:", p["tokens"], "tokens,", round(p["ms_per_token"], 4), "ms/token")
'
