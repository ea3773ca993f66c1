#!/usr/bin/env python3
"""Writes the calibration and held-out texts of the default model into data/.

Same split as tools/train_default_model.py (val_fraction 0.03, cut at the last
newline before 97% of the characters of each corpus):
  data/heldout-war-and-peace.txt      the held-out tail of war_and_peace.txt
  data/heldout-tinyshakespeare.txt    the held-out tail of tinyshakespeare.txt
  data/calib-train-excerpt.txt        48 line-aligned chunks of ~3000 characters taken at
                                      evenly spaced offsets of each corpus' TRAINING part
                                      (never the held-out tails), concatenated
Deterministic; rewrites a file only when its content changes.
"""
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO.parent / "shared" / "corpora"
VAL_FRACTION = 0.03
CHUNKS, CHUNK_CHARS = 48, 3000


def split(text: str) -> tuple[str, str]:
    cut = int(len(text) * (1.0 - VAL_FRACTION))
    cut = text.rfind("\n", 0, cut) + 1 or cut
    return text[:cut], text[cut:]


def chunks(train: str) -> list[str]:
    out = []
    for i in range(CHUNKS):
        start = i * (len(train) - CHUNK_CHARS) // CHUNKS
        start = train.rfind("\n", 0, start) + 1
        end = train.find("\n", start + CHUNK_CHARS)
        out.append(train[start:end + 1 if end >= 0 else len(train)])
    return out


def write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    print(f"{path.relative_to(REPO)}: {len(text.encode())} bytes")


def main() -> None:
    calib = []
    for name, out in [("war_and_peace.txt", "heldout-war-and-peace.txt"),
                      ("tinyshakespeare.txt", "heldout-tinyshakespeare.txt")]:
        train, held = split((CORPORA / name).read_text(encoding="utf-8"))
        write(REPO / "data" / out, held)
        calib += chunks(train)
    write(REPO / "data" / "calib-train-excerpt.txt", "".join(calib))


if __name__ == "__main__":
    main()
