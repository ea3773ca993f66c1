#!/usr/bin/env python3
"""Load test and benchmark of `submoe serve` over loopback (Python standard library only).

Each of --clients threads sends --requests greedy completion requests in turn
(alternately streaming and not, unless --stream/--no-stream), each with its own
prompt; with --chat every other request (by index) goes to /v1/chat/completions
as one user message instead. With --check, every request is first run alone (one
at a time, on its route) and every concurrent response must be complete and
identical to it.

Prints one JSON object: requests, errors, mismatches, aggregate decode tokens/s
(completion tokens over the wall time of the concurrent phase), per-stream
tokens/s, time to first token p50/p99 (streaming requests), wall seconds.

  usage: serve_load.py --url http://127.0.0.1:8080 [--clients 32] [--requests 3]
                       [--max-tokens 32] [--check] [--chat] [--stream|--no-stream]
"""
import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse

WORDS = ("the river of time carries small stones and great ships toward the sea where "
         "old sailors tell stories of storms islands and distant lights").split()


def prompt_for(i):
    # Distinct prompts of different lengths.
    n = 3 + (i * 7) % 23
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(n))


def piece_of(choice):
    # A completion choice has "text"; a chat choice a "message" or a "delta".
    if "text" in choice:
        return choice["text"] or ""
    return (choice.get("message") or choice.get("delta") or {}).get("content") or ""


def complete(url, body, stream, timeout=600):
    """Returns (text, finish_reason, usage, ttft_seconds or None, seconds)."""
    route = "/v1/chat/completions" if "messages" in body else "/v1/completions"
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    body = dict(body, stream=stream)
    if stream:
        body["stream_options"] = {"include_usage": True}
    t0 = time.monotonic()
    conn.request("POST", route, json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    if not stream:
        j = json.loads(r.read())
        conn.close()
        return piece_of(j["choices"][0]), j["choices"][0]["finish_reason"], j["usage"], None, time.monotonic() - t0
    text, finish, usage, ttft, done = "", None, None, None, False
    for raw in r:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        data = line[6:]
        if data == "[DONE]":
            done = True
            break
        j = json.loads(data)
        if "error" in j:
            raise RuntimeError(f"stream error: {j['error']}")
        if j.get("usage"):
            usage = j["usage"]
        for c in j["choices"]:
            piece = piece_of(c)
            if piece and ttft is None:
                ttft = time.monotonic() - t0
            text += piece
            if c["finish_reason"]:
                finish = c["finish_reason"]
    conn.close()
    if not done:
        raise RuntimeError("stream ended without data: [DONE]")
    return text, finish, usage, ttft, time.monotonic() - t0


def percentile(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=3, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--check", action="store_true", help="compare every response with the request run alone")
    ap.add_argument("--chat", action="store_true", help="every other request goes to /v1/chat/completions")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--stream", dest="mode", action="store_const", const="stream")
    mode.add_argument("--no-stream", dest="mode", action="store_const", const="plain")
    a = ap.parse_args()

    def body(i):
        common = {"max_tokens": a.max_tokens, "temperature": 0, "ignore_eos": True}
        if a.chat and i % 2 == 1:
            return dict(common, messages=[{"role": "user", "content": prompt_for(i)}])
        return dict(common, prompt=prompt_for(i))

    jobs = [(c, k, c * a.requests + k) for c in range(a.clients) for k in range(a.requests)]
    reference = {}
    if a.check:
        for _, _, i in jobs:
            reference[i] = complete(a.url, body(i), stream=False)[0]

    results, errors, lock = [], [], threading.Lock()

    def client(c):
        for k in range(a.requests):
            i = c * a.requests + k
            stream = a.mode == "stream" or (a.mode is None and (c + k) % 2 == 0)
            try:
                text, finish, usage, ttft, secs = complete(a.url, body(i), stream)
                with lock:
                    results.append({"i": i, "stream": stream, "text": text, "finish": finish, "usage": usage,
                                    "ttft": ttft, "seconds": secs})
            except Exception as e:  # noqa: BLE001 - reported, counted
                with lock:
                    errors.append(f"request {i}: {e}")

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0

    mismatches = []
    for r in results:
        u = r["usage"] or {}
        if u.get("completion_tokens") != a.max_tokens or r["finish"] != "length":
            mismatches.append(f"request {r['i']}: incomplete ({u}, finish {r['finish']})")
        elif a.check and r["text"] != reference[r["i"]]:
            mismatches.append(f"request {r['i']}: {r['text']!r} != alone {reference[r['i']]!r}")
    tokens = sum((r["usage"] or {}).get("completion_tokens", 0) for r in results)
    ttfts = [r["ttft"] for r in results if r["ttft"] is not None]
    per_stream = [(r["usage"] or {}).get("completion_tokens", 0) / r["seconds"] for r in results if r["seconds"] > 0]
    out = {
        "clients": a.clients,
        "requests": len(results) + len(errors),
        "errors": len(errors),
        "mismatches": len(mismatches),
        "completion_tokens": tokens,
        "wall_seconds": round(wall, 3),
        "aggregate_tokens_per_s": round(tokens / wall, 2) if wall > 0 else 0,
        "per_request_tokens_per_s_p50": round(percentile(per_stream, 50) or 0, 2),
        "ttft_p50_s": round(percentile(ttfts, 50), 4) if ttfts else None,
        "ttft_p99_s": round(percentile(ttfts, 99), 4) if ttfts else None,
        "first_problems": (errors + mismatches)[:5],
    }
    print(json.dumps(out))
    return 0 if not errors and not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
