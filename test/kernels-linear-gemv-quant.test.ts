/**
 * The plain linear op's decode GEMVs for Q8_0 and Q6_K weights (q8_0_gemv_sg, q6k_gemv_sg: gemv-subgroup on the
 * blocks themselves, f32 activations) at the work splits the contract chooses by shape and format (no tunables set),
 * against the CPU reference: long rows (K >= 8192 and N <= 4096: one item of 32 lanes), the rest (Q8_0: 2 items of 4
 * columns in workgroups of 64, 32 on SwiftShader), N not a multiple of a workgroup's columns, M = 1..3. cpuMapping is
 * off so CPU adapters run the GPU mapping too.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import { dequantizeQ6_K, dequantizeQ8_0, quantizeQ6_K, quantizeQ8_0 } from '../src/formats/index.ts';
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

const QUANT = { q8_0: [quantizeQ8_0, dequantizeQ8_0], q6_k: [quantizeQ6_K, dequantizeQ6_K] } as const;

describe('linear: Q8_0 and Q6_K decode GEMVs at their default work splits', () => {
  it.each([
    // format, M, N, K
    ['q8_0', 1, 64, 8192], // long rows
    ['q8_0', 2, 37, 8192],
    ['q8_0', 1, 1000, 512], // 125 workgroups of 8 columns
    ['q8_0', 3, 301, 256], // the last workgroup's columns past N
    ['q6_k', 1, 64, 8192],
    ['q6_k', 2, 300, 512],
  ] as const)('%s M=%i N=%i K=%i', async (fmt, M, N, K) => {
    const r = new Rng(`linear-gemv-quant/${fmt}/${M}x${N}x${K}`);
    const x = r.floats(M * K);
    const wBytes = QUANT[fmt][0](r.floats(N * K));
    const want = matmulF32Reference(x, QUANT[fmt][1](wBytes, N * K), { M, N, K, alpha: 1 });
    const { outputs, plan } = await runContract(dev, opContract('linear'), {
      inputs: { x: { dtype: 'float32', shape: [M, K], data: x }, w: { dtype: fmt, shape: [N, K], data: wBytes } },
      tunables: { cpuMapping: 'off' },
    });
    expect(plan.variant).toBe(fmt === 'q8_0' ? 'q8_0_gemv_sg' : 'q6k_gemv_sg');
    if (fmt === 'q8_0') {
      // the Q8_0 splits (measured on the H200, linear.contract.json's gemvCols): 4 columns an item
      const long = K >= 8192 && N <= 4096;
      const emulated = dev.caps.adapterInfo.architecture === 'swiftshader'; // workgroups of 32 there
      expect([plan.derived.colsPerItem, plan.derived.itemsPerWg, plan.derived.gemvWorkgroupSize]).toEqual(long ? [4, 1, 32] : [4, 2, emulated ? 32 : 64]);
    }
    expect(maxRelErr(outputs.y!.data as Float32Array, want)).toBeLessThan(1e-5);
  });
});
