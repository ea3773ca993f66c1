#!/usr/bin/env python3
"""Prefill and decode tokens/s of a Hugging Face MoE checkpoint in PyTorch eager mode,
optionally beside `submoe run` on the same checkpoint, prompt and thread counts, in one run.

PyTorch side: AutoModelForCausalLM (transformers' own modeling code, no torch.compile),
torch.inference_mode(), torch.set_num_threads(T). Prefill = one forward over the prompt
(use_cache=True); decode = greedy steps of one token with the KV cache (past_key_values),
tokens/s = steps / wall time of the loop. Timed after one warm-up pass; best of --repeats.
The weights run in the checkpoint's stored dtype (`stored`, e.g. bfloat16) and/or float32.

submoe side (with --submoe BIN): `BIN run --model DIR --prompt TEXT -n N --threads T
--ignore-eos` per repeat; its stderr summary gives prefill and decode tokens/s (best of
--repeats). The prompt text is cut so that it tokenizes to at most --prompt-tokens tokens;
both engines tokenize the same text (the C++ tokenizer reproduces `tokenizers` exactly).

Run from the repository root with the tools venv, e.g.:
  nice .venv-tools/bin/python tools/bench_pytorch.py --model models/default-moe \\
      --prompt-file data/wikitext2-valid-excerpt.txt --submoe build/submoe --threads 1 2
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, type=Path, help="checkpoint directory (HF layout)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--prompt", help="prompt text")
    g.add_argument("--prompt-file", type=Path, help="read the prompt text from this file")
    p.add_argument("--prompt-tokens", type=int, default=256,
                   help="cut the prompt to at most this many tokens (default: %(default)s)")
    p.add_argument("--new-tokens", type=int, default=64,
                   help="tokens generated per decode measurement (default: %(default)s)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts (default: 1 2)")
    p.add_argument("--dtype", choices=["stored", "float32", "both"], default="stored",
                   help="PyTorch weight dtype: the checkpoint's, float32 or both (default: %(default)s)")
    p.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                   help="transformers attention implementation (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="measurements per setting, best kept (default: %(default)s)")
    p.add_argument("--submoe", type=Path, help="path of the submoe binary to measure beside PyTorch")
    p.add_argument("--json", action="store_true", help="print one JSON object per measurement instead of a table")
    return p.parse_args()


def cut_prompt(tok, text: str, max_tokens: int) -> str:
    """The longest prefix of `text` (cut at whitespace) that tokenizes to <= max_tokens."""
    text = text[:max_tokens * 32]  # no token of natural text spans 32 characters
    if len(tok(text, add_special_tokens=True).input_ids) <= max_tokens:
        return text
    lo, hi = 1, len(text)
    while lo < hi:  # largest prefix length whose token count fits
        mid = (lo + hi + 1) // 2
        if len(tok(text[:mid], add_special_tokens=True).input_ids) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    ws = max(cut.rfind(" "), cut.rfind("\n"))
    return cut[:ws] if ws > 0 else cut


def bench_torch(model, ids, new_tokens: int, repeats: int) -> dict:
    import torch
    x = torch.tensor([ids])

    def once():
        t0 = time.perf_counter()
        out = model(input_ids=x, use_cache=True)
        t1 = time.perf_counter()
        past = out.past_key_values
        nxt = out.logits[0, -1].argmax().view(1, 1)
        steps = 0
        t2 = time.perf_counter()
        for _ in range(new_tokens - 1):
            out = model(input_ids=nxt, past_key_values=past, use_cache=True)
            past = out.past_key_values
            nxt = out.logits[0, -1].argmax().view(1, 1)
            steps += 1
        t3 = time.perf_counter()
        return t1 - t0, t3 - t2, steps

    with torch.inference_mode():
        once()  # warm-up: allocator, oneDNN primitives, lazy init
        best_p, best_d, steps = float("inf"), float("inf"), 0
        for _ in range(repeats):
            p, d, steps = once()
            best_p, best_d = min(best_p, p), min(best_d, d)
    return {"prefill_tokens": len(ids), "prefill_tok_s": len(ids) / best_p,
            "decode_tokens": steps, "decode_tok_s": steps / best_d if steps else 0.0}


RUN_RE = re.compile(r"prefill (\d+) tokens in ([\d.]+) s \(([\d.]+) tok/s\) \| decode (\d+) tokens in "
                    r"([\d.]+) s \(([\d.]+) tok/s\)")


def bench_submoe(binary: Path, model: Path, prompt: str, new_tokens: int, threads: int, repeats: int) -> dict:
    best = None
    for _ in range(repeats + 1):  # the first run warms the page cache
        r = subprocess.run([str(binary), "run", "--model", str(model), "--prompt", prompt, "-n", str(new_tokens),
                            "--threads", str(threads), "--ignore-eos"],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            sys.exit(f"error: submoe run failed ({r.returncode}): {r.stderr.strip()}")
        m = RUN_RE.search(r.stderr)
        if not m:
            sys.exit(f"error: cannot parse submoe run's summary: {r.stderr.strip()}")
        cur = {"prefill_tokens": int(m.group(1)), "prefill_tok_s": float(m.group(3)),
               "decode_tokens": int(m.group(4)), "decode_tok_s": float(m.group(6))}
        if best is None:
            best = dict(cur, prefill_tok_s=0.0, decode_tok_s=0.0)
        best["prefill_tok_s"] = max(best["prefill_tok_s"], cur["prefill_tok_s"])
        best["decode_tok_s"] = max(best["decode_tok_s"], cur["decode_tok_s"])
    return best


def main() -> None:
    a = parse_args()
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.model)
    if a.prompt_file:
        text = a.prompt_file.read_text(encoding="utf-8")
    else:
        text = a.prompt if a.prompt is not None else "The history of the city begins with"
    prompt = cut_prompt(tok, text, a.prompt_tokens)
    ids = tok(prompt, add_special_tokens=True).input_ids
    cfg = json.loads((a.model / "config.json").read_text())
    stored = cfg.get("dtype") or cfg.get("torch_dtype") or "float32"
    dtypes = {"stored": [stored], "float32": ["float32"], "both": [stored, "float32"]}[a.dtype]
    dtypes = list(dict.fromkeys(dtypes))

    rows = []
    for threads in a.threads:
        torch.set_num_threads(threads)
        for dt in dtypes:
            model = AutoModelForCausalLM.from_pretrained(a.model, dtype=getattr(torch, dt),
                                                         attn_implementation=a.attn).eval()
            r = bench_torch(model, ids, a.new_tokens, a.repeats)
            rows.append({"engine": f"pytorch-{a.attn} {dt}", "threads": threads, **r})
            del model
        if a.submoe:
            r = bench_submoe(a.submoe, a.model, prompt, a.new_tokens, threads, a.repeats)
            rows.append({"engine": "submoe", "threads": threads, **r})

    meta = {"model": str(a.model), "torch": torch.__version__, "transformers": transformers.__version__,
            "prompt_tokens": len(ids), "new_tokens": a.new_tokens}
    if a.json:
        for r in rows:
            print(json.dumps({**meta, **r}))
        return
    print(f"# {meta}")
    print(f"{'engine':<28} {'threads':>7} {'prefill tok/s':>14} {'decode tok/s':>13} {'decode x torch':>15}")
    for r in rows:
        base = next((b for b in rows if b["threads"] == r["threads"] and b["engine"].startswith("pytorch")
                     and b["engine"].endswith(stored)), None)
        ratio = f"{r['decode_tok_s'] / base['decode_tok_s']:.2f}x" if base and base["decode_tok_s"] else "-"
        print(f"{r['engine']:<28} {r['threads']:>7} {r['prefill_tok_s']:>14.1f} {r['decode_tok_s']:>13.1f} {ratio:>15}")


if __name__ == "__main__":
    main()
