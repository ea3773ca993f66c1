# Sourced by scripts/results_*.sh: the embedded model, its calibration text and
# the two held-out texts of docs/results.md section 1, and heldout(), the
# token-weighted held-out loss of one model. Needs $bin and $threads set.
model=models/default-moe
calib=data/calib-train-excerpt.txt
texts=(data/heldout-war-and-peace.txt data/heldout-tinyshakespeare.txt)

# heldout DIR [EXECUTION] -> "loss_war_and_peace loss_shakespeare weighted_mean"
heldout() {
  for t in "${texts[@]}"; do
    $bin eval --model "$1" --text "$t" --ctx 256 --threads "$threads" --execution "${2:-fused}" --json 2>/dev/null
  done | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
tok = sum(r["tokens"] for r in rows)
print("%.4f %.4f %.4f" % (rows[0]["nll"], rows[1]["nll"], sum(r["nll"] * r["tokens"] for r in rows) / tok))'
}
