#!/usr/bin/env bash
# compress --alloc on the qwen3_moe fixture: thirds and waterfill write one rvq
# record per rate used and expert_matrices, keep every layer's mean at --bits
# exactly, record counts and bits per expert in the manifest, and the artifact
# evaluates (fused = reference) and pages; a routing trace can drive the
# counts; bad combinations exit non-zero naming the flag.
#   usage: rvq_alloc.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/lib/artifact_checks.bash"
bin=$1
src=$2
model=$src/tests/fixtures/qwen3_moe
calib=$src/tests/fixtures/calib/shakespeare-excerpt.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fast=(--samples 4 --seq-len 64 --quiet --repr-opt train_vectors=4096 --repr-opt iters=5)
fail() { echo "FAIL: $*"; exit 1; }
for alloc in thirds waterfill; do
  "$bin" compress --model "$model" --calib "$calib" --out "$work/$alloc" --repr rvq --bits 2 --alloc "$alloc" \
    "${fast[@]}" >/dev/null
  python3 - "$work/$alloc" "$alloc" <<'PY' || exit 1
import json, sys
d, alloc = sys.argv[1], sys.argv[2]
m = json.load(open(d + "/submoe_manifest.json"))
q, a = m["quantization_config"], m["provenance"]["allocation"]
assert a["policy"] == alloc and a["requested_bits"] == 2 and a["step_bits"] == 0.5, a
stages = [r["stages"] for r in q["representations"]]
assert stages == sorted(stages) and len(stages) > 1, stages
assert {r["codebook_tensor"] for r in q["representations"]} == {"submoe.rvq.codebooks"}
for layer in a["layers"]:
    bits, l = layer["bits"], layer["layer"]
    assert abs(sum(bits) / len(bits) - 2.0) < 1e-12, (l, bits)
    recs = q["expert_matrices"][l]
    assert len(recs) == len(bits)
    for e, (r, b) in enumerate(zip(recs, bits)):
        assert r[0] == r[1] == r[2] and stages[r[0]] * 0.5 == b, (l, e, r, b)
    if alloc == "thirds":
        order = sorted(range(len(bits)), key=lambda e: (-layer["counts"][e], e))
        third = len(bits) // 3
        assert all(bits[e] == 2.5 for e in order[:third]) and all(bits[e] == 1.5 for e in order[-third:]), layer
print("ok   %s: %d records, every layer's mean 2.0 bits" % (alloc, len(stages)))
PY
done
check_eval_paths "$bin" "$work/thirds" "$calib" "mixed rates"
# Counts from a routing trace.
"$bin" trace record --model "$model" --text "$calib" --out "$work/t.trace" --ctx 64 --max-tokens 128 >/dev/null 2>&1
"$bin" compress --model "$model" --calib "$calib" --out "$work/traced" --repr int --bits 3 \
  --alloc thirds --popularity "$work/t.trace" --samples 4 --seq-len 64 --quiet >/dev/null
grep -q '"source": "trace"' "$work/traced/submoe_manifest.json" || fail "--popularity did not record the trace"
grep -q '"bits": 4' "$work/traced/config.json" && grep -q '"bits": 2' "$work/traced/config.json" ||
  fail "int thirds did not write int2 and int4 records"
echo "ok   --popularity trace drives int thirds"
# Bad input.
expect_error() {
  local want=$1; shift
  local out
  if out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/bad" --samples 2 --seq-len 32 --quiet "$@" 2>&1); then
    fail "compress $* succeeded"
  fi
  grep -q -- "$want" <<<"$out" || fail "compress $*: no '$want' in: $out"
}
expect_error "--alloc must be uniform, thirds or waterfill" --repr rvq --bits 2 --alloc third
expect_error "has no rate ladder" --repr ternary_dict --alloc thirds
expect_error "one rate step above and below" --repr rvq --bits 0.5 --alloc thirds
expect_error "one rate step above and below" --repr int --bits 4 --alloc thirds
expect_error "--popularity goes with --alloc" --repr rvq --bits 2 --popularity "$work/t.trace"
head -c 100 "$work/t.trace" > "$work/short.trace"
expect_error "short.trace" --repr rvq --bits 2 --alloc waterfill --popularity "$work/short.trace"
echo "ok   bad input"
