#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizers/o200k_split_goldens.json: how the regex
engine inside `tokenizers` (Oniguruma, Unicode 16) splits text with o200k's
pre-tokenizer pattern (GPT-OSS's tokenizer.json: Split(Regex, "isolated")),
for tests/io/tokenizer_unicode_test.cpp to compare submoe's hand-written
matcher with.

  .venv-tools/bin/python tools/make_regex_goldens.py

Cases: hand-picked ones, then random strings over a pool of every character
kind the pattern distinguishes (Lu, Ll, Lt, Lm, Lo, the three mark kinds,
digits and other numbers, whitespace with and without newlines, '/', the
apostrophe and the contraction letters in both cases, punctuation, symbols)."""
import json
import os
import random
import sys

from tokenizers import Regex
from tokenizers.pre_tokenizers import Split

O200K = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
         r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "tokenizers", "o200k_split_goldens.json")

POOL = ["A", "Z", "a", "z", "s", "S", "t", "T", "l", "L", "d", "D", "m", "M", "r", "R", "e", "E", "v", "V",
        "\u00c9", "\u00e9", "\u01c5", "\u1f88", "\u02b0", "\u3005", "\u65e5", "\u0627", "\u00aa",
        "\u0301", "\u0903", "\u20dd", "1", "9", "\u0661", "\u00b2", "\u2162",
        " ", " ", "\t", "\n", "\r", "\u00a0", "\u3000", "\u2028",
        "/", "'", "'", "\u017f", ".", ",", "!", "$", "-", "_", "\U0001F600", "\u200d", "\u2019"]
HAND = ["I'm   here,\n\n  aren't  YOU'LL 12345 ok?!", "hello\tworld\r\n\r\n  \nx", "'s'S'\u017f 'Re x'll",
        "price: $1,234.56...  \u00a0\u3000end", "NASA's GPT-OSS /path/to/file abc/\nfooBAR 123",
        "\u01c5ungla \u1f88\u03b4\u03b7\u03c2 \u02b0ello", "a\u0301b \u200dc\u2028d", "   ", "x  \n", "",
        "HTTPServer's JSONParser", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0661\u0662\u0663\u0664",
        "//a//\n/\r\n", "\u0301\u0301A", " \u0301a", "CamelCaseWORDSAnd's"]


def split(pre, text):
    return [piece for piece, _ in pre.pre_tokenize_str(text)]


def main():
    pre = Split(Regex(O200K), behavior="isolated")
    rng = random.Random(20261206)
    texts = list(HAND)
    for _ in range(4000):
        texts.append("".join(rng.choice(POOL) for _ in range(rng.randrange(1, 20))))
    cases = []
    for t in texts:
        pieces = split(pre, t)
        assert "".join(pieces) == t, t
        cases.append({"text": t, "pieces": pieces})
    import tokenizers
    out = {"generator": "tools/make_regex_goldens.py, tokenizers " + tokenizers.__version__, "pattern": O200K,
           "cases": cases}
    tmp = OUT + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, separators=(",", ":"))
    os.replace(tmp, OUT)
    print("wrote %s: %d cases" % (OUT, len(cases)), file=sys.stderr)


if __name__ == "__main__":
    main()
