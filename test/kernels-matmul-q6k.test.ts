/**
 * The linear contract with Q6_K weights (GGUF's 210-byte blocks kept as they are on the GPU) against the CPU
 * reference: the decode GEMV that reads the blocks in place, and the dequantize-to-scratch path longer inputs (and
 * CPU adapters) take, with rows of odd and even block counts (every other block starts 2 bytes off a word).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import { dequantizeQ6_K, quantizeQ6_K } from '../src/formats/index.ts';
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

describe('linear with Q6_K weights', () => {
  it.each([
    [1, 37, 256, 'q6k_gemv_sg'],
    [4, 70, 768, 'q6k_gemv_sg'],
    [1, 33, 512, 'q6k_dequant'],
    [20, 65, 768, 'q6k_dequant'],
  ] as const)('M=%i N=%i K=%i through %s', async (M, N, K, variant) => {
    const r = new Rng(`q6k/${M}x${N}x${K}`);
    const x = r.floats(M * K);
    const wq = quantizeQ6_K(r.floats(N * K));
    const { outputs, plan } = await runContract(dev, opContract('linear'), {
      inputs: { x: { dtype: 'float32', shape: [M, K], data: x }, w: { dtype: 'q6_k', shape: [N, K], data: wq } },
      attributes: { alpha: 0.5 },
      tunables: { cpuMapping: 'off' },
      variant,
    });
    expect(plan.variant).toBe(variant);
    const want = matmulF32Reference(x, dequantizeQ6_K(wq, N * K), { M, N, K, alpha: 0.5 });
    expect(maxRelErr(outputs.y!.data as Float32Array, want)).toBeLessThan(1e-5);
  });

  it('prefill-length inputs take the dequantize path, decode rows the GEMV (on GPUs)', async () => {
    const { planOp } = await import('../src/selftest/launch.ts');
    const plan = (M: number) => planOp(dev, 'linear', { shapes: { x: [M, 256], w: [64, 256] }, dtypes: { w: 'q6_k' }, tunables: { cpuMapping: 'off' } }).variant;
    expect(plan(1)).toBe('q6k_gemv_sg');
    expect(plan(9)).toBe('q6k_dequant');
  });
});
