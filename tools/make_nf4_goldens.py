#!/usr/bin/env python3
"""Writes tests/fixtures/nf4/bnb_goldens.json: what bitsandbytes itself produces
for NF4 (quantize_4bit / dequantize_4bit, with and without QLoRA's double
quantization) on a few matrices, so tests/codec/nf4_test.cpp checks submoe's
NF4 codec against the reference implementation rather than against itself.

  .venv-tools/bin/python tools/make_nf4_goldens.py     (bitsandbytes==0.50.2, tools/requirements.txt)

Cases: random normal rows, heavy-tailed rows, an all-zero block, a block with
one nonzero value, values on the table's midpoints, and enough blocks for
two absmax2 groups of 256; block sizes 32, 64 and 128. Floats are stored as
the hex of their little-endian float32 bytes."""
import json
import os
import sys

import torch
import bitsandbytes.functional as F

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "nf4", "bnb_goldens.json")


def matrices():
    g = torch.Generator().manual_seed(20261206)
    yield "normal", torch.randn(4, 128, generator=g), 64
    t = torch.randn(6, 256, generator=g)
    t = t * torch.exp(torch.randn(6, 256, generator=g))  # heavy tails
    t[1, 64:128] = 0.0  # an all-zero block
    t[2, 0:64] = 0.0
    t[2, 17] = -3.5  # one nonzero value
    yield "adversarial", t, 64
    code = F.get_4bit_type("nf4", device="cpu").float()
    mids = (code[:-1] + code[1:]) / 2
    m = torch.zeros(2, 64)
    m[0, :15] = mids * 2.0  # absmax 2 (row 0 also holds +-2 exactly)
    m[0, 15] = 2.0
    m[1, :15] = -mids * 0.75
    m[1, 15] = -0.75
    yield "midpoints", m, 64
    yield "two_dq_groups", torch.randn(9, 1024, generator=g) * 0.02, 32  # 288 blocks
    yield "block32", torch.randn(3, 96, generator=g), 32
    yield "block128", torch.randn(5, 256, generator=g) * 7.0, 128


def f32_hex(t):
    """Little-endian float32 bytes as hex (exact and compact)."""
    return t.float().contiguous().reshape(-1).numpy().astype("<f4").tobytes().hex()


def main():
    cases = []
    for name, w, block in matrices():
        w = w.float().contiguous()
        q, st = F.quantize_4bit(w, blocksize=block, compress_statistics=False, quant_type="nf4")
        deq = F.dequantize_4bit(q, st)
        qd, std = F.quantize_4bit(w, blocksize=block, compress_statistics=True, quant_type="nf4")
        deqd = F.dequantize_4bit(qd, std)
        assert torch.equal(q, qd)
        cases.append({
            "name": name, "rows": w.shape[0], "cols": w.shape[1], "block": block,
            "weights_f32_hex": f32_hex(w),
            "codes_hex": bytes(q.reshape(-1).tolist()).hex(),
            "absmax_f32_hex": f32_hex(st.absmax),
            "decoded_f32_hex": f32_hex(deq),
            "dq_absmax_codes_hex": bytes(std.absmax.reshape(-1).tolist()).hex(),
            "dq_absmax2_f32_hex": f32_hex(std.state2.absmax),
            "dq_offset_f32_hex": f32_hex(std.offset),
            "dq_decoded_f32_hex": f32_hex(deqd),
        })
    out = {
        "generator": "tools/make_nf4_goldens.py, bitsandbytes " + __import__("bitsandbytes").__version__,
        "nf4_table_f32_hex": f32_hex(F.get_4bit_type("nf4", device="cpu")),
        "dynamic_map_f32_hex": f32_hex(F.create_dynamic_map(signed=True)),
        "cases": cases,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    tmp = OUT + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    os.replace(tmp, OUT)
    print(f"wrote {OUT}: {len(cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
