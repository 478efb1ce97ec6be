/**
 * The CPU-adapter mappings (chosen on SwiftShader, forced anywhere with the `cpuMapping` tunable): f32 matmul with one
 * invocation per (block of columns, block of rows), RMS norm with one invocation per row, attention with one invocation per
 * (query token, head),
 * each against its CPU reference on shapes that cover the edges (M = 1 and past a row block, K not a multiple of 4,
 * N not a multiple of the workgroup, every residual mode).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { rmsnormRef } from '../src/reference/rmsnorm.ts';
import { attentionRef, attentionUniforms } from '../src/reference/attention.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

/** max |got - want| / max(1, max |want|) */
function relErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let d = 0;
  let m = 1;
  for (let i = 0; i < want.length; i++) {
    d = Math.max(d, Math.abs(got[i]! - want[i]!));
    m = Math.max(m, Math.abs(want[i]!));
  }
  return d / m;
}

describe('linear f32_rows_cpu', () => {
  it.each([
    [1, 70, 256],
    [1, 2048, 33],
    [3, 65, 7],
    [8, 130, 64],
    [13, 64, 100],
    [16, 257, 256],
  ])('M=%i N=%i K=%i matches the reference (default split, 1 column in 64, 3 columns in 5)', async (M, N, K) => {
    const r = new Rng(`cpu-linear/${M}x${N}x${K}`);
    const x = r.floats(M * K);
    const w = r.floats(N * K);
    const want = matmulF32Reference(x, w, { M, N, K, alpha: 0.75 });
    for (const split of [{}, { cpuCols: 1, cpuWorkgroup: 64 }, { cpuCols: 3, cpuWorkgroup: 5 }] as Record<string, number>[]) {
      const { outputs, plan } = await runContract(dev, opContract('linear'), {
        inputs: { x: { dtype: 'float32', shape: [M, K], data: x }, w: { dtype: 'float32', shape: [N, K], data: w } },
        attributes: { alpha: 0.75 },
        tunables: { cpuMapping: 'on', ...split },
      });
      expect(plan.variant).toBe('f32_rows_cpu');
      expect(relErr(outputs.y!.data as Float32Array, want), JSON.stringify(split)).toBeLessThan(2e-6);
    }
  });
});

describe('rmsnorm rows_cpu', () => {
  it.each([
    ['none', 0, 1, 64],
    ['before', 1, 5, 256],
    ['after', 2, 17, 100],
  ] as const)('residual %s, %i: rows=%i H=%i matches the reference', async (mode, code, rows, H) => {
    const r = new Rng(`cpu-rmsnorm/${mode}`);
    const x = r.normals(rows * H, 2);
    const weight = r.floats(H, 0.5, 1.5);
    const residual = r.normals(rows * H);
    const { outputs, plan } = await runContract(dev, opContract('rmsnorm'), {
      inputs: {
        x: { dtype: 'float32', shape: [rows, H], data: x },
        weight: { dtype: 'float32', shape: [H], data: weight },
        residual: { dtype: 'float32', shape: [rows, H], data: residual },
      },
      attributes: { eps: 1e-5, residual: mode, output_scale: 1.5 },
      tunables: { cpuMapping: 'on' },
    });
    expect(plan.variant).toBe('rows_cpu');
    const want = rmsnormRef(x, weight, residual, { hidden_size: H, num_tokens: rows, eps: 1e-5, has_residual: code, token_stride: 0, output_scale: 1.5 });
    expect(relErr(outputs.out!.data as Float32Array, want)).toBeLessThan(2e-6);
  });
});

describe('attention on CPU adapters', () => {
  it.each([
    [1, 9],
    [6, 0],
    [3, 5],
    [4, 12],
  ])('rows_cpu: %i tokens at position %i match the reference (with a sliding window and a softcap too)', async (tokens, start) => {
    const r = new Rng(`cpu-attention/${tokens}/${start}`);
    const [H, Hkv, D, cap] = [4, 2, 32, 16];
    const k = r.floats(cap * Hkv * D);
    const v = r.floats(cap * Hkv * D);
    const q = r.floats(tokens * H * D);
    for (const [window, softcap] of [
      [0, 0],
      [3, 5],
    ]) {
      const { outputs, plan } = await runContract(dev, opContract('attention'), {
        inputs: {
          q: { dtype: 'float32', shape: [tokens, H, D], data: q },
          k: { dtype: 'float32', shape: [cap, Hkv, D], data: k },
          v: { dtype: 'float32', shape: [cap, Hkv, D], data: v },
          kvLen: { dtype: 'uint32', shape: [1], data: new Uint32Array([0]) },
          pageTable: { dtype: 'uint32', shape: [1], data: new Uint32Array([0]) },
        },
        attributes: { start_pos: start, kv_len: start + tokens, sliding_window: window!, softcap: softcap! },
        tunables: { cpuMapping: 'on' },
      });
      expect(plan.variant).toBe('rows_cpu');
      const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + tokens, seq_len: tokens, start_pos: start, scale: 1 / Math.sqrt(D), sliding_window: window!, attn_softcap: softcap! });
      expect(relErr(outputs.out!.data as Float32Array, attentionRef(u, { q, k, v }))).toBeLessThan(1e-5);
    }
  });
});
