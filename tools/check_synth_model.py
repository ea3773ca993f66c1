#!/usr/bin/env python3
"""Checks a `submoe synth-model` checkpoint with Hugging Face transformers (not run in CI).

    .venv-tools/bin/python tools/check_synth_model.py DIR [--trace T --text FILE --ctx N]

1. AutoModelForCausalLM.from_pretrained(DIR) loads it with no missing, unexpected or
   mismatched tensors and the config class of its model_type;
2. a forward pass over a few tokens gives finite logits;
3. with --trace (written by `submoe trace record --model DIR --text FILE --ctx N`): the text is
   tokenized with DIR's tokenizer, each window of N tokens is run through transformers in float32
   with output_router_logits, the top-k experts and weights (softmax in fp32, top-k,
   renormalised iff the architecture does; GPT-OSS reports the weights themselves) are
   compared with the trace. Expert ids must agree
   except where the k-th and (k+1)-th probabilities are within --tie-gap (the two engines
   round differently); weights within bf16 rounding.

Prints one JSON line per directory and exits non-zero on any failure.
"""
import argparse
import json
import struct
import sys

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer


def load_trace(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, version, layers, experts, top_k, tokens, header = struct.unpack_from("<8sIIIIQI", data, 0)
    assert magic == b"SUBMOETR" and version == 1 and header == 48, "not a version-1 trace"
    rec = np.frombuffer(data, dtype=np.uint16, offset=48).reshape(tokens, layers, top_k, 2)
    ids = rec[..., 0].astype(np.int64)
    weights = (rec[..., 1].astype(np.uint32) << 16).view(np.float32)
    return ids, weights, experts


def renormalises(config):
    return config.model_type == "mixtral" or bool(getattr(config, "norm_topk_prob", False))


def check(directory, args):
    report = {"dir": directory}
    config = AutoConfig.from_pretrained(directory)
    model, info = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32, output_loading_info=True)
    model.eval()
    problems = {k: v for k, v in info.items() if v}
    report["config_class"] = type(config).__name__
    report["model_class"] = type(model).__name__
    report["loading_problems"] = {k: sorted(map(str, v)) for k, v in problems.items()}
    ok = not problems
    with torch.no_grad():
        ids = torch.arange(1, 17).remainder(config.vocab_size).unsqueeze(0)
        logits = model(ids).logits
    report["logits_finite"] = bool(torch.isfinite(logits).all())
    ok = ok and report["logits_finite"]

    if args.trace:
        trace_ids, trace_w, experts = load_trace(args.trace)
        tok = AutoTokenizer.from_pretrained(directory)
        with open(args.text, encoding="utf-8") as f:
            tokens = tok(f.read(), add_special_tokens=True)["input_ids"]
        if args.max_tokens:
            tokens = tokens[: args.max_tokens]
        k = config.num_experts_per_tok
        n_experts = getattr(config, "num_local_experts", None) or config.num_experts
        report["tokens"] = len(tokens)
        if len(tokens) != trace_ids.shape[0] or experts != n_experts or trace_ids.shape[2] != k:
            report["error"] = f"trace shape {trace_ids.shape} / {experts} experts does not fit {len(tokens)} tokens"
            report["ok"] = False
            print(json.dumps(report))
            return False
        mismatched = near_ties = 0
        max_w = 0.0
        for start in range(0, len(tokens), args.ctx):
            window = torch.tensor([tokens[start : start + args.ctx]])
            with torch.no_grad():
                out = model(window, output_router_logits=True)
            for j, router_logits in enumerate(out.router_logits):
                r = router_logits.float().reshape(window.shape[1], -1)
                # GPT-OSS reports its routing weights (softmax over the top-k logits, zero
                # elsewhere) rather than logits; the others report logits.
                p = r if config.model_type == "gpt_oss" else torch.softmax(r, dim=-1)
                top = torch.topk(p, k + 1 if k < p.shape[1] else k, dim=-1)
                w = top.values[:, :k]
                if renormalises(config):
                    w = w / w.sum(dim=-1, keepdim=True)
                for t in range(window.shape[1]):
                    ours = trace_ids[start + t, j]
                    theirs = top.indices[t, :k].numpy()
                    if not np.array_equal(ours, theirs):
                        gap = (top.values[t, k - 1] - top.values[t, k]).item() if k < p.shape[1] else 1.0
                        if gap < args.tie_gap:
                            near_ties += 1
                        else:
                            mismatched += 1
                        continue
                    diff = np.abs(trace_w[start + t, j] - w[t].numpy())
                    max_w = max(max_w, float((diff / np.maximum(w[t].numpy(), 1e-30)).max()))
        report["routing_mismatches"] = mismatched
        report["routing_near_ties"] = near_ties
        report["max_rel_weight_diff"] = max_w
        ok = ok and mismatched == 0 and max_w <= 2 ** -8 + 1e-4
    report["ok"] = bool(ok)
    print(json.dumps(report))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--trace", help="trace recorded from the (single) directory")
    ap.add_argument("--text", help="the text the trace was recorded from")
    ap.add_argument("--ctx", type=int, default=512, help="--ctx the trace was recorded with")
    ap.add_argument("--max-tokens", type=int, default=0)
    ap.add_argument("--tie-gap", type=float, default=1e-5, help="probability gap below which a flip is a near tie")
    args = ap.parse_args()
    if args.trace and (len(args.dirs) != 1 or not args.text):
        ap.error("--trace needs exactly one directory and --text")
    results = [check(d, args) for d in args.dirs]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
