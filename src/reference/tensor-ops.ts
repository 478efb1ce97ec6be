/**
 * CPU references (f64 where arithmetic happens) of small tensor operations: `relu`, `clamp`, `transpose`,
 * `bf16_to_f32` / `bf16_to_f16`, `split_qkv`, `split_qg` and `rope_qk` (separate Q/K buffers, table angles).
 * Parameter objects use the registry's uniform field names. Semantics: src/kernels/relu.wgsl, clamp.wgsl,
 * transpose.wgsl, bf16_to_f32.wgsl, bf16_to_f16.wgsl, split_qkv.wgsl, split_qg.wgsl, rope_qk.wgsl.
 */
import { ropeRef, type RopeUniforms } from './rope.ts';

/** relu: max(x, 0) for i < size. */
export function reluRef(x: ArrayLike<number>, u: { size: number }): Float64Array {
  const out = new Float64Array(u.size);
  for (let i = 0; i < u.size; i++) out[i] = Math.max(x[i]!, 0);
  return out;
}

/** clamp (in place): min(max(x, min), max) for i < size; elements past size kept. */
export function clampRef(data: ArrayLike<number>, u: { size: number; min: number; max: number }): Float64Array {
  const out = Float64Array.from(data);
  for (let i = 0; i < u.size; i++) out[i] = Math.min(Math.max(out[i]!, u.min), u.max);
  return out;
}

/** transpose: out [cols, rows] of x [rows, cols]. */
export function transposeRef(x: ArrayLike<number>, u: { rows: number; cols: number }): Float64Array {
  const out = new Float64Array(u.rows * u.cols);
  for (let r = 0; r < u.rows; r++) for (let c = 0; c < u.cols; c++) out[c * u.rows + r] = x[r * u.cols + c]!;
  return out;
}

const F16_MAX = 65504;

/**
 * bf16 values packed two per u32 word (element 2w low half) widened to f32 (exact); `f16Range` clamps them to
 * +-65504 as bf16_to_f16 does before rounding to f16 (the harness compares the rounded result with the f16 tolerance).
 */
export function bf16WidenRef(words: Uint32Array, u: { size: number }, f16Range = false): Float64Array {
  const out = new Float64Array(u.size);
  const bits = new Uint32Array(1);
  const f = new Float32Array(bits.buffer);
  for (let i = 0; i < u.size; i++) {
    const w = words[i >> 1]!;
    bits[0] = i & 1 ? w & 0xffff0000 : (w << 16) >>> 0;
    out[i] = f16Range ? Math.min(Math.max(f[0]!, -F16_MAX), F16_MAX) : f[0]!;
  }
  return out;
}

export interface SplitQkvUniforms {
  num_tokens: number;
  q_size: number;
  k_size: number;
  v_size: number;
}

/** split_qkv: rows [q | k | v] of the fused matrix copied to Q, K, V. */
export function splitQkvRef(fused: ArrayLike<number>, u: SplitQkvUniforms): { Q: Float64Array; K: Float64Array; V: Float64Array } {
  const W = u.q_size + u.k_size + u.v_size;
  const Q = new Float64Array(u.num_tokens * u.q_size);
  const K = new Float64Array(u.num_tokens * u.k_size);
  const V = new Float64Array(u.num_tokens * u.v_size);
  for (let t = 0; t < u.num_tokens; t++) {
    for (let j = 0; j < u.q_size; j++) Q[t * u.q_size + j] = fused[t * W + j]!;
    for (let j = 0; j < u.k_size; j++) K[t * u.k_size + j] = fused[t * W + u.q_size + j]!;
    for (let j = 0; j < u.v_size; j++) V[t * u.v_size + j] = fused[t * W + u.q_size + u.k_size + j]!;
  }
  return { Q, K, V };
}

/** split_qg: per (token, head), the first head_dim values of a 2 * head_dim row go to Q, the next head_dim to G. */
export function splitQgRef(qg: ArrayLike<number>, u: { num_tokens: number; num_heads: number; head_dim: number }): { Q: Float64Array; G: Float64Array } {
  const D = u.head_dim;
  const rows = u.num_tokens * u.num_heads;
  const Q = new Float64Array(rows * D);
  const G = new Float64Array(rows * D);
  for (let r = 0; r < rows; r++) {
    for (let d = 0; d < D; d++) {
      Q[r * D + d] = qg[r * 2 * D + d]!;
      G[r * D + d] = qg[r * 2 * D + D + d]!;
    }
  }
  return { Q, G };
}

export interface RopeQkUniforms {
  seq_len: number;
  num_q_heads: number;
  num_kv_heads: number;
  head_dim: number;
  start_pos: number;
  rotary_dim: number;
  interleaved: number;
  pair_span_dim: number;
}

/** rope_qk: rope.default (table angles) applied to Q [seq, q heads, D] and K [seq, kv heads, D]. */
export function ropeQkRef(q: ArrayLike<number>, k: ArrayLike<number>, u: RopeQkUniforms, tables: { cos: ArrayLike<number>; sin: ArrayLike<number> }): { q_input: Float64Array; k_input: Float64Array } {
  const base: Omit<RopeUniforms, 'num_heads'> = { ...u, rope_base: 0, rope_scale: 0 };
  return {
    q_input: ropeRef(q, { ...base, num_heads: u.num_q_heads }, 'tables', tables),
    k_input: ropeRef(k, { ...base, num_heads: u.num_kv_heads }, 'tables', tables),
  };
}
