#!/usr/bin/env bash
# `compress --repr`: the registry names every choice; an unknown name, options
# a representation does not use and two spellings at once are errors with a
# non-zero status and nothing written; --grid still works and means --repr.
#   usage: compress_repr_choice.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
model=$src/tests/fixtures/qwen3_moe
calib=$src/tests/fixtures/calib/shakespeare-excerpt.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
expect_error() {  # message-substring args...
  local want=$1; shift
  local out rc=0
  out=$("$bin" compress --model "$model" --calib "$calib" --out "$work/bad" --samples 2 --seq-len 16 --quiet "$@" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL compress $*: status $rc, output: $out (wanted '$want')"; fails=$((fails + 1))
  elif [ -e "$work/bad/model.safetensors" ]; then
    echo "FAIL compress $*: wrote an artifact"; fails=$((fails + 1))
  else
    echo "ok   compress $* -> $want"
  fi
}
expect_error "unknown representation 'nf3' (registered: ternary_dict, int" --repr nf3
expect_error "--code applies to ternary_dict only" --repr int --bits 4 --code qmoe
expect_error "the artifact stores int2, int3 or int4 experts" --repr int --bits 5
expect_error "int needs --bits 2, 3 or 4" --repr int
expect_error "--bits does not apply to ternary_dict" --repr ternary --bits 2
expect_error "--grid and --repr are two spellings" --grid int4 --repr int
expect_error "unknown grid 'int8'" --grid int8
expect_error "--repr-opt metric=l2: expected block or euclidean" --repr rvq --bits 2 --repr-opt metric=l2
expect_error "--repr-opt gain=ls: expected unbiased or none" --repr rvq --bits 2 --repr-opt gain=ls
expect_error "group size 32 does not divide the 16 input columns" --repr int --bits 4 --group-size 32
# The two spellings of one choice write the same artifact.
"$bin" compress --model "$model" --calib "$calib" --out "$work/a" --samples 2 --seq-len 16 --quiet --grid int3 >/dev/null
"$bin" compress --model "$model" --calib "$calib" --out "$work/b" --samples 2 --seq-len 16 --quiet --repr int --bits 3 >/dev/null
if cmp -s "$work/a/model.safetensors" "$work/b/model.safetensors"; then echo "ok   --grid int3 == --repr int --bits 3"
else echo "FAIL --grid int3 and --repr int --bits 3 differ"; fails=$((fails + 1)); fi
"$bin" inspect "$work/b" --no-tensors | grep -q "format 2: int (3 bits, per row)" ||
  { echo "FAIL inspect of a version-2 artifact"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] || exit 1
