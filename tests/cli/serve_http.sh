#!/usr/bin/env bash
# `submoe serve` over loopback: /health, /v1/models, /tokenize and /detokenize;
# greedy completions equal `submoe run` with the same prompt, streamed (SSE, usage
# chunk, data: [DONE]) or not; OpenAI error objects for malformed JSON, unknown
# fields, wrong types, prompts beyond the context, bodies too large, unknown
# routes; the API key; a full queue answers 503; a client that disconnects
# mid-stream or while waiting for a whole answer cancels its generation; a
# client that stops reading does not hold up
# the others; 32 concurrent clients each get exactly the
# text of their request run alone (tools/serve_load.py --check), on the embedded
# model and on an artifact paged through a small expert cache; SIGTERM exits 0.
#   usage: serve_http.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
model=$src/models/default-moe
work=$(mktemp -d)
source "$src/tests/cli/lib/serve_helpers.bash"
trap 'stop_servers; rm -rf "$work"' EXIT

start_server "$work/server.log" --model "$model" --threads 2 --max-batch 8
wait_ready
expect 200 "GET /health" "$(http GET /health)" '"ok"'
expect 200 "GET /v1/models" "$(http GET /v1/models)" '"id":"default-moe"'
grep -q "ready: 'default-moe'" "$work/server.log" && ok "ready line on stderr" || fail "no ready line: $(cat "$work/server.log")"

# Tokenize / detokenize round trip.
r=$(http POST /tokenize '{"content":"To be or not to be"}')
expect 200 "POST /tokenize" "$r" '"tokens"'
ids=$(json_field 'd["tokens"]' <<<"${r#* }" | tr -d ' ')
expect 200 "POST /detokenize" "$(http POST /detokenize "{\"tokens\":$ids}")" '"content":"To be or not to be"'

# Greedy completion == `submoe run` (same prompt, same token count, EOS ignored).
prompt="The river carries small stones"
want=$("$bin" run --model "$model" --prompt "$prompt" -n 20 --ignore-eos --threads 2 --json 2>/dev/null | json_field 'd["text"]')
body="{\"prompt\":\"$prompt\",\"max_tokens\":20,\"temperature\":0,\"ignore_eos\":true}"
r=$(http POST /v1/completions "$body")
expect 200 "POST /v1/completions" "$r" '"text_completion"'
got=$(json_field 'd["choices"][0]["text"]' <<<"${r#* }")
[ "$got" = "$want" ] && ok "completion text equals submoe run" || fail "completion '$got' != run '$want'"
usage=$(json_field 'd["usage"]["completion_tokens"], d["usage"]["total_tokens"] - d["usage"]["prompt_tokens"], d["choices"][0]["finish_reason"]' <<<"${r#* }")
[ "$usage" = "20 20 length" ] && ok "usage and finish_reason" || fail "usage: $usage"

# Streaming: the concatenated deltas are the same text; a finish chunk, a usage
# chunk with empty choices, then data: [DONE].
sbody="{\"prompt\":\"$prompt\",\"max_tokens\":20,\"temperature\":0,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
curl -s -N -H 'Content-Type: application/json' --data-binary "$sbody" "$url/v1/completions" >"$work/sse.txt"
check=$(python3 - "$work/sse.txt" "$want" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1], encoding="utf-8").read().split("\n") if l]
assert all(l.startswith("data: ") for l in lines), lines[:3]
assert lines[-1] == "data: [DONE]", lines[-1]
events = [json.loads(l[6:]) for l in lines[:-1]]
text = "".join(c["text"] for e in events for c in e["choices"])
finish = [c["finish_reason"] for e in events for c in e["choices"] if c["finish_reason"]]
assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 20, events[-1]
assert all(e["usage"] is None for e in events[:-1])
assert finish == ["length"], finish
assert text == sys.argv[2], (text, sys.argv[2])
print("good", len(events))
PY
) && ok "stream: same text, finish, usage chunk, [DONE] ($check)" || fail "stream: $check"

# Errors: OpenAI error objects.
expect 400 "malformed JSON" "$(http POST /v1/completions '{"prompt": "x",')" '"invalid_request_error"'
expect 400 "unknown field" "$(http POST /v1/completions '{"prompt":"x","temprature":0.5}')" 'Unrecognized request argument supplied: temprature'
expect 400 "wrong type" "$(http POST /v1/completions '{"prompt":"x","max_tokens":"ten"}')" "'max_tokens' must be an integer"
expect 400 "temperature out of range" "$(http POST /v1/completions '{"prompt":"x","temperature":7}')" "'temperature' must be within"
expect 400 "missing prompt" "$(http POST /v1/completions '{"max_tokens":3}')" "'prompt' is required"
expect 400 "n > 1" "$(http POST /v1/completions '{"prompt":"x","n":2}')" "only 'n' = 1"
expect 400 "token id beyond the vocabulary" "$(http POST /v1/completions '{"prompt":[1,2,999999]}')" "outside the vocabulary"
expect 404 "unknown model" "$(http POST /v1/completions '{"prompt":"x","model":"gpt-5"}')" '"model_not_found"'
python3 -c 'print("{\"prompt\": [" + ",".join(["5"] * 3000) + "]}")' >"$work/long.json"
expect 400 "prompt beyond the context" "$(http POST /v1/completions "$(cat "$work/long.json")")" "beyond the model's context of 2048"
head -c $((9 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$work/big.txt"
r=$(curl -s -o "$work/big.out" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$work/big.txt" "$url/v1/completions")
[ "$r" = 413 ] && grep -q '"error"' "$work/big.out" && ok "body too large: 413 with an error object" || fail "big body: $r $(head -c 200 "$work/big.out")"
expect 404 "unknown route" "$(http GET /v1/nothing)" '"error"'
grep -q 'submoe_http_responses_total{route="/v1/completions",code="400"}' <<<"$(curl -s "$url/metrics")" &&
  ok "/metrics counts the 400s" || fail "/metrics: $(curl -s "$url/metrics" | head -20)"

# A client that disconnects mid-stream: its generation is cancelled (and the
# server keeps serving).
long="{\"prompt\":\"x\",\"max_tokens\":2000,\"temperature\":0,\"ignore_eos\":true,\"stream\":true}"
curl -s -N --max-time 0.3 -H 'Content-Type: application/json' --data-binary "$long" "$url/v1/completions" >/dev/null || true
cancelled=0
for _ in $(seq 1 100); do
  cancelled=$(curl -s "$url/metrics" | sed -n 's/^submoe_requests_finished_total{reason="cancelled"} //p')
  [ "${cancelled:-0}" != 0 ] && break
  sleep 0.1
done
[ "${cancelled:-0}" = 1 ] && ok "disconnected stream cancelled" || fail "cancelled count ${cancelled:-none}"
expect 200 "served after the disconnect" "$(http POST /v1/completions '{"prompt":"x","max_tokens":1}')" '"usage"'

# The same for a client waiting on a non-streaming completion (and a chat one).
for route in completions chat/completions; do
  case $route in
    completions) body='{"prompt":"x","max_tokens":2000,"temperature":0,"ignore_eos":true}' ;;
    *) body='{"messages":[{"role":"user","content":"x"}],"max_tokens":2000,"temperature":0,"ignore_eos":true}' ;;
  esac
  before=$(curl -s "$url/metrics" | sed -n 's/^submoe_requests_finished_total{reason="cancelled"} //p')
  curl -s --max-time 0.3 -H 'Content-Type: application/json' --data-binary "$body" "$url/v1/$route" >/dev/null || true
  after=$before
  for _ in $(seq 1 100); do
    after=$(curl -s "$url/metrics" | sed -n 's/^submoe_requests_finished_total{reason="cancelled"} //p')
    [ "${after:-0}" != "${before:-0}" ] && break
    sleep 0.1
  done
  [ "${after:-0}" = "$(( ${before:-0} + 1 ))" ] && ok "disconnected non-streaming /v1/$route cancelled" ||
    fail "non-streaming /v1/$route: cancelled count ${before:-none} -> ${after:-none}"
done
expect 200 "served after the disconnects" "$(http POST /v1/completions '{"prompt":"x","max_tokens":2}')" '"usage"'

# A client that reads nothing for 2 s while its 1500-token stream is generated:
# short requests of others are answered meanwhile, and its stream arrives whole.
r=$(python3 "$src/tests/cli/lib/slow_reader.py" --url "$url" --tokens 1500 --pause 2 --deadline 3) &&
  ok "slow reader: the others served meanwhile, its stream complete: $r" || fail "slow reader: $r"

# 32 concurrent clients, streaming and not: every response complete and equal to
# the request run alone.
r=$(python3 "$src/tools/serve_load.py" --url "$url" --clients 32 --requests 2 --max-tokens 12 --check --chat) &&
  ok "32 concurrent clients (completions and chat): $r" || fail "load: $r"
stop_servers && ok "SIGTERM: clean exit 0" || fail "the server did not exit 0 on SIGTERM"

# The same load against a ternary artifact paged through a 1 MB expert cache
# (about a third of its experts): misses on every step, still exact.
"$bin" compress --model "$model" --calib "$src/tests/fixtures/calib/shakespeare-excerpt.txt" --out "$work/art" \
  --samples 2 --seq-len 32 --method rtn >"$work/compress.log" 2>&1 || fail "compress: $(tail -3 "$work/compress.log")"
start_server "$work/paged.log" --model "$work/art" --threads 2 --expert-cache-mb 1
wait_ready
r=$(python3 "$src/tools/serve_load.py" --url "$url" --clients 32 --requests 2 --max-tokens 8 --check --chat) &&
  ok "32 concurrent clients, paged artifact (completions and chat): $r" || fail "paged load: $r"
misses=$(curl -s "$url/metrics" | sed -n 's/^submoe_expert_cache_misses_total \([0-9]*\).*/\1/p')
[ "${misses:-0}" -gt 0 ] && ok "paged: $misses expert cache misses" || fail "paged: no expert cache misses (${misses:-none})"
stop_servers && ok "SIGTERM: clean exit 0" || fail "the server did not exit 0 on SIGTERM"

# API key: /v1 routes need it, /health does not.
start_server "$work/key.log" --model "$model" --threads 1 --api-key s3cret
wait_ready
expect 401 "no API key" "$(http GET /v1/models)" '"invalid_api_key"'
expect 401 "wrong API key" "$(http GET /v1/models '' -H 'Authorization: Bearer nope')" '"invalid_api_key"'
expect 200 "right API key" "$(http GET /v1/models '' -H 'Authorization: Bearer s3cret')" '"default-moe"'
stop_servers && ok "SIGTERM: clean exit 0" || fail "the server did not exit 0 on SIGTERM"

# A full queue: one slot, no waiting room; a second request while the first runs gets 503.
start_server "$work/queue.log" --model "$model" --threads 1 --max-batch 1 --max-queue 0
wait_ready
curl -s -N -H 'Content-Type: application/json' --data-binary "$long" "$url/v1/completions" >"$work/first.txt" &
first=$!
for _ in $(seq 1 100); do [ -s "$work/first.txt" ] && break; sleep 0.05; done
expect 503 "full queue" "$(http POST /v1/completions '{"prompt":"y","max_tokens":2}')" 'queue is full'
kill "$first" 2>/dev/null || true
wait "$first" 2>/dev/null || true

# Bad flags and an address in use.
out=$(timeout 60 "$bin" serve --model "$model" --max-batch 0 2>&1) && fail "--max-batch 0 accepted" ||
  { grep -q "maximum batch" <<<"$out" && ok "--max-batch 0 refused" || fail "message: $out"; }
for bad in "--max-queue -1|queue limit" "--prefill-chunk 0|prefill chunk" "--max-body-mb nan|--max-body-mb" \
  "--http-threads 0|--http-threads" "--port 70000|--port" "--cache-policy nope|--cache-policy" "--io tape|--io" \
  "--expert-cache-mb 1|artifacts" "--host 999.1.1.1|cannot bind"; do
  flag=${bad%|*} want=${bad#*|}
  # shellcheck disable=SC2086
  out=$(timeout 60 "$bin" serve --model "$model" --port 0 $flag 2>&1) && fail "$flag accepted" ||
    { grep -q -- "$want" <<<"$out" && ok "$flag refused" || fail "$flag: $out"; }
done
out=$(timeout 60 "$bin" serve --model "$model" --port "$port" 2>&1) && fail "port in use accepted" ||
  { grep -q "cannot bind" <<<"$out" && ok "port in use refused" || fail "message: $out"; }
out=$(timeout 60 "$bin" serve --model "$work/missing" --port 0 2>&1) && fail "missing model accepted" ||
  { grep -q "missing" <<<"$out" && ok "missing model refused" || fail "message: $out"; }
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
