"""The peer of bench/decode.ts: PyTorch eager (transformers, static KV cache, greedy) decode tokens/s on the same
random-weight Llama shapes, on the same GPU. Prints and writes one JSON receipt.

Usage (on the GPU machine): python3 bench/torch_decode.py --out FILE [--tokens 256] [--presets llama-1b-128k,llama-1.1b]
"""
import argparse
import json
import platform
import time

import torch
import transformers

from receipt_commit import receipt_commit

# The same shapes as bench/decode.ts's PRESETS.
PRESETS = {
    "llama-1.1b": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048),
    "llama-1b-128k": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=2048, tie_word_embeddings=True),
    "llama-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=4096),
    # gpt-oss-20b shapes: 24 layers, 32 experts, top-4, hidden 2880; the anchor runs its experts in bf16 (the PyTorch
    # eager path of GptOssForCausalLM; the released MXFP4 form needs triton kernels this machine's transformers does not
    # take for random weights)
    "gpt-oss-20b": dict(arch="gpt_oss", dtype="bfloat16", hidden_size=2880, intermediate_size=2880, num_hidden_layers=24, num_attention_heads=64, num_key_value_heads=8, head_dim=64, vocab_size=201088, max_position_embeddings=4096, num_local_experts=32, num_experts_per_tok=4, sliding_window=128, tie_word_embeddings=False),
    "qwen3-30b-a3b": dict(arch="qwen3_moe", dtype="bfloat16", hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768, num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4, head_dim=128, vocab_size=151936, max_position_embeddings=4096, num_experts=128, num_experts_per_tok=8, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], tie_word_embeddings=False),
    "qwen3-0.6b": dict(arch="qwen3", hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=4096, tie_word_embeddings=True),
}


ARCHS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM"),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
    "gpt_oss": ("GptOssConfig", "GptOssForCausalLM"),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM"),
}


def build(name: str, dtype: torch.dtype):
    """The preset's model with random weights, created on the GPU in its dtype (an 8B model initialised on the CPU
    takes minutes; a 20B one initialised in f32 would double the memory)."""
    spec = dict(PRESETS[name])
    arch = spec.pop("arch", "llama")
    dtype = getattr(torch, spec.pop("dtype", str(dtype).replace("torch.", "")))
    config_cls, model_cls = (getattr(transformers, n) for n in ARCHS[arch])
    cfg = config_cls(**spec)
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device("cuda"):
            model = model_cls(cfg)
    finally:
        torch.set_default_dtype(old)
    return cfg, model.to(dtype=dtype).eval()


def prefill(name: str, dtype: torch.dtype, lengths: list) -> list:
    """Plain forward over T tokens (eager), best of 3 after a warm-up: prefill tok/s."""
    cfg, model = build(name, dtype)
    out = []
    for T in lengths:
        ids = torch.tensor([[(i * 7 + 3) % cfg.vocab_size for i in range(T)]], device="cuda")
        with torch.no_grad():
            model(ids)
            best = float("inf")
            for _ in range(3):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                model(ids)
                torch.cuda.synchronize()
                best = min(best, time.perf_counter() - t0)
        r = {"model": name, "mode": "eager forward", "dtype": str(next(model.parameters()).dtype).replace("torch.", ""), "prefillTokens": T, "ms": best * 1e3, "prefillTokensPerSecond": T / best}
        print(json.dumps(r))
        out.append(r)
    del model
    torch.cuda.empty_cache()
    return out


def run(name: str, dtype: torch.dtype, tokens: int, prompt: int, compiled: bool) -> dict:
    cfg, model = build(name, dtype)
    ids = torch.tensor([[(i * 7 + 3) % cfg.vocab_size for i in range(prompt)]], device="cuda")

    def gen(n: int) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            # disable_compile: transformers compiles the forward on its own with a static cache (a recompile for every
            # new cache length lands inside the timed runs); the peer measured here is PyTorch eager.
            model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, cache_implementation="static", disable_compile=not compiled, pad_token_id=0)
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    gen(8)  # warm-up (kernels, cache allocation)
    # compiled: the first run of each length compiles (and captures) for that cache length; the best of the
    # following runs is the figure.
    t1 = min(gen(1) for _ in range(3))
    tn = min(gen(tokens + 1) for _ in range(3 if compiled else 2))
    step = (tn - t1) / tokens
    out = {"model": name, "mode": "transformers auto-compile (static cache)" if compiled else "eager", "dtype": str(next(model.parameters()).dtype).replace("torch.", ""), "prefillTokens": prompt, "decodeTokens": tokens, "medianStepMs": step * 1e3, "decodeTokensPerSecond": 1 / step}
    print(json.dumps(out))
    del model
    torch.cuda.empty_cache()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="torch-decode.json")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--presets", default="llama-1.1b,llama-1b-128k")
    ap.add_argument("--compiled", action="store_true", help="also measure transformers' compiled static-cache path")
    ap.add_argument("--prefill", default="", help="prompt lengths whose plain forward is timed, e.g. 512,2048")
    a = ap.parse_args()
    results = [run(p, torch.float16, a.tokens, 16, c) for p in a.presets.split(",") for c in ([False, True] if a.compiled else [False])]
    lengths = [int(x) for x in a.prefill.split(",") if x]
    if lengths:
        results += [r for p in a.presets.split(",") for r in prefill(p, torch.float16, lengths)]
    receipt = {
        "benchmark": "torch-decode",
        "commit": receipt_commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": platform.node(),
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "method": "LlamaForCausalLM (Qwen3ForCausalLM, GptOssForCausalLM, Qwen3MoeForCausalLM for those presets) with random weights in float16 (bfloat16 for the MoE presets), default attention, generate(do_sample=False, cache_implementation='static', min_new_tokens=N), eager (disable_compile=True) and, with --compiled, transformers' own compiled static-cache path; step = (best of 2-3 runs for N+1 new tokens - best of 3 for 1) / N, after a warm-up",
        "results": results,
    }
    with open(a.out, "w") as f:
        json.dump(receipt, f, indent=2)


if __name__ == "__main__":
    main()
