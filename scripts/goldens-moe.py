#!/usr/bin/env python3
"""Golden fixtures for tessera's mixture-of-experts models (issue 12), produced by HF transformers (PyTorch).

Builds tiny RANDOM-weight GptOssForCausalLM and Qwen3MoeForCausalLM checkpoints (seeded), saves them with
`save_pretrained` (config.json + model.safetensors, F32) next to the default model's tokenizer, reloads each the way
a user would (CPU, float32, attn_implementation="eager") and writes golden.json in the shape of the dense fixtures
(scripts/fixtures/make_hf_fixtures.py, read by test/models.test.ts and test/models-moe-goldens.test.ts):

  input_ids, logits [T][vocab] (6 significant digits; the last row is the last-position logits), argmax,
  argmax_margin, greedy {prompt_ids, new_ids (8 tokens, model.generate(do_sample=False)), no_cache_new_ids,
  step_logits, step_margin, ...}, plus MoE facts: router_min_margin (smallest gap between the k-th and (k+1)-th
  router logit over every routed token of the prompt and the greedy steps; goldens are fragile below ~1e-4),
  clamp_fraction (gpt-oss: share of gate/up pre-activations beyond swiglu_limit), rope (inv_freq and
  attention_scaling of layer 0's rotary embedding), tensors (name -> dtype, shape as saved).

Fixtures (folders under --out):
  gpt-oss          GptOss, 8 experts, top-2, 3 layers sliding/full/sliding (window 4, prompt 12 > window), YaRN
                   (factor 32 over 64 positions, truncate false), attention biases, sinks, router bias, expert
                   biases, gate/up pre-activations scaled so the swiglu clamp at 7 binds. Expert matrices are drawn
                   on the MXFP4 grid, so gpt-oss-mxfp4 holds the same numbers.
  gpt-oss-mxfp4    the same model with experts in the released MXFP4 form (*_blocks U8 [E, out, in/32, 16], low
                   nibble first, *_scales U8 e8m0 [E, out, in/32]; quantization_config quant_method mxfp4),
                   reloaded by transformers with Mxfp4Config(dequantize=True) (its CPU path); the script checks
                   its logits equal gpt-oss's.
  gpt-oss-e32k4    GptOss, 32 experts, top-4, MXFP4 form, 4 layers, default layer_types (even layers sliding),
                   window 5, YaRN with truncate true (the default).
  gpt-oss-e4k1     GptOss, 4 experts, top-1 (softmax over one: weight 1), float form, 2 layers, window 3.
  qwen3-moe        Qwen3Moe, 8 experts, top-2, norm_topk_prob true, mlp_only_layers [1] (layer 1 dense), 3 layers.
  qwen3-moe-e4k1   Qwen3Moe, 4 experts, top-1, norm_topk_prob false, decoder_sparse_step 2 (layers 1, 3 sparse).
  qwen3-moe-e32k4  Qwen3Moe, 32 experts, top-4, norm_topk_prob false, 2 layers.

Requirements: python3 with torch and transformers 5.x (written for transformers 5.17, torch 2.11), numpy,
safetensors; no network. CPU is enough (the goldens are computed on the CPU in float32).

Usage: python3 scripts/goldens-moe.py --out test/fixtures/hf [--tokenizer-dir models/default] [--only gpt-oss ...]
       python3 scripts/goldens-moe.py --self-test   (numpy only: checks the MXFP4 packer against worked values)
"""
import argparse
import importlib.util
import json
import shutil
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
N_PROMPT = 12
N_NEW = 8

# ---------------------------------------------------------------------------------------------------------------
# MXFP4 (numpy only). Layout of transformers / gpt-oss: blocks of 32 along the last (input) dim; *_blocks [..., G, 16]
# with element 2j in the low nibble of byte j and 2j+1 in the high nibble; *_scales [..., G] e8m0, x = E2M1 * 2^(e-127).
# Scale rule (ggml's quantize_row_mxfp4_ref, same as src/formats/quant/mxfp4.ts): e = floor(log2 amax) - 2 + 127;
# nearest E2M1 code, ties to the lower code.
# ---------------------------------------------------------------------------------------------------------------
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def mxfp4_quantize(x):
    """x [..., K] (K % 32 == 0) -> (blocks uint8 [..., K/32, 16], scales uint8 [..., K/32])."""
    x = np.asarray(x, dtype=np.float32)
    *lead, K = x.shape
    assert K % 32 == 0, f"MXFP4 needs the last dim to be a multiple of 32, got {K}"
    b = x.reshape(-1, 32)
    amax = np.abs(b).max(axis=1)
    with np.errstate(divide="ignore"):
        e = np.where(amax > 0, np.floor(np.log2(amax.astype(np.float32)).astype(np.float32)) - 2 + 127, 0)
    e = np.clip(e, 0, 254).astype(np.int32)
    d = np.ldexp(np.float32(1), e - 127).astype(np.float32)
    cand = (E2M1[None, None, :] * d[:, None, None]).astype(np.float32)  # [nb, 1, 16]
    err = np.abs(cand - b[:, :, None])  # [nb, 32, 16]
    codes = np.argmin(err, axis=2).astype(np.uint8)  # first minimum: ties to the lower code
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    return packed.reshape(*lead, K // 32, 16), e.astype(np.uint8).reshape(*lead, K // 32)


def mxfp4_dequantize(blocks, scales):
    """(blocks [..., G, 16], scales [..., G]) -> float32 [..., G*32] (no transpose)."""
    blocks = np.asarray(blocks, dtype=np.uint8)
    lo = E2M1[blocks & 15]
    hi = E2M1[blocks >> 4]
    vals = np.stack([lo, hi], axis=-1).reshape(*blocks.shape[:-1], 32)
    d = np.ldexp(np.float32(1), np.asarray(scales, dtype=np.int32) - 127).astype(np.float32)
    out = (vals * d[..., None]).astype(np.float32)
    return out.reshape(*blocks.shape[:-2], blocks.shape[-2] * 32)


def self_test():
    # worked block (see test/formats-mxfp4.test.ts): amax 5 -> e 127; 5 -> 4 (tie 4/6), -0.3 -> -0.5, 0.75 -> 0.5
    x = np.zeros(32, dtype=np.float32)
    x[:6] = [5, -0.3, 0.75, 2.4, -4.9, 1.25]
    x[31] = 3.5
    blocks, scales = mxfp4_quantize(x)
    assert scales.tolist() == [127], scales
    y = mxfp4_dequantize(blocks, scales)
    assert y[:6].tolist() == [4, -0.5, 0.5, 2, -4, 1], y[:6]
    assert y[31] == 3, y[31]
    assert blocks[0, 0] == (6 | (9 << 4)), hex(blocks[0, 0])  # elements 0 (code 6) and 1 (code 9)
    rng = np.random.default_rng(0)
    w = rng.normal(size=(3, 5, 64)).astype(np.float32)
    b, s = mxfp4_quantize(w)
    assert b.shape == (3, 5, 2, 16) and s.shape == (3, 5, 2)
    q = mxfp4_dequantize(b, s)
    b2, s2 = mxfp4_quantize(q)
    assert (b2 == b).all() and (s2 == s).all(), "re-quantizing grid values must be the identity"
    print("self-test ok: MXFP4 packer matches the worked values and round-trips", flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Fixture definitions
# ---------------------------------------------------------------------------------------------------------------
COMMON = dict(
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    bos_token_id=0,
    eos_token_id=1,
    pad_token_id=2,
)
GPT_OSS_MXFP4_SKIP = ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]


def yarn(theta, factor, orig, truncate):
    # max_position_embeddings is set to factor * orig below: transformers versions differ on whether YaRN's factor
    # comes from `factor` or from max_position_embeddings / original_max_position_embeddings; equal here, so both agree.
    p = {"rope_type": "yarn", "rope_theta": theta, "factor": float(factor), "beta_fast": 32.0, "beta_slow": 1.0,
         "original_max_position_embeddings": orig}
    if truncate is not None:
        p["truncate"] = truncate
    return p


def make_config(cls, **kw):
    """cls(**kw); a field this transformers' config class does not declare (strict dataclass configs refuse unknown
    keywords) is set as an attribute afterwards, so config.json still carries it."""
    extra = {}
    while True:
        try:
            cfg = cls(**kw)
            break
        except TypeError as e:
            bad = next((k for k in kw if f"'{k}'" in str(e)), None)
            if bad is None:
                raise
            extra[bad] = kw.pop(bad)
            print(f"note: {cls.__name__} does not take {bad}={extra[bad]!r}; set as an attribute", flush=True)
    for k, v in extra.items():
        setattr(cfg, k, v)
    return cfg


def fixture_specs(vocab_size):
    from transformers import GptOssConfig, Qwen3MoeConfig

    def gpt(E, k, layers, window, layer_types, truncate, intermediate=64):
        kw = dict(COMMON, vocab_size=vocab_size, num_hidden_layers=layers, num_local_experts=E, num_experts_per_tok=k,
                  intermediate_size=intermediate, sliding_window=window, rms_norm_eps=1e-5, attention_bias=True,
                  rope_parameters=yarn(150000.0, 32, 64, truncate), max_position_embeddings=32 * 64,
                  tie_word_embeddings=False, swiglu_limit=7.0)
        if layer_types is not None:
            kw["layer_types"] = layer_types
        return lambda: make_config(GptOssConfig, **kw)

    def qwen(E, k, layers, norm, step, only):
        return lambda: make_config(
            Qwen3MoeConfig, **COMMON, vocab_size=vocab_size, num_hidden_layers=layers, num_experts=E, num_experts_per_tok=k,
            moe_intermediate_size=32, intermediate_size=128, norm_topk_prob=norm, decoder_sparse_step=step,
            mlp_only_layers=only, rms_norm_eps=1e-6, max_position_embeddings=512, tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, use_sliding_window=False)

    lt3 = ["sliding_attention", "full_attention", "sliding_attention"]
    return {
        # name: (make_config, seed, mxfp4 form, same model as)
        "gpt-oss": (gpt(8, 2, 3, 4, lt3, False), 501, False),
        "gpt-oss-mxfp4": (gpt(8, 2, 3, 4, lt3, False), 501, True),
        "gpt-oss-e32k4": (gpt(32, 4, 4, 5, None, None), 502, True),
        "gpt-oss-e4k1": (gpt(4, 1, 2, 3, ["sliding_attention", "full_attention"], False), 503, False),
        "qwen3-moe": (qwen(8, 2, 3, True, 1, [1]), 601, False),
        "qwen3-moe-e4k1": (qwen(4, 1, 4, False, 2, []), 602, False),
        "qwen3-moe-e32k4": (qwen(32, 4, 2, False, 1, []), 603, False),
    }


# Random-init settings tried in order (first that passes choose_init's criteria is kept).
INIT_CANDIDATES = [
    {"embed_std": 0.2, "matrix_std": 0.1, "expert_std": 0.6, "down_std": 0.05, "norm_offset": 0.0},
    {"embed_std": 0.2, "matrix_std": 0.2, "expert_std": 0.4, "down_std": 0.05, "norm_offset": 0.0},
    {"embed_std": 0.1, "matrix_std": 0.15, "expert_std": 0.6, "down_std": 0.03, "norm_offset": 0.0},
    {"embed_std": 0.2, "matrix_std": 0.1, "expert_std": 0.8, "down_std": 0.02, "norm_offset": 0.0},
    {"embed_std": 0.1, "matrix_std": 0.1, "expert_std": 0.5, "down_std": 0.05, "norm_offset": 1.0},
]
BIAS_STD = 0.1
SINK_STD = 1.0
ROUTER_STD = 0.5
NORM_NOISE_STD = 0.1


def to_mxfp4_grid(p, name):
    """Round an expert matrix parameter to the MXFP4 grid along its input dim (gpt-oss params are [E, in, out])."""
    import torch

    w = p.detach().float().cpu().numpy()
    wt = np.swapaxes(w, 1, 2)  # [E, out, in]: blocks along the input
    b, s = mxfp4_quantize(wt)
    q = np.swapaxes(mxfp4_dequantize(b, s), 1, 2)
    p.copy_(torch.from_numpy(np.ascontiguousarray(q)))


def randomize(model, seed, init, gpt_oss):
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if "norm" in name and p.ndim == 1:
                p.copy_(1.0 + init["norm_offset"] + NORM_NOISE_STD * noise)
            elif name.endswith("sinks"):
                p.copy_(SINK_STD * noise)
            elif name.endswith("bias"):
                p.copy_(BIAS_STD * noise)
            elif "embed_tokens" in name or "lm_head" in name:
                p.copy_(init["embed_std"] * noise)
            elif name.endswith("router.weight") or name.endswith("mlp.gate.weight"):
                p.copy_(ROUTER_STD * noise)
            elif "experts" in name and ("gate_up" in name or "gate_proj" in name or "up_proj" in name):
                p.copy_(init["expert_std"] * noise)
            elif "experts" in name and "down" in name:
                p.copy_(init["down_std"] * noise)
            else:
                p.copy_(init["matrix_std"] * noise)
        if gpt_oss:
            cfg = model.config
            E, H, I = cfg.num_local_experts, cfg.hidden_size, cfg.intermediate_size
            want = {"experts.gate_up_proj": (E, H, 2 * I), "experts.down_proj": (E, I, H)}
            for name, p in model.named_parameters():
                for suffix, shape in want.items():
                    if name.endswith(suffix):
                        # tessera (src/models/weights.ts) and write_mxfp4_form read transformers' [E, in, out] layout
                        assert tuple(p.shape) == shape, (
                            f"{name} has shape {tuple(p.shape)}, expected {shape}: this transformers stores gpt-oss "
                            "experts differently; update src/models/weights.ts and this script")
                        to_mxfp4_grid(p, name)


def build(make_cfg, seed, init, gpt_oss):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(make_cfg(), attn_implementation="eager").float()
    randomize(model, seed, init, gpt_oss)
    model.eval()
    return model


class MoeProbe:
    """Forward pre-hooks on each MoE block: router logits of every routed token, computed from the block's input."""

    def __init__(self, model):
        self.margins = []
        self.clamped = []
        self.handles = []
        cfg = model.config
        self.k = cfg.num_experts_per_tok
        self.limit = float(getattr(cfg, "swiglu_limit", 7.0))
        for layer in model.model.layers:
            mlp = layer.mlp
            router = getattr(mlp, "router", None) or getattr(mlp, "gate", None)
            if router is None or not hasattr(router, "weight") or router.weight.shape[0] != getattr(cfg, "num_local_experts", getattr(cfg, "num_experts", -1)):
                continue  # a dense layer
            self.handles.append(mlp.register_forward_pre_hook(self._hook(mlp, router)))

    def _hook(self, mlp, router):
        import torch

        def fn(_module, args):
            x = args[0].reshape(-1, args[0].shape[-1]).float()
            logits = torch.nn.functional.linear(x, router.weight.float(), None if getattr(router, "bias", None) is None else router.bias.float())
            top = torch.topk(logits, min(self.k + 1, logits.shape[-1]), dim=-1).values
            if top.shape[-1] > self.k:
                self.margins.append(float((top[:, self.k - 1] - top[:, self.k]).min()))
            experts = getattr(mlp, "experts", None)
            gu = getattr(experts, "gate_up_proj", None)
            if gu is not None and hasattr(experts, "gate_up_proj_bias"):  # gpt-oss: [E, H, 2I]
                w = gu.float()
                if w.shape[1] != x.shape[-1]:
                    w = w.transpose(1, 2)
                pre = torch.einsum("th,ehc->etc", x, w) + experts.gate_up_proj_bias.float()[:, None, :]
                gate, up = pre[..., ::2], pre[..., 1::2]
                self.clamped.append(float(((gate > self.limit).float().mean() + (up.abs() > self.limit).float().mean()) / 2))
        return fn

    def close(self):
        for h in self.handles:
            h.remove()


def load_base():
    spec = importlib.util.spec_from_file_location("make_hf_fixtures", HERE / "fixtures" / "make_hf_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def choose_init(base, name, make_cfg, seed, gpt_oss, prompt_ids):
    best = None
    for i, init in enumerate(INIT_CANDIDATES):
        model = build(make_cfg, seed, init, gpt_oss)
        probe = MoeProbe(model)
        pr = base.probe(model, prompt_ids, N_NEW)
        probe.close()
        st = base.stats(pr, prompt_ids)
        st["router_min_margin"] = min(probe.margins) if probe.margins else None
        st["clamp_fraction"] = (sum(probe.clamped) / len(probe.clamped)) if probe.clamped else None
        rm = st["router_min_margin"] if st["router_min_margin"] is not None else 1.0
        good = (st["distinct_greedy"] >= 4 and st["identity_frac"] <= 0.5 and st["min_margin"] >= 0.02
                and 0.5 <= st["logits_std"] <= 20 and rm >= 1e-3
                and (not gpt_oss or (st["clamp_fraction"] or 0) >= 0.01))
        print(f"[{name}] init candidate {i} {init}: {st} {'OK' if good else ''}", flush=True)
        score = (good, min(st["distinct_greedy"], 4), min(rm, 1e-3), -st["identity_frac"], min(st["min_margin"], 0.02))
        if best is None or score > best[0]:
            best = (score, i, init)
        if good:
            break
    if not best[0][0]:
        print(f"[{name}] WARNING: no candidate met every criterion; using candidate {best[1]}", flush=True)
    return best[1], best[2]


def write_mxfp4_form(out, quant_skip):
    """Replace the float experts of a saved gpt-oss checkpoint by *_blocks / *_scales (the released layout)."""
    import torch
    from safetensors.torch import load_file, save_file

    st = load_file(str(out / "model.safetensors"))
    new = {}
    for k, v in st.items():
        if k.endswith("mlp.experts.gate_up_proj") or k.endswith("mlp.experts.down_proj"):
            wt = np.ascontiguousarray(np.swapaxes(v.float().numpy(), 1, 2))  # [E, in, out] -> [E, out, in]
            b, s = mxfp4_quantize(wt)
            assert np.array_equal(mxfp4_dequantize(b, s), wt), f"{k}: weights are not on the MXFP4 grid"
            new[k + "_blocks"] = torch.from_numpy(b)
            new[k + "_scales"] = torch.from_numpy(s)
        else:
            new[k] = v
    (out / "model.safetensors").unlink()
    save_file(new, str(out / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((out / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": quant_skip}
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def reload(out, mxfp4):
    import torch
    from transformers import AutoModelForCausalLM

    if not mxfp4:
        m = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager")
        return m.eval(), "from_pretrained float32"
    from transformers import Mxfp4Config

    errors = []
    attempts = (
        ("Mxfp4Config(dequantize=True), device_map cpu", dict(quantization_config=Mxfp4Config(dequantize=True), device_map="cpu")),
        ("Mxfp4Config(dequantize=True)", dict(quantization_config=Mxfp4Config(dequantize=True))),
        ("the config's quantization_config", {}),
    )
    for how, kw in attempts:
        try:
            m = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32, attn_implementation="eager", **kw)
            # dequantized experts come back as bfloat16 (exact: 2-bit mantissas times powers of two); compute in f32
            try:
                m = m.float()
            except Exception:  # noqa: BLE001 (some quantized models refuse .float(): cast the tensors themselves)
                with torch.no_grad():
                    for p in m.parameters():
                        p.data = p.data.float()
            return m.eval(), f"from_pretrained with {how}"
        except Exception as e:  # noqa: BLE001
            errors.append(f"{how}: {type(e).__name__}: {e}")
    raise RuntimeError("transformers could not load the MXFP4 checkpoint: " + " | ".join(errors))


def rope_facts(m):
    re = getattr(m.model, "rotary_emb", None)
    if re is None:
        layer0 = m.model.layers[0].self_attn
        re = getattr(layer0, "rotary_emb", None)
    if re is None:
        return None
    return {"inv_freq": [float(v) for v in re.inv_freq.float().tolist()], "attention_scaling": float(getattr(re, "attention_scaling", 1.0))}


def make_one(base, name, spec, tok_dir, out_root, prompt_ids, versions, reference_logits):
    import torch

    make_cfg, seed, mxfp4 = spec
    gpt_oss = name.startswith("gpt-oss")
    out = out_root / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cand, init = choose_init(base, name, make_cfg, seed, gpt_oss, prompt_ids)
    model = build(make_cfg, seed, init, gpt_oss)
    model.generation_config.bos_token_id = 0
    model.generation_config.eos_token_id = 1
    model.generation_config.pad_token_id = 2
    model.save_pretrained(str(out))
    if mxfp4:
        write_mxfp4_form(out, GPT_OSS_MXFP4_SKIP)
    for f in base.TOKENIZER_FILES:
        if (tok_dir / f).exists():
            shutil.copy(tok_dir / f, out / f)
    info = base.safetensors_info(out / "model.safetensors")
    print(f"[{name}] tensors:", json.dumps(info), flush=True)
    bad = {k: v for k, v in info.items() if v[0] not in ("F32", "U8")}
    assert not bad, f"{name}: tensors neither F32 nor U8: {bad}"

    m, how = reload(out, mxfp4)
    print(f"[{name}] reloaded ({how}): class {type(m).__name__}, attn {m.config._attn_implementation}", flush=True)
    probe = MoeProbe(m)
    pr = base.probe(m, prompt_ids, N_NEW)
    ids = torch.tensor([prompt_ids])
    with torch.no_grad():
        gen = m.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=N_NEW,
                         min_new_tokens=0, pad_token_id=2, output_logits=True, return_dict_in_generate=True)
    probe.close()
    new_ids = gen.sequences[0, len(prompt_ids):].tolist()
    gen_logits = torch.stack([x[0].float() for x in gen.logits])
    k = min(len(gen_logits), len(pr["step_logits"]))
    cache_diff = float((gen_logits[:k] - pr["step_logits"][:k]).abs().max())
    agree = pr["new"][:len(new_ids)] == new_ids
    st = base.stats(pr, prompt_ids)
    st["router_min_margin"] = min(probe.margins) if probe.margins else None
    st["clamp_fraction"] = (sum(probe.clamped) / len(probe.clamped)) if probe.clamped else None
    print(f"[{name}] {st}; argmax {pr['argmax']}", flush=True)
    print(f"[{name}] greedy {new_ids}; no-cache agrees: {agree}; max |generate - full forward| {cache_diff:.2e}", flush=True)
    if not agree:
        print(f"[{name}] WARNING: no-cache greedy {pr['new']}", flush=True)
    # the MXFP4 form of a model must give the logits of its float form (same numbers, transformers' dequantization)
    same_as = None
    if mxfp4 and name.replace("-mxfp4", "") in reference_logits:
        same_as = name.replace("-mxfp4", "")
        d = float((pr["logits"] - reference_logits[same_as]).abs().max())
        print(f"[{name}] max |logits - {same_as} logits| = {d:.3e}", flush=True)
        assert d <= 1e-4, f"{name}: MXFP4 form differs from {same_as} by {d}: the blocks/scales layout is wrong"
    reference_logits[name] = pr["logits"]

    r6 = base.r6
    golden = {
        "architecture": type(m).__name__,
        "model_type": m.config.model_type,
        "prompt_text_prefix": base.PROMPT_TEXT,
        "input_ids": list(prompt_ids),
        "logits": [[r6(v) for v in row] for row in pr["logits"].tolist()],
        "last_logits_f32": [float(v) for v in pr["logits"][-1].tolist()],
        "argmax": pr["argmax"],
        "argmax_margin": [r6(v) for v in pr["margins"]],
        "greedy": {
            "prompt_ids": list(prompt_ids),
            "new_ids": new_ids,
            "max_new_tokens": N_NEW,
            "stopped_at_eos": len(new_ids) < N_NEW,
            "no_cache_new_ids": pr["new"],
            "no_cache_agrees": agree,
            "step_margin": [r6(v) for v in pr["step_margins"]],
            "step_logits": [[r6(v) for v in row] for row in pr["step_logits"].tolist()],
            "generate_vs_full_forward_max_abs_diff": r6(cache_diff),
        },
        "moe": {
            "num_experts": getattr(m.config, "num_local_experts", getattr(m.config, "num_experts", None)),
            "top_k": m.config.num_experts_per_tok,
            "expert_form": "mxfp4" if mxfp4 else "float",
            "same_model_as": same_as,
            "router_min_margin": st["router_min_margin"],
            "clamp_fraction": st["clamp_fraction"],
        },
        "rope": rope_facts(m),
        "tensors": {k2: {"dtype": v[0], "shape": v[1]} for k2, v in info.items()},
        "reloaded_with": how,
        "init": dict(init, seed=seed, candidate=cand, bias_std=BIAS_STD, sink_std=SINK_STD, router_std=ROUTER_STD,
                     norm_noise_std=NORM_NOISE_STD, experts_on_mxfp4_grid=gpt_oss),
        "stats": {k2: (r6(v) if isinstance(v, float) else v) for k2, v in st.items()},
        "dtype": "float32",
        "attn_implementation": "eager",
        "device": "cpu",
        "transformers_version": versions["transformers"],
        "torch_version": versions["torch"],
        "tokenizers_version": versions["tokenizers"],
    }
    (out / "golden.json").write_text(json.dumps(golden, separators=(",", ":")) + "\n")
    sizes = {p.name: p.stat().st_size for p in sorted(out.iterdir())}
    print(f"[{name}] files {sizes} total {sum(sizes.values())}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer-dir", default="models/default")
    ap.add_argument("--out", default="test/fixtures/hf")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--self-test", action="store_true", help="numpy-only check of the MXFP4 packer, then exit")
    args = ap.parse_args()
    self_test()
    if args.self_test:
        return

    import tokenizers
    import torch
    import transformers
    from transformers import AutoTokenizer

    torch.use_deterministic_algorithms(True, warn_only=True)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}
    print("versions", versions, flush=True)
    base = load_base()
    tok_dir = Path(args.tokenizer_dir)
    if not (tok_dir / "tokenizer.json").exists():
        sys.exit(f"no tokenizer.json in {tok_dir}: pass --tokenizer-dir (the repository's models/default has one)")
    hft = AutoTokenizer.from_pretrained(str(tok_dir))
    vocab_size = len(hft)
    ids = hft(base.PROMPT_TEXT)["input_ids"]
    if ids[0] != 0:
        ids = [0] + ids
    prompt_ids = ids[:N_PROMPT]
    print(f"vocab {vocab_size}; prompt ids {prompt_ids} = {hft.decode(prompt_ids)!r}", flush=True)

    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    failures = []
    reference_logits = {}
    for name, spec in fixture_specs(vocab_size).items():
        if args.only and name not in args.only:
            continue
        t0 = time.time()
        try:
            make_one(base, name, spec, tok_dir, out_root, prompt_ids, versions, reference_logits)
            print(f"[{name}] ok in {time.time() - t0:.1f}s", flush=True)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            failures.append(name)
            print(f"[{name}] FAILED", flush=True)
    if failures:
        print("FAILED fixtures:", failures, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
