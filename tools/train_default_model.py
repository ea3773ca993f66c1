#!/usr/bin/env python3
"""Train submoe's embedded default model: a small Qwen3-MoE with a byte-level BPE tokenizer.

Pipeline (all steps deterministic given --seed, except where --minutes cuts training short):
  1. train a byte-level BPE tokenizer (GPT-2 pre-tokenizer regex, ~8k vocab) with the
     `tokenizers` library on War and Peace + Tiny Shakespeare;
  2. tokenize both corpora, hold out the last --val-fraction of each for validation;
  3. train Qwen3MoeForCausalLM (transformers' own class) with the router load-balancing
     auxiliary loss, logging step / loss / tokens per second, checkpointing periodically;
  4. save the final model with save_pretrained in bf16 (Hugging Face layout) plus the
     tokenizer files into --out (default models/default-moe), write a model card;
  5. verify: reload with AutoModelForCausalLM / AutoTokenizer, greedy-generate, and measure
     the loss on a WikiText-2 validation excerpt (data/wikitext2-valid-excerpt.txt).

Run with the tools venv (tools/setup_python_env.sh), from the repository root:
  nice -n 10 .venv-tools/bin/python tools/train_default_model.py --minutes 40
Finish/verify an interrupted run from its last checkpoint without training further:
  .venv-tools/bin/python tools/train_default_model.py --resume --finalize-only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"  # ../shared relative to the repository root
CORPORA = SHARED / "corpora"
TRAIN_FILES = ["war_and_peace.txt", "tinyshakespeare.txt"]
WIKITEXT_VALID = CORPORA / "wikitext-2" / "valid.txt"
WIKITEXT_EXCERPT = REPO / "data" / "wikitext2-valid-excerpt.txt"
WIKITEXT_EXCERPT_MAX_BYTES = 200 * 1024

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
SPECIAL_TOKENS = [EOS_TOKEN, PAD_TOKEN, "<|im_start|>", "<|im_end|>"]
# ChatML over the <|im_start|> / <|im_end|> tokens, so `submoe serve` has a chat
# template to render (the model was not trained on chats; it continues text).
CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
                 " + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                 "{% endif %}")


def die(msg: str) -> "NoReturn":  # type: ignore[name-defined]
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=REPO / "models" / "default-moe",
                   help="output directory for the Hugging Face checkpoint (default: %(default)s)")
    p.add_argument("--ckpt-dir", type=Path, default=None,
                   help="training checkpoints (default: <out>/.ckpt, git-ignored)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--minutes", type=float, default=35.0,
                   help="wall-clock budget for the training loop; the LR schedule anneals on "
                        "max(step/max_steps, elapsed/budget) so a cut run still ends annealed")
    p.add_argument("--max-steps", type=int, default=2000,
                   help="planned optimizer steps (LR schedule length); training stops at "
                        "whichever of --max-steps / --minutes comes first")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--warmup-steps", type=int, default=60)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--aux-loss-coef", type=float, default=0.02,
                   help="router load-balancing loss coefficient (router_aux_loss_coef)")
    p.add_argument("--val-fraction", type=float, default=0.03)
    p.add_argument("--eval-every", type=int, default=100, help="steps between validation runs")
    p.add_argument("--eval-batches", type=int, default=6)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--ckpt-minutes", type=float, default=5.0, help="minutes between checkpoints")
    # architecture
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--experts", type=int, default=16)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--expert-intermediate", type=int, default=256)
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--max-positions", type=int, default=2048)
    # modes
    p.add_argument("--resume", action="store_true", help="resume from the last checkpoint")
    p.add_argument("--finalize-only", action="store_true",
                   help="skip training: export + verify from the last checkpoint (with --resume)")
    p.add_argument("--verify-only", action="store_true",
                   help="only reload and verify an already exported --out directory")
    p.add_argument("--retrain-tokenizer", action="store_true",
                   help="retrain the tokenizer even if <ckpt-dir>/tokenizer.json exists")
    a = p.parse_args()
    if a.ckpt_dir is None:
        a.ckpt_dir = a.out / ".ckpt"
    if a.finalize_only and not a.resume:
        die("--finalize-only needs --resume (it exports the last checkpoint)")
    return a


# ----------------------------------------------------------------------------------------
# data

def read_corpus(name: str) -> str:
    path = CORPORA / name
    if not path.is_file():
        die(f"corpus {path} not found (expected the shared corpora at ../shared/corpora "
            f"relative to the repository root)")
    return path.read_text(encoding="utf-8")


def train_tokenizer(texts: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = None
    # GPT-2 pre-tokenizer: ByteLevel with the GPT-2 split regex, no prefix space
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tok


def wrap_tokenizer(tok):
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOS_TOKEN, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN,
        unk_token=None, additional_special_tokens=["<|im_start|>", "<|im_end|>"],
        model_max_length=2048, clean_up_tokenization_spaces=False, chat_template=CHAT_TEMPLATE)


def split_lines(text: str, chunk_chars: int = 4000) -> list[str]:
    """Tokenizer-training chunks: paragraphs grouped up to ~chunk_chars (order preserved)."""
    out, cur = [], []
    n = 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        n += len(line)
        if n >= chunk_chars:
            out.append("".join(cur))
            cur, n = [], 0
    if cur:
        out.append("".join(cur))
    return out


def make_wikitext_excerpt() -> str:
    """A contiguous excerpt of WikiText-2 valid.txt, cut at article boundaries, <= 200 KB."""
    if not WIKITEXT_VALID.is_file():
        die(f"{WIKITEXT_VALID} not found")
    lines = WIKITEXT_VALID.read_text(encoding="utf-8").splitlines(keepends=True)
    # article starts look like " = Title = " (single '=' level)
    def is_article(l: str) -> bool:
        s = l.strip()
        return s.startswith("= ") and s.endswith(" =") and not s.startswith("= =")
    out, size, last_ok = [], 0, 0
    for l in lines:
        b = len(l.encode("utf-8"))
        if is_article(l) and size > 0:
            last_ok = len(out) - 1  # index of the blank line before this title
        if size + b > WIKITEXT_EXCERPT_MAX_BYTES:
            break
        out.append(l)
        size += b
    else:
        last_ok = len(out)
    text = "".join(out[:last_ok])
    return text


# ----------------------------------------------------------------------------------------
# model

def build_config(a, tokenizer):
    from transformers import Qwen3MoeConfig
    return Qwen3MoeConfig(
        vocab_size=len(tokenizer),
        hidden_size=a.hidden,
        intermediate_size=2 * a.hidden,  # only used by mlp_only_layers (none here)
        moe_intermediate_size=a.expert_intermediate,
        num_hidden_layers=a.layers,
        num_attention_heads=a.heads,
        num_key_value_heads=a.kv_heads,
        head_dim=a.head_dim,
        num_experts=a.experts,
        num_experts_per_tok=a.top_k,
        norm_topk_prob=True,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        hidden_act="silu",
        max_position_embeddings=a.max_positions,
        rope_theta=a.rope_theta,
        rms_norm_eps=1e-6,
        attention_bias=False,
        attention_dropout=0.0,
        tie_word_embeddings=False,
        use_sliding_window=False,
        initializer_range=0.02,
        router_aux_loss_coef=a.aux_loss_coef,
        output_router_logits=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def count_params(model, cfg) -> tuple[int, int]:
    total = sum(p.numel() for p in model.parameters())
    expert = 0
    for n, p in model.named_parameters():
        if ".mlp.experts." in n:
            expert += p.numel()
    active = total - expert + expert * cfg.num_experts_per_tok // cfg.num_experts
    return total, active


def lr_at(a, step: int, elapsed: float) -> float:
    if step < a.warmup_steps:
        return a.lr * (step + 1) / a.warmup_steps
    prog_steps = (step - a.warmup_steps) / max(1, a.max_steps - a.warmup_steps)
    prog_time = elapsed / (a.minutes * 60.0)
    prog = min(1.0, max(prog_steps, prog_time))
    cos = 0.5 * (1.0 + math.cos(math.pi * prog))
    return a.lr * (a.min_lr_ratio + (1.0 - a.min_lr_ratio) * cos)


# ----------------------------------------------------------------------------------------

def main() -> None:
    a = parse_args()
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers
    from tokenizers import Tokenizer
    from transformers import Qwen3MoeForCausalLM

    if a.verify_only:
        verify(a, None)
        return

    a.out.mkdir(parents=True, exist_ok=True)
    a.ckpt_dir.mkdir(parents=True, exist_ok=True)
    random.seed(a.seed)
    np.random.seed(a.seed)
    torch.manual_seed(a.seed)

    # -- wikitext excerpt (evaluation only) --------------------------------------------
    excerpt = make_wikitext_excerpt()
    WIKITEXT_EXCERPT.parent.mkdir(parents=True, exist_ok=True)
    if not WIKITEXT_EXCERPT.exists() or WIKITEXT_EXCERPT.read_text(encoding="utf-8") != excerpt:
        WIKITEXT_EXCERPT.write_text(excerpt, encoding="utf-8")
    log(f"wikitext excerpt: {len(excerpt.encode())} bytes -> {WIKITEXT_EXCERPT}")

    # -- tokenizer ------------------------------------------------------------------------
    texts = {name: read_corpus(name) for name in TRAIN_FILES}
    train_texts, val_texts = {}, {}
    for name, t in texts.items():
        cut = int(len(t) * (1.0 - a.val_fraction))
        cut = t.rfind("\n", 0, cut) + 1 or cut
        train_texts[name], val_texts[name] = t[:cut], t[cut:]
    tok_path = a.ckpt_dir / "tokenizer.json"
    if tok_path.exists() and not a.retrain_tokenizer:
        raw_tok = Tokenizer.from_file(str(tok_path))
        log(f"tokenizer loaded from {tok_path}")
    else:
        t0 = time.time()
        chunks = []
        for name in TRAIN_FILES:  # tokenizer sees only the training split
            chunks += split_lines(train_texts[name])
        raw_tok = train_tokenizer(chunks, a.vocab_size)
        raw_tok.save(str(tok_path))
        log(f"tokenizer trained in {time.time() - t0:.1f}s, vocab {raw_tok.get_vocab_size()}")
    tokenizer = wrap_tokenizer(raw_tok)
    eos = tokenizer.eos_token_id

    def encode(t: str) -> list[int]:
        return raw_tok.encode(t, add_special_tokens=False).ids

    train_ids, val_ids = [], []
    for name in TRAIN_FILES:
        train_ids += [eos] + encode(train_texts[name])
        val_ids += [eos] + encode(val_texts[name])
    train_ids = torch.tensor(train_ids, dtype=torch.long)
    val_ids = torch.tensor(val_ids, dtype=torch.long)
    chars = sum(len(t) for t in train_texts.values())
    log(f"train tokens {len(train_ids)} ({chars / len(train_ids):.2f} chars/token), "
        f"val tokens {len(val_ids)}")

    # -- model ----------------------------------------------------------------------------
    cfg = build_config(a, tokenizer)
    torch.manual_seed(a.seed)
    model = Qwen3MoeForCausalLM(cfg)
    model.config.output_router_logits = False
    total, active = count_params(model, cfg)
    log(f"Qwen3-MoE: {total / 1e6:.2f}M params total, {active / 1e6:.2f}M active per token")

    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in n else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)

    gen = torch.Generator().manual_seed(a.seed + 1)
    step, elapsed_prev = 0, 0.0
    history: list[dict] = []
    ckpt_file = a.ckpt_dir / "last.pt"
    if a.resume:
        if not ckpt_file.exists():
            die(f"--resume: no checkpoint at {ckpt_file}")
        st = torch.load(ckpt_file, map_location="cpu", weights_only=False)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        gen.set_state(st["gen"])
        step, elapsed_prev, history = st["step"], st["elapsed"], st["history"]
        log(f"resumed from {ckpt_file} at step {step} ({elapsed_prev / 60:.1f} min trained)")

    # fixed validation windows
    T = a.seq_len
    n_val = min(a.eval_batches * a.batch_size, (len(val_ids) - 1) // T)
    val_x = torch.stack([val_ids[i * T:(i + 1) * T + 1] for i in range(n_val)])

    @torch.no_grad()
    def evaluate() -> float:
        model.eval()
        losses = []
        for i in range(0, n_val, a.batch_size):
            xb = val_x[i:i + a.batch_size]
            out = model(input_ids=xb[:, :-1], labels=xb[:, :-1].clone(), output_router_logits=False)
            # HF shifts labels internally; we passed inputs as labels (next-token loss over T-1)
            losses.append(out.loss.item())
        model.train()
        return float(sum(losses) / len(losses))

    def save_ckpt() -> None:
        tmp = ckpt_file.with_suffix(".tmp")
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(),
                    "step": step, "elapsed": elapsed_prev + (time.time() - t_start),
                    "history": history, "args": vars(a) | {"out": str(a.out),
                                                              "ckpt_dir": str(a.ckpt_dir)}},
                   tmp)
        os.replace(tmp, ckpt_file)
        log(f"checkpoint saved at step {step} -> {ckpt_file}")

    t_start = time.time()
    if not a.finalize_only:
        model.train()
        budget = a.minutes * 60.0
        last_ckpt = time.time()
        tok_count, t_log, loss_acc, aux_acc, n_acc = 0, time.time(), 0.0, 0.0, 0
        while step < a.max_steps:
            elapsed = elapsed_prev + (time.time() - t_start)
            if elapsed >= budget:
                log(f"time budget of {a.minutes} min reached at step {step}")
                break
            lr = lr_at(a, step, elapsed)
            for g in opt.param_groups:
                g["lr"] = lr
            starts = torch.randint(0, len(train_ids) - T - 1, (a.batch_size,), generator=gen)
            xb = torch.stack([train_ids[s:s + T] for s in starts.tolist()])
            out = model(input_ids=xb, labels=xb, output_router_logits=True)
            loss = out.loss  # CE + router_aux_loss_coef * aux
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
            opt.step()
            step += 1
            ce = loss.item() - a.aux_loss_coef * out.aux_loss.item()
            loss_acc += ce
            aux_acc += out.aux_loss.item()
            n_acc += 1
            tok_count += xb.numel()
            if step % a.log_every == 0:
                dt = time.time() - t_log
                rec = {"step": step, "loss": loss_acc / n_acc, "aux": aux_acc / n_acc, "lr": lr,
                       "tok_s": tok_count / dt,
                       "elapsed_min": (elapsed_prev + time.time() - t_start) / 60}
                log(f"step {step:5d} loss {rec['loss']:.4f} aux {rec['aux']:.3f} lr {lr:.2e} "
                    f"{rec['tok_s']:.0f} tok/s  {rec['elapsed_min']:.1f} min")
                history.append(rec)
                tok_count, t_log, loss_acc, aux_acc, n_acc = 0, time.time(), 0.0, 0.0, 0
            if step % a.eval_every == 0:
                vl = evaluate()
                history.append({"step": step, "val_loss": vl})
                log(f"step {step:5d} val_loss {vl:.4f} (ppl {math.exp(vl):.1f})")
            if time.time() - last_ckpt >= a.ckpt_minutes * 60:
                save_ckpt()
                last_ckpt = time.time()
        save_ckpt()
        elapsed_prev += time.time() - t_start
        t_start = time.time()

    # -- final evaluation in fp32, then export in bf16 ----------------------------------
    final_val = evaluate()
    train_recent = [h["loss"] for h in history if "loss" in h][-5:]
    final_train = sum(train_recent) / max(1, len(train_recent))
    usage = expert_usage(model, val_x[:, :-1], cfg)
    log(f"final: step {step}, train loss (last logs) {final_train:.4f}, val loss {final_val:.4f}")
    export(a, model, tokenizer, cfg)
    summary = {"step": step, "train_minutes": elapsed_prev / 60, "final_train_loss": final_train,
               "final_val_loss": final_val, "tokens_seen": step * a.batch_size * a.seq_len,
               "train_tokens": len(train_ids), "val_tokens": len(val_ids),
               "params_total": total, "params_active": active, "expert_usage": usage,
               "seed": a.seed, "args": {k: (str(v) if isinstance(v, Path) else v)
                                        for k, v in vars(a).items()},
               "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                            "tokenizers": __import__("tokenizers").__version__}}
    verify(a, summary)


@__import__("torch").no_grad()
def expert_usage(model, x, cfg) -> list[list[float]]:
    """Fraction of top-k assignments per expert per layer on the given tokens."""
    import torch
    model.eval()
    out = model(input_ids=x, output_router_logits=True)
    res = []
    for logits in out.router_logits:
        idx = torch.topk(torch.softmax(logits.float(), -1), cfg.num_experts_per_tok, -1).indices
        cnt = torch.bincount(idx.flatten(), minlength=cfg.num_experts).float()
        res.append([round(v, 4) for v in (cnt / cnt.sum()).tolist()])
    model.train()
    return res


def export(a, model, tokenizer, cfg) -> None:
    import copy

    import torch
    from transformers import GenerationConfig
    m = copy.deepcopy(model).to(torch.bfloat16).eval()
    m.config.output_router_logits = False
    m.config.torch_dtype = torch.bfloat16
    m.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, do_sample=True, temperature=0.8, top_p=0.95,
        max_new_tokens=128)
    for f in ["model.safetensors", "config.json", "generation_config.json"]:
        (a.out / f).unlink(missing_ok=True)
    m.save_pretrained(a.out, safe_serialization=True)
    tokenizer.save_pretrained(a.out)
    size = sum(p.stat().st_size for p in a.out.iterdir() if p.is_file())
    log(f"exported to {a.out} ({size / 1e6:.1f} MB)")


def verify(a, summary: dict | None) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    out_dir = a.out
    if not (out_dir / "config.json").exists():
        die(f"{out_dir} has no exported model (config.json missing)")
    tok = AutoTokenizer.from_pretrained(out_dir)
    model_bf16 = AutoModelForCausalLM.from_pretrained(out_dir, dtype="auto").eval()
    if model_bf16.dtype != torch.bfloat16:
        die(f"exported weights are {model_bf16.dtype}, expected bfloat16")
    model = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32).eval()
    st_size = (out_dir / "model.safetensors").stat().st_size
    if st_size > 60e6:
        die(f"model.safetensors is {st_size / 1e6:.1f} MB (> 60 MB)")
    samples = {}
    for prompt in ["The prince said that", "ROMEO:\n", "It was a cold morning in Moscow"]:
        ids = tok(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            g = model.generate(ids, max_new_tokens=40, do_sample=False,
                               pad_token_id=tok.pad_token_id)
        text = tok.decode(g[0], skip_special_tokens=False)
        samples[prompt] = text
        log(f"greedy: {text!r}")
    # WikiText-2 excerpt loss (non-overlapping windows of the training length)
    text = WIKITEXT_EXCERPT.read_text(encoding="utf-8")
    ids = torch.tensor(tok(text, add_special_tokens=False).input_ids)
    T = (summary or {}).get("args", {}).get("seq_len", 512)
    nll, cnt = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(ids) - 1, T):
            x = ids[s:s + T + 1]
            if len(x) < 2:
                break
            logits = model(input_ids=x[None, :-1]).logits[0].float()
            nll += torch.nn.functional.cross_entropy(logits, x[1:], reduction="sum").item()
            cnt += len(x) - 1
    wt_loss = nll / cnt
    wt_bpb = nll / math.log(2) / len(text.encode("utf-8"))
    log(f"wikitext-2 excerpt: {cnt} tokens, loss {wt_loss:.4f} nats/token "
        f"(ppl {math.exp(wt_loss):.1f}), {wt_bpb:.3f} bits/byte")
    with torch.no_grad():
        x = ids[:T][None]
        l32 = model(input_ids=x).logits.float()
        l16 = model_bf16(input_ids=x).logits.float()
        d = (l32 - l16).abs().max().item()
    log(f"bf16 vs fp32 max |logit diff| on {T} tokens: {d:.3f}")
    summ_path = a.ckpt_dir / "summary.json"
    if summary is None:
        if summ_path.exists():
            summary = json.loads(summ_path.read_text())
        else:
            summary = {}
    summary.update({"wikitext_excerpt_tokens": cnt, "wikitext_excerpt_loss": wt_loss,
                    "wikitext_excerpt_bits_per_byte": wt_bpb, "greedy_samples": samples,
                    "bf16_vs_fp32_max_logit_diff": d})
    a.ckpt_dir.mkdir(parents=True, exist_ok=True)
    summ_path.write_text(json.dumps(summary, indent=1))
    if "step" in summary:
        write_model_card(out_dir, summary, model.config)
    log("verification OK")


def write_model_card(out_dir: Path, s: dict, cfg) -> None:
    ar = s["args"]
    usage = s.get("expert_usage") or []
    usage_lines = "\n".join(
        f"| {i} | {min(u):.3f} | {max(u):.3f} |" for i, u in enumerate(usage))
    samples = "\n".join(f"- `{p!r}` → `{t!r}`" for p, t in s.get("greedy_samples", {}).items())
    card = f"""---
license: other
language: en
library_name: transformers
pipeline_tag: text-generation
---
# submoe default model (`default-moe`)

A small Mixture-of-Experts language model trained from scratch by
`tools/train_default_model.py`. It is the model the submoe engine embeds by default: a real,
working checkpoint in the exact Hugging Face `transformers` layout, small enough to commit,
used for end-to-end tests of loading, tokenization, generation and compression. It writes
19th-century-novel / Shakespeare-flavoured English; it is not a useful assistant.

## Architecture (`model_type: qwen3_moe`, `Qwen3MoeForCausalLM`)
| field | value |
| --- | --- |
| vocab_size | {cfg.vocab_size} |
| hidden_size | {cfg.hidden_size} |
| num_hidden_layers | {cfg.num_hidden_layers} (all MoE) |
| attention | {cfg.num_attention_heads} query heads, {cfg.num_key_value_heads} KV heads (GQA), head_dim {cfg.head_dim}, per-head q/k RMSNorm, no bias |
| experts | {cfg.num_experts} routed experts per layer, top-{cfg.num_experts_per_tok}, `norm_topk_prob: true`, SwiGLU, moe_intermediate_size {cfg.moe_intermediate_size} |
| RoPE | default (NeoX rotate-half), rope_theta {cfg.rope_theta:g} |
| max_position_embeddings | {cfg.max_position_embeddings} (trained on {ar['seq_len']}-token windows) |
| norm | RMSNorm, eps {cfg.rms_norm_eps:g} |
| tie_word_embeddings | {str(cfg.tie_word_embeddings).lower()} |
| weights | bfloat16, `model.safetensors` (hub per-expert tensor names) |
| parameters | {s['params_total'] / 1e6:.2f} M total, {s['params_active'] / 1e6:.2f} M active per token |

## Tokenizer
Byte-level BPE (GPT-2 pre-tokenizer regex, `ByteLevel` pre-tokenizer/decoder, no prefix
space, no normalizer), {cfg.vocab_size} tokens, trained with Hugging Face `tokenizers` on the
training split. Special tokens: `<|endoftext|>` (id {cfg.eos_token_id}; BOS = EOS, also the
document separator used in training), `<|pad|>` (id {cfg.pad_token_id}), `<|im_start|>`,
`<|im_end|>`. No BOS is added automatically.

## Training
- Data: Leo Tolstoy, *War and Peace* (Project Gutenberg, public domain) and Tiny
  Shakespeare (Karpathy's char-rnn collection of Shakespeare's plays, public domain text);
  the last {ar['val_fraction'] * 100:.0f}% of each file is held out for validation.
  {s['train_tokens']:,} training tokens, {s['val_tokens']:,} validation tokens.
- Objective: next-token cross-entropy + {ar['aux_loss_coef']} × the HF router
  load-balancing loss (`router_aux_loss_coef`).
- Optimizer: AdamW (β 0.9/0.95, weight decay {ar['weight_decay']}), peak LR {ar['lr']},
  {ar['warmup_steps']} warm-up steps, cosine decay to {ar['min_lr_ratio']}×, grad-clip
  {ar['grad_clip']}; batch {ar['batch_size']} × {ar['seq_len']} tokens; seed {ar['seed']}.
- {s['step']} steps ({s['tokens_seen']:,} tokens, {s['train_minutes']:.1f} min on one CPU
  thread).
- Versions: torch {s['versions']['torch']}, transformers {s['versions']['transformers']},
  tokenizers {s['versions']['tokenizers']}.

## Results
| metric | value |
| --- | --- |
| final train loss (CE, nats/token, mean of last logs) | {s['final_train_loss']:.3f} |
| held-out validation loss (fp32) | {s['final_val_loss']:.3f} (ppl {math.exp(s['final_val_loss']):.1f}) |
| WikiText-2 valid excerpt (`data/wikitext2-valid-excerpt.txt`, {s['wikitext_excerpt_tokens']:,} tokens, {ar['seq_len']}-token windows, bf16 weights run in fp32) | {s['wikitext_excerpt_loss']:.3f} nats/token, {s['wikitext_excerpt_bits_per_byte']:.3f} bits/byte |
| max abs logit difference bf16 vs fp32 compute | {s['bf16_vs_fp32_max_logit_diff']:.3f} |

WikiText-2 is out of domain (encyclopedic, pre-tokenized with `<unk>`), so its loss is much
higher than the in-domain validation loss; it is used as a fixed evaluation text for the
engine, never for training.

Expert load on the validation windows (fraction of top-k slots, uniform = {1 / cfg.num_experts:.3f}):

| layer | min | max |
| --- | --- | --- |
{usage_lines}

Greedy samples (fp32):
{samples}

## License
The weights are trained only on public-domain texts (War and Peace; Shakespeare's plays).
Model weights and tokenizer are distributed under the submoe repository's license.
WikiText-2 (CC BY-SA) was used only for evaluation.
"""
    (out_dir / "README.md").write_text(card, encoding="utf-8")
    log(f"model card written to {out_dir / 'README.md'}")


if __name__ == "__main__":
    main()
