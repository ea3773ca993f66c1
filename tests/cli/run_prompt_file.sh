#!/usr/bin/env bash
# run --prompt-file and chunked prefill: a prompt read from a file generates
# what the same --prompt does; every --prefill-chunk gives the same greedy
# text; a long prompt beyond the context is refused unless allowed; bad prompt
# files and flags are errors.
#   usage: run_prompt_file.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
model=$src/tests/fixtures/qwen3_moe
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
printf 'To be, or not to be, that is the question' >"$work/short.txt"
a=$("$bin" run --model "$model" --prompt "$(cat "$work/short.txt")" -n 8 --threads 1 2>/dev/null)
b=$("$bin" run --model "$model" --prompt-file "$work/short.txt" -n 8 --threads 1 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "--prompt-file generated '$b', --prompt '$a'"
head -c 2500 "$src/tests/fixtures/calib/shakespeare-excerpt.txt" >"$work/long.txt"
ref=$("$bin" run --model "$model" --prompt-file "$work/long.txt" -n 6 --threads 1 --allow-long-context --json 2>/dev/null |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["prompt_tokens"], d["text"])')
for chunk in 1 5 64 100000; do
  got=$("$bin" run --model "$model" --prompt-file "$work/long.txt" -n 6 --threads 1 --allow-long-context --json \
        --prefill-chunk "$chunk" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["prompt_tokens"], d["text"])')
  [ "$got" = "$ref" ] || fail "--prefill-chunk $chunk: '$got', default chunk: '$ref'"
done
echo "ok   chunked prefill of a $(cut -d' ' -f1 <<<"$ref")-token prompt: the same text for chunks 1, 5, 64, 100000"
expect_error() {  # status message-substring args...
  local want_rc=$1 want=$2; shift 2
  local out rc=0
  out=$("$bin" run --model "$model" -n 2 --threads 1 "$@" 2>&1) || rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! grep -qF -- "$want" <<<"$out"; then
    fail "run $*: status $rc (wanted $want_rc), output: $out (wanted '$want')"
  else
    echo "ok   run $* -> $rc, $want"
  fi
}
printf 'abc\xff\xfe' >"$work/binary.txt"
expect_error 2 "beyond the model's context of" --prompt-file "$work/long.txt"
expect_error 1 "no such file" --prompt-file "$work/missing.txt"
expect_error 2 "is not UTF-8 text" --prompt-file "$work/binary.txt"
expect_error 2 "give the prompt with --prompt TEXT or --prompt-file FILE"
expect_error 108 "--prompt excludes --prompt-file" --prompt hi --prompt-file "$work/short.txt"
expect_error 2 "--prefill-chunk must be at least 1" --prompt hi --prefill-chunk 0
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
