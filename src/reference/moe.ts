/**
 * CPU reference of the mixture-of-experts feed-forward (f32 storage, f64 accumulation), as transformers 5 computes it:
 *
 * gpt-oss (GptOssTopKRouter + GptOssExperts):
 *   logits = x W_r^T + b_r; top-k of the logits; weights = softmax over the k selected.
 *   per selected expert e: gu = x @ gate_up_proj[e] + gate_up_proj_bias[e]   (gate_up_proj [E, H, 2I])
 *     gate = gu[0::2] clamped above at limit, up = gu[1::2] clamped to [-limit, limit]
 *     h = (up + 1) * gate * sigmoid(alpha * gate); out = h @ down_proj[e] + down_proj_bias[e]   (down_proj [E, I, H])
 * Qwen3-MoE (Qwen3MoeSparseMoeBlock):
 *   probs = softmax(x W_g^T) over all experts; top-k of the probs; divided by their sum when norm_topk_prob.
 *   per selected expert e: [g | u] = x gate_up_proj[e]^T (gate_up_proj [E, 2I, H], gate rows first),
 *     out = (silu(g) * u) down_proj[e]^T   (down_proj [E, H, I])
 * y = sum over the selected experts of weight * out.
 *
 * Top-k order: larger value first, the lower expert index first among equal values.
 */
import type { MoeConfig } from '../models/config.ts';

export type TensorLookup = (name: string) => Float32Array;

export interface Routing {
  /** [T, k] expert ids, in top-k order. */
  experts: Int32Array;
  /** [T, k] routing weights. */
  weights: Float32Array;
}

/** Indices of the k largest values of v (descending; ties: lower index first). */
export function topK(v: ArrayLike<number>, k: number): number[] {
  const idx = Array.from({ length: v.length }, (_, i) => i);
  idx.sort((a, b) => v[b]! - v[a]! || a - b);
  return idx.slice(0, k);
}

function softmaxOf(v: number[]): number[] {
  const m = Math.max(...v);
  const e = v.map((x) => Math.exp(x - m));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
}

/** Router: x [T, H] -> the k experts of each token and their weights. */
export function route(m: MoeConfig, x: Float32Array, T: number, H: number, wr: Float32Array, br?: Float32Array): Routing {
  const E = m.numExperts;
  const k = m.topK;
  const experts = new Int32Array(T * k);
  const weights = new Float32Array(T * k);
  const logits = new Float32Array(E);
  for (let t = 0; t < T; t++) {
    for (let e = 0; e < E; e++) {
      let s = 0;
      for (let h = 0; h < H; h++) s += x[t * H + h]! * wr[e * H + h]!;
      logits[e] = s + (br ? br[e]! : 0);
    }
    let sel: number[];
    let w: number[];
    if (m.routing === 'topk_softmax') {
      sel = topK(logits, k);
      w = softmaxOf(sel.map((e) => logits[e]!));
    } else {
      const probs = Float32Array.from(softmaxOf(Array.from(logits)));
      sel = topK(probs, k);
      w = sel.map((e) => probs[e]!);
      if (m.normTopkProb) {
        const z = w.reduce((a, b) => a + b, 0);
        w = w.map((v) => v / z);
      }
    }
    for (let j = 0; j < k; j++) {
      experts[t * k + j] = sel[j]!;
      weights[t * k + j] = w[j]!;
    }
  }
  return { experts, weights };
}

const sigmoid = (v: number) => 1 / (1 + Math.exp(-v));

/** One expert on one token row x [H] -> out [H] (biases and layouts per family, see the file comment). */
export function expertForward(m: MoeConfig, e: number, x: Float32Array, H: number, w: { gateUp: Float32Array; down: Float32Array; gateUpBias?: Float32Array; downBias?: Float32Array }): Float64Array {
  const I = m.expertIntermediateSize;
  const h = new Float64Array(I);
  if (m.activation === 'swiglu_clamped') {
    // gate_up_proj [E, H, 2I]: column 2i is gate i, column 2i+1 is up i
    const gu = new Float64Array(2 * I);
    const base = e * H * 2 * I;
    for (let r = 0; r < H; r++) {
      const xv = x[r]!;
      const row = base + r * 2 * I;
      for (let c = 0; c < 2 * I; c++) gu[c]! += xv * w.gateUp[row + c]!;
    }
    const lim = m.swigluLimit;
    for (let i = 0; i < I; i++) {
      let g = Math.fround(gu[2 * i]! + (w.gateUpBias ? w.gateUpBias[e * 2 * I + 2 * i]! : 0));
      let u = Math.fround(gu[2 * i + 1]! + (w.gateUpBias ? w.gateUpBias[e * 2 * I + 2 * i + 1]! : 0));
      g = Math.min(g, lim);
      u = Math.min(Math.max(u, -lim), lim);
      h[i] = (u + 1) * g * sigmoid(m.swigluAlpha * g);
    }
    // down_proj [E, I, H]
    const out = new Float64Array(H);
    const dbase = e * I * H;
    for (let i = 0; i < I; i++) {
      const hv = Math.fround(h[i]!);
      const row = dbase + i * H;
      for (let c = 0; c < H; c++) out[c]! += hv * w.down[row + c]!;
    }
    if (w.downBias) for (let c = 0; c < H; c++) out[c]! += w.downBias[e * H + c]!;
    return out;
  }
  // Qwen: gate_up_proj [E, 2I, H] (gate rows 0..I-1, up rows I..2I-1), down_proj [E, H, I]
  const base = e * 2 * I * H;
  for (let i = 0; i < I; i++) {
    let g = 0;
    let u = 0;
    const gr = base + i * H;
    const ur = base + (I + i) * H;
    for (let c = 0; c < H; c++) {
      g += x[c]! * w.gateUp[gr + c]!;
      u += x[c]! * w.gateUp[ur + c]!;
    }
    const gf = Math.fround(g);
    h[i] = Math.fround(gf * sigmoid(gf)) * Math.fround(u);
  }
  const out = new Float64Array(H);
  const dbase = e * H * I;
  for (let c = 0; c < H; c++) {
    let s = 0;
    for (let i = 0; i < I; i++) s += Math.fround(h[i]!) * w.down[dbase + c * I + i]!;
    out[c] = s;
  }
  return out;
}

/**
 * The MoE block of layer prefix `p` (e.g. "model.layers.3.") on x [T, H]. Tensors by their transformers parameter
 * names: gpt-oss mlp.router.{weight,bias}, mlp.experts.{gate_up_proj, gate_up_proj_bias, down_proj, down_proj_bias};
 * Qwen3-MoE mlp.gate.weight, mlp.experts.{gate_up_proj, down_proj} (stacked; see models/reference-weights.ts for
 * the per-expert and MXFP4 forms).
 */
export function moeForward(m: MoeConfig, x: Float32Array, T: number, H: number, w: TensorLookup, p: string): Float32Array {
  const gpt = m.kind === 'gpt_oss';
  const r = gpt ? route(m, x, T, H, w(p + 'mlp.router.weight'), w(p + 'mlp.router.bias')) : route(m, x, T, H, w(p + 'mlp.gate.weight'));
  const tensors = {
    gateUp: w(p + 'mlp.experts.gate_up_proj'),
    down: w(p + 'mlp.experts.down_proj'),
    gateUpBias: gpt && m.expertBias ? w(p + 'mlp.experts.gate_up_proj_bias') : undefined,
    downBias: gpt && m.expertBias ? w(p + 'mlp.experts.down_proj_bias') : undefined,
  };
  const y = new Float32Array(T * H);
  const acc = new Float64Array(H);
  for (let t = 0; t < T; t++) {
    const row = x.subarray(t * H, (t + 1) * H);
    acc.fill(0);
    for (let j = 0; j < m.topK; j++) {
      const e = r.experts[t * m.topK + j]!;
      const wt = r.weights[t * m.topK + j]!;
      const out = expertForward(m, e, row, H, tensors);
      for (let c = 0; c < H; c++) acc[c]! += Math.fround(out[c]!) * wt;
    }
    for (let c = 0; c < H; c++) y[t * H + c] = acc[c]!;
  }
  return y;
}
