# Shared by the CLI tests (sourced, not a test itself: CTest registers
# tests/cli/*.sh only).
#
# check_eval_paths BIN ARTIFACT TEXT LABEL: eval's fused kernels agree with the
# reference decoder within 3e-4 nats, and paging the experts through a tiny
# DRAM cache gives the fused result exactly. Exits 1 with a message otherwise.
# (An expert that sees one token of a window runs a batch-1 kernel; rvq's
# rounds its lookup tables to int8, which moved the nll of these small
# synthetic models by up to 1.2e-4 nats; the f32 kernels stay within 1e-5.)
check_eval_paths() {
  local bin=$1 dir=$2 text=$3 label=$4
  nll_of() { "$bin" eval --model "$dir" --text "$text" --ctx 64 --max-tokens 256 --threads 1 "$@" --json 2>/dev/null |
             sed -n 's/.*"nll":\([-0-9.eE+]*\).*/\1/p'; }
  local fused ref paged
  fused=$(nll_of)
  ref=$(nll_of --execution reference)
  paged=$(nll_of --expert-cache-mb 0.02)
  awk -v f="$fused" -v r="$ref" -v p="$paged" -v l="$label" 'BEGIN {
    d = f - r; if (d < 0) d = -d
    if (f == "" || r == "" || d > 3e-4) { printf "FAIL %s: fused nll %s vs reference %s\n", l, f, r; exit 1 }
    if (p != f) { printf "FAIL %s: paged nll %s vs resident %s\n", l, p, f; exit 1 }
    printf "ok   %s: fused %s, reference %s, paged %s\n", l, f, r, p }' || exit 1
}

# check_greedy_ids BIN FIXTURE_DIR: `run` on a parity fixture (tests/fixtures/<name>)
# with its first prompt writes the 8 greedy ids transformers generated
# (golden.json). ok/FAIL line; returns 1 on a mismatch or an error.
check_greedy_ids() {
  local bin=$1 dir=$2 out rc=0
  out=$("$bin" run --model "$dir" --prompt "The quick brown fox jumps." -n 8 --ignore-eos --json 2>/dev/null) || rc=$?
  if [ "$rc" -ne 0 ]; then echo "FAIL run $dir: status $rc: $out"; return 1; fi
  if python3 - "$dir" "$out" <<'PY'; then echo "ok   run $(basename "$dir"): greedy ids match transformers"; else echo "FAIL run $dir: ids differ"; return 1; fi
import json, sys
d, out = sys.argv[1], json.loads(sys.argv[2])
g = json.load(open(d + "/golden.json"))["prompts"][0]
assert g["text"] == "The quick brown fox jumps.", g["text"]
if out["token_ids"] != g["generated_ids"]:
    print("got", out["token_ids"], "want", g["generated_ids"]); sys.exit(1)
PY
}

# expect_compress_error BIN MODEL CALIB WORK WANT ARGS...: `compress` with ARGS
# fails with a message containing WANT and writes no artifact under WORK/bad.
# ok/FAIL line; returns 1 otherwise.
expect_compress_error() {
  local bin=$1 model=$2 calib=$3 work=$4 want=$5; shift 5
  local out rc=0
  out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/bad" --samples 2 --seq-len 16 --quiet "$@" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL compress $*: status $rc, output: $out (wanted '$want')"; return 1
  elif [ -e "$work/bad/model.safetensors" ]; then
    echo "FAIL compress $*: wrote an artifact"; return 1
  fi
  echo "ok   compress $* -> $want"
}

# check_int8_eval BIN ARTIFACT TEXT LABEL: `eval --execution fused-int8` (the
# family's int8 kernels: int8 tables and activations) reports that mode and
# stays within 2e-3 nats of the fused f32 kernels. ok/FAIL line; returns 1 otherwise.
check_int8_eval() {
  local bin=$1 dir=$2 text=$3 label=$4 f32 i8
  f32=$("$bin" eval --model "$dir" --text "$text" --ctx 64 --max-tokens 256 --threads 1 --json 2>/dev/null)
  i8=$("$bin" eval --model "$dir" --text "$text" --ctx 64 --max-tokens 256 --threads 1 --execution fused-int8 --json 2>/dev/null)
  if python3 - "$f32" "$i8" <<'PY'; then echo "ok   $label: fused-int8 within 2e-3 nats of fused"; else echo "FAIL $label: fused $f32 / fused-int8 $i8"; return 1; fi
import json, sys
f, i = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert "fused-int8" in json.dumps(i), i
assert abs(f["nll"] - i["nll"]) < 2e-3, (f["nll"], i["nll"])
PY
}
