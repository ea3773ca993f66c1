#!/usr/bin/env python3
"""Writes the generated seed inputs of the fuzz targets under fuzz/corpus/.

Seeds copied from tests/fixtures (config.json, tokenizer.json) and the routing
trace recorded by `submoe trace record` are committed as they are; this script
makes the ones built by hand: small valid safetensors files, packed int
matrices, routing traces and artifact JSON. Standard library only;
deterministic, so rerunning it rewrites identical files.

    python3 fuzz/make_corpus.py
"""
import json
import os
import struct

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- safetensors ------------------------------------------------------------

DTYPE_SIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "U8": 1, "I8": 1, "U16": 2, "I16": 2, "U32": 4,
              "I32": 4, "U64": 8, "I64": 8, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


def safetensors(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, bytes), written in that order."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        n = 1
        for s in shape:
            n *= s
        assert len(raw) == n * DTYPE_SIZE[dtype], name
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)  # the reference writer pads to 8 bytes
    return struct.pack("<Q", len(h)) + h + data


def make_safetensors():
    f32 = struct.pack("<6f", 0.5, -1.0, 2.0, 3.25, -0.0, 1e-3)
    bf16 = struct.pack("<4H", 0x3F80, 0xBF80, 0x0000, 0x4049)
    f16 = struct.pack("<4H", 0x3C00, 0xBC00, 0x0001, 0x7BFF)
    write("safetensors_header", "mixed_dtypes", safetensors([
        ("model.embed_tokens.weight", "F32", [2, 3], f32),
        ("model.norm.weight", "BF16", [4], bf16),
        ("lm_head.weight", "F16", [2, 2], f16),
        ("ids", "I32", [3], struct.pack("<3i", 1, -2, 3)),
        ("mask", "BOOL", [2], b"\x01\x00"),
        ("bytes", "U8", [5], b"\x00\x01\x7f\x80\xff"),
        ("scalar", "F64", [], struct.pack("<d", 3.5)),
        ("fp8", "F8_E4M3", [4], b"\x00\x38\x7e\xfe"),
        ("fp8b", "F8_E5M2", [2], b"\x3c\xbc"),
        ("empty", "F32", [0, 3], b""),
        ("wide", "U64", [1], struct.pack("<Q", 2**63)),
    ], {"format": "pt"}))
    write("safetensors_header", "non_finite", safetensors([
        ("a", "F32", [3], struct.pack("<3I", 0x3F800000, 0x7FC00000, 0x7F800000)),
        ("b", "BF16", [2], struct.pack("<2H", 0xFF80, 0x3F80)),
        ("c", "F16", [2], struct.pack("<2H", 0x7C00, 0x0000)),
        ("d", "F64", [1], struct.pack("<Q", 0x7FF8000000000000)),
    ]))
    write("safetensors_header", "empty_header", struct.pack("<Q", 8) + b"{}      ")
    write("safetensors_header", "metadata_only",
          safetensors([], {"format": "pt", "note": "caf\u00e9"}))
    # An expert-shaped file, as a checkpoint holds them.
    tensors = []
    for e in range(2):
        for p in ("gate_proj", "up_proj", "down_proj"):
            tensors.append((f"model.layers.0.mlp.experts.{e}.{p}.weight", "BF16", [4, 2],
                            struct.pack("<8H", *[(0x3C00 + 17 * i + e) & 0xFFFF for i in range(8)])))
    write("safetensors_header", "experts", safetensors(tensors))


# ---- int_packed ---------------------------------------------------------------

def f16_bits(x):
    return struct.unpack("<H", struct.pack("<e", x))[0]


def int_packed(rows, cols, bits, group_size, seed):
    """The fuzzer's input layout: rows-1, cols-1, shape byte, qweight, scales, zeros."""
    groups_code = {0: 0, 32: 1, 64: 2, 128: 3}[group_size]
    shape = (bits - 2) + 3 * groups_code
    groups = 1 if group_size == 0 else (cols + group_size - 1) // group_size
    row_bytes = (cols * bits + 31) // 32 * 4
    maxq = (1 << bits) - 1
    q = b""
    state = seed
    for _ in range(rows):
        stream = 0
        for c in range(cols):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            stream |= ((state >> 16) & maxq) << (c * bits)
        q += stream.to_bytes(row_bytes, "little")
    scales = b"".join(struct.pack("<H", f16_bits(0.01 * (1 + (i % 7)) * (-1 if i % 5 == 4 else 1)))
                      for i in range(rows * groups))
    zeros = bytes((i * 3) % (maxq + 1) for i in range(rows * groups))
    return bytes([rows - 1, cols - 1, shape]) + q + scales + zeros


def make_int_packed():
    for rows, cols, bits, gs in [(1, 1, 2, 0), (3, 7, 3, 0), (4, 40, 4, 32), (2, 64, 3, 64), (5, 33, 2, 128),
                                 (8, 64, 4, 0)]:
        write("int_packed", f"r{rows}_c{cols}_b{bits}_g{gs}", int_packed(rows, cols, bits, gs, rows * 131 + cols))


# ---- routing traces -----------------------------------------------------------

def trace(layers, experts, top_k, choices):
    """choices: per token, per layer, list of (expert, bf16 weight bits)."""
    out = b"SUBMOETR" + struct.pack("<IIIIQII", 1, layers, experts, top_k, len(choices), 48, 0) + struct.pack("<Q", 0)
    for token in choices:
        for layer in token:
            for e, w in layer:
                out += struct.pack("<HH", e, w)
    return out


def make_traces():
    one = 0x3F80  # 1.0 in bf16
    half = 0x3F00
    write("routing_trace", "small_top2", trace(2, 4, 2, [
        [[(0, half), (1, half)], [(3, half), (2, half)]],
        [[(1, half), (0, half)], [(3, half), (1, half)]],
        [[(2, one), (2, 0)], [(0, half), (3, half)]],  # the same expert twice: allowed, counts twice
    ]))
    write("routing_trace", "top1_many_experts", trace(1, 300, 1, [[[(e * 37 % 300, one)]] for e in range(12)]))


# ---- artifact JSON ----------------------------------------------------------

def make_artifact_json():
    checksums = {
        "algorithm": "xxh3_64",
        "files": {"config.json": "0123456789abcdef", "tokenizer.json": "fedcba9876543210"},
        "safetensors_header": "00000000000000ff",
        "tensors": {"model.embed_tokens.weight": "1111111111111111", "lm_head.weight": "aaaaaaaaaaaaaaaa"},
        "experts": [["0000000000000001", "0000000000000002"], [], ["ffffffffffffffff", "8000000000000000"]],
    }
    write("artifact_manifest", "manifest_checksums.json",
          json.dumps({"format": "submoe artifact", "format_version": 2, "checksums": checksums}, indent=1))
    write("artifact_manifest", "checksums_only.json", json.dumps(checksums))
    qc = {
        "quant_method": "submoe", "format_version": 2, "method": "gptq", "grid": "mixed", "damp": 0.1,
        "expert_group": 16, "act_order": False, "true_sequential": False,
        "tensor_names": "model.layers.{layer}.mlp.experts.{expert}.{gate_proj|up_proj|down_proj}.{field}",
        "modules_not_converted": ["embed_tokens", "self_attn", "router", "norms", "lm_head"],
        "representations": [
            {"representation": "int", "bits": 4, "group_size": 128},
            {"representation": "ternary_dict", "code": "tunstall", "p0": 0.885},
            {"representation": "rvq", "stages": 3, "rotation": "rht", "codebook_tensor": "submoe.rvq.codebooks"},
        ],
        "expert_matrices": [[[0, 0, 0], [1, 1, 2], [2, 1, 0]], [], [[1, 1, 1]]],
    }
    write("artifact_manifest", "config_v2.json",
          json.dumps({"model_type": "qwen3_moe", "num_hidden_layers": 3, "quantization_config": qc}, indent=1))


if __name__ == "__main__":
    make_safetensors()
    make_int_packed()
    make_traces()
    make_artifact_json()
