#!/usr/bin/env bash
# Compressed execution against the bf16 original in the same run (docs/results.md
# section 2): prefill of a ~250-token prompt and 64 greedy decode steps, 1 and 2
# threads, for the embedded model and artifacts made by scripts/results_compress.sh.
# Usage: scripts/results_execution.sh [RESULTS_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/submoe-results}
repeats=${2:-3}
bin=${SUBMOE_BIN:-build/submoe}
prompt=$(head -c 1100 data/heldout-war-and-peace.txt)
echo "| model | threads | prefill tok/s | decode tok/s | peak RSS MB |"
echo "| --- | --- | --- | --- | --- |"
for m in models/default-moe "$work/gptq-ternary" "$work/gptq-int2" "$work/gptq-int4"; do
  for t in 1 2; do
    # best of N (the machine is shared; the best run is the least disturbed)
    for r in $(seq "$repeats"); do
      "$bin" run --model "$m" --prompt "$prompt" -n 64 --ignore-eos --threads "$t" --json
    done | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
p = max(r["prefill_tokens_per_s"] for r in rows); d = max(r["decode_tokens_per_s"] for r in rows)
rss = max(r["peak_rss_mb"] for r in rows)
print("| %s | %d | %.0f | %.0f | %.0f |" % (sys.argv[1], rows[0]["threads"], p, d, rss))' "$(basename "$m")"
  done
done
