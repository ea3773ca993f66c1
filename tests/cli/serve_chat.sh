#!/usr/bin/env bash
# `submoe serve` /v1/chat/completions over loopback: the embedded model's chat
# template renders the messages exactly as transformers' apply_chat_template does
# (the golden of tests/fixtures/chat_templates/cases.json), so a greedy chat
# completion equals /v1/completions of that rendered prompt; streaming sends the
# role first, then content deltas that concatenate to the same text, a finish
# chunk, a usage chunk and data: [DONE]; text content parts, chat_template_kwargs;
# OpenAI errors for bad messages and refused fields; --chat-template FILE (a
# Mixtral template refusing a system message: the template's own message, 400);
# `run --chat` renders the same prompt; a model without a chat template answers
# 400 naming --chat-template, and
# /v1/completions still works there; a template the engine cannot parse is
# refused at start-up when given by --chat-template.
#   usage: serve_chat.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
model=$src/models/default-moe
work=$(mktemp -d)
source "$src/tests/cli/lib/serve_helpers.bash"
trap 'stop_servers; rm -rf "$work"' EXIT

start_server "$work/server.log" --model "$model" --threads 2
wait_ready
grep -q "chat template: .*tokenizer_config.json" "$work/server.log" && ok "start-up names the chat template" ||
  fail "no chat template line: $(cat "$work/server.log")"

# The rendered prompt is transformers' (the fixture's golden for this conversation).
messages='[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"What is 2+2?"}]'
rendered=$(python3 - "$src/tests/fixtures/chat_templates/cases.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1], encoding="utf-8"))["cases"]
c = next(c for c in cases if c["template"] == "default-moe" and c["conversation"] == "system_user"
         and c["add_generation_prompt"] and not c["tools"])
print(json.dumps(c["expected"]))
PY
)
r=$(http POST /v1/completions "{\"prompt\":$rendered,\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true}")
expect 200 "completion of the rendered prompt" "$r"
want=$(json_field 'd["choices"][0]["text"]' <<<"${r#* }")
want_prompt_tokens=$(json_field 'd["usage"]["prompt_tokens"]' <<<"${r#* }")
r=$(http POST /v1/chat/completions "{\"messages\":$messages,\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true}")
expect 200 "POST /v1/chat/completions" "$r" '"chat.completion"'
got=$(json_field 'd["choices"][0]["message"]["content"]' <<<"${r#* }")
[ "$got" = "$want" ] && ok "chat content equals the completion of the rendered prompt" || fail "chat '$got' != '$want'"
shape=$(json_field 'd["choices"][0]["message"]["role"], d["choices"][0]["finish_reason"], d["usage"]["prompt_tokens"], d["usage"]["completion_tokens"]' <<<"${r#* }")
[ "$shape" = "assistant length $want_prompt_tokens 16" ] && ok "role, finish_reason, usage ($shape)" || fail "shape: $shape"

# `submoe run --chat --system` renders the same conversation: the same text.
ran=$("$bin" run --model "$model" --chat --system "You are a helpful assistant." --prompt "What is 2+2?" -n 16 \
  --ignore-eos --threads 2 --json 2>/dev/null | json_field 'd["text"]')
[ "$ran" = "$want" ] && ok "run --chat equals the chat completion" || fail "run --chat '$ran' != '$want'"

# Streaming: role first, then deltas with the same text, finish, usage, [DONE].
curl -s -N -H 'Content-Type: application/json' --data-binary \
  "{\"messages\":$messages,\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" \
  "$url/v1/chat/completions" >"$work/sse.txt"
check=$(python3 - "$work/sse.txt" "$want" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1], encoding="utf-8").read().split("\n") if l]
assert lines[-1] == "data: [DONE]", lines[-1]
events = [json.loads(l[6:]) for l in lines[:-1]]
assert all(e["object"] == "chat.completion.chunk" for e in events)
assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}, events[0]
text = "".join(c["delta"].get("content", "") for e in events[1:] for c in e["choices"])
finish = [c["finish_reason"] for e in events for c in e["choices"] if c["finish_reason"]]
assert finish == ["length"], finish
assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 16, events[-1]
assert len({e["id"] for e in events}) == 1
assert text == sys.argv[2], (text, sys.argv[2])
print("good", len(events))
PY
) && ok "chat stream: role, same text, finish, usage, [DONE] ($check)" || fail "chat stream: $check"

# Text parts join with "\n"; max_completion_tokens bounds the answer; a template
# keyword reaches the template (the embedded one ignores it, so the answer stands).
r=$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"text","text":"Hello"},{"type":"text","text":"there"}]}],"max_completion_tokens":3,"temperature":0,"chat_template_kwargs":{"enable_thinking":false}}')
expect 200 "text content parts, max_completion_tokens, chat_template_kwargs" "$r" '"completion_tokens":3'

# Errors, each an OpenAI error object naming the field.
expect 400 "messages missing" "$(http POST /v1/chat/completions '{"max_tokens":2}')" "'messages' is required"
expect 400 "messages empty" "$(http POST /v1/chat/completions '{"messages":[]}')" "must not be empty"
expect 400 "role missing" "$(http POST /v1/chat/completions '{"messages":[{"content":"x"}]}')" 'role must be a non-empty string'
expect 400 "content of the wrong type" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":7}]}')" 'content must be a string'
expect 400 "image parts" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}')" 'only parts'
expect 400 "unknown field" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"temprature":1}')" 'Unrecognized request argument supplied: temprature'
expect 400 "tool_choice required" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}')" "tool_choice"
expect 400 "both token bounds" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"max_completion_tokens":2}')" 'not both'
expect 400 "reserved template keyword" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"messages":[]}}')" "must not set 'messages'"
expect 400 "malformed JSON" "$(http POST /v1/chat/completions '{"messages": [')" 'not valid JSON'
expect 404 "unknown model" "$(http POST /v1/chat/completions '{"model":"gpt-5","messages":[{"role":"user","content":"x"}]}')" '"model_not_found"'
long=$(python3 -c 'import json; print(json.dumps({"messages":[{"role":"user","content":"word " * 3000}]}))')
expect 400 "conversation beyond the context" "$(http POST /v1/chat/completions "$long")" "beyond the model's context"
stop_servers && ok "SIGTERM: clean exit 0" || fail "the server did not exit 0 on SIGTERM"

# --chat-template: Mixtral's template refuses a system message with its own words.
start_server "$work/mixtral.log" --model "$model" --threads 1 \
  --chat-template "$src/tests/fixtures/chat_templates/mixtral-8x7b-instruct.jinja"
wait_ready
grep -q "chat template: .*mixtral-8x7b-instruct.jinja" "$work/mixtral.log" && ok "--chat-template named at start-up" ||
  fail "start-up: $(cat "$work/mixtral.log")"
expect 400 "the template refuses a system message" "$(http POST /v1/chat/completions "{\"messages\":$messages}")" \
  'the chat template refused the messages: Conversation roles must alternate'
expect 200 "the template renders a user message" \
  "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2}')" '"chat.completion"'
stop_servers && ok "SIGTERM: clean exit 0" || fail "the server did not exit 0 on SIGTERM"

# A model without a chat template: chat answers 400 naming --chat-template,
# completions still work.
mkdir -p "$work/plain"
model_abs=$(cd "$model" && pwd)
for f in "$model_abs"/*; do ln -s "$f" "$work/plain/$(basename "$f")"; done
rm "$work/plain/tokenizer_config.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c.pop('chat_template'); json.dump(c, open(sys.argv[2], 'w'))" \
  "$model/tokenizer_config.json" "$work/plain/tokenizer_config.json"
start_server "$work/plain.log" --model "$work/plain" --threads 1
wait_ready
grep -q "/v1/chat/completions unavailable: the model has no chat template" "$work/plain.log" &&
  ok "start-up says chat is unavailable" || fail "start-up: $(cat "$work/plain.log")"
expect 400 "no chat template" "$(http POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}]}')" \
  '"chat_template_unavailable"'
expect 200 "completions without a chat template" "$(http POST /v1/completions '{"prompt":"Hi","max_tokens":2}')" '"text_completion"'
stop_servers && ok "SIGTERM: clean exit 0" || fail "the server did not exit 0 on SIGTERM"

# run --chat-template: Mixtral's template refuses the system message; OLMoE's renders.
out=$("$bin" run --model "$model" --chat --chat-template "$src/tests/fixtures/chat_templates/mixtral-8x7b-instruct.jinja" \
  --system x --prompt Hi -n 1 2>&1) && fail "run: the refused conversation ran" ||
  { grep -q "the chat template refused the messages: Conversation roles must alternate" <<<"$out" &&
    ok "run --chat-template: the template's refusal" || fail "message: $out"; }
"$bin" run --model "$model" --chat --chat-template "$src/tests/fixtures/chat_templates/olmoe-instruct.jinja" \
  --prompt Hi -n 2 --threads 1 >/dev/null 2>&1 && ok "run --chat-template renders another template" ||
  fail "run --chat-template olmoe failed"
out=$("$bin" run --model "$model" --chat --chat-template "$work/none.jinja" --prompt Hi -n 1 2>&1) &&
  fail "run: a missing --chat-template accepted" ||
  { grep -q "none.jinja" <<<"$out" && ok "run: a missing --chat-template refused" || fail "message: $out"; }

# run --chat without a template, --system without --chat.
out=$("$bin" run --model "$work/plain" --chat --prompt Hi -n 1 2>&1) && fail "run --chat without a template accepted" ||
  { grep -q -- "--chat: the model has no chat template" <<<"$out" && ok "run --chat without a template refused" || fail "message: $out"; }
out=$("$bin" run --model "$model" --system x --prompt Hi -n 1 2>&1) && fail "--system without --chat accepted" ||
  { grep -q -- "--system needs --chat" <<<"$out" && ok "--system without --chat refused" || fail "message: $out"; }

# Unusable --chat-template files are refused before serving.
printf '{%% for m in messages %%}{{ m.content | no_such_filter }}{%% endfor %%}' >"$work/bad.jinja"
out=$(timeout 60 "$bin" serve --model "$model" --port 0 --chat-template "$work/bad.jinja" 2>&1) && fail "bad template accepted" ||
  { grep -q "bad.jinja: the chat template cannot be used: line 1: no filter named 'no_such_filter'" <<<"$out" &&
    ok "unparsable --chat-template refused" || fail "message: $out"; }
out=$(timeout 60 "$bin" serve --model "$model" --port 0 --chat-template "$work/missing.jinja" 2>&1) && fail "missing template accepted" ||
  { grep -q "missing.jinja" <<<"$out" && ok "missing --chat-template refused" || fail "message: $out"; }
echo '{"bos_token": "<s>"}' >"$work/no_template.json"
out=$(timeout 60 "$bin" serve --model "$model" --port 0 --chat-template "$work/no_template.json" 2>&1) && fail "json without template accepted" ||
  { grep -q "needs a string field 'chat_template'" <<<"$out" && ok ".json without chat_template refused" || fail "message: $out"; }
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
