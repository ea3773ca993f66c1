# Helpers of the `submoe serve` CLI tests: start a server on a free loopback port,
# wait for /health, make requests with curl, stop it. Source after setting
# $bin and $work; call stop_servers from the EXIT trap. ok/fail count into $fails.
server_pids=()
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# start_server LOG ARGS...: starts `submoe serve --port 0 ARGS` and sets $port and
# $url once it listens (the port is read from its stderr).
start_server() {
  local log=$1
  shift
  # The log exists before the server starts: the background job's redirection
  # may not have created it yet when sed first reads it, and under
  # `set -euo pipefail` sed's failure would end the calling test.
  : >"$log"
  "$bin" serve --port 0 "$@" 2>>"$log" &
  server_pids+=($!)
  port=""
  for _ in $(seq 1 200); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | head -1 || true)
    [ -n "$port" ] && break
    kill -0 "${server_pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "FAIL server did not start: $(cat "$log")"; return 1; }
  url="http://127.0.0.1:$port"
}

# wait_ready: polls GET /health until 200 (60 s at most; at once when the server
# has exited, e.g. because the model failed to load).
wait_ready() {
  for _ in $(seq 1 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health")" = 200 ] && return 0
    kill -0 "${server_pids[-1]}" 2>/dev/null || { echo "FAIL the server exited before it was ready"; return 1; }
    sleep 0.1
  done
  echo "FAIL /health never answered 200"
  return 1
}

# http METHOD PATH [BODY] [curl args...]: prints "STATUS BODY".
http() {
  local method=$1 path=$2 body=${3-}
  shift 3 || shift $#
  local out
  if [ -n "$body" ]; then
    out=$(curl -s -X "$method" -H 'Content-Type: application/json' --data-binary "$body" -w '\n%{http_code}' "$@" "$url$path")
  else
    out=$(curl -s -X "$method" -w '\n%{http_code}' "$@" "$url$path")
  fi
  local status=${out##*$'\n'}
  printf '%s %s' "$status" "${out%$'\n'*}"
}

# stop_servers: SIGTERM to every server started; fails unless each exits 0 (a
# clean shutdown, and under ASan no leak report).
stop_servers() {
  local rc=0 p
  for p in "${server_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${server_pids[@]}"; do wait "$p" 2>/dev/null || rc=$?; done
  server_pids=()
  return "$rc"
}

# expect STATUS DESCRIPTION RESPONSE [GREP-PATTERN]: RESPONSE is http's "STATUS BODY".
expect() {
  local want=$1 what=$2 got=$3 pattern=${4-}
  if [ "${got%% *}" != "$want" ]; then fail "$what: HTTP ${got%% *}, want $want: ${got#* }"; return; fi
  if [ -n "$pattern" ] && ! grep -q -- "$pattern" <<<"${got#* }"; then fail "$what: no '$pattern' in ${got#* }"; return; fi
  ok "$what"
}

# json_field EXPR: evaluates the Python expression EXPR over d = the JSON on stdin.
json_field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
