#!/usr/bin/env bash
# A model larger than the memory the run is allowed: writes a random Qwen3-MoE
# checkpoint (synth-model), compresses it inside a memory cgroup whose limit is
# below the checkpoint's size, then generates from the compressed artifact inside
# a cgroup whose limit is below the artifact's size (experts paged through the
# expert cache). Prints sizes, limits, peak RSS and the cgroup's peak usage.
# Needs root for the cgroup (v1 memory controller or v2). Usage:
#   scripts/demo_larger_than_memory.sh [WORK_DIR] [COMPRESS_LIMIT_MB] [RUN_LIMIT_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/submoe-ltm}
compress_limit=${2:-1536}
run_limit=${3:-160}
bin=${SUBMOE_BIN:-build/submoe}
threads=$(nproc)
mkdir -p "$work"

cg_create() {  # name limit_mb -> prints the cgroup directory
  local name=$1 mb=$2
  if [ -d /sys/fs/cgroup/memory ]; then
    local d=/sys/fs/cgroup/memory/$name
    mkdir -p "$d"
    echo $((mb * 1024 * 1024)) > "$d/memory.limit_in_bytes"
    echo 0 > "$d/memory.max_usage_in_bytes" 2>/dev/null || true
    echo "$d"
  else
    local d=/sys/fs/cgroup/$name
    mkdir -p "$d"
    echo $((mb * 1024 * 1024)) > "$d/memory.max"
    echo "$d"
  fi
}
cg_peak_mb() {
  local d=$1
  if [ -f "$d/memory.max_usage_in_bytes" ]; then echo $(( $(cat "$d/memory.max_usage_in_bytes") / 1048576 ));
  elif [ -f "$d/memory.peak" ]; then echo $(( $(cat "$d/memory.peak") / 1048576 )); else echo "?"; fi
}
cg_run() {  # dir command...
  local d=$1; shift
  bash -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$d" "$@"
}

if [ ! -f "$work/synth/config.json" ]; then
  "$bin" synth-model --arch qwen3_moe --layers 8 --experts 64 --hidden 1024 --ffn 1024 --top-k 4 \
    --tokenizer-from models/default-moe --seed 7 --threads "$threads" --out "$work/synth" --json
fi
ckpt_mb=$(du -m --apparent-size -c "$work"/synth/*.safetensors | tail -1 | cut -f1)
echo "checkpoint: $ckpt_mb MB of safetensors"

sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
cg=$(cg_create submoe_compress $compress_limit)
echo "== compress inside a ${compress_limit} MB memory cgroup"
cg_run "$cg" "$bin" compress --model "$work/synth" --calib data/calib-train-excerpt.txt --out "$work/synth-ternary" \
  --samples 32 --seq-len 128 --threads "$threads" --overwrite --quiet --json | tee "$work/compress.json"
echo "compress: cgroup peak usage $(cg_peak_mb "$cg") MB (limit $compress_limit MB, page cache included)"
rmdir "$cg" 2>/dev/null || true

art_mb=$(du -m --apparent-size "$work/synth-ternary/model.safetensors" | cut -f1)
echo "artifact: $art_mb MB"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
cg=$(cg_create submoe_run $run_limit)
echo "== generate inside a ${run_limit} MB memory cgroup, expert cache $((run_limit / 2)) MB"
cg_run "$cg" "$bin" run --model "$work/synth-ternary" --prompt "The old prince said" -n 32 --ignore-eos \
  --expert-cache-mb $((run_limit / 2)) --threads "$threads" --json | tee "$work/run.json"
echo "run: cgroup peak usage $(cg_peak_mb "$cg") MB (limit $run_limit MB)"
rmdir "$cg" 2>/dev/null || true
