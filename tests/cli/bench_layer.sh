#!/usr/bin/env bash
# `submoe bench layer`: a small run prints one JSON row per (entry, rate) with
# positive bits, errors in (0, 1), int 4-bit below int 3-bit, and nf4's
# refusal of 3 bits as a row that says why; bad flags are refused with a
# message naming the flag, before any work.
#   usage: bench_layer.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
fails=0
out=$("$bin" bench layer --shape 32x512 --reprs int,nf4 --bits 3,4 --threads 2 --json 2>/dev/null)
if python3 - "$out" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
assert j["shape"] == [32, 512] and j["weights"] == "student-t", j
rows = j["rows"]
assert [(r["entry"], r["bits"]) for r in rows] == [("int", 3), ("int", 4), ("nf4", 3), ("nf4", 4)], rows
measured = [r for r in rows if "error" not in r]
assert len(measured) == 3, rows
for r in measured:
    assert r["bits_per_weight"] > 0, r
    assert 0 < r["rel_output_error"] < 1 and 0 < r["rel_weight_mse"] < 1, r
assert rows[1]["rel_output_error"] < rows[0]["rel_output_error"], rows
assert rows[0]["bits_per_weight"] == 3 + 24 / 128, rows[0]
assert "nf4" in rows[2]["error"] and rows[2]["rel_output_error"] is None, rows[2]
PY
then echo "ok   bench layer --json: int 3/4 and nf4 rows, nf4 at 3 bits refused as a row"; else echo "FAIL bench layer: $out"; fails=$((fails + 1)); fi
table=$("$bin" bench layer --shape 16x256 --reprs int --bits 4 --weights gaussian 2>/dev/null)
grep -q "int (4 bits, group 128) *4.1875" <<<"$table" && echo "ok   bench layer table" || { echo "FAIL table: $table"; fails=$((fails + 1)); }
# A small, valid command line with one flag replaced (so a refusal is that flag's).
check_refused() {  # FLAG VALUE
  local -A args=([--shape]=16x256 [--reprs]=int [--bits]=4)
  args[$1]=$2
  local argv=()
  for k in "${!args[@]}"; do argv+=("$k" "${args[$k]}"); done
  msg=$("$bin" bench layer "${argv[@]}" 2>&1) && { echo "FAIL $1 $2 accepted"; fails=$((fails + 1)); return; }
  # Refused by name, and before any work (no progress line).
  if grep -q -- "$1" <<<"$msg" && ! grep -q "\[bench layer\]" <<<"$msg"; then
    echo "ok   $1 $2 refused: $msg"
  else
    echo "FAIL $1 $2: $msg"
    fails=$((fails + 1))
  fi
}
check_refused --shape 0x5
check_refused --shape 5
check_refused --rho 1
check_refused --nu 2
check_refused --reprs nosuch
check_refused --reprs int:bits
check_refused --outlier-channels 1.5
check_refused --channel-spread -1
check_refused --weights laplace
check_refused --bits 0
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
