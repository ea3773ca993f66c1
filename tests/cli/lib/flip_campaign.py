#!/usr/bin/env python3
"""Flipped-byte campaign over one artifact (issue 12's proof).

Flips one bit of one byte at a time, runs the binary, restores the byte:
- model.safetensors: targeted fields of one expert of each layer (first,
  middle and last byte of every field: codes, scales, offsets, zeros,
  rotation seeds), the first and last bytes of every shared tensor
  (dictionaries, codebooks) and dense tensor, header bytes and random
  offsets. Each must be detected: `inspect --verify` exits non-zero with an
  error message.
- config.json, tokenizer.json, submoe_manifest.json: random offsets. Each
  must be detected or provably harmless: `eval` gives byte-identical output to
  the unflipped artifact.
Prints one summary line; exits 1 on any undetected harmful flip or a crash
(a signal or an exit status other than the CLI's error codes).
usage: flip_campaign.py BINARY ARTIFACT_DIR TEXT_FILE LABEL [RANDOM_FLIPS]
"""
import json
import os
import random
import struct
import subprocess
import sys

binary, art, text, label = sys.argv[1:5]
n_random = int(sys.argv[5]) if len(sys.argv) > 5 else 40
rng = random.Random(12)
weights = os.path.join(art, "model.safetensors")


garbled = []


def run(args):
    p = subprocess.run([binary] + args, capture_output=True, timeout=120)
    try:  # messages quote file bytes; they must stay valid UTF-8 (escaped as \xNN)
        err = p.stderr.decode("utf-8")
    except UnicodeDecodeError:
        garbled.append(p.stderr[:200])
        err = p.stderr.decode("utf-8", "replace")
    return p.returncode, p.stdout.decode("utf-8", "replace"), err


def flip(path, off, mask):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)[0]
        f.seek(off)
        f.write(bytes([b ^ mask]))


def header():
    with open(weights, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return 8 + n, h


data_off, tensors = header()
size = os.path.getsize(weights)
offsets = []  # (offset, what)
layers = {}
for name, t in tensors.items():
    b, e = t["data_offsets"]
    b += data_off
    e += data_off
    if ".mlp.experts." in name:
        parts = name.split(".")
        layer, expert, field = int(parts[2]), int(parts[5]), parts[-1]
        if expert != layers.setdefault(layer, expert):
            continue
        for off in sorted({b, (b + e) // 2, e - 1}):
            offsets.append((off, field))
    else:
        kind = "shared" if name.startswith("submoe.") else "dense"
        for off in sorted({b, e - 1}):
            offsets.append((off, kind))
for _ in range(16):
    offsets.append((rng.randrange(0, data_off), "header"))
for _ in range(n_random):
    offsets.append((rng.randrange(0, size), "random"))

CLI_ERRORS = {1, 2}
failures = []
by_kind = {}
for off, what in offsets:
    mask = 1 << rng.randrange(8)
    flip(weights, off, mask)
    try:
        rc, out, err = run(["inspect", art, "--verify", "--no-tensors"])
    finally:
        flip(weights, off, mask)
    ok = rc in CLI_ERRORS and "submoe inspect" in err
    d = by_kind.setdefault(what, [0, 0])
    d[0] += 1
    d[1] += ok
    if not ok:
        failures.append(f"model.safetensors byte {off} ({what}) mask {mask}: status {rc}, {err.strip()[:200]}")

# Side files: detected (non-zero status with a message) or the same output.
eval_args = ["eval", "--model", art, "--text", text, "--max-tokens", "96", "--threads", "1", "--json"]
rc0, base_out, _ = run(eval_args)
assert rc0 == 0, "the unflipped artifact must evaluate"
base = json.loads(base_out)
base_key = (base["nll"], base["tokens"])
side = {"detected": 0, "harmless": 0}
for name in ("config.json", "tokenizer.json", "submoe_manifest.json"):
    path = os.path.join(art, name)
    n = os.path.getsize(path)
    for _ in range(12):
        off, mask = rng.randrange(n), 1 << rng.randrange(8)
        flip(path, off, mask)
        try:
            rc, out, err = run(eval_args)
        finally:
            flip(path, off, mask)
        if rc in CLI_ERRORS and "submoe eval" in err:
            side["detected"] += 1
        elif rc == 0 and (json.loads(out)["nll"], json.loads(out)["tokens"]) == base_key:
            side["harmless"] += 1
        else:
            failures.append(f"{name} byte {off} mask {mask}: status {rc}, output changed or crashed: {err.strip()[:200]}")

failures += [f"an error message is not valid UTF-8: {g!r}" for g in garbled]
total = sum(v[0] for v in by_kind.values())
detected = sum(v[1] for v in by_kind.values())
kinds = ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in sorted(by_kind.items()))
print(f"{label}: model.safetensors flips detected {detected}/{total} ({kinds}); "
      f"side files: {side['detected']} detected, {side['harmless']} harmless (same eval output), "
      f"{len(failures)} failures")
for f in failures[:20]:
    print("FAIL", f)
sys.exit(1 if failures else 0)
