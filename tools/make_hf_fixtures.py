#!/usr/bin/env python3
"""Build the Hugging Face parity fixtures for submoe's C++ tests (tests/fixtures/).

For each architecture (mixtral, qwen2_moe, qwen3_moe, olmoe, deepseek_v3 in two variants) this
builds a tiny, seeded,
float32 random checkpoint with transformers' own classes, saves it with save_pretrained
together with a small real tokenizer, and records golden outputs computed by transformers
(eager attention, fp32): prompt ids, full-prefill logits, per-layer hidden states, router
logits, chosen experts + routing weights, and an 8-token greedy generation with the KV cache
(ids + logits of every step). It also writes tokenizer goldens (tests/fixtures/tokenizers/)
for three tokenizer styles over >= 200 varied strings, and config.v5.json files with the
transformers v5 key spellings.

Everything is deterministic given --seed. Finally every fixture is reloaded from disk with
AutoModelForCausalLM / AutoTokenizer and the recorded numbers are checked to reproduce.
See tests/fixtures/README.md for the file layout.

Usage (from the repository root, with the tools venv from tools/setup_python_env.sh):
  .venv-tools/bin/python tools/make_hf_fixtures.py            # build + verify all
  .venv-tools/bin/python tools/make_hf_fixtures.py --verify-only
  .venv-tools/bin/python tools/make_hf_fixtures.py --only qwen3_moe
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import shutil
import sys
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"  # ../shared relative to the repository root
CORPORA = SHARED / "corpora"
DEFAULT_OUT = REPO / "tests" / "fixtures"

N_GENERATE = 8
SIZE_LIMIT_BYTES = 7 * 1024 * 1024  # all model fixtures together

PROMPTS = [
    "The quick brown fox jumps.",
    "Natasha said: \u201cWell?\u201d\nHe smiled.",
    "In 1812 \u2014 caf\u00e9 \u6771\u4eac \U0001F600!",
]

# Minimum gaps that make the goldens robust against fp32 rounding differences in another
# implementation: routing (k-th vs (k+1)-th softmax probability) and greedy decoding
# (top-1 vs top-2 logit). A seed whose goldens fall below them is skipped.
MIN_ROUTING_GAP = 1e-4
MIN_GREEDY_GAP = 1e-3

QWEN2_SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                     r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


# GPT-OSS's tokenizer.json (tiktoken's o200k pattern).
O200K_SPLIT_REGEX = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
                     r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
                     r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|"
                     r"\s*[\r\n]+|\s+(?!\S)|\s+")


def die(msg: str) -> "NoReturn":  # type: ignore[name-defined]
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def log(msg: str) -> None:
    print(msg, flush=True)


def to_json(obj, indent: int = 1, _level: int = 0) -> str:
    """JSON with dicts indented but lists of scalars (and lists of such lists) on one line."""
    pad = " " * (indent * (_level + 1))
    end = " " * (indent * _level)

    def flat(o) -> bool:
        return not isinstance(o, (dict, list)) or (
            isinstance(o, list) and all(flat(x) and not isinstance(x, dict) for x in o))

    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad}{json.dumps(str(k), ensure_ascii=False)}: {to_json(v, indent, _level + 1)}"
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    if isinstance(obj, list) and not flat(obj):
        items = [pad + to_json(v, indent, _level + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + end + "]"
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


# ========================================================================================
# tokenizers

# vocab sizes: "large" for the tokenizer goldens (tests/fixtures/tokenizers/), "small" for the
# tokenizers shipped with the model fixtures (keeps embeddings and logits goldens small).
TOKENIZER_STYLES = {
    # GPT-2 / GPT-NeoX (OLMoE) style: ByteLevel pre-tokenizer with the GPT-2 split regex.
    "gpt2_bytelevel": dict(large=1024, small=330, alphabet=None),
    # Qwen2 / Qwen3 style: NFC normalizer, Split(Qwen2 regex) + ByteLevel(use_regex=false).
    "qwen2_bytelevel": dict(large=1024, small=340, alphabet=None),
    # Llama / Mistral / Mixtral (SentencePiece converted) style: Prepend+Replace("▁") normalizer,
    # BPE with byte_fallback, <unk>/<s>/</s>, <0x00>..<0xFF>, BOS added by the post-processor.
    "llama_sp_bpe": dict(large=1024, small=400, alphabet=(100, 60)),
    # GPT-OSS (o200k_harmony) style: no normalizer, Split(o200k regex) + ByteLevel(use_regex=false).
    "o200k_bytelevel": dict(large=1024, small=340, alphabet=None),
}
TOKENIZER_TRAIN_BYTES = 300_000


def training_text(nbytes: int) -> list[str]:
    """Deterministic slice of the corpora used to train the fixture tokenizers."""
    parts = []
    for name, frac in (("war_and_peace.txt", 0.6), ("tinyshakespeare.txt", 0.4)):
        p = CORPORA / name
        if not p.is_file():
            die(f"corpus {p} not found (expected ../shared/corpora relative to the repo root)")
        t = p.read_text(encoding="utf-8")
        start = len(t) // 3  # skip front matter
        parts.append(t[start:start + int(nbytes * frac)])
    text = "\n".join(parts)
    return [text[i:i + 2000] for i in range(0, len(text), 2000)]


def build_tokenizer(style: str, size: str):
    """Returns (tokenizers.Tokenizer, hf_kwargs) for a style; size is "large" or "small"."""
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, processors, trainers)
    spec = TOKENIZER_STYLES[style]
    vocab_size = spec[size]
    texts = training_text(TOKENIZER_TRAIN_BYTES)

    if style == "gpt2_bytelevel":
        specials = ["<|endoftext|>", "<|padding|>"]
        tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2,
                                      show_progress=False, special_tokens=specials,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(texts, trainer=trainer)
        # a non-special added token, like GPT-NeoX/OLMoE's |||EMAIL_ADDRESS|||
        tok.add_tokens([AddedToken("|||EMAIL|||", special=False, normalized=True)])
        hf = dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token="<|padding|>",
                  unk_token=None)
        return tok, hf

    if style == "qwen2_bytelevel":
        tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_SPLIT_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2,
                                      show_progress=False, special_tokens=[],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(texts, trainer=trainer)
        # specials appended after the BPE vocab, as in Qwen (<|endoftext|> = first added id)
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t in ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]])
        hf = dict(bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                  unk_token=None)
        return tok, hf

    if style == "o200k_bytelevel":
        tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(O200K_SPLIT_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ])
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2,
                                      show_progress=False, special_tokens=[],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(texts, trainer=trainer)
        # the harmony format's control tokens, appended after the BPE vocab as in GPT-OSS
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t in ["<|startoftext|>", "<|endoftext|>", "<|start|>", "<|end|>",
                                          "<|message|>", "<|channel|>", "<|return|>"]])
        hf = dict(bos_token="<|startoftext|>", eos_token="<|return|>", pad_token="<|endoftext|>",
                  unk_token=None)
        return tok, hf

    if style == "llama_sp_bpe":
        # Train with a Metaspace pre-tokenizer (pieces never cross a "▁" word start), then
        # rebuild in the exact layout of Llama/Mixtral's tokenizer.json.
        base_specials = ["<unk>", "<s>", "</s>"]
        byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
        t0 = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
        t0.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always",
                                                    split=True)
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2,
                                      show_progress=False,
                                      special_tokens=base_specials + byte_tokens,
                                      limit_alphabet=spec["alphabet"][size == "small"])
        t0.train_from_iterator(texts, trainer=trainer)
        mj = json.loads(t0.to_str())["model"]
        vocab = mj["vocab"]
        merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in mj["merges"]]
        for i, t in enumerate(base_specials + byte_tokens):
            assert vocab[t] == i, (t, vocab[t])
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True,
                                   byte_fallback=True, dropout=None))
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                               normalizers.Replace(" ", "\u2581")])
        tok.pre_tokenizer = None
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t in base_specials])
        tok.post_processor = processors.TemplateProcessing(
            single="<s>:0 $A:0", pair="<s>:0 $A:0 <s>:1 $B:1",
            special_tokens=[("<s>", 1)])
        # extra control tokens appended after the vocab (Mistral-style [INST] tokens)
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t in ["[INST]", "[/INST]"]])
        hf = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token=None,
                  add_bos_token=True, add_eos_token=False)
        return tok, hf

    raise ValueError(style)


def save_tokenizer(tok, hf_kwargs: dict, out_dir: Path, model_max_length: int = 4096):
    from transformers import PreTrainedTokenizerFast
    kw = {k: v for k, v in hf_kwargs.items() if k not in ("add_bos_token", "add_eos_token")}
    extra = [t.content for t in tok.get_added_tokens_decoder().values()
             if t.special and t.content not in {v for v in kw.values() if v}]
    fast = PreTrainedTokenizerFast(tokenizer_object=copy.deepcopy(tok), model_max_length=model_max_length,
                                   clean_up_tokenization_spaces=False,
                                   additional_special_tokens=extra or None, **kw)
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out_dir)
    # record add_bos/add_eos like Llama's tokenizer_config.json (informational for C++)
    cfg_path = out_dir / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    if "add_bos_token" in hf_kwargs:
        cfg["add_bos_token"] = hf_kwargs["add_bos_token"]
        cfg["add_eos_token"] = hf_kwargs["add_eos_token"]
        cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")
    return fast


def tokenizer_test_strings(style: str) -> list[str]:
    """>= 200 varied strings; special-token placeholders filled per style."""
    sp = {
        "gpt2_bytelevel": dict(BOS="<|endoftext|>", EOS="<|endoftext|>", X="<|padding|>",
                               Y="|||EMAIL|||"),
        "qwen2_bytelevel": dict(BOS="<|im_start|>", EOS="<|im_end|>", X="<|endoftext|>",
                                Y="<|im_start|>"),
        "llama_sp_bpe": dict(BOS="<s>", EOS="</s>", X="[INST]", Y="[/INST]"),
        "o200k_bytelevel": dict(BOS="<|start|>", EOS="<|end|>", X="<|message|>", Y="<|channel|>"),
    }[style]
    base = [
        "", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n ", "\t\t\n", "\r",
        "Hello world", " Hello world", "Hello world ", "Hello  world", "Hello\tworld",
        "Hello\nworld", "Hello\r\nworld", "   leading spaces", "trailing spaces   ",
        "  both  ", "a", "A", " a", "a ", "I", "ab", "abc",
        "line1\nline2\n\nline4\n", "para one.\n\n\npara two.", "col1\tcol2\tcol3\n1\t2\t3",
        "don't", "I'm", "they'll", "WE'VE", "It's", "you'd", "She'S", "rock'n'roll",
        "'quoted'", "\"double\"", "O'Brien's",
        "0", "7", "42", "12345", "3.14159", "-273.15", "1,000,000", "1e-10", "2024-01-15",
        "12:34:56", "123456789012345678901234567890", "0x1F", "+1 (555) 123-4567",
        "v1.2.3", "100%", "$19.99", "\u20ac5", "\u00bd", "\u2460\u2461\u2462", "\u0661\u0662\u0663",
        "caf\u00e9", "cafe\u0301", "na\u00efve", "r\u00e9sum\u00e9", "Stra\u00dfe",
        "\u00dcn\u00efc\u00f6d\u00e9", "\u00f1and\u00fa", "\u00c5ngstr\u00f6m", "\u212b",
        "\ufb01nance", "\u0130stanbul", "\u01c4", "\u1e9b\u0323",
        "\u4f60\u597d\uff0c\u4e16\u754c", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
        "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8", "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
        "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd", "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
        "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
        "\u0928\u092e\u0938\u094d\u0924\u0947", "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0",
        "English \u0627\u0644\u0639\u0631\u0628\u064a\u0629 mixed", "\u202eRTL override\u202c",
        "\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
        "\U0001F3F3\ufe0f\u200d\U0001F308", "\U0001F1FA\U0001F1F8\U0001F1EF\U0001F1F5", "\u2764\ufe0f",
        "1\ufe0f\u20e3", "I \u2764\ufe0f NY \U0001F5FD", "\U0001F600\U0001F600\U0001F600",
        "\U0001D400\U0001D401", "\U00010348", "\u2211\u222b\u221a\u221e \u2264 \u2260",
        "\u2192 \u2190 \u21d2", "\u00a9\u00ae\u2122", "zero\u200bwidth", "\ufeffBOM", "non\u00a0breaking",
        "ideographic\u3000space", "soft\u00adhyphen", "bell\x07char", "nul\x00char",
        "\x1b[31mred\x1b[0m", "\u2028line sep", "\u00b7\u2022\u2026",
        "!!!", "...", "?!", "\u00abguillemets\u00bb", "\u201ccurly\u201d \u2018single\u2019",
        "em\u2014dash en\u2013dash", "a,b;c:d", "(parens) [brackets] {braces}", "<angle>",
        "#hashtag @user", "C++ && C# || F#", "snake_case camelCase PascalCase kebab-case",
        "def f(x):\n    return x ** 2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
        "<html><body class=\"x\">hi</body></html>", "https://example.com/path?q=1&r=%20",
        "user.name+tag@example.org", "C:\\Windows\\System32", "~/.config/app.json",
        "{\"key\": [1, 2.5, null, true]}", "SELECT * FROM t WHERE a = 'b';",
        "    indented four", "\t\ttabbed", "mixed \t whitespace \n\t runs",
        " " * 50, "\n" * 20, "\t" * 9, " \u00a0 \u3000 ", "a" + " " * 17 + "b",
        "a" * 500, "ab" * 150, "supercalifragilisticexpialidocious",
        "antidisestablishmentarianism" * 3, "9" * 300, "1234567890" * 12,
        "Pneumonoultramicroscopicsilicovolcanoconiosis", "x" * 1000,
        "\u00e9" * 64, "\u4e2d" * 100, "\U0001F600" * 40,
        # special tokens inside text
        "{BOS}", "{EOS}", "{X}", "{Y}", "Hello{EOS}world", "Hello {EOS} world",
        "{BOS}Hello world{EOS}", "{X}{X}{X}", "a{Y}b", " {BOS} ", "\n{EOS}\n",
        "{BOS}user\nWhat is 2+2?{EOS}\n{BOS}assistant\n4{EOS}", "text{X}",
        "<|endoftext", "<|im_start|", "<s", "</s", "[INST", "<unk>", "<pad>", "<|padding|>",
        "<0x41>", "\u2581", "\u2581\u2581leading meta", "\u0120G", "\u010a",
    ]
    base = [s.replace("{BOS}", sp["BOS"]).replace("{EOS}", sp["EOS"])
            .replace("{X}", sp["X"]).replace("{Y}", sp["Y"]) for s in base]
    # corpus-derived lines (deterministic positions)
    extra = []
    for name, n in (("war_and_peace.txt", 30), ("tinyshakespeare.txt", 20)):
        lines = [l for l in (CORPORA / name).read_text(encoding="utf-8").splitlines() if l.strip()]
        step = len(lines) // n
        extra += [lines[i * step + 7] for i in range(n)]
    wt = CORPORA / "wikitext-2" / "valid.txt"
    if wt.is_file():
        lines = [l for l in wt.read_text(encoding="utf-8").splitlines() if len(l.strip()) > 20]
        step = len(lines) // 15
        extra += [lines[i * step + 3][:400] for i in range(15)]
    # multi-line chunks
    wp = (CORPORA / "war_and_peace.txt").read_text(encoding="utf-8")
    extra += [wp[200_000 + i * 37_000: 200_000 + i * 37_000 + 300] for i in range(10)]
    out = base + extra
    # de-duplicate, keep order
    seen, res = set(), []
    for s in out:
        if s not in seen:
            seen.add(s)
            res.append(s)
    return res


def make_tokenizer_goldens(out_root: Path, versions: dict, styles=None) -> None:
    """Train the tokenizer styles (all, or `styles`), save them and their encode/decode goldens."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer
    for style in styles or TOKENIZER_STYLES:
        tok, hf = build_tokenizer(style, "large")
        d = out_root / "tokenizers" / style
        if d.exists():
            shutil.rmtree(d)
        save_tokenizer(tok, hf, d)
        hf_tok = AutoTokenizer.from_pretrained(d)
        raw = Tokenizer.from_file(str(d / "tokenizer.json"))
        cases = []
        for s in tokenizer_test_strings(style):
            with_sp = hf_tok(s, add_special_tokens=True)["input_ids"]
            no_sp = hf_tok(s, add_special_tokens=False)["input_ids"]
            r_with = raw.encode(s, add_special_tokens=True).ids
            r_no = raw.encode(s, add_special_tokens=False).ids
            if with_sp != r_with or no_sp != r_no:
                die(f"{style}: transformers and tokenizers disagree on {s!r}")
            dec = hf_tok.decode(with_sp, skip_special_tokens=False)
            dec_skip = hf_tok.decode(with_sp, skip_special_tokens=True)
            dec_no = hf_tok.decode(no_sp, skip_special_tokens=False)
            if dec != raw.decode(r_with, skip_special_tokens=False):
                die(f"{style}: decode mismatch on {s!r}")
            cases.append({
                "text": s,
                "ids": with_sp,
                "ids_no_special": no_sp,
                "decoded": dec,
                "decoded_skip_special": dec_skip,
                "decoded_no_special": dec_no,
                "roundtrip_exact": dec_no == s,
            })
        if len(cases) < 200:
            die(f"{style}: only {len(cases)} test strings")
        if style == "llama_sp_bpe":
            check_llama_equivalence(tok, [c["text"] for c in cases])
        meta = {
            "style": style,
            "description": TOKENIZER_DESCRIPTIONS[style],
            "vocab_size": raw.get_vocab_size(with_added_tokens=True),
            "special_tokens": {t.content: i for i, t in
                               raw.get_added_tokens_decoder().items() if t.special},
            "added_tokens_non_special": {t.content: i for i, t in
                                         raw.get_added_tokens_decoder().items() if not t.special},
            "bos_token": hf.get("bos_token"), "eos_token": hf.get("eos_token"),
            "versions": versions,
            "num_cases": len(cases),
            "cases": cases,
        }
        (d / "cases.json").write_text(to_json(meta) + "\n",
                                      encoding="utf-8")
        n_rt = sum(c["roundtrip_exact"] for c in cases)
        log(f"tokenizer {style}: vocab {meta['vocab_size']}, {len(cases)} cases "
            f"({n_rt} exact round trips)")


TOKENIZER_DESCRIPTIONS = {
    "gpt2_bytelevel": "byte-level BPE, GPT-2 split regex inside the ByteLevel pre-tokenizer "
                      "(use_regex=true), no normalizer, no prefix space; special tokens first in "
                      "the vocab; one non-special added token; no BOS/EOS added (ids == "
                      "ids_no_special). Used by the olmoe fixture.",
    "qwen2_bytelevel": "byte-level BPE as Qwen2/Qwen3: NFC normalizer, Split(Qwen2 regex, "
                       "isolated) then ByteLevel(use_regex=false); special tokens appended after "
                       "the BPE vocab; nothing added at encode time (ids == ids_no_special). Used "
                       "by the qwen2_moe and qwen3_moe fixtures.",
    "llama_sp_bpe": "SentencePiece-style BPE as Llama/Mistral/Mixtral tokenizer.json: normalizer "
                    "Prepend('\u2581') + Replace(' ', '\u2581'), no pre-tokenizer, BPE with "
                    "byte_fallback and fuse_unk, vocab 0..2 = <unk> <s> </s>, 3..258 = <0x00>.."
                    "<0xFF>; decoder Replace/ByteFallback/Fuse/Strip; post-processor adds <s> "
                    "(ids = [1] + ids_no_special). Used by the mixtral fixture.",
    "o200k_bytelevel": "byte-level BPE as GPT-OSS (o200k_harmony): no normalizer, Split(o200k regex, "
                       "isolated: CamelCase-aware letter runs, digits in threes, '/' kept with "
                       "punctuation) then ByteLevel(use_regex=false); the harmony control tokens "
                       "appended after the BPE vocab; nothing added at encode time.",
}


def check_llama_equivalence(tok, texts: list[str]) -> None:
    """The Metaspace-split training form and the saved normalizer form must agree."""
    from tokenizers import pre_tokenizers
    from tokenizers import Tokenizer
    t2 = Tokenizer.from_str(tok.to_str())
    t2.normalizer = None
    t2.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                split=True)
    bad = 0
    for s in texts:
        if "<" in s or "[" in s or "\u2581" in s:
            continue  # specials / literal metaspace interact differently; not a BPE question
        a = tok.encode(s, add_special_tokens=False).ids
        b = t2.encode(s, add_special_tokens=False).ids
        bad += a != b
    if bad:
        log(f"  note: llama_sp_bpe: {bad} strings tokenize differently with split Metaspace "
            f"(expected only for whitespace runs)")


# ========================================================================================
# model fixtures

def fixture_specs(tok_sizes: dict) -> dict:
    """name -> (tokenizer style, model class name, config kwargs)."""
    return {
        "mixtral": ("llama_sp_bpe", "MixtralForCausalLM", dict(
            vocab_size=tok_sizes["llama_sp_bpe"],
            hidden_size=64, intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=24,  # head_dim != H/nH
            num_local_experts=4, num_experts_per_tok=2,
            max_position_embeddings=512, rope_theta=500000.0,
            rope_scaling={"rope_type": "linear", "factor": 2.0},
            rms_norm_eps=1e-5, sliding_window=None, tie_word_embeddings=False,
            bos_token_id=1, eos_token_id=2, pad_token_id=None)),
        "qwen2_moe": ("qwen2_bytelevel", "Qwen2MoeForCausalLM", dict(
            vocab_size=tok_sizes["qwen2_bytelevel"],
            hidden_size=64, intermediate_size=64, moe_intermediate_size=16,
            shared_expert_intermediate_size=32, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2,
            num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
            decoder_sparse_step=1, mlp_only_layers=[1],  # layer 1 is a dense MLP
            max_position_embeddings=512, rope_theta=250000.0, rms_norm_eps=1e-6,
            use_sliding_window=False, tie_word_embeddings=False,
            bos_token_id=None, eos_token_id=None, pad_token_id=None)),
        "qwen3_moe": ("qwen2_bytelevel", "Qwen3MoeForCausalLM", dict(
            vocab_size=tok_sizes["qwen2_bytelevel"],
            hidden_size=64, intermediate_size=64, moe_intermediate_size=16,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=32,  # != H/nH, as Qwen3-30B-A3B
            num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
            decoder_sparse_step=1, mlp_only_layers=[],
            max_position_embeddings=256, rope_theta=50000.0,
            rope_scaling={"rope_type": "yarn", "factor": 4.0,
                          "original_max_position_embeddings": 64},
            rms_norm_eps=1e-6, attention_bias=False, use_sliding_window=False,
            tie_word_embeddings=True,
            bos_token_id=None, eos_token_id=None, pad_token_id=None)),
        "olmoe": ("gpt2_bytelevel", "OlmoeForCausalLM", dict(
            # config vocab padded beyond the tokenizer (like OLMoE's 50304 > 50280)
            vocab_size=((tok_sizes["gpt2_bytelevel"] + 63) // 64) * 64,
            hidden_size=64, intermediate_size=16, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2,
            num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
            clip_qkv=0.5, max_position_embeddings=512, rope_theta=20000.0,
            rms_norm_eps=1e-5, attention_bias=False, tie_word_embeddings=False,
            bos_token_id=None, eos_token_id=None, pad_token_id=None)),
        # DeepSeek-V3: MLA with q LoRA, first layer dense, sigmoid + bias-corrected
        # group-limited routing (4 groups of 2, keep 2), shared expert, interleaved YaRN RoPE
        # with mscale != mscale_all_dim (cos/sin scaled by attention_scaling != 1, softmax
        # scale times mscale(factor, mscale_all_dim)^2).
        "deepseek_v3": ("qwen2_bytelevel", "DeepseekV3ForCausalLM", dict(
            vocab_size=tok_sizes["qwen2_bytelevel"],
            hidden_size=64, intermediate_size=64, moe_intermediate_size=16,
            num_hidden_layers=3, first_k_dense_replace=1,
            num_attention_heads=4, num_key_value_heads=4,
            q_lora_rank=32, kv_lora_rank=32,
            qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
            n_routed_experts=8, n_group=4, topk_group=2, num_experts_per_tok=2,
            n_shared_experts=1, routed_scaling_factor=2.5, norm_topk_prob=True,
            max_position_embeddings=256, rope_theta=10000.0, rope_interleave=True,
            rope_scaling={"rope_type": "yarn", "factor": 4.0,
                          "original_max_position_embeddings": 64,
                          "beta_fast": 32.0, "beta_slow": 1.0,
                          "mscale": 0.9, "mscale_all_dim": 1.0},
            rms_norm_eps=1e-6, attention_bias=False, tie_word_embeddings=False,
            bos_token_id=None, eos_token_id=None, pad_token_id=None)),
        # DeepSeek-V3 variant: plain q_proj (q_lora_rank null), one group (no group masking),
        # default non-interleaved RoPE, no renormalisation, all layers MoE, 2 shared experts.
        "deepseek_v3_plain_q": ("qwen2_bytelevel", "DeepseekV3ForCausalLM", dict(
            vocab_size=tok_sizes["qwen2_bytelevel"],
            hidden_size=64, intermediate_size=64, moe_intermediate_size=16,
            num_hidden_layers=2, first_k_dense_replace=0,
            num_attention_heads=4, num_key_value_heads=4,
            q_lora_rank=None, kv_lora_rank=32,
            qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
            n_routed_experts=8, n_group=1, topk_group=1, num_experts_per_tok=3,
            n_shared_experts=2, routed_scaling_factor=1.5, norm_topk_prob=False,
            max_position_embeddings=512, rope_theta=10000.0, rope_interleave=False,
            rope_scaling=None,
            rms_norm_eps=1e-6, attention_bias=False, tie_word_embeddings=False,
            bos_token_id=None, eos_token_id=None, pad_token_id=None)),
        # GPT-OSS: fused transposed experts with interleaved gate/up and biases, the clamped
        # SwiGLU (random experts scaled so that the clamps at 7 bind), top-4 then softmax over
        # the router's biased logits, attention sinks, alternating sliding (window 4, so it
        # binds within the prompts) and full layers, YaRN with truncate=false, head_dim != H/nH.
        "gpt_oss": ("qwen2_bytelevel", "GptOssForCausalLM", dict(
            vocab_size=tok_sizes["qwen2_bytelevel"],
            hidden_size=64, intermediate_size=16, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2, head_dim=24,
            num_local_experts=8, num_experts_per_tok=4, sliding_window=4,
            max_position_embeddings=256, rope_theta=150000.0,
            rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                          "truncate": False, "original_max_position_embeddings": 64},
            rms_norm_eps=1e-5, tie_word_embeddings=False,
            bos_token_id=None, eos_token_id=None, pad_token_id=None)),
        # GPT-OSS as the hub ships it: experts in MXFP4 (`*_blocks` / `*_scales`, quantization_config
        # quant_method "mxfp4"). Expert width 32 (MXFP4 blocks down_proj's rows by 32), 2 layers,
        # full/sliding alternation starting with full. The goldens are transformers' run of the
        # checkpoint as loaded from disk (on a CPU it dequantizes MXFP4 itself).
        "gpt_oss_mxfp4": ("qwen2_bytelevel", "GptOssForCausalLM", dict(
            vocab_size=tok_sizes["qwen2_bytelevel"],
            hidden_size=64, intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            num_local_experts=8, num_experts_per_tok=2, sliding_window=6,
            layer_types=["full_attention", "sliding_attention"],
            max_position_embeddings=256, rope_theta=150000.0,
            rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                          "truncate": False, "original_max_position_embeddings": 64},
            rms_norm_eps=1e-5, tie_word_embeddings=False,
            bos_token_id=None, eos_token_id=None, pad_token_id=None)),
    }


MXFP4_FIXTURES = {"gpt_oss_mxfp4"}
FP4_VALUES = [+0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_quantize(w):
    """OCP MXFP4 of w [..., rows, cols] along cols (cols % 32 == 0): scale 2^(floor(log2 amax) - 2)
    per 32 values (E8M0 code, clamped to [0, 252]), codes by round-to-nearest (ties to the even
    code) saturating at 6. Returns (blocks [..., rows, cols/32, 16] u8, scales [..., rows, cols/32]
    u8, dequantized w)."""
    import torch
    *lead, rows, cols = w.shape
    g = w.detach().double().reshape(*lead, rows, cols // 32, 32)
    amax = g.abs().amax(dim=-1)
    e = torch.floor(torch.log2(torch.where(amax > 0, amax, torch.ones_like(amax)))) - 2
    s = torch.where(amax > 0, e + 127, torch.zeros_like(e)).clamp(0, 252)
    scale = torch.pow(2.0, s - 127).unsqueeze(-1)
    grid = torch.tensor(FP4_VALUES[:8], dtype=torch.float64)
    a = (g.abs() / scale).unsqueeze(-1)
    dist = (a - grid).abs()
    # nearest; on a tie the even code (grid index) wins: penalise odd indices by a hair
    dist = dist + torch.tensor([0.0, 1e-12] * 4, dtype=torch.float64)
    code = dist.argmin(dim=-1)
    code = torch.where((g < 0) & (code > 0), code + 8, code).to(torch.uint8)
    deq = torch.tensor(FP4_VALUES, dtype=torch.float64)[code.long()] * scale
    c = code.reshape(*lead, rows, cols // 32, 16, 2)
    blocks = (c[..., 0] | (c[..., 1] << 4)).to(torch.uint8)
    return blocks, s.to(torch.uint8), deq.reshape(w.shape).to(w.dtype)


def mxfp4_experts_(model) -> dict:
    """Replaces every GPT-OSS expert matrix by its MXFP4 round trip (in place) and returns the
    hub tensors: experts.{gate_up_proj,down_proj}_{blocks,scales} per layer."""
    import torch
    hub = {}
    with torch.no_grad():
        for li, layer in enumerate(model.model.layers):
            ex = layer.mlp.experts
            for name in ("gate_up_proj", "down_proj"):
                p = getattr(ex, name)  # [E, in, out] for x @ W; the hub blocks the Linear [E, out, in]
                blocks, scales, deq = mxfp4_quantize(p.transpose(1, 2))
                p.copy_(deq.transpose(1, 2))
                pre = f"model.layers.{li}.mlp.experts.{name}"
                hub[pre + "_blocks"] = blocks.contiguous()
                hub[pre + "_scales"] = scales.contiguous()
    return hub


def randomize_(model, seed: int) -> None:
    """Deterministic, well-conditioned random weights (replaces HF's init).

    Linear weights ~ N(0, 1/fan_in); embeddings ~ N(0, 1); router gates ~ N(0, 4/fan_in)
    (decisive routing); RMSNorm weights ~ U(0.5, 1.5) (so a missing norm weight is caught);
    biases ~ N(0, 0.1^2). DeepSeek-V3's `e_score_correction_bias` buffers (zeros in HF) ~
    N(0, 0.1^2), drawn after all parameters (so models without them are unaffected).
    """
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif name.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            elif "embed_tokens" in name:
                tied = bool(getattr(model.config, "tie_word_embeddings", False))
                p.copy_(torch.randn(p.shape, generator=g) * (0.25 if tied else 1.0))
            elif p.ndim == 2:
                std = 1.0 / math.sqrt(p.shape[1])
                if (name.endswith("mlp.gate.weight") or name.endswith("block_sparse_moe.gate.weight")
                        or name.endswith("mlp.router.weight")):
                    std *= 2.0
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif name.endswith("experts.gate_up_proj"):  # GPT-OSS [E, H, 2I]: clamps at 7 bind
                p.copy_(torch.randn(p.shape, generator=g) * (4.0 / math.sqrt(p.shape[1])))
            elif name.endswith("experts.down_proj"):  # GPT-OSS [E, I, H]
                p.copy_(torch.randn(p.shape, generator=g) * (0.25 / math.sqrt(p.shape[1])))
            elif name.endswith("self_attn.sinks"):  # GPT-OSS: sinks that take real mass
                p.copy_(torch.randn(p.shape, generator=g) * 2.0)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
        for name, b in sorted(model.named_buffers(), key=lambda kv: kv[0]):
            if name.endswith("e_score_correction_bias"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)


def moe_gate_modules(model) -> dict[int, object]:
    """layer index -> router Linear (only MoE layers)."""
    res = {}
    for i, layer in enumerate(model.model.layers):
        moe = getattr(layer, "block_sparse_moe", None) or getattr(layer, "mlp", None)
        gate = getattr(moe, "gate", None) or getattr(moe, "router", None)
        if gate is not None and hasattr(moe, "experts"):
            res[i] = gate
    return res


def is_deepseek(cfg) -> bool:
    return cfg.model_type == "deepseek_v3"


def is_gpt_oss(cfg) -> bool:
    return cfg.model_type == "gpt_oss"


def routing_rule(cfg) -> tuple[int, bool]:
    k = cfg.num_experts_per_tok
    # GPT-OSS: softmax over the k chosen logits, i.e. weights that sum to 1
    norm = True if cfg.model_type in ("mixtral", "gpt_oss") else bool(cfg.norm_topk_prob)
    return k, norm


def run_forward(model, ids, past=None):
    """One forward pass recording embeddings/layer outputs/final norm and router logits."""
    import torch
    rec: dict = {"layers": {}, "router": {}, "router_out": {}}
    hooks = []
    hooks.append(model.model.embed_tokens.register_forward_hook(
        lambda m, i, o: rec.__setitem__("embed", o.detach().clone())))
    for li, layer in enumerate(model.model.layers):
        def lh(m, i, o, li=li):
            h = o[0] if isinstance(o, tuple) else o
            rec["layers"][li] = h.detach().clone()
        hooks.append(layer.register_forward_hook(lh))
    hooks.append(model.model.norm.register_forward_hook(
        lambda m, i, o: rec.__setitem__("final_norm", o.detach().clone())))
    for li, gate in moe_gate_modules(model).items():
        def gh(m, i, o, li=li):
            if isinstance(o, tuple) and getattr(m, "bias", None) is not None:
                # GptOssTopKRouter returns (scores [N, E], indices [N, k]); logits = x W^T + b
                x = i[0].reshape(-1, m.weight.shape[1])
                rec["router"][li] = torch.nn.functional.linear(x, m.weight, m.bias).detach().clone()
                rec["router_out"][li] = (o[1].detach().clone(), o[0].detach().clone())
            elif isinstance(o, tuple):
                # DeepseekV3TopkRouter returns (topk_indices, topk_weights); its raw logits are
                # recomputed from its input exactly as its forward does (fp32 F.linear)
                x = i[0].reshape(-1, m.weight.shape[1])
                rec["router"][li] = torch.nn.functional.linear(
                    x.type(torch.float32), m.weight.type(torch.float32)).detach().clone()
                rec["router_out"][li] = (o[0].detach().clone(), o[1].detach().clone())
            else:
                rec["router"][li] = o.detach().clone()
        hooks.append(gate.register_forward_hook(gh))
    try:
        with torch.no_grad():
            out = model(input_ids=ids, past_key_values=past, use_cache=True)
    finally:
        for h in hooks:
            h.remove()
    rec["logits"] = out.logits.detach().clone()
    rec["past"] = out.past_key_values
    return rec


def routes_from_logits(router_logits, k: int, norm: bool):
    """HF's routing rule: softmax fp32 -> top-k -> optional renormalisation."""
    import torch
    p = torch.softmax(router_logits.float(), dim=-1)
    w, idx = torch.topk(p, k, dim=-1)
    if norm:
        w = w / w.sum(dim=-1, keepdim=True)
    sp = torch.sort(p, dim=-1, descending=True).values
    gap = (sp[..., k - 1] - sp[..., k]) if p.shape[-1] > k else torch.full_like(sp[..., 0], 1.0)
    return idx, w, gap


def routes_deepseek(router_logits, bias, cfg, hooked):
    """DeepSeek-V3's router (transformers DeepseekV3TopkRouter), re-implemented and checked
    against the values the module really returned (`hooked` = (topk_indices, topk_weights)).

    s = sigmoid(logits) (fp32); sb = s + e_score_correction_bias (selection only);
    group score = sum of the top-2 sb in each of n_group contiguous groups; keep the topk_group
    best groups; sb of the other groups' experts set to 0.0 (HF quirk: not -inf); experts =
    top-k of that; weights = s of those experts, / (sum + 1e-20) iff norm_topk_prob, then
    * routed_scaling_factor.

    Returns (idx [N,k] sorted by descending masked biased score, weights [N,k] = the hooked
    weights in that order, gap [N], margins dict of [N] tensors):
      group: gap between the topk_group-th and (topk_group+1)-th group score (n_group >
             topk_group only), selection: gap between the k-th and (k+1)-th masked biased
             score, chosen_min: k-th masked biased score (must stay above the 0.0 of masked
             experts when groups are masked). gap = min of those that apply.
    """
    import torch
    E, G, kg = cfg.n_routed_experts, cfg.n_group, cfg.topk_group
    k = cfg.num_experts_per_tok
    lg = router_logits.float()
    s = lg.sigmoid()
    sb = s + bias.float().unsqueeze(0)
    gscore = sb.view(-1, G, E // G).topk(2, dim=-1)[0].sum(dim=-1)
    gidx = torch.topk(gscore, kg, dim=-1).indices
    gmask = torch.zeros_like(gscore).scatter_(1, gidx, 1.0)
    smask = gmask.unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E).bool()
    masked = sb.masked_fill(~smask, 0.0)
    sel, idx = torch.topk(masked, k, dim=-1)  # sorted=True: descending masked biased score
    sm = torch.sort(masked, dim=-1, descending=True).values
    margins = {"selection": sm[:, k - 1] - sm[:, k], "chosen_min": sel[:, k - 1]}
    gap = margins["selection"].clone()
    if G > kg:
        sg = torch.sort(gscore, dim=-1, descending=True).values
        margins["group"] = sg[:, kg - 1] - sg[:, kg]
        gap = torch.minimum(gap, margins["group"])
        gap = torch.minimum(gap, margins["chosen_min"])  # a masked 0.0 must not compete
    w = s.gather(1, idx)
    if cfg.norm_topk_prob:
        w = w / (w.sum(dim=-1, keepdim=True) + 1e-20)
    w = w * cfg.routed_scaling_factor
    # the module's own output (sorted=False order) must be the same set with the same weights
    h_idx, h_w = hooked
    h_idx = h_idx.reshape(idx.shape)
    h_w = h_w.reshape(idx.shape).float()
    pos = (h_idx.unsqueeze(1) == idx.unsqueeze(2))  # [N, k(ours), k(hooked)]
    if not bool((pos.sum(-1) == 1).all()):
        die(f"DeepSeek routing re-implementation picks other experts than HF: "
            f"{idx.tolist()} vs {h_idx.tolist()}")
    w_hf = (pos.float() * h_w.unsqueeze(1)).sum(-1)
    d = (w_hf - w).abs().max().item()
    if d > 1e-6:
        die(f"DeepSeek routing weights differ from HF's by {d}")
    return idx, w_hf, gap, margins


def routes_gpt_oss(router_logits, k: int, hooked):
    """GPT-OSS (GptOssTopKRouter): top-k of the biased logits, softmax over those k.
    Checked against the module's own output (hooked = (indices [N,k], scores [N,E]))."""
    import torch
    v, idx = torch.topk(router_logits, k, dim=-1)
    w = torch.softmax(v, dim=-1)
    h_idx, h_scores = hooked
    if h_idx.reshape(idx.shape).tolist() != idx.tolist():
        die("GPT-OSS routing re-implementation picks other experts than HF")
    d = (h_scores.gather(1, idx) - w).abs().max().item()
    if d > 1e-6:
        die(f"GPT-OSS routing weights differ from HF's by {d}")
    s = torch.sort(router_logits, dim=-1, descending=True).values
    gap = s[..., k - 1] - s[..., k]  # logit gap: softmax is monotone
    return idx, w, gap


def routes_of(model, rec, li: int, n: int):
    """(idx, weights, gap, margins-or-None) of MoE layer li from a run_forward record."""
    rl = rec["router"][li].reshape(n, -1)
    cfg = model.config
    if is_deepseek(cfg):
        bias = model.model.layers[li].mlp.gate.e_score_correction_bias
        return routes_deepseek(rl, bias, cfg, rec["router_out"][li])
    if is_gpt_oss(cfg):
        idx, w, gap = routes_gpt_oss(rl, cfg.num_experts_per_tok, rec["router_out"][li])
        return idx, w, gap, None
    k, norm = routing_rule(cfg)
    idx, w, gap = routes_from_logits(rl, k, norm)
    return idx, w, gap, None


def compute_goldens(model, tokenizer, prompts: list[str]) -> tuple[dict, dict]:
    """Returns (json_dict, tensors) for one fixture."""
    import torch
    specials = set(tokenizer.all_special_ids)
    cfg = model.config
    moe_layers = sorted(moe_gate_modules(model))
    tensors: dict[str, torch.Tensor] = {}
    jprompts = []
    min_route_gap, min_greedy_gap = 1.0, float("inf")
    ds_margins: dict[str, float] = {}

    def note_margins(m):
        if m is not None:
            for key, v in m.items():
                ds_margins[key] = min(ds_margins.get(key, float("inf")), v.min().item())
    for pi, text in enumerate(prompts):
        ids = tokenizer(text, add_special_tokens=True)["input_ids"]
        x = torch.tensor([ids])
        rec = run_forward(model, x)
        T = len(ids)
        logits = rec["logits"][0].float()
        tensors[f"prompt{pi}.logits"] = logits
        if pi == 0:  # per-layer residual stream, for debugging (prompt 0 only, size)
            tensors[f"prompt{pi}.hidden.embed"] = rec["embed"][0]
            for li in range(cfg.num_hidden_layers):
                tensors[f"prompt{pi}.hidden.layer{li}"] = rec["layers"][li][0]
            tensors[f"prompt{pi}.hidden.final_norm"] = rec["final_norm"][0]
        routing = []
        for li in moe_layers:
            rl = rec["router"][li].reshape(T, -1)
            tensors[f"prompt{pi}.router_logits.layer{li}"] = rl.float()
            idx, w, gap, m = routes_of(model, rec, li, T)
            note_margins(m)
            min_route_gap = min(min_route_gap, gap.min().item())
            routing.append({"layer": li, "experts": idx.tolist(), "weights": w.tolist()})
        # greedy generation with the KV cache
        gen_ids, step_logits, decode_routing = [], [], []
        cur = rec
        for step in range(N_GENERATE):
            lg = cur["logits"][0, -1].float()
            top2 = torch.topk(lg, 2).values
            min_greedy_gap = min(min_greedy_gap, (top2[0] - top2[1]).item())
            nxt = int(torch.argmax(lg).item())
            step_logits.append(lg)
            gen_ids.append(nxt)
            if step == N_GENERATE - 1:
                break
            cur = run_forward(model, torch.tensor([[nxt]]), past=cur["past"])
            dr = []
            for li in moe_layers:
                idx, w, gap, m = routes_of(model, cur, li, 1)
                note_margins(m)
                min_route_gap = min(min_route_gap, gap.min().item())
                dr.append({"layer": li, "experts": idx[0].tolist(), "weights": w[0].tolist()})
            decode_routing.append(dr)
        tensors[f"prompt{pi}.generate.logits"] = torch.stack(step_logits)
        if any(t in specials for t in gen_ids):
            return {"generated_special": True, "min_routing_prob_gap": min_route_gap,
                    "min_greedy_logit_gap": min_greedy_gap}, {}
        # cross-checks: HF generate() gives the same ids; no-cache recompute gives same logits
        with torch.no_grad():
            g = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=N_GENERATE,
                               min_new_tokens=N_GENERATE, do_sample=False, use_cache=True,
                               pad_token_id=0)
        if g[0, T:].tolist() != gen_ids:
            die(f"generate() disagrees with the manual KV-cache loop: {g[0, T:].tolist()} "
                f"vs {gen_ids}")
        full = torch.tensor([ids + gen_ids[:-1]])
        with torch.no_grad():
            fl = model(input_ids=full, use_cache=False).logits[0, T - 1:].float()
        d = (fl - torch.stack(step_logits)).abs().max().item()
        if d > 1e-4:
            die(f"KV-cache decode logits differ from full recompute by {d}")
        jprompts.append({
            "text": text,
            "input_ids": ids,
            "prefill_argmax": torch.argmax(logits, -1).tolist(),
            "routing": routing,
            "generated_ids": gen_ids,
            "decode_routing": decode_routing,
            "logits_checksum": {"sum": float(logits.double().sum()),
                                "abs_sum": float(logits.double().abs().sum()),
                                "first8_last_position": logits[-1, :8].tolist()},
            "cache_vs_recompute_max_abs_diff": d,
        })
    j = {"generated_special": False, "prompts": jprompts, "moe_layers": moe_layers,
         "min_routing_prob_gap": min_route_gap, "min_greedy_logit_gap": min_greedy_gap}
    if ds_margins:
        j["deepseek_routing_margins"] = {
            "min_group_score_gap": ds_margins.get("group"),
            "min_selection_score_gap": ds_margins["selection"],
            "min_chosen_selection_score": ds_margins["chosen_min"],
        }
    return j, tensors


def config_v5(cfg_json: dict) -> dict:
    """transformers v5 spellings: rope_parameters (incl. rope_theta) and dtype."""
    c = dict(cfg_json)
    theta = c.pop("rope_theta", None)
    scaling = c.pop("rope_scaling", None)
    if scaling:
        rp = {k: v for k, v in scaling.items() if k != "type"}
        rp["rope_type"] = scaling.get("rope_type", scaling.get("type"))
    else:
        rp = {"rope_type": "default"}
    if theta is not None:
        rp["rope_theta"] = theta
    c["rope_parameters"] = dict(sorted(rp.items()))
    if "torch_dtype" in c:
        c["dtype"] = c.pop("torch_dtype")
    return dict(sorted(c.items()))


def config_v4_legacy(cfg_json: dict) -> dict:
    """The older spelling ("torch_dtype", rope_scaling with "type") many hub files still use."""
    c = dict(cfg_json)
    if "dtype" in c:
        c["torch_dtype"] = c.pop("dtype")
    if c.get("rope_scaling"):
        rs = dict(c["rope_scaling"])
        rs["type"] = rs.pop("rope_type")
        c["rope_scaling"] = rs
    return dict(sorted(c.items()))


def build_fixture(name: str, spec, tok_pair, out_root: Path, seed: int, versions: dict) -> dict:
    import torch
    import transformers
    from safetensors.torch import save_file
    style, cls_name, cfg_kwargs = spec
    cls = getattr(transformers, cls_name)
    cfg_cls = getattr(transformers, cls_name.replace("ForCausalLM", "Config"))
    d = out_root / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    tok, hf = tok_pair
    save_tokenizer(tok, hf, d)
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(d)

    chosen = None
    for attempt in range(64):
        s = seed + 1000 * attempt
        cfg = cfg_cls(**cfg_kwargs)
        cfg._attn_implementation = "eager"
        torch.manual_seed(s)
        model = cls(cfg).eval()
        randomize_(model, s)
        mxfp4_tensors = mxfp4_experts_(model) if name in MXFP4_FIXTURES else None
        if cfg.vocab_size > len(tokenizer):  # padded rows: never predicted, like untrained rows
            with torch.no_grad():
                model.lm_head.weight[len(tokenizer):] *= 0.01
        j, tensors = compute_goldens(model, tokenizer, PROMPTS)
        gen_special = bool(j.get("generated_special"))
        if (j["min_routing_prob_gap"] >= MIN_ROUTING_GAP
                and j["min_greedy_logit_gap"] >= MIN_GREEDY_GAP and not gen_special):
            chosen = s
            break
        log(f"  {name}: seed {s} rejected (routing gap {j['min_routing_prob_gap']:.2e}, "
            f"greedy gap {j['min_greedy_logit_gap']:.2e}, special token generated: {gen_special})")
    if chosen is None:
        die(f"{name}: no seed with robust routing/greedy margins found")

    model.save_pretrained(d, safe_serialization=True)
    cfg_json = json.loads((d / "config.json").read_text())
    if mxfp4_tensors is not None:  # the hub's layout: MXFP4 experts, everything else as saved
        from safetensors.torch import load_file
        st = {k: v for k, v in load_file(str(d / "model.safetensors")).items()
              if not (k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj"))}
        st.update(mxfp4_tensors)
        save_file(dict(sorted(st.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
        cfg_json["quantization_config"] = {
            "quant_method": "mxfp4",
            "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                       "model.embed_tokens", "lm_head"]}
        (d / "config.json").write_text(json.dumps(cfg_json, indent=2) + "\n")
    (d / "config.v5.json").write_text(json.dumps(config_v5(cfg_json), indent=2) + "\n")
    (d / "config.v4-legacy.json").write_text(json.dumps(config_v4_legacy(cfg_json), indent=2) + "\n")
    save_file({k: v.contiguous() for k, v in sorted(tensors.items())}, str(d / "golden.safetensors"),
              metadata={"format": "pt"})
    params = {n: list(p.shape) for n, p in model.named_parameters()}
    if is_deepseek(cfg):  # + the e_score_correction_bias buffers (stored in model.safetensors)
        params = {n: list(t.shape) for n, t in model.state_dict().items()
                  if n in params or n.endswith("e_score_correction_bias")}
    summary = {
        "hidden_size": cfg.hidden_size, "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": getattr(model.model.layers[0].self_attn, "head_dim", None),
        "vocab_size": cfg.vocab_size, "tokenizer_vocab_size": len(tokenizer),
        "num_experts": (getattr(cfg, "num_local_experts", None) or getattr(cfg, "num_experts", None)
                        or getattr(cfg, "n_routed_experts", None)),
        "num_experts_per_tok": cfg.num_experts_per_tok,
        "renormalize_topk": routing_rule(cfg)[1],
        "tie_word_embeddings": cfg.tie_word_embeddings,
    }
    if is_deepseek(cfg):
        attn = model.model.layers[0].self_attn
        summary["head_dim"] = cfg.qk_head_dim  # q/k head dim (nope + rope); v: v_head_dim
        summary.update({
            "q_lora_rank": cfg.q_lora_rank, "kv_lora_rank": cfg.kv_lora_rank,
            "qk_nope_head_dim": cfg.qk_nope_head_dim, "qk_rope_head_dim": cfg.qk_rope_head_dim,
            "v_head_dim": cfg.v_head_dim, "n_group": cfg.n_group, "topk_group": cfg.topk_group,
            "n_shared_experts": cfg.n_shared_experts,
            "routed_scaling_factor": cfg.routed_scaling_factor,
            "first_k_dense_replace": cfg.first_k_dense_replace,
            "rope_interleave": cfg.rope_interleave,
            "rope_type": (cfg.rope_scaling or {}).get("rope_type", "default"),
            "rope_attention_scaling": float(model.model.rotary_emb.attention_scaling),
            "attention_softmax_scale": float(attn.scaling),
            "router": "sigmoid + e_score_correction_bias (selection only), group-limited",
        })
    if is_gpt_oss(cfg):
        summary.update({
            "sliding_window": cfg.sliding_window, "layer_types": list(cfg.layer_types),
            "rope_type": (cfg.rope_scaling or {}).get("rope_type", "default"),
            "rope_attention_scaling": float(model.model.rotary_emb.attention_scaling),
            "swiglu": "clamped: gate <= 7, |up| <= 7, (up + 1) * gate * sigmoid(1.702 gate)",
            "router": "softmax over the top-k of x W^T + b",
        })
    golden = {
        "fixture": name,
        "architecture": cls_name,
        "model_type": cfg.model_type,
        "tokenizer_style": style,
        "seed": chosen,
        "dtype": "float32",
        "attn_implementation": "eager",
        "versions": versions,
        "config_summary": summary,
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "n_generate": N_GENERATE,
        **j,
        "golden_tensors": {k: list(v.shape) for k, v in sorted(tensors.items())},
        "parameter_shapes": params,
    }
    (d / "golden.json").write_text(to_json(golden) + "\n",
                                   encoding="utf-8")
    size = sum(p.stat().st_size for p in d.iterdir())
    log(f"fixture {name}: seed {chosen}, {golden['num_parameters']} params, "
        f"{size / 1024:.0f} KiB, min routing gap {j['min_routing_prob_gap']:.2e}, "
        f"min greedy gap {j['min_greedy_logit_gap']:.3f}, moe layers {j['moe_layers']}")
    return golden


def verify_fixture(d: Path) -> None:
    """Reload with the Auto classes from disk and check every recorded number."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    golden = json.loads((d / "golden.json").read_text(encoding="utf-8"))
    ref = load_file(str(d / "golden.safetensors"))
    tok = AutoTokenizer.from_pretrained(d)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    if d.name in MXFP4_FIXTURES:
        # transformers dequantizes MXFP4 on a CPU into bf16 experts (exact: MXFP4 values have at
        # most 3 significant bits) beside fp32 weights, then fails on the dtype mix: widen them.
        model = model.float()
        if any(n.endswith("_blocks") for n, _ in model.named_parameters()):
            die(f"{d.name}: transformers kept the experts in MXFP4; expected its CPU dequantization")
    for pi, p in enumerate(golden["prompts"]):
        ids = tok(p["text"], add_special_tokens=True)["input_ids"]
        if ids != p["input_ids"]:
            die(f"{d.name}: prompt {pi} ids changed: {ids} vs {p['input_ids']}")
        rec = run_forward(model, torch.tensor([ids]))
        diff = (rec["logits"][0].float() - ref[f"prompt{pi}.logits"]).abs().max().item()
        if diff > 1e-5:
            die(f"{d.name}: prompt {pi} logits differ by {diff}")
        for r in p["routing"]:
            idx, w, _, _ = routes_of(model, rec, r["layer"], len(ids))
            if idx.tolist() != r["experts"]:
                die(f"{d.name}: prompt {pi} layer {r['layer']} experts differ")
            if (w - torch.tensor(r["weights"])).abs().max().item() > 1e-6:
                die(f"{d.name}: prompt {pi} layer {r['layer']} routing weights differ")
        with torch.no_grad():
            g = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                               max_new_tokens=N_GENERATE,
                               min_new_tokens=N_GENERATE, do_sample=False, pad_token_id=0,
                               output_logits=True, return_dict_in_generate=True)
        if g.sequences[0, len(ids):].tolist() != p["generated_ids"]:
            die(f"{d.name}: prompt {pi} greedy generation differs")
        gl = torch.stack([l[0].float() for l in g.logits])
        gd = (gl - ref[f"prompt{pi}.generate.logits"]).abs().max().item()
        if gd > 1e-4:
            die(f"{d.name}: prompt {pi} generate logits differ by {gd}")
    # config variants load to the same values
    base = AutoConfig.from_pretrained(d)
    for variant in ("config.v5.json", "config.v4-legacy.json"):
        c = json.loads((d / variant).read_text())
        if "rope_parameters" in c:
            rp = c["rope_parameters"]
            if rp.get("rope_theta") != base.rope_theta:
                die(f"{d.name}/{variant}: rope_theta mismatch")
            bs = base.rope_scaling or {"rope_type": "default"}
            for kk, vv in bs.items():
                if kk != "type" and rp.get(kk) != vv:
                    die(f"{d.name}/{variant}: rope_parameters.{kk} mismatch")
    log(f"verified {d.name}: logits, routing, generation reproduce")


def verify_tokenizers(root: Path) -> None:
    from transformers import AutoTokenizer
    for style in TOKENIZER_STYLES:
        d = root / "tokenizers" / style
        meta = json.loads((d / "cases.json").read_text(encoding="utf-8"))
        tok = AutoTokenizer.from_pretrained(d)
        for c in meta["cases"]:
            if tok(c["text"], add_special_tokens=True)["input_ids"] != c["ids"]:
                die(f"{style}: ids differ for {c['text']!r}")
            if tok(c["text"], add_special_tokens=False)["input_ids"] != c["ids_no_special"]:
                die(f"{style}: ids_no_special differ for {c['text']!r}")
            if tok.decode(c["ids"], skip_special_tokens=False) != c["decoded"]:
                die(f"{style}: decode differs for {c['text']!r}")
        log(f"verified tokenizer {style}: {len(meta['cases'])} cases reproduce")


# ========================================================================================
# optional cross-check with transformers v5 (separate interpreter, see --v5-python)

def v5_worker(d: Path) -> None:
    """Runs under a transformers-5.x interpreter: reload the fixture, compare the goldens,
    re-save it and print a JSON report (with v5's own config.json) on stdout."""
    import tempfile

    import torch
    import transformers
    from safetensors import safe_open
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(1)
    golden = json.loads((d / "golden.json").read_text(encoding="utf-8"))
    ref = load_file(str(d / "golden.safetensors"))
    tok = AutoTokenizer.from_pretrained(d)
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    rep = {"transformers": transformers.__version__, "ids_match": True, "generation_match": True,
           "max_abs_logit_diff": 0.0, "max_abs_generate_logit_diff": 0.0}
    for pi, p in enumerate(golden["prompts"]):
        ids = tok(p["text"], add_special_tokens=True)["input_ids"]
        rep["ids_match"] &= ids == p["input_ids"]
        x = torch.tensor([p["input_ids"]])
        with torch.no_grad():
            lg = model(input_ids=x).logits[0].float()
            g = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=N_GENERATE,
                               min_new_tokens=N_GENERATE, do_sample=False, pad_token_id=0,
                               output_logits=True, return_dict_in_generate=True)
        rep["max_abs_logit_diff"] = max(rep["max_abs_logit_diff"],
                                        (lg - ref[f"prompt{pi}.logits"]).abs().max().item())
        rep["generation_match"] &= g.sequences[0, x.shape[1]:].tolist() == p["generated_ids"]
        gl = torch.stack([l[0].float() for l in g.logits])
        rep["max_abs_generate_logit_diff"] = max(
            rep["max_abs_generate_logit_diff"],
            (gl - ref[f"prompt{pi}.generate.logits"]).abs().max().item())
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        rep["config"] = json.loads((Path(tmp) / "config.json").read_text())
        with safe_open(str(Path(tmp) / "model.safetensors"), "pt") as f:
            k5 = set(f.keys())
    with safe_open(str(d / "model.safetensors"), "pt") as f:
        k4 = set(f.keys())
    rep["saved_tensor_names_equal"] = k4 == k5
    print("V5REPORT " + json.dumps(rep))


def run_v5_check(v5_python: str, d: Path) -> dict:
    import subprocess
    r = subprocess.run([v5_python, str(Path(__file__).resolve()), "--v5-worker", str(d)],
                       capture_output=True, text=True)
    lines = [l for l in r.stdout.splitlines() if l.startswith("V5REPORT ")]
    if r.returncode != 0 or not lines:
        die(f"v5 check of {d.name} failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    rep = json.loads(lines[-1][len("V5REPORT "):])
    ok = (rep["ids_match"] and rep["generation_match"] and rep["saved_tensor_names_equal"]
          and rep["max_abs_logit_diff"] < 1e-4 and rep["max_abs_generate_logit_diff"] < 1e-4)
    if not ok:
        die(f"transformers {rep['transformers']} does not reproduce {d.name}: "
            f"{ {k: v for k, v in rep.items() if k != 'config'} }")
    return rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="fixture root (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--only", nargs="*", default=None,
                    help="build only these fixtures (mixtral qwen2_moe qwen3_moe olmoe "
                         "deepseek_v3 deepseek_v3_plain_q gpt_oss gpt_oss_mxfp4)")
    ap.add_argument("--verify-only", action="store_true",
                    help="only reload existing fixtures and check the recorded numbers")
    ap.add_argument("--tokenizers-only", nargs="+", default=None, metavar="STYLE",
                    help="only (re)build these tokenizer goldens under tokenizers/ (e.g. o200k_bytelevel)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--v5-python", default=None, metavar="PYTHON",
                    help="interpreter with transformers 5.x (tools/setup_python_env.sh --with-v5 "
                         "makes .venv-tools/v5/bin/python): config.v5.json is then v5's own "
                         "save_pretrained output and v5 must reproduce the goldens")
    ap.add_argument("--v5-worker", type=Path, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.v5_worker is not None:
        v5_worker(a.v5_worker)
        return

    import numpy as np
    import tokenizers
    import torch
    import transformers
    torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True)
    np.random.seed(a.seed)
    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "tokenizers": tokenizers.__version__,
                "safetensors": __import__("safetensors").__version__,
                "python": sys.version.split()[0]}

    if a.tokenizers_only:
        for st in a.tokenizers_only:
            if st not in TOKENIZER_STYLES:
                die(f"unknown tokenizer style {st!r}; choose from {list(TOKENIZER_STYLES)}")
        make_tokenizer_goldens(a.out, versions, a.tokenizers_only)
        return

    all_names = ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v3", "deepseek_v3_plain_q", "gpt_oss",
                 "gpt_oss_mxfp4"]
    names = a.only or all_names
    for n in names:
        if n not in all_names:
            die(f"unknown fixture {n!r}; choose from {all_names}")

    if not a.verify_only:
        a.out.mkdir(parents=True, exist_ok=True)
        make_tokenizer_goldens(a.out, versions)
        toks = {style: build_tokenizer(style, "small") for style in TOKENIZER_STYLES}
        sizes = {s: t.get_vocab_size(with_added_tokens=True) for s, (t, _) in toks.items()}
        specs = fixture_specs(sizes)
        for n in names:
            build_fixture(n, specs[n], toks[specs[n][0]], a.out, a.seed, versions)
            if a.v5_python:
                d = a.out / n
                rep = run_v5_check(a.v5_python, d)
                (d / "config.v5.json").write_text(json.dumps(rep.pop("config"), indent=2) + "\n")
                g = json.loads((d / "golden.json").read_text(encoding="utf-8"))
                g["v5_check"] = rep
                (d / "golden.json").write_text(to_json(g) + "\n", encoding="utf-8")
                log(f"  {n}: transformers {rep['transformers']} reproduces the goldens "
                    f"(max |dlogit| {rep['max_abs_logit_diff']:.1e}); config.v5.json from v5")

    verify_tokenizers(a.out)
    total = 0
    for n in all_names:
        d = a.out / n
        if not d.is_dir():
            continue
        verify_fixture(d)
        total += sum(p.stat().st_size for p in d.iterdir())
    log(f"model fixtures total {total / 1024:.0f} KiB")
    if total > SIZE_LIMIT_BYTES:
        die(f"model fixtures total {total} bytes > {SIZE_LIMIT_BYTES}")


if __name__ == "__main__":
    main()
