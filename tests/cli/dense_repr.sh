#!/usr/bin/env bash
# `compress --dense-repr`: dense classes stored packed, end to end through the
# binary: the artifact is format 3 with dense_weights, `inspect` lists each
# class with its representation and bits, `inspect --verify` validates them,
# `run` and `eval` work on it, and bad specs are errors that write nothing.
#   usage: dense_repr.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
model=$src/tests/fixtures/qwen2_moe
calib=$src/tests/fixtures/calib/shakespeare-excerpt.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
compress() { "$bin" compress --model "$model" --calib "$calib" --samples 2 --seq-len 16 --quiet --method rtn "$@"; }
expect_error() {  # message-substring args...
  local want=$1; shift
  local out rc=0
  out=$(compress --out "$work/bad" "$@" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ] || ! grep -qF -- "$want" <<<"$out"; then
    fail "compress $*: status $rc, output: $out (wanted '$want')"
  elif [ -e "$work/bad/model.safetensors" ]; then
    fail "compress $*: wrote an artifact"
  else
    echo "ok   compress $* -> $want"
  fi
}
expect_error "'embeddings' is not a dense weight class (attention, shared_expert, dense_mlp, lm_head, router" \
  --dense-repr embeddings=int,bits=4
expect_error "expected CLASS=REPRESENTATION" --dense-repr attention
expect_error "unknown representation 'nf3'" --dense-repr attention=nf3
expect_error "'bits' is not KEY=VALUE" --dense-repr attention=int,bits
expect_error "bits=four is not a number" --dense-repr attention=int,bits=four
expect_error "--dense-repr attention is given twice" --dense-repr attention=int,bits=4 --dense-repr attention=int,bits=2
expect_error "int needs --bits 2, 3 or 4" --dense-repr lm_head=int

compress --out "$work/a" --dense-repr all=int,bits=4,group_size=32 >/dev/null
if grep -q '"format_version": 3' "$work/a/config.json" && grep -q '"dense_weights"' "$work/a/config.json"; then
  echo "ok   format 3 with dense_weights"
else fail "config.json: $(grep -A3 format_version "$work/a/config.json")"; fi
out=$("$bin" inspect --no-tensors "$work/a")
for class in attention shared_expert dense_mlp lm_head; do
  if grep -qE "^  $class +.* 4\.750 bits/weight, int \(4 bits, group 32\)" <<<"$out"; then echo "ok   inspect lists $class"
  else fail "inspect has no int4 line for $class: $out"; fi
done
grep -qE "^  router +.* bits/weight, source dtype" <<<"$out" && echo "ok   router stays bf16" || fail "router: $out"
verify=$("$bin" inspect --verify --no-tensors "$work/a")
if grep -q "packed dense projections validated" <<<"$verify"; then echo "ok   inspect --verify"
else fail "inspect --verify"; fi
if "$bin" run --model "$work/a" --prompt "To be" -n 4 --ignore-eos >/dev/null; then echo "ok   run"; else fail "run"; fi
for ex in fused fused-int8 reference; do
  if "$bin" eval --model "$work/a" --text "$calib" --ctx 16 --max-tokens 64 --execution "$ex" >/dev/null; then
    echo "ok   eval --execution $ex"
  else fail "eval --execution $ex"; fi
done
# A corrupted packed field is caught: the checksum on load, naming the tensor.
python3 - "$work/a/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    start = header["model.layers.0.self_attn.q_proj.weight.qweight"]["data_offsets"][0]
    f.seek(8 + n + start)
    b = f.read(1)
    f.seek(8 + n + start)
    f.write(bytes([b[0] ^ 0x10]))
PY
out=$("$bin" run --model "$work/a" --prompt "To be" -n 2 2>&1) && fail "run on a flipped packed field succeeded" ||
  { grep -qF "model.layers.0.self_attn.q_proj.weight.qweight" <<<"$out" && echo "ok   flipped packed field named" ||
    fail "flipped packed field: $out"; }
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
