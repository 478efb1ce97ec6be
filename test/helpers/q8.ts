import { expect } from 'vitest';
import { roundActivationsQ8 } from '../../src/reference/activations-q8.ts';

/**
 * Int8 activations a kernel wrote for the next GEMV (qa: 4 int8 a u32; da: one scale per block of 32; rs: the sum of
 * every run of 16) against the values h they round: each block's scale is max |h| / 127, every value dequantizes to
 * within half a step of h, at most 1% of them differ from the reference rounding (a value on a half step may round
 * either way after the GPU's f32 division), and the run sums are exactly those of the values written.
 */
export function expectQ8Activations(qa: Uint32Array, da: Float32Array, rs: Float32Array, h: Float32Array): void {
  const q = new Int8Array(qa.buffer, qa.byteOffset, qa.byteLength);
  const n = h.length;
  for (let b = 0; b < n / 32; b++) {
    const want = Math.max(...h.subarray(b * 32, b * 32 + 32).map(Math.abs)) / 127;
    expect(Math.abs(da[b]! - want), `block ${b} scale`).toBeLessThanOrEqual(1e-4 * want + 1e-30);
  }
  const deq = new Float32Array(n).map((_, i) => q[i]! * da[i >> 5]!);
  for (let i = 0; i < n; i++) expect(Math.abs(deq[i]! - h[i]!), `value ${i}`).toBeLessThanOrEqual(0.5 * da[i >> 5]! + 1e-4 * 127 * da[i >> 5]!);
  const ref = roundActivationsQ8(h);
  expect(deq.filter((v, i) => Math.abs(v - ref[i]!) > 1e-6 * Math.abs(ref[i]!) + 1e-12).length).toBeLessThanOrEqual(Math.ceil(n / 100));
  for (let j = 0; j < n / 16; j++) expect(rs[j], `run ${j}`).toBe(q.subarray(j * 16, j * 16 + 16).reduce((s, v) => s + v, 0));
}
