/**
 * CPU reference of the decoder forward pass (f32 storage, f64 accumulation) over HF-named weights. The oracle for
 * the GPU model path; slow, meant for tiny models and tests.
 */
import type { DecoderConfig } from '../models/config.ts';
import { layerRope, ropeAttentionScale, ropeInvFreq, ropeTables } from '../models/rope.ts';
import { moeForward } from './moe.ts';

export type WeightMap = (name: string) => Float32Array | undefined;

function need(w: WeightMap, name: string): Float32Array {
  const t = w(name);
  if (!t) throw new Error(`reference forward: missing tensor ${name}`);
  return t;
}

/** y[T,N] = x[T,K] · W[N,K]^T (+ b) */
function linear(x: Float32Array, T: number, K: number, W: Float32Array, N: number, b?: Float32Array): Float32Array {
  const y = new Float32Array(T * N);
  for (let t = 0; t < T; t++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      const xo = t * K;
      const wo = n * K;
      for (let k = 0; k < K; k++) s += x[xo + k]! * W[wo + k]!;
      y[t * N + n] = s + (b ? b[n]! : 0);
    }
  }
  return y;
}

function rmsnorm(x: Float32Array, rows: number, D: number, w: Float32Array, eps: number, addOne: boolean): Float32Array {
  const y = new Float32Array(rows * D);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < D; i++) ss += x[r * D + i]! ** 2;
    const inv = 1 / Math.sqrt(ss / D + eps);
    for (let i = 0; i < D; i++) y[r * D + i] = x[r * D + i]! * inv * (addOne ? 1 + w[i]! : w[i]!);
  }
  return y;
}

function applyRope(x: Float32Array, T: number, heads: number, D: number, cos: Float32Array, sin: Float32Array, start: number): void {
  const half = D / 2;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < heads; h++) {
      const o = (t * heads + h) * D;
      for (let i = 0; i < half; i++) {
        const c = cos[(start + t) * half + i]!;
        const s = sin[(start + t) * half + i]!;
        const a = x[o + i]!;
        const b = x[o + i + half]!;
        x[o + i] = a * c - b * s;
        x[o + i + half] = b * c + a * s;
      }
    }
  }
}

const gelu = (v: number) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)));
const silu = (v: number) => v / (1 + Math.exp(-v));

/**
 * Logits [T, vocab] for `ids` at positions 0..T-1. Mixture-of-experts layers (cfg.moe) read their tensors by the
 * transformers parameter names (see reference/moe.ts; models/reference-weights.ts builds them from any stored form).
 */
export function referenceForward(cfg: DecoderConfig, w: WeightMap, ids: number[]): Float32Array {
  const T = ids.length;
  const H = cfg.hiddenSize;
  const D = cfg.headDim;
  const nH = cfg.numHeads;
  const nKV = cfg.numKvHeads;
  const emb = need(w, 'model.embed_tokens.weight');
  let h: Float32Array = new Float32Array(T * H);
  for (let t = 0; t < T; t++) for (let i = 0; i < H; i++) h[t * H + i] = emb[ids[t]! * H + i]! * cfg.embedScale;
  const eps = cfg.rmsNormEps;
  const add1 = cfg.normAddOne;
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}.`;
    const x = rmsnorm(h, T, H, need(w, p + 'input_layernorm.weight'), eps, add1);
    const q = linear(x, T, H, need(w, p + 'self_attn.q_proj.weight'), nH * D, w(p + 'self_attn.q_proj.bias'));
    const k = linear(x, T, H, need(w, p + 'self_attn.k_proj.weight'), nKV * D, w(p + 'self_attn.k_proj.bias'));
    const v = linear(x, T, H, need(w, p + 'self_attn.v_proj.weight'), nKV * D, w(p + 'self_attn.v_proj.bias'));
    const qn = cfg.qkNorm ? rmsnorm(q, T * nH, D, need(w, p + 'self_attn.q_norm.weight'), eps, add1) : q;
    const kn = cfg.qkNorm ? rmsnorm(k, T * nKV, D, need(w, p + 'self_attn.k_norm.weight'), eps, add1) : k;
    const { theta, scaling } = layerRope(cfg, l);
    const { cos, sin } = ropeTables(ropeInvFreq(D, theta, scaling), T, ropeAttentionScale(scaling));
    applyRope(qn, T, nH, D, cos, sin, 0);
    applyRope(kn, T, nKV, D, cos, sin, 0);
    const att = new Float32Array(T * nH * D);
    const window = cfg.slidingWindow[l]!;
    // gpt-oss: a per-head sink logit joins the softmax (its probability is dropped: the outputs sum to less than 1)
    const sinks = cfg.attnSinks ? need(w, p + 'self_attn.sinks') : undefined;
    for (let hh = 0; hh < nH; hh++) {
      const kvh = Math.floor(hh / (nH / nKV));
      for (let i = 0; i < T; i++) {
        const scores: number[] = [];
        let m = sinks ? sinks[hh]! : -Infinity;
        for (let j = 0; j <= i; j++) {
          if (window > 0 && i - j >= window) {
            scores.push(-Infinity);
            continue;
          }
          let s = 0;
          for (let d = 0; d < D; d++) s += qn[(i * nH + hh) * D + d]! * kn[(j * nKV + kvh) * D + d]!;
          s *= cfg.attnScale;
          if (cfg.attnSoftcap > 0) s = Math.tanh(s / cfg.attnSoftcap) * cfg.attnSoftcap;
          scores.push(s);
          m = Math.max(m, s);
        }
        let z = sinks ? Math.exp(sinks[hh]! - m) : 0;
        const e = scores.map((s) => {
          const x2 = s === -Infinity ? 0 : Math.exp(s - m);
          z += x2;
          return x2;
        });
        for (let d = 0; d < D; d++) {
          let acc = 0;
          for (let j = 0; j <= i; j++) acc += e[j]! * v[(j * nKV + kvh) * D + d]!;
          att[(i * nH + hh) * D + d] = acc / z;
        }
      }
    }
    let o = linear(att, T, nH * D, need(w, p + 'self_attn.o_proj.weight'), H, cfg.oProjBias ? need(w, p + 'self_attn.o_proj.bias') : undefined);
    if (cfg.sandwichNorm) o = rmsnorm(o, T, H, need(w, p + 'post_attention_layernorm.weight'), eps, add1);
    for (let i = 0; i < T * H; i++) h[i]! += o[i]!;
    const x2 = rmsnorm(h, T, H, need(w, p + (cfg.sandwichNorm ? 'pre_feedforward_layernorm.weight' : 'post_attention_layernorm.weight')), eps, add1);
    if (cfg.moe?.sparse[l]) {
      const y = moeForward(cfg.moe, x2, T, H, (n) => need(w, n), p);
      for (let i = 0; i < T * H; i++) h[i]! += y[i]!;
      continue;
    }
    const I = cfg.intermediateSize;
    const g = linear(x2, T, H, need(w, p + 'mlp.gate_proj.weight'), I);
    const u = linear(x2, T, H, need(w, p + 'mlp.up_proj.weight'), I);
    const act = cfg.activation === 'silu' ? silu : gelu;
    for (let i = 0; i < T * I; i++) g[i] = act(g[i]!) * u[i]!;
    let dn = linear(g, T, I, need(w, p + 'mlp.down_proj.weight'), H);
    if (cfg.sandwichNorm) dn = rmsnorm(dn, T, H, need(w, p + 'post_feedforward_layernorm.weight'), eps, add1);
    for (let i = 0; i < T * H; i++) h[i]! += dn[i]!;
  }
  h = rmsnorm(h, T, H, need(w, 'model.norm.weight'), eps, add1);
  const head = cfg.tieWordEmbeddings ? emb : w('lm_head.weight') ?? emb;
  const logits = linear(h, T, H, head, cfg.vocabSize);
  if (cfg.finalSoftcap > 0) for (let i = 0; i < logits.length; i++) logits[i] = Math.tanh(logits[i]! / cfg.finalSoftcap) * cfg.finalSoftcap;
  return logits;
}

/** Greedy continuation by full recomputation (no cache): `n` new ids after `ids`. */
export function referenceGreedy(cfg: DecoderConfig, w: WeightMap, ids: number[], n: number): number[] {
  const cur = [...ids];
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const logits = referenceForward(cfg, w, cur);
    const last = logits.subarray((cur.length - 1) * cfg.vocabSize);
    let best = 0;
    for (let v = 1; v < cfg.vocabSize; v++) if (last[v]! > last[best]!) best = v;
    out.push(best);
    cur.push(best);
  }
  return out;
}
