#!/usr/bin/env bash
# Expert-cache demonstration on the compressed embedded model (docs/results.md
# section 2): greedy generation of 512 tokens with the routed experts paged
# through a DRAM cache of 25%, 50% and 100% of their bytes, for each policy;
# the real cache's hit rate and tokens/s beside the simulator's hit rate for
# the same policy and Belady's bound, replayed on the routing trace of that
# same generation. The pinned/hybrid profile is a trace of different text (the
# calibration excerpt). Usage: scripts/results_cache.sh ARTIFACT_DIR [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
art=${1:?artifact directory (e.g. /tmp/submoe-results/gptq-ternary)}
work=${2:-/tmp/submoe-cache}
bin=${SUBMOE_BIN:-build/submoe}
mkdir -p "$work"
prompt="It was in July, 1805, and the speaker was"
n=512
expert_bytes=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ledger']['expert_packed_bytes_without_shared'])" "$art/submoe_manifest.json")
"$bin" trace record --model "$art" --text data/calib-train-excerpt.txt --ctx 256 --max-tokens 16384 \
  --out "$work/profile.trace" > /dev/null
"$bin" run --model "$art" --prompt "$prompt" -n $n --ignore-eos --threads 1 --trace-out "$work/gen.trace" --json \
  > "$work/resident.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('all experts resident: decode %.0f tok/s' % d['decode_tokens_per_s'])" "$work/resident.json"
echo "| cache | policy | real hit rate | decode tok/s | MB read | simulated hit rate | Belady hit rate |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for frac in 0.25 0.5 1.0; do
  mb=$(python3 -c "print(${expert_bytes} * ${frac} / 1e6 * 1.02)")  # 2% slack: expert sizes differ
  belady=$("$bin" trace simulate "$work/gen.trace" --policy belady --capacity "$frac" --json |
           python3 -c "import json,sys; print('%.3f' % json.load(sys.stdin)['hit_rate'])")
  for policy in lru lfu pinned hybrid; do
    extra=()
    [ "$policy" = pinned ] || [ "$policy" = hybrid ] && extra=(--cache-profile "$work/profile.trace")
    real=$("$bin" run --model "$art" --prompt "$prompt" -n $n --ignore-eos --threads 1 --expert-cache-mb "$mb" \
           --cache-policy $policy "${extra[@]}" --json)
    sim=$("$bin" trace simulate "$work/gen.trace" --policy $policy --capacity "$frac" \
          $([ ${#extra[@]} -gt 0 ] && echo --profile "$work/profile.trace") --json |
          python3 -c "import json,sys; print('%.3f' % json.load(sys.stdin)['hit_rate'])")
    python3 -c "
import json, sys
d = json.loads(sys.argv[1]); c = d['expert_cache']
print('| %d%% (%.2f MB) | %s | %.3f | %.0f | %.1f | %s | %s |' % (float(sys.argv[2]) * 100, c['budget_bytes'] / 1e6,
      sys.argv[3], c['hit_rate'], d['decode_tokens_per_s'], c['bytes_fetched'] / 1e6, sys.argv[4], sys.argv[5]))" \
      "$real" "$frac" "$policy" "$sim" "$belady"
  done
done
