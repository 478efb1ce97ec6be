/** Random attention inputs for contract tests: q [T, H, D] and a KV cache [cap, Hkv, D] in f32 or f16. */
import { f16BytesToF32, f32ToF16Bytes } from '../../src/formats/index.ts';
import type { Rng } from '../../src/selftest/rng.ts';

export interface AttentionCase {
  /** The contract inputs (k, v in the cache dtype). */
  inputs: Record<string, { dtype: string; shape: number[]; data: Float32Array | Uint16Array | Uint32Array }>;
  /** What the CPU reference reads: q, and k, v as the kernel sees them (rounded to f16 for an f16 cache). */
  ref: { q: Float32Array; k: Float32Array; v: Float32Array };
}

export function attentionCase(r: Rng, T: number, H: number, Hkv: number, D: number, cap: number, kvDt: 'float32' | 'float16'): AttentionCase {
  const q = r.floats(T * H * D);
  const k = r.floats(cap * Hkv * D);
  const v = r.floats(cap * Hkv * D);
  const half = (x: Float32Array) => new Uint16Array(f32ToF16Bytes(x).buffer);
  const kd = kvDt === 'float16' ? half(k) : k;
  const vd = kvDt === 'float16' ? half(v) : v;
  const back = (x: Float32Array | Uint16Array) => (x instanceof Uint16Array ? f16BytesToF32(new Uint8Array(x.buffer)) : x);
  const u32 = { dtype: 'uint32', shape: [1], data: new Uint32Array([0]) };
  return {
    inputs: { q: { dtype: 'float32', shape: [T, H, D], data: q }, k: { dtype: kvDt, shape: [cap, Hkv, D], data: kd }, v: { dtype: kvDt, shape: [cap, Hkv, D], data: vd }, kvLen: u32, pageTable: u32 },
    ref: { q, k: back(kd), v: back(vd) },
  };
}
