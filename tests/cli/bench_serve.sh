#!/usr/bin/env bash
# `submoe bench serve`: a small run on the embedded model prints one row per
# stream count with its aggregate tokens/s and the ratio to the first count (1.00
# for the first); bad --streams values are refused with a message.
#   usage: bench_serve.sh SUBMOE_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
fails=0
out=$("$bin" bench serve --model "$src/models/default-moe" --streams 1,2 --tokens 4 --prompt-tokens 3 --rounds 1 \
  --threads 1 --json 2>/dev/null)
if python3 - "$out" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
rows = j["results"]
assert [r["streams"] for r in rows] == [1, 2], rows
assert rows[0]["ratio_vs_first"] == 1.0 and rows[0]["decode_ratio_vs_first"] == 1.0, rows
assert all(r["decode_tokens_per_s"] > 0 for r in rows), rows
assert all(r["aggregate_tokens_per_s"] > 0 for r in rows), rows
assert abs(rows[1]["per_stream_tokens_per_s"] * 2 - rows[1]["aggregate_tokens_per_s"]) < 1e-6, rows
assert j["tokens"] == 4 and j["offload"] is None, j
PY
then echo "ok   bench serve --json: rows for 1 and 2 streams"; else echo "FAIL bench serve: $out"; fails=$((fails + 1)); fi
for bad in "--streams 0" "--streams 1,x" "--streams 8x" "--streams ," "--tokens 0" "--rounds 0"; do
  # shellcheck disable=SC2086
  msg=$("$bin" bench serve --model "$src/models/default-moe" $bad 2>&1) && { echo "FAIL $bad accepted"; fails=$((fails + 1)); continue; }
  grep -q -- "--" <<<"$msg" && echo "ok   $bad refused: $msg" || { echo "FAIL $bad: $msg"; fails=$((fails + 1)); }
done
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
