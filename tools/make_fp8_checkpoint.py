#!/usr/bin/env python3
"""Rewrite a float checkpoint as an FP8 block-scaled one, the way DeepSeek-V3 and
Kimi-K2 are stored on the hub, plus a reference checkpoint of the same values.

Every 2-D projection of the decoder layers (attention, dense MLP, experts,
shared experts; not norms, not the router `mlp.gate.weight`, not the embedding
or lm_head, as on the hub) becomes F8_E4M3 with a float32 `<name>_scale_inv` of
shape [ceil(rows / br), ceil(cols / bc)]: per block scale = amax / 448 (rounded
to float32), each weight divided by it and rounded to the nearest E4M3 value.
config.json gains quantization_config {"quant_method": "fp8", "fmt": "e4m3",
"weight_block_size": [br, bc]}.

The reference checkpoint (REF, optional) holds fp8(w) * scale computed in
float64 and rounded to float32: the exact float32 product DeepSeek's
weight_dequant computes, written by an implementation that shares no code with
submoe's reader.

Pure Python (json, struct, math): runs in CI without numpy.

  make_fp8_checkpoint.py SRC OUT REF [--block BR BC] [--break drop-scale|wrong-shape|orphan-scale]
"""
import argparse
import bisect
import json
import math
import os
import shutil
import struct

E4M3_MAX = 448.0


def e4m3_value(b):
    """The OCP E4M3 'fn' value of byte b (bias 7, S.1111.111 NaN)."""
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 0xF, b & 0x7
    if e == 0xF and m == 0x7:
        return math.nan
    if e == 0:
        return sign * m / 8.0 * 2.0 ** -6
    return sign * (1.0 + m / 8.0) * 2.0 ** (e - 7)


POSITIVE = [(e4m3_value(b), b) for b in range(0x7F)]  # 0 .. 448, ascending
POS_VALUES = [v for v, _ in POSITIVE]


def encode_e4m3(x):
    """Nearest E4M3 byte to x (|x| <= 448); ties to the smaller magnitude."""
    a = abs(x)
    i = bisect.bisect_left(POS_VALUES, a)
    if i == len(POS_VALUES):
        i -= 1
    elif i > 0 and a - POS_VALUES[i - 1] <= POS_VALUES[i] - a:
        i -= 1
    b = POSITIVE[i][1]
    return b | 0x80 if x < 0 and b != 0 else b


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        dtype = info["dtype"]
        if dtype == "F32":
            values = list(struct.unpack("<%df" % (len(raw) // 4), raw))
        elif dtype == "BF16":
            values = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
        else:
            raise SystemExit("%s: tensor %s has dtype %s (F32 or BF16 expected)" % (path, name, dtype))
        out[name] = (info["shape"], values)
    return out


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, bytes)."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def is_fp8_projection(name, shape):
    return (len(shape) == 2 and name.startswith("model.layers.") and name.endswith(".weight")
            and "layernorm" not in name and not name.endswith("mlp.gate.weight"))


def quantize(shape, values, br, bc):
    rows, cols = shape
    sr, sc = -(-rows // br), -(-cols // bc)
    scales = [0.0] * (sr * sc)
    codes = bytearray(rows * cols)
    ref = [0.0] * (rows * cols)
    for i in range(sr):
        for j in range(sc):
            rs, cs = range(i * br, min(rows, (i + 1) * br)), range(j * bc, min(cols, (j + 1) * bc))
            amax = max(abs(values[r * cols + c]) for r in rs for c in cs)
            s = f32(amax / E4M3_MAX) if amax > 0 else 1.0
            scales[i * sc + j] = s
            for r in rs:
                for c in cs:
                    b = encode_e4m3(values[r * cols + c] / s)
                    codes[r * cols + c] = b
                    ref[r * cols + c] = f32(e4m3_value(b) * s)
    return codes, [sr, sc], scales, ref


def copy_side_files(src, dst, quant):
    os.makedirs(dst, exist_ok=True)
    for fn in sorted(os.listdir(src)):
        if fn.endswith(".safetensors") or fn.startswith("golden") or not os.path.isfile(os.path.join(src, fn)):
            continue
        if fn == "config.json" and quant is not None:
            cfg = json.load(open(os.path.join(src, fn)))
            cfg["quantization_config"] = quant
            json.dump(cfg, open(os.path.join(dst, fn), "w"), indent=2)
        else:
            shutil.copyfile(os.path.join(src, fn), os.path.join(dst, fn))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("ref", help="reference checkpoint directory, or '' for none")
    ap.add_argument("--block", nargs=2, type=int, default=[128, 128], metavar=("BR", "BC"))
    ap.add_argument("--break", dest="breakage", choices=["drop-scale", "wrong-shape", "orphan-scale"])
    a = ap.parse_args()
    br, bc = a.block
    tensors = read_safetensors(os.path.join(a.src, "model.safetensors"))
    fp8, ref = {}, {}
    for name, (shape, values) in tensors.items():
        if is_fp8_projection(name, shape):
            codes, sshape, scales, deq = quantize(shape, values, br, bc)
            fp8[name] = ("F8_E4M3", shape, bytes(codes))
            fp8[name + "_scale_inv"] = ("F32", sshape, struct.pack("<%df" % len(scales), *scales))
            ref[name] = ("F32", shape, struct.pack("<%df" % len(deq), *deq))
        else:
            raw = struct.pack("<%df" % len(values), *values)
            fp8[name] = ref[name] = ("F32", shape, raw)
    victim = "model.layers.1.mlp.experts.0.down_proj.weight_scale_inv"
    if a.breakage == "drop-scale":
        del fp8[victim]
    elif a.breakage == "wrong-shape":
        fp8[victim] = ("F32", [1, 1], struct.pack("<f", 1.0))
    elif a.breakage == "orphan-scale":
        fp8["model.layers.1.mlp.experts.0.nothing.weight_scale_inv"] = ("F32", [1, 1], struct.pack("<f", 1.0))
    quant = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [br, bc]}
    copy_side_files(a.src, a.out, quant)
    write_safetensors(os.path.join(a.out, "model.safetensors"), fp8)
    if a.ref:
        copy_side_files(a.src, a.ref, None)
        write_safetensors(os.path.join(a.ref, "model.safetensors"), ref)
    print("fp8: %d tensors in F8_E4M3, blocks %d x %d" % (sum(1 for v in fp8.values() if v[0] == "F8_E4M3"), br, bc))


if __name__ == "__main__":
    main()
