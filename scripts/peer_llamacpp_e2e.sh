#!/usr/bin/env bash
# End-to-end decode and prefill against llama.cpp on one synthetic Qwen3-MoE
# checkpoint (issue 13): both engines run the same weights, interleaved round by
# round, at 1 and 2 threads.
#
# llama.cpp (llama-bench, llama-quantize and its HF converter) comes from the
# llama-cpp-python sdist on PyPI and is built out of the tree under
# build/peers/ (nothing of it enters the project); the converter runs in a
# virtual environment there (torch, transformers, numpy, sentencepiece and the
# sdist's own gguf-py, from PyPI). submoe is the Release build in build/.
#
#   scripts/peer_llamacpp_e2e.sh              # synth model, 3 rounds, 1 and 2 threads
#   ROUNDS=5 THREADS="1 2" scripts/peer_llamacpp_e2e.sh
#   SYNTH_ARGS="--layers 4 ..." scripts/peer_llamacpp_e2e.sh   # another synth shape
#   ONLY="ternary" scripts/peer_llamacpp_e2e.sh       # only the pairs whose name matches
#
# Pairs (llama.cpp type, submoe artifact), the rest of the weights bf16 in both
# unless said:
#   bf16             BF16 GGUF                     the bf16 checkpoint itself (exact f32 inputs)
#   bf16, bf16 inputs  BF16 GGUF                   the checkpoint with --execution fused-bf16: every
#                                                  input rounded to bf16, llama.cpp's BF16 arithmetic
#   ternary experts  TQ2_0 experts                 compress --repr ternary_dict (qmoe code), fused-int8
#   4-bit experts    Q4_0 experts                  compress --repr int --bits 4 --group-size 32, fused-int8
#   2-bit experts    Q2_K experts                  compress --repr int --bits 2 --group-size 64, fused-int8
#   all ternary      TQ2_0 every tensor            ternary experts, --dense-repr all=ternary_dict, fused-int8
#   ternary experts, int4 dense                    the same GGUF; --dense-repr all=int,bits=4,group_size=32
# (token embeddings: TQ2_0 in llama.cpp, bf16 in submoe, which reads them by row).
# Decode: 64 generated tokens (llama-bench -n 64, from an empty context; submoe
# run after a ~15-token prompt, --ignore-eos); prefill: a 256-token prompt
# (llama-bench -p 256; submoe run on ~256 tokens of text, its own count reported).
# Output: one JSON line per measurement on stdout and in
# build/peers/e2e/results.jsonl, then a median table (docs/results.md keeps it).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
jobs=${SUBMOE_JOBS:-$(nproc)}
rounds=${ROUNDS:-3}
threads=${THREADS:-"1 2"}
synth_args=${SYNTH_ARGS:-"--arch qwen3_moe --layers 8 --experts 32 --hidden 2048 --ffn 1024 --top-k 4 --vocab 32000"}
peers=build/peers
src=$peers/llama_cpp_python-$version/vendor/llama.cpp
work=$peers/e2e
venv=$peers/venv
mkdir -p "$work"
say() { echo "peer_llamacpp_e2e: $*" >&2; }

# 1. llama.cpp: source, tools, converter environment.
if [ ! -d "$src" ]; then
  say "downloading llama-cpp-python $version (source) from PyPI"
  python3 -m pip download "llama-cpp-python==$version" --no-binary :all: --no-deps -d "$peers" >&2
  tar -xzf "$peers/llama_cpp_python-$version.tar.gz" -C "$peers"
fi
lb=$peers/llama-build/bin
if [ ! -x "$lb/llama-bench" ] || [ ! -x "$lb/llama-quantize" ]; then
  say "building llama-bench and llama-quantize (CPU, native)"
  cmake -S "$src" -B "$peers/llama-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF >/dev/null
  cmake --build "$peers/llama-build" --target llama-bench llama-quantize -j "$jobs" >&2
fi
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, transformers, gguf, sentencepiece" 2>/dev/null; then
  say "setting up the converter's environment ($venv)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy sentencepiece safetensors torch transformers protobuf >&2
  "$venv/bin/pip" install -q -e "$src/gguf-py" >&2
fi

# 2. submoe and the checkpoint.
[ -x build/submoe ] || scripts/build.sh release >&2
submoe=build/submoe
ckpt=$work/synth
if [ ! -f "$ckpt/config.json" ]; then
  say "writing the synth checkpoint ($synth_args)"
  # shellcheck disable=SC2086
  $submoe synth-model $synth_args --tokenizer-from models/default-moe --out "$ckpt" >&2
fi
calib=$work/calib.txt
[ -f "$calib" ] || head -c 200000 ../shared/corpora/tinyshakespeare.txt >"$calib" 2>/dev/null ||
  head -c 200000 README.md >"$calib"
compress() {  # name, compress args...
  local name=$1
  shift
  if [ ! -f "$work/$name/submoe_manifest.json" ]; then
    say "compress $name"
    $submoe compress --model "$ckpt" --calib "$calib" --out "$work/$name" --method rtn --samples 4 --quiet \
      --overwrite "$@" >&2
  fi
}
compress ternary --repr ternary_dict
compress int4g32 --repr int --bits 4 --group-size 32
compress int2g64 --repr int --bits 2 --group-size 64
compress ternary-dint4 --repr ternary_dict --dense-repr all=int,bits=4,group_size=32
compress ternary-dternary --repr ternary_dict --dense-repr all=ternary_dict

# 3. GGUF files: the converter's bf16, then llama-quantize per pair.
gguf_bf16=$work/synth-bf16.gguf
if [ ! -f "$gguf_bf16" ]; then
  say "converting the checkpoint with convert_hf_to_gguf.py (tools/peers/llamacpp_convert.py)"
  "$venv/bin/python" tools/peers/llamacpp_convert.py "$src" "$ckpt" --outtype bf16 --outfile "$gguf_bf16.tmp" >&2
  mv "$gguf_bf16.tmp" "$gguf_bf16"
fi
quantize() {  # out, base type, extra args...
  local out=$work/$1 base=$2
  shift 2
  if [ ! -f "$out" ]; then
    say "llama-quantize $(basename "$out")"
    "$lb/llama-quantize" --pure "$@" "$gguf_bf16" "$out.tmp" "$base" >&2
    mv "$out.tmp" "$out"
  fi
}
experts() { echo --tensor-type "ffn_gate_exps=$1" --tensor-type "ffn_up_exps=$1" --tensor-type "ffn_down_exps=$1"; }
# shellcheck disable=SC2046
quantize synth-tq2_0-experts.gguf BF16 $(experts tq2_0)
# shellcheck disable=SC2046
quantize synth-q4_0-experts.gguf BF16 $(experts q4_0)
# shellcheck disable=SC2046
quantize synth-q2_k-experts.gguf BF16 $(experts q2_k)
quantize synth-tq2_0-all.gguf TQ2_0

# 4. Prompts: 15 and 256 tokens of the calibration text for submoe (its own
# tokenizer counts them); llama-bench takes token counts.
prompt15=$work/prompt15.txt
prompt256=$work/prompt256.txt
python3 - "$calib" "$prompt15" "$prompt256" <<'EOF'
import sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
words = text.split()
open(sys.argv[2], "w").write(" ".join(words[:11]))    # ~15 tokens
open(sys.argv[3], "w").write(" ".join(words[:190]))   # ~256 tokens
EOF

pairs=(
  "bf16|synth-bf16.gguf|$ckpt|fused"
  "bf16, bf16 inputs|synth-bf16.gguf|$ckpt|fused-bf16"
  "ternary experts|synth-tq2_0-experts.gguf|$work/ternary|fused-int8"
  "4-bit experts|synth-q4_0-experts.gguf|$work/int4g32|fused-int8"
  "2-bit experts|synth-q2_k-experts.gguf|$work/int2g64|fused-int8"
  "all ternary|synth-tq2_0-all.gguf|$work/ternary-dternary|fused-int8"
  "ternary experts, int4 dense|synth-tq2_0-all.gguf|$work/ternary-dint4|fused-int8"
)
if [ -n "${ONLY:-}" ]; then  # a regular expression on the pair names
  kept=()
  for pair in "${pairs[@]}"; do [[ ${pair%%|*} =~ $ONLY ]] && kept+=("$pair"); done
  pairs=("${kept[@]}")
fi
results=$work/results.jsonl
: >"$results.tmp"
emit() { echo "$1" | tee -a "$results.tmp"; }

llama_decode_prefill() {  # gguf, threads -> "decode_tps prefill_tps"
  local j
  j=$("$lb/llama-bench" -m "$work/$1" -t "$2" -r 1 -p 256 -n 64 -o json 2>/dev/null)
  python3 -c '
import json, sys
runs = json.loads(sys.argv[1])
tg = [r for r in runs if r["n_prompt"] == 0 and r["n_gen"] == 64][0]
pp = [r for r in runs if r["n_prompt"] == 256 and r["n_gen"] == 0][0]
print(tg["avg_ts"], pp["avg_ts"])
' "$j"
}
submoe_decode_prefill() {  # model, execution, threads -> "decode_tps prefill_tps"
  local d p
  d=$($submoe run --model "$1" --prompt-file "$prompt15" -n 64 --ignore-eos --threads "$3" --execution "$2" --json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_tokens_per_s"])')
  p=$($submoe run --model "$1" --prompt-file "$prompt256" -n 1 --threads "$3" --execution "$2" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["prefill_tokens_per_s"], d["prompt_tokens"])')
  echo "$d $p"
}

for round in $(seq 1 "$rounds"); do
  say "round $round of $rounds"
  for t in $threads; do
    for pair in "${pairs[@]}"; do
      IFS='|' read -r name gguf model exec <<<"$pair"
      read -r ld lp < <(llama_decode_prefill "$gguf" "$t")
      emit "{\"round\": $round, \"threads\": $t, \"pair\": \"$name\", \"engine\": \"llama.cpp\", \"gguf\": \"$gguf\", \"decode_tps\": $ld, \"prefill256_tps\": $lp}"
      if [ -n "$model" ]; then
        read -r sd sp sn < <(submoe_decode_prefill "$model" "$exec" "$t")
        emit "{\"round\": $round, \"threads\": $t, \"pair\": \"$name\", \"engine\": \"submoe\", \"model\": \"$(basename "$model")\", \"execution\": \"$exec\", \"decode_tps\": $sd, \"prefill_tps\": $sp, \"prefill_tokens\": $sn}"
      fi
    done
  done
done
mv "$results.tmp" "$results"

python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(pair, engine, t, key):
    v = [r[key] for r in rows if r["pair"] == pair and r["engine"] == engine and r["threads"] == t and key in r]
    return statistics.median(v) if v else None
pairs = list(dict.fromkeys(r["pair"] for r in rows))
threads = sorted({r["threads"] for r in rows})
print("| pair | threads | llama.cpp decode | submoe decode | ratio | llama.cpp prefill 256 | submoe prefill | ratio |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for p in pairs:
    for t in threads:
        ld, sd = med(p, "llama.cpp", t, "decode_tps"), med(p, "submoe", t, "decode_tps")
        lp, sp = med(p, "llama.cpp", t, "prefill256_tps"), med(p, "submoe", t, "prefill_tps")
        f = lambda v: "-" if v is None else f"{v:.1f}"
        r = lambda a, b: "-" if a is None or b is None else f"{b / a:.2f}"
        print(f"| {p} | {t} | {f(ld)} | {f(sd)} | {r(ld, sd)} | {f(lp)} | {f(sp)} | {r(lp, sp)} |")
EOF
