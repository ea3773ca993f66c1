#!/usr/bin/env bash
# `--execution` on a checkpoint: fused-bf16 rounds every matrix input to bf16
# (as llama.cpp's BF16 type computes), so the held-out loss moves a little but
# not much; fused (the default) keeps exact f32 inputs, and fused-int8 /
# reference, which need packed codes, run as fused. run and eval report the
# mode that ran.
#   usage: checkpoint_execution.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
model=$src/models/default-moe
text=$src/tests/fixtures/calib/shakespeare-excerpt.txt
fails=0
nll() {  # execution -> "nll execution"
  "$bin" eval --model "$model" --text "$text" --ctx 64 --max-tokens 512 --threads 2 --execution "$1" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["nll"], d["execution"])'
}
read -r f32 e1 < <(nll fused)
read -r bf16 e2 < <(nll fused-bf16)
read -r i8 e3 < <(nll fused-int8)
if python3 - "$f32" "$bf16" "$i8" "$e1" "$e2" "$e3" <<'PY'
import sys
f32, bf16, i8 = map(float, sys.argv[1:4])
e1, e2, e3 = sys.argv[4:7]
assert (e1, e2, e3) == ("fused", "fused-bf16", "fused"), (e1, e2, e3)
assert f32 == i8, (f32, i8)              # no packed codes: the same computation
assert bf16 != f32, (f32, bf16)          # the inputs were rounded
assert abs(bf16 - f32) < 0.01, (f32, bf16)
PY
then echo "ok   eval: fused $f32, fused-bf16 $bf16 (rounded inputs, within 0.01), fused-int8 runs as fused"
else echo "FAIL eval: fused $f32 ($e1), fused-bf16 $bf16 ($e2), fused-int8 $i8 ($e3)"; fails=$((fails + 1)); fi
out=$("$bin" run --model "$model" --prompt "The king" -n 4 --execution fused-bf16 --json 2>/dev/null)
if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["execution"] == "fused-bf16" and d["generated"] == 4, d' "$out"; then
  echo "ok   run --execution fused-bf16 --json reports it"
else echo "FAIL run: $out"; fails=$((fails + 1)); fi
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
