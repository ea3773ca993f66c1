#!/usr/bin/env bash
# GPT-OSS through the binary: inspect reads the hub config (sinks, alternating
# sliding windows, MXFP4 experts); run on the tiny fixtures (fp32 fused
# experts, and MXFP4 blocks as the hub ships them) writes transformers' greedy
# ids; compress from the MXFP4 checkpoint with --repr mxfp4 keeps it exactly
# (same loss as the checkpoint) and runs fused, paged and traced; GPTQ
# ternary and rvq 2-bit compress the fp32 one; synth-model writes a GPT-OSS
# checkpoint that runs; broken MXFP4 experts are refused by tensor name.
#   usage: gpt_oss.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
source "$(dirname "$0")/lib/artifact_checks.bash"
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
nll_of() { python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])'; }

mx="$src/tests/fixtures/gpt_oss_mxfp4"
fp="$src/tests/fixtures/gpt_oss"
out=$("$bin" inspect "$mx" 2>&1) || fail "inspect gpt_oss_mxfp4: $out"
for want in "architecture:  gpt_oss" "layers:        2 (2 MoE)"; do
  grep -qF -- "$want" <<<"$out" || fail "inspect lacks '$want': $out"
done
echo "ok   inspect gpt_oss_mxfp4"

for dir in "$fp" "$mx"; do check_greedy_ids "$bin" "$dir" || fails=$((fails + 1)); done

printf 'The quick brown fox jumps over the lazy dog. A second sentence follows it here. And a third one ends it.\n' >"$work/calib.txt"
# MXFP4 hub experts re-encoded as the mxfp4 representation: nothing changes.
base=$("$bin" eval --model "$mx" --text "$work/calib.txt" --ctx 16 --json 2>/dev/null | nll_of)
rc=0; out=$("$bin" compress --model "$mx" --calib "$work/calib.txt" --out "$work/mx" --samples 2 --seq-len 16 \
  --method rtn --repr mxfp4 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && "$bin" inspect "$work/mx" --verify >/dev/null 2>&1; then
  nll=$("$bin" eval --model "$work/mx" --text "$work/calib.txt" --ctx 16 --json 2>/dev/null | nll_of)
  if python3 -c "import sys; sys.exit(0 if abs(float('$nll') - float('$base')) < 1e-4 else 1)"; then
    echo "ok   compress --repr mxfp4 from MXFP4 experts is lossless: nll $nll, checkpoint $base"
  else fail "mxfp4 round trip: nll '$nll' against '$base'"; fi
else fail "compress --repr mxfp4: $rc: $out"; fi
info=$("$bin" inspect "$work/mx" 2>&1)
grep -qF "mxfp4" <<<"$info" && echo "ok   inspect names the mxfp4 representation" || fail "inspect artifact: $info"
rc=0; out=$("$bin" run --model "$work/mx" --prompt "The quick" -n 6 --ignore-eos --expert-cache-mb 0.01 --json 2>&1) || rc=$?
grep -q '"hit_rate"' <<<"$out" && [ "$rc" -eq 0 ] && echo "ok   paged run of the mxfp4 artifact" || fail "paged run mx: $rc: $out"
rc=0; out=$("$bin" trace record --model "$work/mx" --text "$work/calib.txt" --out "$work/mx.trace" 2>&1) || rc=$?
[ "$rc" -eq 0 ] && grep -q "2 layers, 8 experts, top-2" <<<"$("$bin" trace stats "$work/mx.trace" 2>&1)" &&
  echo "ok   trace record on the mxfp4 artifact" || fail "trace: $rc: $out"

base=$("$bin" eval --model "$fp" --text "$work/calib.txt" --ctx 16 --json 2>/dev/null | nll_of)
for repr in "ternary_dict" "rvq --bits 2 --repr-opt train_vectors=4096 --repr-opt iters=3"; do
  name=${repr%% *}
  rc=0; out=$("$bin" compress --model "$fp" --calib "$work/calib.txt" --out "$work/fp-$name" --samples 2 --seq-len 16 \
    --repr $repr 2>&1) || rc=$?
  [ "$rc" -eq 0 ] || { fail "compress gpt_oss --repr $repr: $rc: $out"; continue; }
  nll=$("$bin" eval --model "$work/fp-$name" --text "$work/calib.txt" --ctx 16 --json 2>/dev/null | nll_of)
  if python3 -c "import sys; b, n = float('$base'), float('$nll'); sys.exit(0 if abs(n - b) < 0.5 else 1)"; then
    echo "ok   gpt_oss --repr $repr (GPTQ): nll $nll against the checkpoint's $base"
  else fail "gpt_oss --repr $repr: nll '$nll' against '$base'"; fi
done

# MXFP4 blocks rows by 32 columns: the fixture's [64, 16] down projections cannot be stored.
rc=0; out=$("$bin" compress --model "$fp" --calib "$work/calib.txt" --out "$work/fp-mx" --samples 2 --seq-len 16 \
  --repr mxfp4 2>&1) || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -qF "[64, 16] matrix; MXFP4 scales blocks of 32 columns" <<<"$out" &&
   [ ! -e "$work/fp-mx" ]; then
  echo "ok   --repr mxfp4 on 16-wide experts refused before any work -> $rc"
else fail "mxfp4 on I=16: $rc: $out"; fi
# GPTQ into mxfp4 from the MXFP4 checkpoint: close to the checkpoint, not equal.
rc=0; out=$("$bin" compress --model "$mx" --calib "$work/calib.txt" --out "$work/mx-gptq" --samples 2 --seq-len 16 \
  --repr mxfp4 2>&1) || rc=$?
[ "$rc" -eq 0 ] && "$bin" inspect "$work/mx-gptq" --verify >/dev/null 2>&1 && echo "ok   compress --repr mxfp4 (GPTQ)" ||
  fail "mxfp4 gptq: $rc: $out"

rc=0; out=$("$bin" synth-model --arch gpt_oss --layers 2 --experts 8 --top-k 2 --hidden 128 --ffn 64 \
  --tokenizer-from "$src/models/default-moe" --out "$work/synth" 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && grep -qF "architecture:  gpt_oss" <<<"$("$bin" inspect "$work/synth" 2>&1)" &&
   "$bin" run --model "$work/synth" --prompt hi -n 4 --ignore-eos >/dev/null 2>&1; then
  echo "ok   synth-model gpt_oss: checkpoint inspected and run"
else fail "synth-model gpt_oss: $rc: $out"; fi

# Broken MXFP4 experts: a scale set to the E8M0 NaN, and the scales tensor gone.
python3 - "$mx" "$work" <<'PY'
import json, os, shutil, struct, sys
src, work = sys.argv[1], sys.argv[2]
def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]
def save(path, header, data):
    h = json.dumps(header).encode(); h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
header, data = load(os.path.join(src, "model.safetensors"))
for name, mutate in (("nan-scale", "nan"), ("no-scales", "drop")):
    d = os.path.join(work, name)
    shutil.copytree(src, d)
    h, b = dict(header), bytearray(data)
    key = "model.layers.1.mlp.experts.gate_up_proj_scales"
    if mutate == "nan":
        b[h[key]["data_offsets"][0] + 3] = 255
    else:
        h[key + "_renamed"] = h.pop(key)
    save(os.path.join(d, "model.safetensors"), h, bytes(b))
PY
for case in "nan-scale:is the E8M0 NaN" "no-scales:no tensor 'model.layers.1.mlp.experts.gate_up_proj_scales'"; do
  dir=${case%%:*}; want=${case#*:}
  rc=0; out=$("$bin" run --model "$work/$dir" --prompt hi -n 1 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -qF "$want" <<<"$out"; then
    echo "ok   $dir refused -> $rc"
  else fail "$dir: status $rc, output: $out"; fi
done

# The MXFP4 kernels through the benchmark, int8 activations included.
rc=0; out=$("$bin" bench gemv --repr mxfp4 --execution fused-int8 --shape 64x96 --iters 2 --min-matrices 1 \
  --llc-factor 0 --threads 1 2>&1) || rc=$?
[ "$rc" -eq 0 ] && grep -qF "mxfp4 [64, 96] 4.250 bits/weight, fused" <<<"$out" && grep -qF "int8 activations" <<<"$out" &&
  echo "ok   bench gemv --repr mxfp4 --execution fused-int8" || fail "bench mxfp4: $rc: $out"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all gpt_oss checks passed"
