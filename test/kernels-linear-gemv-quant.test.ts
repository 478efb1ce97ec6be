/**
 * The plain linear op's decode GEMVs for Q8_0 and Q6_K weights against the CPU reference, cpuMapping off so CPU
 * adapters run the GPU mapping too:
 *  - q8_0_gemv_sg, q6k_gemv_sg (gemv-subgroup on the blocks themselves, f32 activations) at the work splits the
 *    contract chooses by shape and format: long rows (K >= 8192 and N <= 4096: one item of 32 lanes), the rest (Q8_0: 2
 *    items of 4 columns in workgroups of 64, 32 on SwiftShader), N not a multiple of a workgroup's columns, M = 2..3,
 *    and M = 1 with the int8 rows variants turned off;
 *  - q80_rows, q6k_rows (M = 1: the activations rounded to int8 per block of 32, rows mode), the default at M = 1,
 *    against the product of the rounded activations.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import { dequantizeQ4_K, dequantizeQ6_K, dequantizeQ8_0, quantizeQ4_K, quantizeQ6_K, quantizeQ8_0 } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { roundActivationsQ8 } from '../src/reference/activations-q8.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const QUANT = { q8_0: [quantizeQ8_0, dequantizeQ8_0], q6_k: [quantizeQ6_K, dequantizeQ6_K], q4_k: [quantizeQ4_K, dequantizeQ4_K] } as const;

const F32_ACTS = { gemvQ80Int8: 'off', gemvQ6KInt8: 'off' } as const;

describe('linear: Q8_0 and Q6_K decode GEMVs at their default work splits', () => {
  it.each([
    // format, M, N, K, tunables
    ['q8_0', 1, 64, 8192, F32_ACTS], // long rows
    ['q8_0', 2, 37, 8192, {}],
    ['q8_0', 1, 1000, 512, F32_ACTS], // 125 workgroups of 8 columns
    ['q8_0', 3, 301, 256, {}], // the last workgroup's columns past N
    ['q6_k', 1, 64, 8192, F32_ACTS],
    ['q6_k', 2, 300, 512, {}],
  ] as const)('%s M=%i N=%i K=%i %o', async (fmt, M, N, K, tunables) => {
    const r = new Rng(`linear-gemv-quant/${fmt}/${M}x${N}x${K}`);
    const x = r.floats(M * K);
    const wBytes = QUANT[fmt][0](r.floats(N * K));
    const want = matmulF32Reference(x, QUANT[fmt][1](wBytes, N * K), { M, N, K, alpha: 1 });
    const { outputs, plan } = await runContract(dev, opContract('linear'), {
      inputs: { x: { dtype: 'float32', shape: [M, K], data: x }, w: { dtype: fmt, shape: [N, K], data: wBytes } },
      tunables: { cpuMapping: 'off', ...tunables },
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

  it.each([
    // format, N, K, tunables
    ['q8_0', 70, 512, {}], // 16 blocks a row: half the 32 lanes past it; the last workgroup's rows past N
    ['q8_0', 37, 768, {}], // odd and even blocks (24 a row)
    ['q8_0', 40, 4096, { gemvRowBlock: 32, gemvTeams: 2 }],
    ['q8_0', 33, 14336, { gemvRowBlock: 8 }], // 448 blocks a row (the 8B down's K): 448 lanes, one team
    ['q6_k', 70, 512, {}], // 2 blocks a row (odd and even)
    ['q6_k', 37, 4096, { gemvRowBlock: 4 }],
    ['q8_0', 40, 4096, { gemvRowBlock: 32, gemvTeams: 2, rowsReduce: 'add' }], // the rows' sums by subgroupAdd (scatter by default)
    ['q6_k', 37, 4096, { gemvRowBlock: 8, rowsReduce: 'add' }],
    ['q6_k', 20, 2048, { gemvRunSums: 'off' }], // the activations' run sums recomputed
    ['q6_k', 70, 512, { q6Wide: 'on' }], // wide slots: 64 values a lane, 8 a row
    ['q6_k', 37, 14336, { q6Wide: 'on', gemvRowBlock: 8 }], // 224 slots a row (the 8B down's K)
    ['q6_k', 20, 2048, { q6Wide: 'on', gemvRunSums: 'off' }],
    // Q4_K at 4096 <= N < 65536, K >= 4096 (q4k_rows, tunable gemvQ4Rows): one 16-byte nibble slot a lane a row
    ['q4_k', 4104, 4096, {}], // 2 teams of 128 lanes; the last workgroup's rows half past N
    ['q4_k', 4096, 4096, { gemvRowBlock: 8, gemvTeams: 1 }], // one team of 128 lanes, 8 rows a workgroup
  ] as const)('%s M=1 N=%i K=%i on int8 activations (rows mode) %o', async (fmt, N, K, tunables) => {
    const r = new Rng(`linear-gemv-quant/rows/${fmt}/${N}x${K}`);
    const x = r.floats(K);
    const wBytes = QUANT[fmt][0](r.floats(N * K));
    const want = matmulF32Reference(roundActivationsQ8(x), QUANT[fmt][1](wBytes, N * K), { M: 1, N, K, alpha: 0.5 });
    const { outputs, plan } = await runContract(dev, opContract('linear'), {
      inputs: { x: { dtype: 'float32', shape: [1, K], data: x }, w: { dtype: fmt, shape: [N, K], data: wBytes } },
      attributes: { alpha: 0.5 },
      tunables: { cpuMapping: 'off', ...tunables },
    });
    expect(plan.variant).toBe(({ q8_0: 'q80_rows', q6_k: 'q6k_rows', q4_k: 'q4k_rows' } as const)[fmt]);
    // Q6_K: 32 rows in one team at K > 8192 (or a head's N >= 65536)
    expect(plan.derived.rowsBlock).toBe((tunables as { gemvRowBlock?: number }).gemvRowBlock ?? (fmt === 'q6_k' && K > 8192 ? 32 : 16));
    // f32 sums in another order than the reference's
    expect(maxRelErr(outputs.y!.data as Float32Array, want)).toBeLessThan(1e-4);
  });

  it('keeps M >= 2 and CPU adapters (cpuMapping) off the int8 rows variants', async () => {
    const plan = (M: number, fmt: 'q8_0' | 'q6_k', cpuMapping: string) => {
      const K = 512;
      const wBytes = QUANT[fmt][0](new Float32Array(8 * K));
      return runContract(dev, opContract('linear'), {
        inputs: { x: { dtype: 'float32', shape: [M, K], data: new Float32Array(M * K) }, w: { dtype: fmt, shape: [8, K], data: wBytes } },
        tunables: { cpuMapping },
      }).then((r) => r.plan.variant);
    };
    expect(await plan(2, 'q8_0', 'off')).toBe('q8_0_gemv_sg');
    expect(await plan(1, 'q8_0', 'on')).not.toBe('q80_rows');
    expect(await plan(1, 'q6_k', 'on')).not.toBe('q6k_rows');
  });
});
