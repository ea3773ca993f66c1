#!/usr/bin/env bash
# frontier through the binary on the embedded default model (rtn, short
# traces; uniform int4, ternary and a popularity-allocated mixed-rate int): the report, the JSON and the six figures are written; every
# replayed point's hits come from a real replay of the held-out trace
# (tokens replayed as asked, hit rate in [0, 1], bytes read > 0); the
# amplification baseline is the largest replayed rate and its own ratios are
# 1; bf16 is a rate with a footprint but no replay; LRU hits nothing at any
# capacity up to k L - k in the simulator curve; a second run reuses every
# saved step and writes the same frontier.json; a deleted step is measured
# again alone, a changed flag re-runs the steps it enters; a budget below one expert becomes a row saying why; bad
# --reprs, --budgets-mb, --synth-scale and --policy are refused before any work.
#   usage: frontier.sh SUBMOE_BINARY SOURCE_DIR
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

rc=0; out=$("$bin" roofline --dir "$work" --quick --no-kernels --no-gpu --json --out "$work/rl.json" 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "roofline: $rc: $out"

args=(--model "$model" --calib "$calib" --text "$text" --out "$work/f" --method rtn --samples 2 --seq-len 32
      --reprs bf16,int@4,ternary_dict,int:alloc=thirds@3 --budgets-mb 10%,0.01 --trace-tokens 96 --profile-tokens 256
      --replay-tokens 48 --roofline "$work/rl.json" --threads 2)
rc=0; out=$("$bin" frontier "${args[@]}" 2>"$work/err1") || rc=$?
if [ "$rc" -eq 0 ] && python3 - "$work/f" <<'PY'
import json, os, sys
d = sys.argv[1]
for f in ["report.md", "frontier.json", "footprint.svg", "resident_fraction.svg", "hit_rate.svg",
          "tokens_per_s.svg", "amplification.svg", "loss.svg"]:
    assert os.path.getsize(os.path.join(d, f)) > 0, f
for f in ["footprint.svg", "hit_rate.svg", "amplification.svg"]:
    s = open(os.path.join(d, f)).read()
    assert s.startswith("<svg") and s.endswith("</svg>\n") and "nan" not in s and "inf" not in s, f
j = json.load(open(os.path.join(d, "frontier.json")))
assert j["format"] == "submoe-frontier" and j["layers"] == 6 and j["experts"] == 16 and j["top_k"] == 2, j
assert j["trace_tokens"] == 96 and j["replay_tokens"] == 48, j
rates = {r["label"]: r for r in j["rates"]}
assert set(rates) == {"bf16", "int@4", "ternary_dict", "int:alloc=thirds@3"}, rates
assert rates["bf16"]["bits"] == 16 and not rates["bf16"]["replayed"], rates["bf16"]
assert rates["bf16"]["experts_bytes"] == 6 * 16 * 3 * 256 * 256 * 2, rates["bf16"]
assert 4 < rates["int@4"]["bits"] < 4.5 and rates["ternary_dict"]["bits"] < 2, rates
assert 2.9 < rates["int:alloc=thirds@3"]["bits"] < 3.3, rates  # per-expert 2/3/4 bits, mean 3 + scales
for r in rates.values():
    assert r["nll"] is not None and 4 < r["nll"] < 8, r
assert j["baseline"] == "int@4", j["baseline"]
budgets = j["budgets_mib"]
assert len(budgets) == 2 and abs(budgets[0] - 3.6) < 1e-9 and budgets[1] == 0.01, budgets
ok = [p for p in j["points"] if "error" not in p]
bad = [p for p in j["points"] if "error" in p]
assert len(ok) == 3 and len(bad) == 3, j["points"]
for p in bad:
    assert p["budget_mib"] == 0.01 and "holds no expert" in p["error"], p
for p in ok:
    assert p["tokens"] == 48 and 0 <= p["hit_rate"] <= 1 and p["bytes_read"] > 0 and p["tokens_per_s"] > 0, p
    assert p["predicted_tokens_per_s_serial"] > 0 and p["predicted_tokens_per_s"] >= p["predicted_tokens_per_s_serial"], p
    assert 0 <= p["byte_hit_rate"] <= 1, p
    if p["label"] == "int@4":  # experts of one size (ternary's code and alloc's rates vary): by bytes = by count
        assert abs(p["byte_hit_rate"] - p["hit_rate"]) < 1e-12, p
    if p["label"] == "int@4":
        assert p["rho"] == 1 and p["amplification"] == 1 and p["traffic_ratio"] == 1, p
    else:
        assert 0 < p["rho"] < (0.5 if p["label"] == "ternary_dict" else 0.9) and p["traffic_ratio"] > 0, p
curves = {c["name"]: c["points"] for c in j["hit_rate_curves"]}
assert set(curves) == {"lru", "lfu", "pinned", "hybrid", "forecast", "belady", "popularity model"}, curves.keys()
assert j["lru_zero_bound_slots"] == 10, j["lru_zero_bound_slots"]
assert all(h == 0 for c, h in curves["lru"] if c <= 10), curves["lru"][:12]
assert j["lru_first_hit_slots"] > 10, j["lru_first_hit_slots"]
for name, pts in curves.items():
    for (c, h), (c0, h0) in zip(pts, [(0, 0)] + pts):
        assert 0 <= h <= 1, (name, c, h)
    if name != "popularity model":
        assert all(h <= b + 1e-12 for (c, h), (_, b) in zip(pts, curves["belady"])), name
report = open(os.path.join(d, "report.md")).read()
assert "LRU hits nothing up to 10 slots" in report and "| 0.01 MiB | int@4 | failed:" in report, report[:2000]
PY
then echo "ok   report, JSON and figures; replays, baseline, LRU bound, Belady above every policy"; else fail "first run: $rc: $out $(tail -5 "$work/err1")"; fi

# A second run reuses every step and writes the same frontier.json (the failed
# 0.01 MiB replays are tried again, and fail again).
cp "$work/f/frontier.json" "$work/first.json"
rc=0; "$bin" frontier "${args[@]}" >/dev/null 2>"$work/err2" || rc=$?
if [ "$rc" -eq 0 ] && cmp -s "$work/first.json" "$work/f/frontier.json" \
   && ! grep ' \.\.\.$' "$work/err2" | grep -qv '0.01MiB' \
   && [ "$(grep -c 'measured earlier' "$work/err2")" -ge 10 ]; then
  echo "ok   a second run reuses every saved step"
else fail "resume: $rc: $(cat "$work/err2")"; fi

# A deleted step is measured again, and only it (failed steps are retried too).
rm "$work/f/steps/replay-ternary_dict-3.6MiB.json"
rc=0; "$bin" frontier "${args[@]}" >/dev/null 2>"$work/err3" || rc=$?
ran=$(grep ' \.\.\.$' "$work/err3" | grep -v '0.01MiB' || true)
if [ "$rc" -eq 0 ] && [ "$(echo "$ran" | grep -c .)" -eq 1 ] && echo "$ran" | grep -q 'replay-ternary_dict-3.6MiB'; then
  echo "ok   a deleted step alone is measured again"
else fail "partial resume: $rc: $ran"; fi

# A changed flag invalidates the steps it enters, and only those: other replay
# tokens re-run the replays, not the traces, compressions or evals.
rc=0; "$bin" frontier "${args[@]/#48/40}" >/dev/null 2>"$work/err4" || rc=$?
ran=$(grep ' \.\.\.$' "$work/err4" | grep -v '0.01MiB' || true)
if [ "$rc" -eq 0 ] && [ "$(echo "$ran" | grep -c .)" -eq 3 ] && [ "$(echo "$ran" | grep -c 'replay-')" -eq 3 ] \
   && python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert all(p['tokens']==40 for p in j['points'] if 'error' not in p)" "$work/f/frontier.json"; then
  echo "ok   a changed --replay-tokens re-runs the replays alone"
else fail "changed flag: $rc: $ran"; fi

# Bad flags are refused before any work.
for bad in "--reprs int@4,nosuch" "--reprs int@0" "--reprs int@4,int@4" "--budgets-mb 0" "--budgets-mb 150%" \
           "--budgets-mb abc" "--synth-scale 2048" "--synth-scale 12x4" "--policy belady" "--policy forecast" "--policy fifo"; do
  rc=0; out=$("$bin" frontier --model "$model" --calib "$calib" --text "$text" --out "$work/bad" $bad 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] && [ ! -e "$work/bad/trace.smtrace" ] && echo "$out" | grep -q "^submoe frontier: "; then :; else fail "$bad: $rc: $out"; fi
done
echo "ok   bad --reprs, --budgets-mb, --synth-scale and --policy refused before any work"

[ "$fails" -eq 0 ] || exit 1
