/**
 * The prefill GEMM on subgroup matrices (gemm-sgmat.wgsl.jinja: f16 x f16 -> f32 16x16x16, activations and weights
 * staged as f16 tiles) for f16 and Q4_K weights against the CPU reference, on shapes that are not multiples of the
 * 64 x 64 tile, with the staging tunables (sgmatK, sgmatPad, sgmatPrefetch, sgmatWg). Needs subgroup matrices with that configuration, shader-f16 and subgroups of 32: elsewhere (SwiftShader)
 * each case says so and is skipped; the GPU lane runs it on the H200.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ContractError, resolveContract } from '../src/contracts/index.ts';
import { editedProfile, h200 } from './contracts-helpers.ts';
import { runContract } from '../src/contracts/run.ts';
import { dequantizeQ4_K, f16BytesToF32, f32ToF16Bytes, quantizeQ4_K } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('linear on subgroup matrices (prefill)', () => {
  const staged = { sgmatK: 64, sgmatPad: 8, sgmatPrefetch: 'on' };
  it.for([
    ['float16', 9, 70, 96, 64, {}],
    ['float16', 130, 200, 512, 64, {}],
    ['q4_k', 65, 70, 256, 64, {}], // q4k_sgmat runs from M = 64 (below it the batched Q4_K GEMM is faster)
    ['q4_k', 77, 129, 768, 64, {}],
    ['float16', 130, 300, 512, 128, {}], // 128 x 128 tiles: 8 subgroups in 2 x 4
    ['q4_k', 260, 129, 768, 128, {}],
    // the staging tunables: K steps of 64 (a Q4_K sub-block pair), padded rows, register prefetch, 4 subgroups of 64 x 64
    ['float16', 130, 300, 512, 128, staged],
    ['q4_k', 260, 129, 768, 128, staged],
    ['q4_k', 77, 129, 768, 64, staged],
    ['float16', 9, 70, 96, 64, { sgmatPad: 8, sgmatPrefetch: 'on' }],
    ['q4_k', 200, 300, 512, 128, { sgmatWg: 128, sgmatPrefetch: 'on' }],
    ['float16', 140, 150, 320, 128, { sgmatWg: 128, sgmatK: 64, sgmatPad: 8 }],
    ['q4_k', 70, 90, 512, 128, { sgmatK: 64 }],
  ] as const)('%s M=%i N=%i K=%i tile %i %o', async ([fmt, M, N, K, tile, tunables], ctx) => {
    const r = new Rng(`gemm-sgmat/${fmt}/${M}x${N}x${K}`);
    const x = r.floats(M * K);
    const wf = r.floats(N * K);
    const q4 = fmt !== 'float16';
    const wBytes = q4 ? quantizeQ4_K(wf) : f32ToF16Bytes(wf);
    const wRef = q4 ? dequantizeQ4_K(wBytes, N * K) : f16BytesToF32(wBytes);
    const variant = q4 ? 'q4k_sgmat' : 'f16_sgmat';
    const wData = q4 ? wBytes : new Uint16Array(wBytes.buffer, wBytes.byteOffset, wBytes.byteLength / 2);
    let out;
    try {
      out = await runContract(dev, opContract('linear'), {
        inputs: { x: { dtype: 'float32', shape: [M, K], data: x }, w: { dtype: fmt, shape: [N, K], data: wData } },
        attributes: { alpha: 0.5 },
        tunables: { prefillSgmat: 'on', sgmatTile: tile, ...tunables },
        variant,
      });
    } catch (e) {
      // only a device without the features may skip (wave32 is a `when` on the subgroup size); a shape the variant
      // refuses is a failure
      if (e instanceof ContractError && e.rejected.every((x) => x.kind === 'requires' || /wave32/.test(x.reason))) {
        ctx.skip(`${variant} does not run here (${e.rejected.map((x) => x.reason).join('; ')}); the GPU lane runs it`);
        return;
      }
      throw e;
    }
    const want = matmulF32Reference(x, wRef, { M, N, K, alpha: 0.5 });
    // activations and dequantized Q4_K weights rounded to f16 (2^-11 relative each), f32 accumulation
    expect(maxRelErr(out.outputs.y!.data as Float32Array, want)).toBeLessThan(5e-3);
  });
});

describe('the subgroup-matrix GEMM configuration by shape and device (contract only)', () => {
  // the sgmat plan's derived values for M x K activations and N x K weights of format w
  const derived = (M: number, N: number, K: number, w: 'q4_k' | 'float16' = 'q4_k', tunables = {}, device = h200) =>
    resolveContract(opContract('linear'), { shapes: { x: [M, K], w: [N, K] }, dtypes: { w }, device, variant: w === 'q4_k' ? 'q4k_sgmat' : 'f16_sgmat', tunables }).derived;
  const config = (M: number, N: number, K: number, device = h200) => {
    const d = derived(M, N, K, 'q4_k', {}, device);
    return [d.workgroupSize, d.kStep];
  };
  it('takes 256 invocations with K steps of 64 for a grid of at most 256 tiles, 128 invocations with K steps of 32 above it', () => {
    // 4096x4096 at M = 512: 32 x 4 = 128 tiles; at M = 2048: 512 tiles
    expect(config(512, 4096, 4096)).toEqual([256, 64]);
    expect(config(2048, 4096, 4096)).toEqual([128, 32]);
    expect(config(512, 14336, 4096)).toEqual([128, 32]);
  });
  it('gives f16 weights 256 invocations, K steps of 64 and no register prefetch at every grid (sgmatF16Wide)', () => {
    const f16 = (M: number, N: number, K: number, tunables = {}) => {
      const d = derived(M, N, K, 'float16', tunables);
      return [d.workgroupSize, d.kStep, d.prefetch];
    };
    expect(f16(2048, 14336, 4096)).toEqual([256, 64, false]); // 1792 tiles
    expect(f16(512, 4096, 4096)).toEqual([256, 64, false]);
    expect(f16(2048, 14336, 4096, { sgmatPrefetch: 'on' })).toEqual([256, 64, true]);
    // off: the Q4_K rule (256 invocations only for grids of at most 256 tiles), with prefetch
    expect(f16(2048, 14336, 4096, { sgmatF16Wide: 'off' })).toEqual([128, 32, true]);
    expect(f16(512, 4096, 4096, { sgmatF16Wide: 'off' })).toEqual([256, 64, true]);
    expect(derived(2048, 14336, 4096).prefetch).toBe(true);
  });
  it('keeps 128 invocations where the wide configuration would not fit the workgroup memory', () => {
    const small = editedProfile('nvidia-h200', (p) => (p.limits.maxComputeWorkgroupStorageSize = 32768));
    expect(config(512, 4096, 4096, small)).toEqual([128, 32]);
  });
});
