#!/usr/bin/env bash
# `--huge-pages on` (dense matrices copied into 2 MiB pages at load) changes
# where weights live, never what is computed: run and eval give the same text
# and the same loss as `off`, on a checkpoint and on an artifact; a bad value is
# an error naming the choices. (The default, auto, is on for artifacts.)
#   usage: huge_pages.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
model=$src/models/default-moe
text=$src/tests/fixtures/calib/shakespeare-excerpt.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
"$bin" compress --model "$model" --calib "$text" --out "$work/a" --samples 2 --seq-len 32 --method rtn --quiet >/dev/null
for m in "$model" "$work/a"; do
  off=$("$bin" run --model "$m" --prompt "To be or not" -n 12 --ignore-eos --huge-pages off --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["text"])')
  on=$("$bin" run --model "$m" --prompt "To be or not" -n 12 --ignore-eos --huge-pages on --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["text"])')
  [ "$off" = "$on" ] && echo "ok   run text identical ($(basename "$m"))" || fail "run text differs: '$off' vs '$on'"
  loss_off=$("$bin" eval --model "$m" --text "$text" --ctx 64 --max-tokens 256 --huge-pages off --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])')
  loss_on=$("$bin" eval --model "$m" --text "$text" --ctx 64 --max-tokens 256 --huge-pages on --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nll"])')
  [ "$loss_off" = "$loss_on" ] && echo "ok   eval loss identical ($(basename "$m"))" || fail "eval loss $loss_off vs $loss_on"
done
out=$("$bin" run --model "$model" --prompt "x" -n 1 --huge-pages maybe 2>&1) && fail "--huge-pages maybe accepted" ||
  { grep -q "huge-pages" <<<"$out" && echo "ok   --huge-pages maybe refused" || fail "message: $out"; }
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
