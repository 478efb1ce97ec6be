/**
 * CPU reference of the `fused_ffn` kernels (registry operation fused_ffn): the first half of a gated FFN,
 *   out[m, j] = alpha * act(sum_k x[m, k] * Wg[j, k]) * (sum_k x[m, k] * Wu[j, k])
 * with x [M, hidden_size], Wg and Wu [intermediate_size, hidden_size] (HF layout), act = silu (activation 0) or
 * tanh-approximated gelu (activation 1). The two products come from matmul-quant.ts (f64 accumulation, one f32
 * rounding), the gating in f64. Parameter objects use the registry's uniform field names.
 */
import { f16Table32 } from '../formats/f16.ts';
import { matmulAnyReference } from './matmul-quant.ts';

export interface FusedFfnUniforms {
  M: number;
  hidden_size: number;
  intermediate_size: number;
  alpha: number;
  activation: number;
}

/** n f16 values packed two per u32 word (low half first), as f32. */
export function unpackF16Floats(words: Uint32Array, n: number): Float32Array {
  if (words.length < Math.ceil(n / 2)) throw new RangeError(`f16 data: ${words.length} words hold fewer than ${n} halves`);
  const t = f16Table32();
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = t[(words[i >> 1]! >>> (16 * (i & 1))) & 0xffff]!;
  return out;
}

/** Activations: f32, or f16 packed two per u32 word (the f16a kernels). */
export function activationsF32(x: Float32Array | Uint32Array, n: number): Float32Array {
  return x instanceof Float32Array ? x : unpackF16Floats(x, n);
}

const silu = (v: number) => v / (1 + Math.exp(-v));
const geluTanh = (v: number) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)));

/**
 * Weights in any format matmulAnyReference reads (f32, f16 words, Q4_K blocks in words); x f32 or f16 words.
 */
export function fusedFfnRef(x: Float32Array | Uint32Array, gate: Float32Array | Uint32Array, up: Float32Array | Uint32Array, u: FusedFfnUniforms): Float32Array {
  const { M, hidden_size: H, intermediate_size: I, alpha, activation } = u;
  if (activation !== 0 && activation !== 1) throw new RangeError(`fused_ffn: activation ${activation} is neither 0 (silu) nor 1 (gelu)`);
  const a = activationsF32(x, M * H);
  const mu = { M, N: I, K: H, alpha: 1 };
  const g = matmulAnyReference(a, gate, mu);
  const v = matmulAnyReference(a, up, mu);
  const act = activation === 0 ? silu : geluTanh;
  const out = new Float32Array(M * I);
  for (let i = 0; i < out.length; i++) out[i] = alpha * act(g[i]!) * v[i]!;
  return out;
}
