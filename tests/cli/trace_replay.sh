#!/usr/bin/env bash
# trace replay through the binary on the embedded default model: a trace
# recorded from the bf16 model drives an RTN int4 artifact's experts through the
# expert cache. Checked: every (token, layer, choice) is one cache access
# (hits + misses = tokens x layers x top_k at batch 1); a budget holding every
# expert reads each touched expert once (misses <= layers x experts, bytes
# read <= the artifact file); batches acquire the union of their experts
# (between top_k and min(experts, B x top_k) per layer and step); --io direct
# says the page cache is bypassed; a trace of another layout, a budget below
# one expert, a bad batch and a missing trace are refused with nothing run.
#   usage: trace_replay.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
model=$src/models/default-moe
calib=$src/data/calib-train-excerpt.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

rc=0; out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/int4" --samples 2 --seq-len 32 \
  --repr int --bits 4 --method rtn --quiet 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compress int4: $rc: $out"
rc=0; out=$("$bin" trace record --model "$model" --text "$calib" --max-tokens 200 --out "$work/t.trace" 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "trace record: $rc: $out"

# Batch 1, an LRU cache of ~40 of the 96 experts: one access per (token, layer, choice).
rc=0; j=$("$bin" trace replay --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 4 --threads 1 --json 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && python3 - "$j" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert j["tokens"] == 200 and j["steps"] == 200 and j["batch"] == 1, j
assert j["hits"] + j["misses"] == 200 * 6 * 2, (j["hits"], j["misses"])
assert 0 < j["hit_rate"] < 1 and j["misses"] > 6 * 16, j  # 4 MB holds ~40 of the 96 experts
assert j["bytes_read"] > 0 and j["tokens_per_s"] > 0 and j["read_seconds"] >= 0 and j["compute_seconds"] > 0, j
assert len(j["per_layer"]) == 6 and sum(l["misses"] for l in j["per_layer"]) == j["misses"], j["per_layer"]
assert abs(j["distinct_experts_per_layer_step"] - 2.0) < 1e-9, j
assert j["page_cache"].startswith("used"), j
PY
then echo "ok   batch 1: hits + misses = tokens x layers x top_k, per-layer sums"; else fail "batch 1: $rc: $j"; fi

# A budget holding every expert: each touched expert is read once.
size=$(stat -c %s "$work/int4/model.safetensors")
rc=0; j=$("$bin" trace replay --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1000 --threads 2 --json 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && python3 - "$j" "$size" <<'PY'
import json, sys
j = json.loads(sys.argv[1]); size = int(sys.argv[2])
assert j["misses"] <= 6 * 16 and j["hits"] + j["misses"] == 2400 and j["evictions"] == 0, j
assert 0 < j["bytes_read"] <= size, (j["bytes_read"], size)
PY
then echo "ok   every expert resident: each read once"; else fail "large budget: $rc: $j"; fi

# Batches of 8 acquire the union of their experts; O_DIRECT reads.
rc=0; j=$("$bin" trace replay --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 2 --batch 8 --io direct --tokens 100 --json 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && python3 - "$j" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert j["tokens"] == 100 and j["steps"] == 13 and j["batch"] == 8, j
d = j["distinct_experts_per_layer_step"]
assert 2.0 < d <= 16.0, d
assert j["hits"] + j["misses"] == round(d * 13 * 6), (j["hits"], j["misses"], d)
assert j["page_cache"].startswith("bypassed") or j["store_notice"], j
PY
then echo "ok   batch 8: the union of the experts once per layer and step, O_DIRECT"; else fail "batch 8: $rc: $j"; fi

rc=0; j=$("$bin" trace replay --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 4 --prefetch --tokens 50 --json 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && python3 - "$j" <<'PY'
import json, sys
p = json.loads(sys.argv[1])["prefetcher"]
assert p["requested"] > 0 and p["loaded"] + p["present"] + p["no_room"] + p["dropped"] + p["failed"] + p["cancelled"] <= p["requested"], p
PY
then echo "ok   --prefetch reports the prefetcher's outcomes"; else fail "prefetch: $rc: $j"; fi
rc=0; j=$("$bin" trace replay --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 4 --prefetch \
  --prefetch-from affinity --cache-profile "$work/t.trace" --tokens 50 --json 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && python3 - "$j" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert j["prefetch"] == "affinity" and j["prefetcher"]["requested"] > 0, j
assert j["hits"] + j["misses"] == 50 * 12, j
PY
then echo "ok   --prefetch-from affinity"; else fail "affinity prefetch: $rc: $j"; fi

rc=0; out=$("$bin" trace replay --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1 --tokens 20 2>&1) || rc=$?
grep -q "hit rate" <<<"$out" && grep -q "tokens/s" <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   table output" ||
  fail "table: $rc: $out"

# --prefetch-from on run: affinity from a profile trace is accepted, without one refused.
rc=0; out=$("$bin" run --model "$work/int4" --prompt "The old prince said" -n 4 --ignore-eos --expert-cache-mb 1 \
  --prefetch --prefetch-from affinity --cache-profile "$work/t.trace" --json 2>&1) || rc=$?
grep -q '"hit_rate"' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   run --prefetch-from affinity" || fail "run affinity: $rc: $out"
rc=0; out=$("$bin" run --model "$work/int4" --prompt "x" -n 1 --expert-cache-mb 1 --prefetch --prefetch-from affinity 2>&1) || rc=$?
[ "$rc" -ne 0 ] && grep -qF -- "--prefetch-from affinity needs --cache-profile" <<<"$out" &&
  echo "ok   run refuses --prefetch-from affinity without a profile" || fail "run affinity without profile: $rc: $out"

# --prefetch-from pregate on run: the same tokens as without prefetch;
# it needs --prefetch; trace replay (no hidden states) refuses it.
rc=0; base=$("$bin" run --model "$work/int4" --prompt "The old prince said" -n 8 --ignore-eos --expert-cache-mb 1 --json 2>&1) || rc=$?
rc2=0; pre=$("$bin" run --model "$work/int4" --prompt "The old prince said" -n 8 --ignore-eos --expert-cache-mb 1 \
  --prefetch --prefetch-from pregate --json 2>&1) || rc2=$?
if [ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ] && python3 - "$base" "$pre" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1].splitlines()[-1]), json.loads(sys.argv[2].splitlines()[-1])
assert a["text"] == b["text"], (a["text"], b["text"])
assert b["expert_cache"]["prefetch"] is True and b["expert_cache"]["prefetch_hits"] <= b["expert_cache"]["prefetched"], b["expert_cache"]
PY
then echo "ok   run --prefetch-from pregate: same text"; else fail "run pregate: $rc $rc2: $base $pre"; fi
# trace record --predictions-out, then trace replay --prefetch-from pregate --predictions: every
# prediction is a prefetch request of layers 1..5, and its hits show in the cache figures.
rc=0; out=$("$bin" trace record --model "$model" --text "$calib" --max-tokens 200 --out "$work/t2.trace" \
  --predictions-out "$work/p.trace" 2>&1) || rc=$?
cmp -s "$work/t.trace" "$work/t2.trace" && [ "$rc" -eq 0 ] && [ -s "$work/p.trace" ] &&
  echo "ok   trace record --predictions-out: the trace is unchanged" || fail "predictions-out: $rc: $out"
rc=0; j=$("$bin" trace replay --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 2 --prefetch \
  --prefetch-from pregate --predictions "$work/p.trace" --threads 1 --json 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && python3 - "$j" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert j["prefetch"] == "pregate" and j["hits"] + j["misses"] == 2400, j
# One submission a token and layer 1..5 of at most top_k keys (prefetch hits depend on timing).
assert 200 * 5 <= j["prefetcher"]["requested"] <= 200 * 5 * 2 and j["prefetch_hits"] <= j["prefetched"], j
PY
then echo "ok   trace replay --prefetch-from pregate: every prediction submitted"; else fail "replay pregate: $rc: $j"; fi
rc=0; out=$("$bin" run --model "$work/int4" --prompt "x" -n 1 --expert-cache-mb 1 --prefetch-from pregate 2>&1) || rc=$?
[ "$rc" -ne 0 ] && grep -qF -- "--prefetch-from pregate needs --prefetch" <<<"$out" &&
  echo "ok   run refuses --prefetch-from pregate without --prefetch" || fail "pregate without prefetch: $rc: $out"

# trace simulate --policy forecast: a hit rate at most Belady's, with a profile; the real cache refuses it.
rc=0; j=$("$bin" trace simulate "$work/t.trace" --policy forecast --capacity 0.25 --profile "$work/t2.trace" --json 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && python3 - "$j" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert j["policy"] == "forecast" and j["capacity_slots"] == 24 and j["hits"] + j["misses"] == 2400, j
assert 0 < j["hit_rate"] <= j["belady_hit_rate"], j
PY
then echo "ok   trace simulate --policy forecast: at most Belady"; else fail "simulate forecast: $rc: $j"; fi
rc=0; out=$("$bin" run --model "$work/int4" --prompt "x" -n 1 --expert-cache-mb 1 --cache-policy forecast 2>&1) || rc=$?
[ "$rc" -ne 0 ] && grep -q "forecast exists only in \`trace simulate\`" <<<"$out" &&
  echo "ok   run refuses --cache-policy forecast" || fail "run forecast: $rc: $out"

# Refusals.
expect() {  # expect WANT args...: exit status 1 or 2 and WANT in the message
  local want=$1; shift
  local rc=0 out
  out=$("$bin" trace replay "$@" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] && grep -qF -- "$want" <<<"$out"; then echo "ok   refused: $want"; else fail "'$want' expected ($rc): $out"; fi
}
# The same bytes as 3 layers of 400 tokens: a valid trace of another layout.
python3 - "$work/t.trace" "$work/other.trace" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
layers, tokens = struct.unpack_from("<I", b, 12)[0], struct.unpack_from("<Q", b, 24)[0]
struct.pack_into("<I", b, 12, layers // 2); struct.pack_into("<Q", b, 24, tokens * 2)
open(sys.argv[2], "wb").write(b)
PY
expect "the trace routes 16 experts in 3 MoE layers, the artifact has 16 experts in 6" \
  --artifact "$work/int4" --trace "$work/other.trace" --expert-cache-mb 1
expect "holds no expert" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 0.001
expect "--expert-cache-mb must be > 0" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 0
expect "--batch" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1 --batch 0
expect "missing.trace" --artifact "$work/int4" --trace "$work/missing.trace" --expert-cache-mb 1
expect "--prefetch-from affinity needs --cache-profile" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1 --prefetch --prefetch-from affinity
expect "--prefetch-from affinity needs --prefetch" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1 --prefetch-from affinity --cache-profile "$work/t.trace"
expect "--io" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1 --io mmap
expect "--prefetch-from pregate needs --predictions" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1 --prefetch --prefetch-from pregate
expect "--predictions only applies to --prefetch --prefetch-from pregate" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1 --predictions "$work/t.trace"
expect "do not match the trace" --artifact "$work/int4" --trace "$work/t.trace" --expert-cache-mb 1 --prefetch --prefetch-from pregate --predictions "$work/other.trace"
[ "$fails" -eq 0 ] || exit 1
