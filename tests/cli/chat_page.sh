#!/usr/bin/env bash
# The chat page of `submoe serve` in a real browser (headless Chromium through
# selenium, tests/cli/lib/chat_page_browser.py): GET / loads it, a typed message
# streams an answer into the page (in several network reads) with its tokens/s line and the expert cache's
# hit rate (an artifact paged through a 1 MB cache), asking /v1/chat/completions
# (the model's chat template). The screenshot is kept at
# BUILD_DIR/test-output/chat_page.png. Also: the page's files are served with
# their content types.
#   usage: chat_page.sh SUBMOE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
source "$src/tests/cli/lib/serve_helpers.bash"
trap 'stop_servers; rm -rf "$work"' EXIT

"$bin" compress --model "$src/models/default-moe" --calib "$src/tests/fixtures/calib/shakespeare-excerpt.txt" \
  --out "$work/art" --samples 2 --seq-len 32 --method rtn >"$work/compress.log" 2>&1 ||
  { echo "FAIL compress: $(tail -3 "$work/compress.log")"; exit 1; }
start_server "$work/server.log" --model "$work/art" --threads 2 --expert-cache-mb 1
wait_ready

for route in "/ text/html" "/chat.js text/javascript" "/chat.css text/css"; do
  path=${route% *} type=${route#* }
  got=$(curl -s -o /dev/null -w '%{http_code} %{content_type}' "$url$path")
  [[ $got == "200 $type"* ]] && ok "GET $path: $got" || fail "GET $path: $got"
done

out_dir=$(dirname "$bin")/test-output
mkdir -p "$out_dir"
if out=$(/usr/bin/python3 "$src/tests/cli/lib/chat_page_browser.py" --url "$url" \
  --screenshot "$out_dir/chat_page.png" --timeout 120 2>&1); then
  ok "a typed message streams an answer into the page (screenshot: $out_dir/chat_page.png)"
  echo "$out" | sed 's/^/     /'
  grep -q "hit rate" <<<"$out" && ok "the page shows the expert cache's hit rate" || fail "no hit rate: $out"
else
  fail "browser: $out"
fi
[ -s "$out_dir/chat_page.png" ] && ok "screenshot kept" || fail "no screenshot at $out_dir/chat_page.png"
# The page asked /v1/chat/completions (the artifact carries the model's chat template).
grep -q 'submoe_http_responses_total{route="/v1/chat/completions",code="200"} [1-9]' <<<"$(curl -s "$url/metrics")" &&
  ok "the page used /v1/chat/completions" || fail "no 200 of /v1/chat/completions in /metrics"
stop_servers && ok "SIGTERM: clean exit 0" || fail "the server did not exit 0 on SIGTERM"
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
