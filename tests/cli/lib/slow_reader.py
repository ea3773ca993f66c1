#!/usr/bin/env python3
"""A slow reader beside fast clients, for tests/cli/serve_http.sh.

One client opens a long streaming completion on a socket with a small receive
buffer and reads nothing for --pause seconds (the server's writes to it block),
then reads the stream to its end. Meanwhile other clients send short requests
one after another; each must be answered within --deadline seconds. Exits 0 and
prints a JSON summary when the fast requests were served in time and the slow
stream arrived complete (every token, its usage chunk and data: [DONE]).

  usage: slow_reader.py --url URL [--tokens 1500] [--pause 2] [--deadline 3]
"""
import argparse
import json
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request


def slow_stream(host, port, tokens, pause, result):
    body = json.dumps({"prompt": "the slow reader", "max_tokens": tokens, "temperature": 0, "ignore_eos": True,
                       "stream": True, "stream_options": {"include_usage": True}}).encode()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(120)
    s.connect((host, port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    time.sleep(pause)  # read nothing: the server's writes fill the buffers and block
    data = bytearray()
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    text = data.decode("utf-8", "replace")
    usage = None
    for line in text.split("\n"):
        if line.startswith("data: {"):
            j = json.loads(line[6:])
            if j.get("usage"):
                usage = j["usage"]
    result["usage"] = usage
    result["done"] = "data: [DONE]" in text
    result["bytes"] = len(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--tokens", type=int, default=1500)
    ap.add_argument("--pause", type=float, default=2.0)
    ap.add_argument("--deadline", type=float, default=3.0)
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    slow = {}
    t = threading.Thread(target=slow_stream, args=(u.hostname, u.port, a.tokens, a.pause, slow))
    t.start()
    time.sleep(0.3)
    fast = []
    for i in range(4):
        req = urllib.request.Request(a.url + "/v1/completions", data=json.dumps(
            {"prompt": f"fast client {i}", "max_tokens": 8, "temperature": 0}).encode(),
            headers={"Content-Type": "application/json"})
        t0 = time.monotonic()
        with urllib.request.urlopen(req, timeout=60) as r:
            j = json.loads(r.read())
        fast.append(round(time.monotonic() - t0, 3))
        if j["usage"]["completion_tokens"] < 1:
            print(json.dumps({"error": "a fast request generated nothing", "response": j}))
            return 1
    t.join()
    summary = {"fast_seconds": fast, "slow_usage": slow.get("usage"), "slow_done": slow.get("done"),
               "slow_bytes": slow.get("bytes")}
    print(json.dumps(summary))
    ok = (max(fast) <= a.deadline and slow.get("done") and slow.get("usage")
          and slow["usage"]["completion_tokens"] == a.tokens)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
