#!/usr/bin/env bash
# Bad inputs through the binary (issue "Reliability"): each must end with a
# message and a non-zero status, never an abort (134) or a crash, and the
# user's source checkpoint must be byte-identical afterwards.
#   usage: bad_inputs.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
expect_error() {  # status message-substring command...
  local want_rc=$1 want=$2; shift 2
  local out rc=0
  out=$("$bin" "$@" 2>&1) || rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL $*: status $rc (wanted $want_rc), output: $out (wanted '$want')"; fails=$((fails + 1))
  else
    echo "ok   $* -> $rc, $want"
  fi
}
cp -r "$src/tests/fixtures/qwen3_moe" "$work/model"
calib=$src/tests/fixtures/calib/shakespeare-excerpt.txt
before=$(cd "$work/model" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
fast=(--calib "$calib" --samples 2 --seq-len 16 --quiet --overwrite)

# compress never writes into, over or around its source, whatever the flags.
expect_error 2 "is the source checkpoint" compress --model "$work/model" --out "$work/model" "${fast[@]}"
expect_error 2 "is the source checkpoint" compress --model "$work/model" --out "$work/model/../model/" "${fast[@]}"
expect_error 2 "is inside the source checkpoint" compress --model "$work/model" --out "$work/model/artifact" "${fast[@]}"
expect_error 2 "contains the source checkpoint" compress --model "$work/model" --out "$work" "${fast[@]}"
ln -s "$work/model" "$work/link"
expect_error 2 "is the source checkpoint" compress --model "$work/link" --out "$work/model" "${fast[@]}"
expect_error 2 "is the source checkpoint" compress --model "$work/model" --out "$work/link" "${fast[@]}"
after=$(cd "$work/model" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
if [ "$before" != "$after" ]; then echo "FAIL: the source checkpoint changed"; fails=$((fails + 1)); else echo "ok   source unchanged"; fi

# Absurd thread counts are refused before any thread starts.
for cmd in "bench gemv --shape 16x16 --iters 1" "codec synth --rows 4 --cols 64" "eval --model $work/model --text $calib"; do
  # shellcheck disable=SC2086
  expect_error 105 "--threads: must be an integer in" $cmd --threads 100000000
done
expect_error 105 "--threads: must be an integer in" run --model "$work/model" --prompt hi --threads -3

# A directory where a file is expected: a message, not an abort.
expect_error 1 "routing trace: $work: not a regular file" trace stats "$work"
expect_error 1 "routing trace: $work: not a regular file" project --config "$src/configs/t1.json" --rate 1 --dram-gb 64 --profile "$work"
expect_error 1 "routing trace: $work: not a regular file" trace simulate "$work" --policy lru --capacity 0.5
expect_error 2 "rate must be in (0, 64] bits per weight" project --config "$src/configs/t1.json" --rate nan --dram-gb 64

# Generation is bounded by the model's context (256 positions in the fixture):
# -n beyond it stops at the context (no reservation for ten million tokens), a
# prompt beyond it is refused, --allow-long-context lifts both.
out=$("$bin" run --model "$work/model" --prompt hi -n 10000000 --ignore-eos --threads 1 --json 2>&1) || true
if grep -q '"stop":"context"' <<<"$out" && grep -q '"generated":254' <<<"$out"; then echo "ok   run -n 10000000 stops at the context"
else echo "FAIL run -n 10000000: $out"; fails=$((fails + 1)); fi
long=$(printf 'word %.0s' $(seq 1 400))
expect_error 2 "beyond the model's context of 256 positions" run --model "$work/model" --prompt "$long" -n 1 --threads 1
out=$("$bin" run --model "$work/model" --prompt "$long" -n 2 --ignore-eos --allow-long-context --threads 1 --json 2>&1) || true
if grep -q '"generated":2' <<<"$out"; then echo "ok   --allow-long-context"; else echo "FAIL --allow-long-context: $out"; fails=$((fails + 1)); fi

# A NaN weight is reported at load, naming the tensor: eval and run stop with an error.
cp -r "$work/model" "$work/nan"
python3 - "$work/nan/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
with open(path, 'r+b') as f:
    n = struct.unpack('<Q', f.read(8))[0]
    h = json.loads(f.read(n))
    t = h['model.layers.0.self_attn.q_proj.weight']
    assert t['dtype'] == 'F32'
    f.seek(8 + n + t['data_offsets'][0] + 4 * 5)
    f.write(struct.pack('<f', float('nan')))
PY
expect_error 1 "tensor 'model.layers.0.self_attn.q_proj.weight' holds a NaN or infinite value at element 5" eval --model "$work/nan" --text "$calib" --ctx 32 --max-tokens 64 --threads 1
expect_error 1 "tensor 'model.layers.0.self_attn.q_proj.weight' holds a NaN or infinite value" run --model "$work/nan" --prompt "To be" -n 4 --threads 1

# NaN and absurd numbers in float options are refused, not wrapped.
"$bin" trace record --model "$work/model" --text "$calib" --out "$work/t.trace" --max-tokens 64 --threads 1 >/dev/null 2>&1 ||
  { echo "FAIL trace record"; fails=$((fails + 1)); }
expect_error 2 "hybrid pinned fraction must be within [0, 1]" trace simulate "$work/t.trace" --policy hybrid --capacity 0.5 --hybrid-pinned nan
expect_error 2 "hybrid pinned fraction must be within [0, 1]" trace simulate "$work/t.trace" --policy hybrid --capacity 0.5 --hybrid-pinned 1.5
"$bin" compress --model "$work/model" --out "$work/art" "${fast[@]}" >/dev/null 2>&1 || { echo "FAIL compress"; fails=$((fails + 1)); }
expect_error 2 "exceeds this machine's memory" eval --model "$work/art" --text "$calib" --ctx 32 --max-tokens 64 --expert-cache-mb 1e15
expect_error 2 "--expert-cache-mb must be a finite number >= 0" eval --model "$work/art" --text "$calib" --ctx 32 --expert-cache-mb nan

# config.json and the checkpoint must agree on the layers; absurd counts fail fast.
for layers in 1 3 2147483648 1099511627776; do
  cp -r "$work/model" "$work/layers$layers"
  python3 - "$work/layers$layers/config.json" "$layers" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c['num_hidden_layers'] = int(sys.argv[2]); json.dump(c, open(sys.argv[1], 'w'))
PY
  case $layers in
    1|3) want="config and checkpoint must agree" rc=1 ;;
    *) want="beyond any model (at most 4096)" rc=2 ;;
  esac
  expect_error "$rc" "$want" eval --model "$work/layers$layers" --text "$calib" --ctx 32 --max-tokens 64 --threads 1
done

# A tensor the model does not read is an error naming it, unless allowed.
cp -r "$work/model" "$work/extra"
python3 - "$work/extra/model.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]
h = json.loads(raw[8:8 + n]); data = raw[8 + n:]
h['model.layers.0.mlp.extra_gate.weight'] = {'dtype': 'F32', 'shape': [2], 'data_offsets': [len(data), len(data) + 8]}
hb = json.dumps(h).encode(); hb += b' ' * (-len(hb) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(hb)) + hb + data + struct.pack('<2f', 1, 2))
PY
expect_error 1 "1 tensor(s) this model does not read ('model.layers.0.mlp.extra_gate.weight')" eval --model "$work/extra" --text "$calib" --ctx 32 --max-tokens 64 --threads 1
expect_error 1 "does not read" run --model "$work/extra" --prompt hi -n 1 --threads 1
expect_error 1 "does not read" compress --model "$work/extra" --out "$work/extra-art" "${fast[@]}"
"$bin" eval --model "$work/extra" --text "$calib" --ctx 32 --max-tokens 64 --threads 1 --allow-extra-tensors >/dev/null 2>&1 ||
  { echo "FAIL eval --allow-extra-tensors"; fails=$((fails + 1)); }

# A tokenizer that cannot represent a character (no unk token, no byte
# fallback) would drop it silently: the prompt or text is refused instead.
cp -r "$work/model" "$work/noz"
python3 - "$work/noz/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1])); del t['model']['vocab']['Z']; json.dump(t, open(sys.argv[1], 'w'))
PY
printf 'ZZZ ZZ Z\n' >"$work/z.txt"
expect_error 2 "the tokenizer cannot represent 6 character(s) of the text (the first is U+005A)" run --model "$work/noz" --prompt "ZZZ ZZ Z" -n 1 --threads 1
expect_error 2 "cannot represent" eval --model "$work/noz" --text "$work/z.txt" --threads 1
expect_error 2 "cannot represent" trace record --model "$work/noz" --text "$work/z.txt" --out "$work/z.trace" --threads 1
expect_error 2 "cannot represent" compress --model "$work/noz" --out "$work/z-art" --calib "$work/z.txt" --samples 1 --seq-len 4 --quiet

# synth-model, roofline and info refuse what they cannot honour.
sm=(synth-model --arch qwen3_moe --experts 4 --ffn 32 --out "$work/synth")
expect_error 1 "model_type 'bogus' is not supported" synth-model --arch bogus --layers 2 --experts 4 --hidden 64 --ffn 32 --out "$work/synth"
expect_error 2 "--layers must be positive, got 0" "${sm[@]}" --layers 0 --hidden 64
expect_error 2 "parameters; the limit is 1e15" "${sm[@]}" --layers 2 --hidden 1000000000
expect_error 2 "--top-k must be in [1, --experts=4], got 9" "${sm[@]}" --layers 2 --hidden 64 --top-k 9
expect_error 2 "--file-mb must be in 16..4194304" roofline --dir "$work" --file-mb -5 --quick
expect_error 1 "No such file or directory" roofline --dir "$work/no/such/dir" --quick
expect_error 109 "The following argument was not expected: --bogus" info --bogus

# Binary text is refused where text is read (calibration, evaluation, traces).
head -c 4096 /dev/urandom >"$work/binary.txt"
printf 'valid start \x00 then NUL' >"$work/nul.txt"
expect_error 2 "is not UTF-8 text" compress --model "$work/model" --out "$work/a2" --calib "$work/binary.txt" --samples 2 --seq-len 16 --quiet
expect_error 2 "is NUL" eval --model "$work/model" --text "$work/nul.txt" --threads 1
expect_error 2 "is not UTF-8 text" trace record --model "$work/model" --text "$work/binary.txt" --out "$work/b.trace" --threads 1

# --lossy-text reads such text with U+FFFD instead (the binary file above).
for cmd in "eval --model $work/model --text $work/binary.txt --threads 1 --ctx 32 --max-tokens 32" \
           "run --model $work/model --prompt-file $work/binary.txt -n 1 --threads 1 --allow-long-context" \
           "trace record --model $work/model --text $work/binary.txt --out $work/lossy.trace --threads 1 --max-tokens 32"; do
  # shellcheck disable=SC2086
  "$bin" $cmd --lossy-text >/dev/null 2>"$work/lossy.err" && echo "ok   $cmd --lossy-text" ||
    { echo "FAIL $cmd --lossy-text: $(cat "$work/lossy.err")"; fails=$((fails + 1)); }
done

# --samples given explicitly must be honoured or refused; by default every window is used.
expect_error 2 "fewer than --samples 100000" compress --model "$work/model" --out "$work/a3" --calib "$calib" --samples 100000 --seq-len 16 --quiet

# Error messages quote bytes of untrusted files escaped: a header with an
# invalid UTF-8 byte, or with an escape character, gives a valid UTF-8
# message, the byte written as \xNN (control characters: as the JSON parser
# names them).
for bad in ff 1b; do
  python3 - "$work/garbled.safetensors" "$bad" <<'PY'
import struct, sys
h = b'{"t' + bytes.fromhex(sys.argv[2]) + b'[31m": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + b'\0' * 4)
PY
  "$bin" inspect "$work/garbled.safetensors" >/dev/null 2>"$work/garbled.err"
  if [ $? -eq 0 ] || ! python3 -c 'import sys; t = open(sys.argv[1], "rb").read().decode("utf-8"); sys.exit(0 if (sys.argv[2] != "ff" or "\\xff" in t) and "\x1b" not in t else 1)' "$work/garbled.err" "$bad"; then
    echo "FAIL inspect of a header with byte 0x$bad: $(cat -v "$work/garbled.err")"; fails=$((fails + 1))
  else
    echo "ok   inspect header with byte 0x$bad -> escaped: $(cat "$work/garbled.err")"
  fi
done

# Two compressions cannot write one output: while one holds OUT's lock, a
# second fails at once and the artifact in OUT is untouched.
art_sum=$(sha256sum "$work/art/model.safetensors")
python3 - "$work/art/.submoe-compress.lock" "$bin" "$work/model" "$work/art" "$calib" <<'PY' >"$work/lock.out" 2>&1
import fcntl, os, subprocess, sys
lock, binary, model, out, calib = sys.argv[1:]
fd = os.open(lock, os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b"4242\n")
p = subprocess.run([binary, "compress", "--model", model, "--out", out, "--calib", calib, "--samples", "2",
                    "--seq-len", "16", "--quiet", "--overwrite"], capture_output=True, text=True)
print(p.returncode, p.stderr.strip())
PY
if grep -q "^1 .*'$work/art' is in use by process 4242" "$work/lock.out" && [ "$(sha256sum "$work/art/model.safetensors")" = "$art_sum" ]; then
  echo "ok   compress into a locked output -> $(cat "$work/lock.out")"
else
  echo "FAIL compress into a locked output: $(cat "$work/lock.out")"; fails=$((fails + 1))
fi

# Checksums: a flipped expert byte is an error for inspect --verify, eval,
# and eval with the experts paged; an artifact without checksums still runs,
# with a note.
cp -r "$work/art" "$work/flip"
python3 - "$work/flip/model.safetensors" <<'PY'
import os, sys
f = open(sys.argv[1], 'r+b'); n = os.path.getsize(sys.argv[1]); f.seek(n - 10); b = f.read(1); f.seek(n - 10); f.write(bytes([b[0] ^ 4]))
PY
expect_error 1 "checksum mismatch" inspect "$work/flip" --verify --no-tensors
expect_error 1 "checksum mismatch" eval --model "$work/flip" --text "$calib" --ctx 32 --max-tokens 64 --threads 1
expect_error 1 "checksum mismatch" eval --model "$work/flip" --text "$calib" --ctx 32 --max-tokens 64 --threads 1 --expert-cache-mb 0.2
"$bin" inspect "$work/art" --verify --no-tensors | grep -q "every tensor and expert range matches its checksum" ||
  { echo "FAIL inspect --verify of a good artifact"; fails=$((fails + 1)); }
python3 - "$work/art/submoe_manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); del m['checksums']; json.dump(m, open(sys.argv[1], 'w'))
PY
out=$("$bin" eval --model "$work/art" --text "$calib" --ctx 32 --max-tokens 64 --threads 1 2>&1) &&
  grep -q "has no checksums (submoe_manifest.json predates them)" <<<"$out" ||
  { echo "FAIL eval of an artifact without checksums: $out"; fails=$((fails + 1)); }

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
