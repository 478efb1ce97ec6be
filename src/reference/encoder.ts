/**
 * The CPU reference of an encoder forward pass (BERT / RoBERTa family, f64 arithmetic): embeddings (word + position
 * + token type) and LayerNorm, then per layer bidirectional multi-head attention, dense + residual + LayerNorm, the
 * feed-forward with its activation, dense + residual + LayerNorm (post-LN). Weights by HF tensor name.
 */
import type { EncoderConfig } from '../models/encoder.ts';
import { activate } from './activations.ts';

export type EncoderWeights = (name: string) => Float32Array;

function layerNorm(x: Float64Array, w: Float32Array, b: Float32Array, eps: number): Float64Array {
  const n = x.length;
  let mean = 0;
  for (const v of x) mean += v;
  mean /= n;
  let v2 = 0;
  for (const v of x) v2 += (v - mean) ** 2;
  const inv = 1 / Math.sqrt(v2 / n + eps);
  return Float64Array.from(x, (v, i) => (v - mean) * inv * w[i]! + b[i]!);
}

function dense(x: Float64Array, w: Float32Array, b: Float32Array, n: number): Float64Array {
  const k = x.length;
  const y = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    let s = b[j]!;
    for (let i = 0; i < k; i++) s += w[j * k + i]! * x[i]!;
    y[j] = s;
  }
  return y;
}

/** Last-layer hidden states [tokens, hidden] of `ids` (token types default to 0). */
export function encoderRef(cfg: EncoderConfig, W: EncoderWeights, ids: readonly number[], typeIds?: readonly number[]): Float32Array {
  const H = cfg.hidden;
  const T = ids.length;
  const D = H / cfg.heads;
  const e = `${cfg.prefix}embeddings.`;
  const word = W(`${e}word_embeddings.weight`);
  const pos = W(`${e}position_embeddings.weight`);
  const typ = W(`${e}token_type_embeddings.weight`);
  let h = ids.map((id, t) => {
    const p = cfg.positionOffset + t;
    const ty = typeIds?.[t] ?? 0;
    const x = Float64Array.from({ length: H }, (_, i) => word[id * H + i]! + pos[p * H + i]! + typ[ty * H + i]!);
    return layerNorm(x, W(`${e}LayerNorm.weight`), W(`${e}LayerNorm.bias`), cfg.eps);
  });
  for (let l = 0; l < cfg.layers; l++) {
    const p = `${cfg.prefix}encoder.layer.${l}.`;
    const lin = (x: Float64Array, name: string, n: number) => dense(x, W(`${p}${name}.weight`), W(`${p}${name}.bias`), n);
    const q = h.map((x) => lin(x, 'attention.self.query', H));
    const k = h.map((x) => lin(x, 'attention.self.key', H));
    const v = h.map((x) => lin(x, 'attention.self.value', H));
    const ctx = h.map(() => new Float64Array(H));
    for (let hd = 0; hd < cfg.heads; hd++) {
      for (let t = 0; t < T; t++) {
        const s = k.map((kr) => {
          let d = 0;
          for (let i = 0; i < D; i++) d += q[t]![hd * D + i]! * kr[hd * D + i]!;
          return d / Math.sqrt(D);
        });
        const m = Math.max(...s);
        const ex = s.map((x) => Math.exp(x - m));
        const z = ex.reduce((a, b) => a + b, 0);
        for (let j = 0; j < T; j++) for (let i = 0; i < D; i++) ctx[t]![hd * D + i]! += (ex[j]! / z) * v[j]![hd * D + i]!;
      }
    }
    h = h.map((x, t) => {
      const o = lin(ctx[t]!, 'attention.output.dense', H);
      const a = layerNorm(Float64Array.from(o, (v, i) => v + x[i]!), W(`${p}attention.output.LayerNorm.weight`), W(`${p}attention.output.LayerNorm.bias`), cfg.eps);
      const f = lin(Float64Array.from(lin(a, 'intermediate.dense', cfg.intermediate), (v) => activate(v, cfg.activation)), 'output.dense', H);
      return layerNorm(Float64Array.from(f, (v, i) => v + a[i]!), W(`${p}output.LayerNorm.weight`), W(`${p}output.LayerNorm.bias`), cfg.eps);
    });
  }
  const out = new Float32Array(T * H);
  h.forEach((x, t) => out.set(x, t * H));
  return out;
}
