#!/usr/bin/env bash
# `submoe compare` on the embedded default model: int and e8p at 2 bits (RTN,
# a short text) give a source row and two measured rows, a third
# combination the representation refuses becomes a row saying why; the
# markdown, JSON and SVG agree; a second run reuses the saved rows; an
# entry's options (NAME:KEY=VALUE) reach compress; bad arguments are refused
# before any work.
#   usage: compare.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
args=(--model "$src/models/default-moe" --calib "$src/data/calib-train-excerpt.txt"
  --text "$src/data/heldout-war-and-peace.txt" --out "$work/c" --samples 2 --seq-len 32
  --max-tokens 256 --ctx 64 --bench-iters 2 --bench-llc-factor 0.1 --bench-min-matrices 4 --threads 2)
rc=0; out=$("$bin" compare "${args[@]}" --method rtn --reprs int,e8p,ternary_dict --bits 2 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "compare: $rc: $out"
for f in compare.md compare.json compare.svg rows/source.json rows/e8p-2.json artifacts/e8p-2/model.safetensors; do
  [ -s "$work/c/$f" ] && echo "ok   wrote $f" || fail "missing $f"
done
python3 - "$work/c" <<'PY' && echo "ok   compare.json: source, int 2, e8p 2 measured; ternary_dict 2 refused by name" || fail "compare.json"
import json, sys
d = sys.argv[1]
j = json.load(open(d + "/compare.json"))
rows = {(r["repr"], r["requested_bits"]): r for r in j["rows"]}
src, i2, e2, t2 = rows[("source", 0)], rows[("int", 2)], rows[("e8p", 2)], rows[("ternary_dict", 2)]
assert src["effective_bits"] == 16 and 4 < src["nll"] < 8, src
assert 2.0 < e2["effective_bits"] < 2.1 and 2.1 < i2["effective_bits"] < 2.3, (e2, i2)
for r in (i2, e2):
    assert abs(r["nll"] - src["nll"]) < 0.1, r
    assert r["artifact_bytes"] > 0 and r["compress_seconds"] > 0 and r["load_peak_rss_mb"] > 0, r
    assert r["gemv_batch1_us"] > 0 and r["gemv_batch8_us"] > 0 and r["decode_tokens_per_s"] > 0, r
assert "does not apply to ternary_dict" in t2["error"], t2
assert j["expert_shape"] == [256, 256], j["expert_shape"]
md = open(d + "/compare.md").read().splitlines()
assert len(md) == 6 and md[3].startswith("| int | 2 | 2.1875 |"), md
svg = open(d + "/compare.svg").read()
# One point per representation (one rate each): a marker and a legend entry each, no line.
assert svg.startswith("<svg") and svg.count("<polyline") == 0 and svg.count("<circle") == 2, svg
assert ">e8p</text>" in svg and ">int</text>" in svg, svg
PY
rc=0; out=$("$bin" compare "${args[@]}" --method rtn --reprs int,e8p,ternary_dict --bits 2 2>&1) || rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c "measured earlier" <<<"$out")" -eq 3 ] && grep -q "ternary_dict-2 ... failed" <<<"$out" && echo "ok   a second run reuses the 3 measured rows and tries the failed one again" ||
  fail "rerun: $rc: $out"
# An entry's own options reach compress as --repr-opt (int takes none: its row says so by name).
rc=0; out=$("$bin" compare "${args[@]}" --method rtn --reprs int:warp=1 --bits 2 --no-bench 2>&1) || rc=$?
[ "$rc" -eq 0 ] && grep -q "int:warp=1-2 ... failed: .*--repr-opt warp" <<<"$out" &&
  echo "ok   an entry's options (int:warp=1) are passed to compress" || fail "entry options: $rc: $out"
expect() {
  local want=$1; shift
  rc=0; out=$("$bin" compare "${args[@]}" "$@" 2>&1) || rc=$?
  [ "$rc" -ne 0 ] && grep -qF -- "$want" <<<"$out" && echo "ok   compare $* -> $want" || fail "compare $*: $rc: $out"
}
expect "unknown representation 'nope'" --reprs int,nope
expect "--bits: 'x' is not a rate" --reprs int --bits 2,x
expect "'shape' is not KEY=VALUE" --reprs aqlm:shape
expect "--method must be gptq or rtn" --reprs int --method best
expect "Could not convert: --group-size = abc" --reprs int --group-size abc
expect "--bench-llc-factor: Value -1 not in range" --reprs int --bench-llc-factor -1
[ "$fails" -eq 0 ] || exit 1
