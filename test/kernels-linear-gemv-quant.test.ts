/**
 * The plain linear op's decode GEMVs for Q8_0 and Q6_K weights against the CPU reference, cpuMapping off so CPU
 * adapters run the GPU mapping too:
 *  - q8_0_gemv_sg, q6k_gemv_sg (gemv-subgroup on the blocks themselves, f32 activations) at the work splits the
 *    contract chooses by shape and format: long rows (K >= 8192 and N <= 4096: one item of 32 lanes), the rest (Q8_0: 2
 *    items of 4 columns in workgroups of 64, 32 on SwiftShader), N not a multiple of a workgroup's columns, M = 2..3,
 *    and M = 1 with the int8 rows variants turned off;
 *  - q80_rows, q6k_rows (M = 1: the activations rounded to int8 per block of 32, rows mode), the default at M = 1,
 *    against the product of the rounded activations; q80_rows on Q8_0 repacked in planes (dtype q8_0_planes) against
 *    the same reference as the GGUF blocks it came from, and q8_0_planes_dequant where the rows GEMV does not take them;
 *  - Q4_K repacked in planes (dtype q4_k_planes) through every linear variant that reads them: the int8 GEMVs (rows,
 *    fused, quant pass), the subgroup-matrix GEMM where the device has it, else q4k_planes_dequant.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import { dequantizeQ4_K, dequantizeQ6_K, dequantizeQ8_0, q4_kToPlanes, q8_0ToPlanes, quantizeQ4_K, quantizeQ6_K, quantizeQ8_0 } from '../src/formats/index.ts';
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

  it.each([
    // N, K, tunables: the Q8_0 rows cases above, with the same weights and activations, repacked in planes
    [70, 512, {}],
    [37, 768, {}], // odd and even blocks (24 a row: the scales of a row 3 vec4)
    [40, 4096, { gemvRowBlock: 32, gemvTeams: 2 }],
    [33, 14336, { gemvRowBlock: 8 }],
    [40, 4096, { gemvRowBlock: 32, gemvTeams: 2, rowsReduce: 'add' }],
  ] as const)('q8_0_planes M=1 N=%i K=%i on int8 activations (rows mode) %o', async (N, K, tunables) => {
    const r = new Rng(`linear-gemv-quant/rows/q8_0/${N}x${K}`);
    const x = r.floats(K);
    const wBytes = quantizeQ8_0(r.floats(N * K));
    const want = matmulF32Reference(roundActivationsQ8(x), dequantizeQ8_0(wBytes, N * K), { M: 1, N, K, alpha: 0.5 });
    const { outputs, plan } = await runContract(dev, opContract('linear'), {
      inputs: { x: { dtype: 'float32', shape: [1, K], data: x }, w: { dtype: 'q8_0_planes', shape: [N, K], data: q8_0ToPlanes(wBytes, N, K) } },
      attributes: { alpha: 0.5 },
      // gemvQ80Int8 off: the planes have no other reader, so the rows variant takes them whatever it says
      tunables: { cpuMapping: 'off', gemvQ80Int8: 'off', ...tunables },
    });
    expect(plan.variant).toBe('q80_rows');
    expect(plan.passes[0]!.derived.weightLayout).toBe('planes');
    expect(maxRelErr(outputs.y!.data as Float32Array, want)).toBeLessThan(1e-4);
  });

  it.each([
    // M, N, K, cpuMapping: where the rows GEMV does not take the planes, dequantize them per call, then the f32 matmul
    [3, 37, 768, 'off'], // prefill
    [1, 20, 512, 'on'], // a CPU adapter's mapping
  ] as const)('q8_0_planes M=%i N=%i K=%i dequantized per call (cpuMapping %s)', async (M, N, K, cpuMapping) => {
    const r = new Rng(`linear-gemv-quant/planes-dequant/${M}x${N}x${K}`);
    const x = r.floats(M * K);
    const wBytes = quantizeQ8_0(r.floats(N * K));
    const want = matmulF32Reference(x, dequantizeQ8_0(wBytes, N * K), { M, N, K, alpha: 1 });
    const { outputs, plan } = await runContract(dev, opContract('linear'), {
      inputs: { x: { dtype: 'float32', shape: [M, K], data: x }, w: { dtype: 'q8_0_planes', shape: [N, K], data: q8_0ToPlanes(wBytes, N, K) } },
      tunables: { cpuMapping },
    });
    expect(plan.variant).toBe('q8_0_planes_dequant');
    expect(maxRelErr(outputs.y!.data as Float32Array, want)).toBeLessThan(1e-5);
  });

  it.each([
    // M, N, K, tunables: weights of their own, quantized to Q4_K, then repacked
    [1, 4096, 4096, { gemvRowBlock: 8, gemvTeams: 1 }], // q4k_rows
    [1, 37, 512, {}], // q4k_gemv_q8a_fused
    [2, 37, 512, { gemvPipeline: 'off' }], // its loads not pipelined
    [3, 70, 768, { gemvFuseQuant: 'off' }], // q4k_gemv_q8a: the activations' quant pass, then the GEMV
    [12, 40, 512, {}], // q4k_sgmat where the device has subgroup matrices, else q4k_planes_dequant
    [70, 33, 1024, {}],
  ] as const)('q4_k_planes M=%i N=%i K=%i %o', async (M, N, K, tunables) => {
    const r = new Rng(`linear-gemv-quant/q4_k-planes/${M}x${N}x${K}`);
    const x = r.floats(M * K);
    const wBytes = quantizeQ4_K(r.floats(N * K));
    const { outputs, plan } = await runContract(dev, opContract('linear'), {
      inputs: { x: { dtype: 'float32', shape: [M, K], data: x }, w: { dtype: 'q4_k_planes', shape: [N, K], data: q4_kToPlanes(wBytes, N, K) } },
      tunables: { cpuMapping: 'off', ...tunables },
    });
    const w = dequantizeQ4_K(wBytes, N * K);
    // the int8 GEMVs multiply the activations rounded to int8 per block of 32; the GEMM rounds them and the
    // dequantized weights to f16; the dequantizing path is f32 throughout
    const int8 = ['q4k_rows', 'q4k_gemv_q8a_fused', 'q4k_gemv_q8a'].includes(plan.variant);
    expect(M <= 8 ? int8 : ['q4k_sgmat', 'q4k_planes_dequant'].includes(plan.variant), plan.variant).toBe(true);
    if (M === 1 && N >= 4096) expect(plan.variant).toBe('q4k_rows');
    const want = matmulF32Reference(int8 ? roundActivationsQ8(x) : x, w, { M, N, K, alpha: 1 });
    expect(maxRelErr(outputs.y!.data as Float32Array, want)).toBeLessThan(plan.variant === 'q4k_sgmat' ? 5e-3 : int8 ? 1e-4 : 1e-5);
  });

  it('refuses Q8_0 planes whose rows are off 16 bytes', async () => {
    const K = 320; // 10 blocks: 340 bytes a row
    const run = (M: number) =>
      runContract(dev, opContract('linear'), {
        inputs: { x: { dtype: 'float32', shape: [M, K], data: new Float32Array(M * K) }, w: { dtype: 'q8_0_planes', shape: [4, K], data: new Uint8Array((4 * K * 34) / 32) } },
        tunables: { cpuMapping: 'off' },
      });
    for (const M of [1, 2]) await expect(run(M)).rejects.toThrow(/linear: no variant/);
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
