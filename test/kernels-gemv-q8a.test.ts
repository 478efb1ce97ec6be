/**
 * The Q4_K decode GEMV on int8 activations (gemv-q8a.wgsl.jinja: a quant pass, then packed 4x8-bit dots) against
 * the CPU reference fed the same int8-rounded activations (src/reference/activations-q8.ts), for several work splits;
 * and against the unrounded f32 product, which int8 activations may miss by about 1%.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ContractError } from '../src/contracts/index.ts';
import { runContract } from '../src/contracts/run.ts';
import { dequantizeQ4_K } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { roundActivationsQ8 } from '../src/reference/activations-q8.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';
import { quantizeMemo } from './helpers/quant-memo.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('linear q4k_gemv_q8a (int8 activations)', () => {
  it.for([
    [1, 37, 512, { gemvFuseQuant: 'off' }],
    [2, 70, 768, { gemvCols: 3, gemvUnroll: 2, gemvFuseQuant: 'off' }],
    [1, 129, 2048, { gemvCols: 4, gemvItems: 2, gemvWorkgroup: 64, gemvFuseQuant: 'off' }],
    [3, 33, 256, { gemvCols: 1, gemvItems: 8, gemvWorkgroup: 32, gemvFuseQuant: 'off' }],
    // the activations rounded inside each GEMV workgroup (no quant pass; the default below 65536 rows)
    [1, 37, 512, {}],
    [2, 70, 768, { gemvCols: 3, gemvUnroll: 2, gemvFuseQuant: 'on' }],
    [3, 33, 256, { gemvCols: 1, gemvItems: 8, gemvWorkgroup: 32, gemvFuseQuant: 'on' }],
    [1, 16400, 256, { gemvFuseQuant: 'on' }], // N >= 16384: 32 items per fused workgroup
    [1, 65537, 256, {}], // N >= 65536 (an LM head): a quant pass, 4 columns an item, 1 item of 32 lanes, 1 slot a turn
    [1, 65537, 256, { gemvFuseQuant: 'on' }], // the same head fused: 4 columns an item, 1 slot a lane a turn
    // run sums kept in workgroup memory; weight loads pipelined a loop turn ahead (the first before the prologue)
    [2, 70, 768, { gemvRunSums: 'off', gemvPipeline: 'off' }], // both on by default: the plain loop
    [1, 37, 4096, { gemvRunSums: 'off' }], // 128 slots a row: several loop turns on any subgroup size
    [1, 129, 2048, { gemvCols: 4, gemvUnroll: 3, gemvPipeline: 'off' }],
    [3, 33, 256, { gemvWorkgroup: 32, gemvRunSums: 'off' }],
    [1, 70, 4096, { gemvCols: 1, gemvUnroll: 8 }], // the deepest unroll, pipelined: 16 weight slots a lane in flight
  ] as const)('M=%i N=%i K=%i %o', async ([M, N, K, tun], ctx) => {
    // fused by default (gemvFuseQuant auto), but for Q4_K heads of 65536 rows or more
    const fused = 'gemvFuseQuant' in tun ? tun.gemvFuseQuant === 'on' : N < 65536;
    const variant = fused ? 'q4k_gemv_q8a_fused' : 'q4k_gemv_q8a';
    const r = new Rng(`gemv-q8a/${M}x${N}x${K}`);
    const x = r.floats(M * K);
    x.fill(0, 0, 32); // an all-zero block (scale 0)
    const wBytes = quantizeMemo('q4_k', r.floats(N * K)); // the same seed and shape under other tunables: quantized once
    const w = dequantizeQ4_K(wBytes, N * K);
    let out;
    try {
      out = await runContract(dev, opContract('linear'), {
        inputs: { x: { dtype: 'float32', shape: [M, K], data: x }, w: { dtype: 'q4_k', shape: [N, K], data: wBytes } },
        attributes: { alpha: 0.5 },
        tunables: { gemvInt8: 'on', cpuMapping: 'off', ...tun },
        variant,
      });
    } catch (e) {
      if (e instanceof ContractError && e.rejected.every((x) => x.kind === 'requires')) {
        ctx.skip(`${variant} does not run here (${e.rejected.map((x) => x.reason).join('; ')}); the GPU lane runs it`);
        return;
      }
      throw e;
    }
    expect(out.plan.passes.map((p) => p.id)).toEqual(fused ? ['matmul'] : ['quant', 'matmul']);
    const y = out.outputs.y!.data as Float32Array;
    // the same int8 activations on the CPU: f32 rounding only
    expect(maxRelErr(y, matmulF32Reference(roundActivationsQ8(x), w, { M, N, K, alpha: 0.5 }))).toBeLessThan(2e-5);
    // the exact product: int8 rounding of the activations costs at most a few tenths of a percent here
    expect(maxRelErr(y, matmulF32Reference(x, w, { M, N, K, alpha: 0.5 }))).toBeLessThan(2e-2);
  });
});
