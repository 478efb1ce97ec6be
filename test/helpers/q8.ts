import { expect } from 'vitest';
import { quantizeActivationsQ8, roundActivationsQ8 } from '../../src/reference/activations-q8.ts';

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

/**
 * The norm handoff's int8 activations of rows h [M, K] for an rmsnorm with weight gamma, as the producing GEMV's
 * epilogue writes them (xq: 4 int8 a u32; xm [M, 3, K / 16]: each run of 16's scale, int8 sum, and sum of h^2), and
 * the activations a GEMV reading them multiplies in effect: rmsnorm's scale 1 / sqrt(mean(h^2) + eps) times the
 * dequantized runs of h * gamma.
 */
export function handoffActivations(h: Float32Array, gamma: Float32Array, M: number, K: number, eps: number): { xq: Uint32Array; xm: Float32Array; a: Float32Array } {
  const v = h.map((x, i) => Math.fround(x * gamma[i % K]!));
  const { q, d } = quantizeActivationsQ8(v, 16);
  const R = K / 16;
  const xm = new Float32Array(M * 3 * R);
  const a = new Float32Array(M * K);
  for (let m = 0; m < M; m++) {
    let ss = 0;
    for (let j = 0; j < R; j++) {
      const at = m * K + j * 16;
      let rs = 0;
      let hs = 0;
      for (let i = 0; i < 16; i++) {
        rs += q[at + i]!;
        hs += h[at + i]! ** 2;
      }
      xm[m * 3 * R + j] = d[m * R + j]!;
      xm[m * 3 * R + R + j] = rs;
      xm[m * 3 * R + 2 * R + j] = hs;
      ss += hs;
    }
    const inv = 1 / Math.sqrt(ss / K + eps);
    for (let k = 0; k < K; k++) a[m * K + k] = inv * q[m * K + k]! * d[(m * K + k) >> 4]!;
  }
  return { xq: new Uint32Array(q.buffer), xm, a };
}

/**
 * The norm handoff a GEMV wrote (nq, nm [M, 3, N / 16]) against the rows h [M, N] it wrote and the next norm's weight
 * g: each run of 16's scale is max |h g| / 127, every value dequantizes to within half a step of h g, at most 1% of them
 * differ from the reference rounding, the run sums are exactly those of the values written, and the sums of h^2 agree
 * to f32 summation order.
 */
export function expectHandoff(nq: Uint32Array, nm: Float32Array, h: Float32Array, g: Float32Array, M: number, N: number): void {
  const q = new Int8Array(nq.buffer, nq.byteOffset, nq.byteLength);
  const R = N / 16;
  const v = h.map((x, i) => Math.fround(x * g[i % N]!));
  const ref = roundActivationsQ8(v, 16);
  let off = 0;
  for (let m = 0; m < M; m++) {
    for (let j = 0; j < R; j++) {
      const at = m * N + j * 16;
      const run = v.subarray(at, at + 16);
      const d = nm[m * 3 * R + j]!;
      const want = Math.max(...run.map(Math.abs)) / 127;
      expect(Math.abs(d - want), `row ${m} run ${j} scale`).toBeLessThanOrEqual(1e-4 * want + 1e-30);
      let rs = 0;
      let hs = 0;
      for (let i = 0; i < 16; i++) {
        const deq = q[at + i]! * d;
        expect(Math.abs(deq - run[i]!), `row ${m} value ${j * 16 + i}`).toBeLessThanOrEqual(0.5 * d + 1e-4 * 127 * d);
        if (Math.abs(deq - ref[at + i]!) > 1e-6 * Math.abs(ref[at + i]!) + 1e-12) off++;
        rs += q[at + i]!;
        hs += h[at + i]! ** 2;
      }
      expect(nm[m * 3 * R + R + j], `row ${m} run ${j} sum`).toBe(rs);
      expect(Math.abs(nm[m * 3 * R + 2 * R + j]! - hs), `row ${m} run ${j} sum of squares`).toBeLessThanOrEqual(1e-5 * hs + 1e-30);
    }
  }
  expect(off).toBeLessThanOrEqual(Math.ceil((M * N) / 100));
}
