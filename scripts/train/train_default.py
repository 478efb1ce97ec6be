#!/usr/bin/env python3
"""Train tessera's default model: a small LlamaForCausalLM on the King James Bible.

Steps (all deterministic given --seed, on the same hardware and software):
  1. read the prepared corpus (scripts/train/prepare_corpus.py), one chapter per document,
     hold out every 40th chapter as the validation split;
  2. train a byte-level BPE tokenizer (HF `tokenizers`) on the training chapters;
  3. train the model with PyTorch (AdamW, warmup + cosine LR, bf16 autocast, context 256),
     evaluating the validation loss every --eval-every steps and keeping the best checkpoint;
  4. save model (safetensors, F32), tokenizer (tokenizer.json + tokenizer_config.json with a
     chat template) and generation_config.json into --out with `save_pretrained`;
  5. reload what was saved (CPU, f32, eager attention) and write --out/reference.json (ids,
     argmax, top-20 logits, greedy continuations, tokenizer and chat-template checks),
     --out/training_log.json and the model card --out/README.md.

Usage (on a CUDA machine with torch, transformers 5.x, tokenizers):
  python3 scripts/train/train_default.py --corpus .train/corpus.txt --out models/default
"""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse
import copy
import hashlib
import json
import math
import platform
import random
import sys
import time
from pathlib import Path

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
SPECIALS = [BOS, EOS, PAD]  # ids 0, 1, 2
# A plain chat template: the model is not instruction-tuned; this exists so the runtime's
# template path has something real to render.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)

ARCH = dict(
    hidden_size=256,
    intermediate_size=576,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=32,
    max_position_embeddings=512,
    rope_theta=10000.0,
    rms_norm_eps=1e-5,
    tie_word_embeddings=True,
)


def log(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------------------- corpus / tokenizer

def read_documents(corpus_path):
    raw = Path(corpus_path).read_bytes()
    text = raw.decode("utf-8")
    docs = [d.strip("\n") for d in text.split("\n\n") if d.strip()]
    return docs, hashlib.sha256(raw).hexdigest(), len(raw)


def split_documents(docs, val_every=40):
    train = [d for i, d in enumerate(docs) if i % val_every != val_every // 2]
    val = [d for i, d in enumerate(docs) if i % val_every == val_every // 2]
    return train, val


def build_tokenizer(train_docs, vocab_size):
    """Byte-level BPE (GPT-2 style pre-tokenizer), specials <|bos|>=0 <|eos|>=1 <|pad|>=2,
    and a post-processor that prepends <|bos|> (like Llama 3)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(train_docs, trainer=trainer, length=len(train_docs))
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A",
        pair=f"{BOS} $A {BOS} $B",
        special_tokens=[(BOS, 0)],
    )
    return tok


def save_hf_tokenizer(tok, out_dir, model_max_length=512):
    """tokenizer.json (exactly `tok`) + tokenizer_config.json (with chat_template)."""
    out_dir = Path(out_dir)
    try:
        from transformers import PreTrainedTokenizerFast as TokCls
    except ImportError:  # pragma: no cover - transformers 5 alias
        from transformers import TokenizersBackend as TokCls
    hf = TokCls(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )
    hf.chat_template = CHAT_TEMPLATE
    hf.save_pretrained(str(out_dir))
    # Keep tokenizer.json exactly as built (transformers may rewrite the post-processor).
    tok.save(str(out_dir / "tokenizer.json"))
    cfg_path = out_dir / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
    cfg["bos_token"], cfg["eos_token"], cfg["pad_token"] = BOS, EOS, PAD
    cfg["chat_template"] = CHAT_TEMPLATE
    cfg["model_max_length"] = model_max_length
    cfg["clean_up_tokenization_spaces"] = False
    # transformers 5 writes "TokenizersBackend"; the 4.x name loads in both.
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")
    jinja = out_dir / "chat_template.jinja"
    if jinja.exists():  # one source of truth: same text in both places
        jinja.write_text(CHAT_TEMPLATE)
    return hf


def encode_documents(tok, docs):
    """Each document -> [bos] + ids + [eos], concatenated."""
    import torch

    encs = tok.encode_batch(docs, add_special_tokens=False)
    out = []
    for e in encs:
        out.append(0)
        out.extend(e.ids)
        out.append(1)
    return torch.tensor(out, dtype=torch.long)


# ----------------------------------------------------------------------------- model / training

def make_config(vocab_size):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=ARCH["hidden_size"],
        intermediate_size=ARCH["intermediate_size"],
        num_hidden_layers=ARCH["num_hidden_layers"],
        num_attention_heads=ARCH["num_attention_heads"],
        num_key_value_heads=ARCH["num_key_value_heads"],
        head_dim=ARCH["head_dim"],
        max_position_embeddings=ARCH["max_position_embeddings"],
        rope_parameters={"rope_type": "default", "rope_theta": ARCH["rope_theta"]},
        rms_norm_eps=ARCH["rms_norm_eps"],
        tie_word_embeddings=ARCH["tie_word_embeddings"],
        hidden_act="silu",
        attention_bias=False,
        mlp_bias=False,
        initializer_range=0.02,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=2,
    )


def seed_everything(seed):
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def r6(x):
    return float(f"{float(x):.6g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=".train/corpus.txt")
    ap.add_argument("--out", default="models/default")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=2e-4)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--provenance", default="",
                    help="free text for the model card: which machine/run produced these files")
    ap.add_argument("--max-seconds", type=float, default=330.0,
                    help="safety stop for the training loop (breaks determinism only if hit)")
    args = ap.parse_args()

    import numpy as np
    import tokenizers
    import torch
    import torch.nn.functional as F
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    t_start = time.time()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
              "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
              "reference.json", "training_log.json", "README.md"):
        if (out_dir / f).exists():
            (out_dir / f).unlink()

    versions = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": np.__version__,
    }
    device = "cuda" if torch.cuda.is_available() else "cpu"
    device_name = torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or "cpu"
    log("versions", json.dumps(versions), "device", device, device_name)

    seed_everything(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False

    # -- corpus + tokenizer
    docs, corpus_sha, corpus_bytes = read_documents(args.corpus)
    train_docs, val_docs = split_documents(docs)
    log(f"corpus {args.corpus}: {corpus_bytes} bytes sha256 {corpus_sha}; "
        f"{len(docs)} documents (chapters), {len(train_docs)} train, {len(val_docs)} val")
    t0 = time.time()
    tok = build_tokenizer(train_docs, args.vocab_size)
    vocab_size = tok.get_vocab_size()
    log(f"tokenizer trained in {time.time() - t0:.1f}s, vocab {vocab_size}")
    save_hf_tokenizer(tok, out_dir, model_max_length=ARCH["max_position_embeddings"])
    train_ids = encode_documents(tok, train_docs)
    val_ids = encode_documents(tok, val_docs)
    train_bytes = sum(len(d.encode()) for d in train_docs)
    log(f"train tokens {len(train_ids)} ({train_bytes / len(train_ids):.2f} bytes/token), val tokens {len(val_ids)}")

    # -- model
    cfg = make_config(vocab_size)
    seed_everything(args.seed)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float()
    model.to(device)
    tied = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    n_params = sum(p.numel() for p in model.parameters())  # counts a tied matrix once
    log(f"model params {n_params} (tied embeddings: {tied})")

    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (decay if p.ndim >= 2 else no_decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=(device == "cuda"),
    )

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        p = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * min(1.0, p)))

    train_gpu = train_ids.to(device)
    val_gpu = val_ids.to(device)
    ar = torch.arange(args.ctx + 1, device=device)
    gen = torch.Generator().manual_seed(args.seed)
    amp = dict(device_type="cuda", dtype=torch.bfloat16, enabled=(device == "cuda"))

    def windows(ids_gpu, starts):
        xy = ids_gpu[starts.to(device)[:, None] + ar[None, :]]
        return xy[:, :-1], xy[:, 1:]

    val_starts = torch.arange(0, len(val_ids) - args.ctx - 1, args.ctx)
    fixed_train_starts = torch.randint(0, len(train_ids) - args.ctx - 1, (len(val_starts),),
                                       generator=torch.Generator().manual_seed(args.seed + 1))

    @torch.no_grad()
    def evaluate(ids_gpu, starts, use_amp=True):
        model.eval()
        tot, cnt = 0.0, 0
        for i in range(0, len(starts), args.batch):
            x, y = windows(ids_gpu, starts[i:i + args.batch])
            with torch.autocast(**(amp if use_amp else dict(amp, enabled=False))):
                logits = model(input_ids=x).logits
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum")
            tot += loss.item()
            cnt += y.numel()
        model.train()
        return tot / cnt

    history = []
    best = (float("inf"), -1, None)
    model.train()
    t_train = time.time()
    run_loss, run_n = 0.0, 0
    step = 0
    stopped_early = False
    for step in range(args.steps):
        lr = lr_at(step)
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, len(train_ids) - args.ctx - 1, (args.batch,), generator=gen)
        x, y = windows(train_gpu, starts)
        with torch.autocast(**amp):
            logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run_loss += loss.item()
        run_n += 1
        last = step == args.steps - 1
        if (step + 1) % args.eval_every == 0 or last:
            vl = evaluate(val_gpu, val_starts)
            el = time.time() - t_train
            rec = {"step": step + 1, "lr": lr, "train_loss": run_loss / run_n, "val_loss": vl,
                   "grad_norm": float(gnorm), "seconds": round(el, 1)}
            history.append(rec)
            run_loss, run_n = 0.0, 0
            if vl < best[0]:
                best = (vl, step + 1, {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()})
            log(f"step {step + 1:5d} lr {lr:.2e} train {rec['train_loss']:.4f} val {vl:.4f} "
                f"gnorm {rec['grad_norm']:.2f} {el:.1f}s{'  *best' if best[1] == step + 1 else ''}")
            if el > args.max_seconds and not last:
                log(f"WARNING: stopping at step {step + 1}: over --max-seconds {args.max_seconds}")
                stopped_early = True
                break
    train_seconds = time.time() - t_train
    tokens_seen = (step + 1) * args.batch * args.ctx
    log(f"trained {step + 1} steps, {tokens_seen} tokens ({tokens_seen / len(train_ids):.1f} epochs) "
        f"in {train_seconds:.1f}s; best val {best[0]:.4f} at step {best[1]}")

    model.load_state_dict(best[2])
    final_val_bf16 = evaluate(val_gpu, val_starts)
    final_val_f32 = evaluate(val_gpu, val_starts, use_amp=False)
    final_train_f32 = evaluate(train_gpu, fixed_train_starts, use_amp=False)
    log(f"best checkpoint: val loss {final_val_f32:.4f} (f32) / {final_val_bf16:.4f} (bf16 autocast), "
        f"train loss {final_train_f32:.4f} (f32, {len(fixed_train_starts)} fixed windows)")

    # -- save
    model = model.to("cpu").float()
    model.generation_config = GenerationConfig(
        bos_token_id=0, eos_token_id=1, pad_token_id=2,
        do_sample=True, temperature=0.8, top_p=0.95, top_k=50, max_length=ARCH["max_position_embeddings"],
    )
    model.save_pretrained(str(out_dir))
    st = out_dir / "model.safetensors"
    assert st.exists(), f"no model.safetensors in {out_dir}: {sorted(os.listdir(out_dir))}"
    header = json.loads(st.read_bytes()[8:8 + int.from_bytes(st.read_bytes()[:8], "little")])
    dtypes = sorted({v["dtype"] for k, v in header.items() if k != "__metadata__"})
    log(f"saved {st} ({st.stat().st_size} bytes), tensors {len(header) - ('__metadata__' in header)}, dtypes {dtypes}")
    log("files:", {p.name: p.stat().st_size for p in sorted(out_dir.iterdir())})

    # -- reload and check (CPU, f32, eager)
    m = AutoModelForCausalLM.from_pretrained(str(out_dir), dtype=torch.float32, attn_implementation="eager")
    m.eval()
    hft = AutoTokenizer.from_pretrained(str(out_dir))

    def enc(text):
        ids = hft(text)["input_ids"]
        if not ids or ids[0] != 0:
            log(f"WARNING: tokenizer did not prepend <|bos|> for {text!r}: {ids[:5]}")
            ids = [0] + ids
        return ids

    @torch.no_grad()
    def greedy(ids, n):
        out = m.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         do_sample=False, max_new_tokens=n, pad_token_id=2)
        return out[0, len(ids):].tolist()

    @torch.no_grad()
    def greedy_nocache(ids, n):
        cur, new, margins = list(ids), [], []
        for _ in range(n):
            lg = m(input_ids=torch.tensor([cur])).logits[0, -1]
            top2 = torch.topk(lg, 2)
            margins.append(float(top2.values[0] - top2.values[1]))
            t = int(top2.indices[0])
            new.append(t)
            cur.append(t)
            if t == 1:
                break
        return new, margins

    prompt = "In the beginning"
    pids = enc(prompt)
    with torch.no_grad():
        logits = m(input_ids=torch.tensor([pids])).logits[0]
    top2 = torch.topk(logits, 2, dim=-1)
    top20 = torch.topk(logits[-1], 20)
    g_new = greedy(pids, 32)
    g_nc, g_margins = greedy_nocache(pids, 32)
    if g_nc != g_new[:len(g_nc)]:
        log(f"WARNING: generate() and no-cache greedy differ: {g_new} vs {g_nc}")
    samples = []
    for p in ["In the beginning", "And Jesus said unto them,", "The LORD is my shepherd;",
              "Psalms 23\n", "And it came to pass"]:
        ids = enc(p)
        new = greedy(ids, 48)
        torch.manual_seed(args.seed)
        with torch.no_grad():
            s = m.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                           do_sample=True, temperature=0.8, top_p=0.95, top_k=50, max_new_tokens=64, pad_token_id=2)
        s_new = s[0, len(ids):].tolist()
        samples.append({
            "prompt": p, "prompt_ids": ids,
            "greedy_new_ids": new, "greedy_text": hft.decode(new),
            "sampled_seed": args.seed, "sampled_new_ids": s_new, "sampled_text": hft.decode(s_new),
        })
        log(f"--- {p!r}\n  greedy : {p}{hft.decode(new)}\n  sampled: {p}{hft.decode(s_new)}")

    tok_checks = []
    for t in ["In the beginning God created the heaven and the earth.",
              "And God said, Let there be light: and there was light.\nAnd God saw the light",
              "  Unicode: café — “quotes” 123 456789!  ", ""]:
        tok_checks.append({"text": t, "ids": hft(t)["input_ids"],
                           "ids_no_special": hft(t, add_special_tokens=False)["input_ids"],
                           "decoded_no_special": hft.decode(hft(t, add_special_tokens=False)["input_ids"])})
    msgs = [{"role": "user", "content": "Who created the heaven and the earth?"}]
    rendered = hft.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    chat_ids = hft(rendered, add_special_tokens=False)["input_ids"]

    reference = {
        "model_dir": "models/default",
        "versions": versions,
        "device": "cpu", "dtype": "float32", "attn_implementation": "eager",
        "prompt": prompt,
        "prompt_ids": pids,
        "argmax": top2.indices[:, 0].tolist(),
        "argmax_margin": [r6(v) for v in (top2.values[:, 0] - top2.values[:, 1]).tolist()],
        "last_logits_top20": {"ids": top20.indices.tolist(), "values": [r6(v) for v in top20.values.tolist()]},
        "last_logits": [r6(v) for v in logits[-1].tolist()],
        "greedy": {"max_new_tokens": 32, "new_ids": g_new, "text": hft.decode(g_new),
                   "no_cache_new_ids": g_nc, "min_margin": r6(min(g_margins)) if g_margins else None},
        "samples": samples,
        "tokenizer_checks": tok_checks,
        "chat_template_check": {"messages": msgs, "add_generation_prompt": True,
                                "rendered": rendered, "ids": chat_ids},
    }
    (out_dir / "reference.json").write_text(json.dumps(reference, indent=1, ensure_ascii=False) + "\n")
    (out_dir / "training_log.json").write_text(json.dumps({
        "args": vars(args), "versions": versions, "device": device_name,
        "corpus_sha256": corpus_sha, "corpus_bytes": corpus_bytes,
        "documents": {"train": len(train_docs), "val": len(val_docs)},
        "tokens": {"train": len(train_ids), "val": len(val_ids)},
        "params": n_params, "best_step": best[1], "stopped_early": stopped_early,
        "final": {"val_loss_f32": final_val_f32, "val_loss_bf16": final_val_bf16, "train_loss_f32": final_train_f32},
        "train_seconds": round(train_seconds, 1), "history": history,
    }, indent=1) + "\n")

    write_model_card(out_dir, args, versions, device_name, corpus_sha, corpus_bytes, docs, train_docs,
                     val_docs, train_ids, val_ids, n_params, vocab_size, best, history, final_val_f32,
                     final_train_f32, train_seconds, tokens_seen, stopped_early, samples, reference,
                     provenance=args.provenance)
    log(f"done in {time.time() - t_start:.1f}s")


def write_model_card(out_dir, args, versions, device_name, corpus_sha, corpus_bytes, docs, train_docs,
                     val_docs, train_ids, val_ids, n_params, vocab_size, best, history, final_val,
                     final_train, train_seconds, tokens_seen, stopped_early, samples, reference, provenance=""):
    a = ARCH
    size = (out_dir / "model.safetensors").stat().st_size
    last_hist = history[-1] if history else {}
    sample_md = "\n".join(
        f"- prompt `{s['prompt']!r}`\n  - greedy: {json.dumps(s['prompt'] + s['greedy_text'], ensure_ascii=False)}\n"
        f"  - sampled (T=0.8, top_p=0.95, top_k=50, seed {s['sampled_seed']}): "
        f"{json.dumps(s['prompt'] + s['sampled_text'], ensure_ascii=False)}"
        for s in samples
    )
    card = f"""# tessera default model: `kjv-llama-3m`

A tiny Llama-architecture causal language model trained from scratch on the King James Bible. It is
the model tessera's README example and CLI use by default: small enough to ship in the repository and to
run on a CPU-only WebGPU adapter (SwiftShader), real enough that its output is recognisable KJV-like text.
It knows nothing but the style and phrases of the KJV; it is not an assistant.

## Architecture (`config.json`)
- `LlamaForCausalLM`; {a['num_hidden_layers']} layers, hidden {a['hidden_size']}, {a['num_attention_heads']} query heads and
  {a['num_key_value_heads']} key/value heads (grouped-query attention), head_dim {a['head_dim']}, SwiGLU MLP with intermediate size
  {a['intermediate_size']}, RMSNorm eps {a['rms_norm_eps']}, RoPE theta {a['rope_theta']:g} (no scaling), max_position_embeddings
  {a['max_position_embeddings']}, tied input/output embeddings (`tie_word_embeddings: true`, so the safetensors file has no
  `lm_head.weight`), no biases.
- Vocabulary {vocab_size}. Parameters: {n_params:,} (tied matrix counted once).
- Weights: `model.safetensors`, all tensors F32, {size:,} bytes.
- `config.json` was written by transformers {versions['transformers']}: RoPE settings are under `rope_parameters`
  (`{{"rope_type": "default", "rope_theta": {a['rope_theta']:g}}}`) rather than a top-level `rope_theta`.

## Files
`config.json`, `generation_config.json`, `model.safetensors`, `tokenizer.json`, `tokenizer_config.json`
(with `chat_template`), `chat_template.jinja` (the same template; transformers 5 writes it), `reference.json`,
`training_log.json` (arguments, versions, corpus hash, loss curve) and this card.

## Tokenizer (`tokenizer.json`, `tokenizer_config.json`)
- Byte-level BPE trained with the HF `tokenizers` library ({versions['tokenizers']}) on the training chapters:
  GPT-2 style ByteLevel pre-tokenizer (regex split, no prefix space) and decoder, {vocab_size} tokens
  including 256 byte symbols and the specials `<|bos|>` = 0, `<|eos|>` = 1, `<|pad|>` = 2.
- The post-processor prepends `<|bos|>` (as Llama 3 does); every training document is
  `<|bos|> chapter text <|eos|>`.
- `tokenizer_config.json` carries a plain chat template (`role: content` lines, then `assistant:`), so
  the runtime's template path has something real to render; the model was not trained on chat.
- `generation_config.json`: bos 0, eos 1, pad 2, sampling T=0.8, top_p 0.95, top_k 50.

## Training data
- The King James Version (Authorized Version) of the Bible, public domain (Debian's copyright file:
  "The copyright for the King James Version text of the Bible is expired"; in the United Kingdom the
  Crown's letters patent still govern printing it). Taken from Debian's `bible-kjv` / `bible-kjv-text`
  packages (version 4.38): `apt-get install -y bible-kjv && bible -m 8192 gen1:1-rev22:21 > .train/corpus_raw.txt`,
  then `python3 scripts/train/prepare_corpus.py .train/corpus_raw.txt .train/corpus.txt` (one verse per line,
  verse numbers removed, each chapter headed by e.g. `Genesis 1`, chapters separated by a blank line).
- Corpus: {corpus_bytes:,} bytes, sha256 `{corpus_sha}`, {len(docs)} chapters.
- Split: every 40th chapter (index % 40 == 20) is validation: {len(train_docs)} train chapters
  ({len(train_ids):,} tokens), {len(val_docs)} validation chapters ({len(val_ids):,} tokens).

## Training
- Script: `scripts/train/train_default.py` (deterministic given `--seed`, on the same hardware and
  software). Command: `python3 scripts/train/train_default.py --corpus .train/corpus.txt --out models/default
  --seed {args.seed} --steps {args.steps}`.
- PyTorch {versions['torch']}, transformers {versions['transformers']}, on one {device_name}.
- AdamW (betas 0.9/0.95, weight decay {args.weight_decay} on matrices), peak LR {args.lr:g}, {args.warmup} warmup steps,
  cosine decay to {args.min_lr:g} over {args.steps} steps, batch {args.batch} x context {args.ctx} tokens, gradient clip 1.0,
  bf16 autocast, eager attention. Validation loss every {args.eval_every} steps; the checkpoint with the best
  validation loss is the one saved{' (training stopped early at the time limit)' if stopped_early else ''}.
{provenance}- Ran {len(history) and history[-1]['step']} steps ({tokens_seen:,} tokens, {tokens_seen / len(train_ids):.1f} epochs) in {train_seconds:.0f} s.
  Best checkpoint: step {best[1]}.
- Final losses of the saved checkpoint (f32, mean cross-entropy per token, nats): validation {final_val:.4f},
  train {final_train:.4f} (fixed sample of {len(range(0, len(val_ids) - args.ctx - 1, args.ctx))} training windows).
  Last logged running train loss (bf16): {last_hist.get('train_loss', float('nan')):.4f}. The whole curve is in
  `training_log.json`.

## Reference outputs (`reference.json`)
Produced by transformers {versions['transformers']} from the saved files (CPU, float32, eager attention), for
checking tessera's implementation: for the prompt {json.dumps(reference['prompt'])} (ids `{reference['prompt_ids']}`),
the argmax at every position and its top-1/top-2 margin, the last position's top-20 logits and all
{vocab_size} last-position logits, a 32-token greedy continuation (`model.generate(do_sample=False)`),
greedy and seeded sampled continuations of five prompts, tokenizer encodings of a few strings and the
rendered chat template. Greedy ids and argmax are exact only where the top-1/top-2 gap is clear:
`argmax_margin` (per prompt position, smallest {min(reference['argmax_margin']):g}) and `greedy.min_margin`
(smallest gap along the 32 greedy steps, {reference['greedy']['min_margin']:g}) say how much numerical error an
implementation can have before its choice flips. The sampled continuations depend on PyTorch's RNG and
are illustrations, not test targets.

Greedy from {json.dumps(reference['prompt'])}: {json.dumps(reference['prompt'] + reference['greedy']['text'], ensure_ascii=False)}

Samples:
{sample_md}

## License
Weights, tokenizer and reference files: trained by the tessera project from public-domain text;
released under the same terms as the rest of this repository. The KJV text itself is public domain.
"""
    (out_dir / "README.md").write_text(card)


if __name__ == "__main__":
    main()
