/**
 * The decode MLP on int8 activations handed from one GEMV to the next (gemv-q8a.wgsl.jinja):
 * - linear_glu_q8 (the gate|up GEMV, rmsnorm prologue, epilogue glu_q8) against the CPU reference: rmsnorm(x) * gamma
 *   rounded to int8 per block of 32, times the dequantized gate|up weight, act(gate) * up, then rounded to int8 as the
 *   quant pass rounds (block scales, int8 values, run sums of 16);
 * - linear_q8 (the down GEMV on those int8 activations) against the CPU product of the dequantized activations and
 *   weights, storing and accumulating, with the run sums read (gemvRunSums on) and recomputed (off); Q4_K weights, and
 *   Q6_K (the down_proj of llama.cpp's Q4_K_M layers that keep it in Q6_K).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract, type HostTensor } from '../src/contracts/run.ts';
import { dequantizeQ4_K, dequantizeQ6_K } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { roundActivationsQ8 } from '../src/reference/activations-q8.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { rmsnormRef } from '../src/reference/rmsnorm.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { expectQ8Activations } from './helpers/q8.ts';
import { quantizeMemo } from './helpers/quant-memo.ts';
import { testDevice } from './helpers/device.ts';
import { runOpOrSkip } from './helpers/run-or-skip.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const ACT = {
  silu: (g: number) => g / (1 + Math.exp(-g)),
  gelu_tanh: (g: number) => 0.5 * g * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (g + 0.044715 * g ** 3))),
};

/** Run `op`, or skip (saying why) where the device lacks what the variant requires. */
const runOrSkip = (op: string, req: Parameters<typeof runContract>[2], ctx: { skip: (why: string) => void }) => runOpOrSkip(dev, op, req, ctx);

describe('linear_glu_q8 (gate|up GEMV writing int8 activations) vs the CPU reference', () => {
  it.for([
    // M, I, K, activation, tunables
    [1, 64, 256, 'silu', {}],
    [2, 96, 512, 'gelu_tanh', {}], // 3 workgroups of 32 values
    [1, 128, 768, 'silu', { gemvCols: 4 }], // 2 values of h an item
    [3, 64, 256, 'silu', { gemvCols: 4, gemvItems: 32, gemvWorkgroup: 64 }], // 64 values a workgroup, the second block past I
    [1, 160, 1024, 'silu', { gemvItems: 64, gemvUnroll: 3, gemvRunSums: 'off', gemvPipeline: 'off' }],
    [2, 32, 4096, 'gelu_tanh', { gemvWorkgroup: 32 }], // several loop turns a lane
    // rows mode: gemvRowBlock / 2 gate rows and their up rows a workgroup
    [1, 96, 512, 'silu', { gemvRowBlock: 64 }], // 2 workgroups, the second's last 16 values past I
    [2, 64, 2048, 'gelu_tanh', { gemvRowBlock: 128, gemvTeams: 2 }], // 2 teams of 64 lanes, 64 rows each
    [1, 128, 4096, 'silu', { gemvRowBlock: 64, gemvTeams: 2 }], // 2 teams of 128 lanes (one slot a lane)
    [2, 96, 512, 'silu', { gemvRowBlock: 64, rowsReduce: 'add' }], // the rows' sums by subgroupAdd (scatter by default)
  ] as const)('M=%i I=%i K=%i %s %o', async ([M, I, K, activation, tun], ctx) => {
    const r = new Rng(`linear_glu_q8/${M}x${I}x${K}/${activation}`);
    const x = r.floats(M * K);
    const gamma = r.floats(K).map((v) => 1 + v);
    const wBytes = quantizeMemo('q4_k', r.floats(2 * I * K)); // the same seed under other tunables: quantized once
    const wRef = dequantizeQ4_K(wBytes, 2 * I * K);
    const stale = (n: number) => new Uint32Array(n).fill(0xdeadbeef);
    const out = await runOrSkip(
      'linear_glu_q8',
      {
        inputs: {
          x: { dtype: 'float32', shape: [M, K], data: x },
          w: { dtype: 'q4_k', shape: [2 * I, K], data: wBytes },
          gamma: { dtype: 'float32', shape: [K], data: gamma },
          qa: { dtype: 'uint32', shape: [M, I / 4], data: stale((M * I) / 4) },
          da: { dtype: 'float32', shape: [M, I / 32], data: new Float32Array((M * I) / 32).fill(NaN) },
          rs: { dtype: 'float32', shape: [M, I / 16], data: new Float32Array((M * I) / 16).fill(NaN) },
        },
        attributes: { eps: 1e-6, activation },
        tunables: { mlpQ8: 'on', cpuMapping: 'off', ...tun },
      },
      ctx,
    );
    if (!out) return;
    expect(out.plan.variant).toBe('gemvRowBlock' in tun ? 'q8a_norm_glu_rows' : 'q8a_norm_glu_fused');
    // the reference: the prologue's activations rounded to int8, the gate|up product, act(gate) * up
    const a = Float32Array.from(rmsnormRef(x, gamma, undefined, { hidden_size: K, num_tokens: M, eps: 1e-6, has_residual: 0, token_stride: 0, output_scale: 1 }));
    const gu = matmulF32Reference(roundActivationsQ8(a), wRef, { M, N: 2 * I, K, alpha: 1 });
    const h = new Float32Array(M * I);
    for (let m = 0; m < M; m++) for (let i = 0; i < I; i++) h[m * I + i] = ACT[activation](gu[m * 2 * I + i]!) * gu[m * 2 * I + I + i]!;
    // the GEMV's f32 rounding apart, the reference h's int8 rounding
    expectQ8Activations(out.outputs.qa!.data as Uint32Array, out.outputs.da!.data as Float32Array, out.outputs.rs!.data as Float32Array, h);
  });

  it('refuses what it cannot run, naming the reason', async () => {
    const req = (I: number, K: number, tunables: Record<string, string | number> = {}) =>
      runContract(dev, opContract('linear_glu_q8'), {
        inputs: {
          x: { dtype: 'float32', shape: [1, K], data: new Float32Array(K) },
          w: { dtype: 'q4_k', shape: [2 * I, K], data: new Uint8Array((2 * I * K * 144) / 256) },
          gamma: { dtype: 'float32', shape: [K], data: new Float32Array(K) },
          qa: { dtype: 'uint32', shape: [1, I / 4], data: new Uint32Array(I / 4) },
          da: { dtype: 'float32', shape: [1, Math.floor(I / 32)], data: new Float32Array(Math.max(1, Math.floor(I / 32))) },
          rs: { dtype: 'float32', shape: [1, I / 16], data: new Float32Array(I / 16) },
        } satisfies Record<string, HostTensor>,
        tunables: { mlpQ8: 'on', cpuMapping: 'off', ...tunables },
      });
    await expect(req(48, 256)).rejects.toThrow(/shapeOk/); // I not a multiple of 32
    await expect(req(64, 256, { gemvItems: 8 })).rejects.toThrow(/tuningOk/); // 8 values of h a workgroup: no whole block
    await expect(req(64, 256, { mlpQ8: 'off' })).rejects.toThrow(/mlpQ8/);
  });
});

describe('linear_q8 (GEMV on int8 activations from memory) vs the CPU reference', () => {
  it.for([
    // M, N, K, accumulate, tunables
    [1, 37, 512, 0, {}], // the default: rows mode, 16 rows a workgroup
    [1, 37, 512, 0, { gemvRowBlock: 0 }], // the subgroup-item variant
    [2, 70, 768, 1, { gemvRowBlock: 0, gemvCols: 3, gemvUnroll: 3 }],
    [1, 129, 2048, 1, { gemvRowBlock: 0, gemvCols: 4, gemvItems: 2, gemvWorkgroup: 64 }],
    [3, 33, 256, 0, { gemvRowBlock: 0, gemvCols: 1, gemvItems: 8, gemvWorkgroup: 32, gemvRunSums: 'off' }],
    [1, 40, 4096, 1, { gemvRowBlock: 0, gemvPipeline: 'off', gemvRunSums: 'off' }],
    [1, 33, 4096, 1, { gemvRowBlock: 0, gemvCols: 1, gemvUnroll: 4, gemvRunSums: 'off' }],
    // rows mode: a workgroup's lanes hold their activation slots for a block of rows (the last block partial)
    [1, 37, 512, 1, { gemvRowBlock: 8 }], // 16 slots: a workgroup of 32, half its lanes past the row
    [2, 70, 2304, 0, { gemvRowBlock: 16 }], // 72 slots: 96 lanes
    [1, 41, 14336, 1, { gemvRowBlock: 4, gemvWorkgroup: 224 }], // 448 slots: 224 lanes, two slots each
    [1, 23, 14336, 0, {}], // 448 slots: one a lane where the device allows 448 invocations a workgroup, else two
    [3, 20, 1280, 0, { gemvRowBlock: 12, gemvWorkgroup: 16 }], // 40 slots: three a lane, the last one partly
    [1, 70, 2304, 1, { gemvRowBlock: 32, gemvWorkgroup: 96 }], // 8 groups of 4 rows, the last block 6 rows
    [3, 20, 1280, 1, { gemvRowBlock: 24, gemvWorkgroup: 16 }], // 3 slots a lane; 16 lanes walk the block's 24 outputs
    [1, 70, 2304, 1, { gemvRowBlock: 32, gemvWorkgroup: 96, rowsReduce: 'add' }], // the rows' sums by subgroupAdd (scatter by default)
    [2, 37, 14336, 0, { rowsReduce: 'add' }],
    [2, 37, 14336, 1, { rowsExact: 'off' }], // slotImad, the slots clamped and selected (exact by default)
  ] as const)('M=%i N=%i K=%i accumulate %i %o', async ([M, N, K, accumulate, tun], ctx) => {
    await linearQ8Case('q4_k', M, N, K, accumulate, tun, ctx);
  });

  it.for([
    // Q6_K in rows mode (q6k_rows): 32 values of a block a lane, K a multiple of 512
    [1, 37, 512, 0, {}], // 16 slots: a workgroup of 32, half its lanes past the row
    [2, 70, 2048, 1, { q6RowBlock: 0, gemvRowBlock: 8 }], // 0: gemvRowBlock's
    [1, 41, 14336, 1, {}], // the 8B down_proj's K: 448 slots
    [3, 20, 1536, 0, { q6RowBlock: 0, gemvRowBlock: 12, gemvWorkgroup: 16, gemvRunSums: 'off' }], // 3 slots a lane; run sums recomputed
    [1, 70, 2048, 1, { q6RowBlock: 16, gemvRowBlock: 32 }], // its own row block: 5 workgroups (the last 6 rows), not 3
    [2, 37, 1024, 0, { q6RowBlock: 8 }],
    [1, 41, 2048, 1, { q6RowBlock: 8, rowsReduce: 'add' }],
    // wide slots (q6Wide): 64 values of a block a lane (both ql runs of a column and their qh run)
    [1, 37, 512, 0, { q6Wide: 'on' }], // 8 slots: a workgroup of 32, most lanes past the row
    [2, 70, 2048, 1, { q6Wide: 'on', q6RowBlock: 8 }], // odd and even blocks; the last workgroup's rows past N
    [1, 41, 14336, 1, { q6Wide: 'on' }], // the 8B down_proj's K: 224 slots, exactly a team's lanes
    [3, 20, 1536, 0, { q6Wide: 'on', q6RowBlock: 0, gemvRowBlock: 12, gemvWorkgroup: 8, gemvRunSums: 'off' }], // 3 slots a lane; run sums recomputed
    [1, 41, 4096, 1, { q6Wide: 'on', rowsReduce: 'add' }],
  ] as const)('q6_k M=%i N=%i K=%i accumulate %i %o', async ([M, N, K, accumulate, tun], ctx) => {
    await linearQ8Case('q6_k', M, N, K, accumulate, tun, ctx);
  });
});

/** One linear_q8 call on random int8 activations (as a producer writes them) against the CPU product. */
async function linearQ8Case(fmt: 'q4_k' | 'q6_k', M: number, N: number, K: number, accumulate: number, tun: Record<string, string | number>, ctx: { skip: (why: string) => void }) {
  const r = new Rng(`linear_q8/${fmt === 'q4_k' ? '' : fmt + '/'}${M}x${N}x${K}`);
  // int8 activations and their block scales as a producer writes them (all 127 magnitudes, some blocks zero)
  const qv = new Int8Array(M * K).map(() => Math.round((r.next() * 2 - 1) * 127));
  qv.fill(0, 32, 64);
  const d = new Float32Array((M * K) / 32).map(() => 0.001 + r.next() * 0.05);
  const rs = new Float32Array((M * K) / 16).map((_, j) => qv.subarray(j * 16, j * 16 + 16).reduce((s, v) => s + v, 0));
  const a = new Float32Array(M * K).map((_, i) => qv[i]! * d[i >> 5]!);
  const dequantize = fmt === 'q4_k' ? dequantizeQ4_K : dequantizeQ6_K;
  const wBytes = quantizeMemo(fmt, r.floats(N * K)); // the same seed under other tunables: quantized once
  const wRef = dequantize(wBytes, N * K);
  const y0 = r.floats(M * N);
  const out = await runOrSkip(
    'linear_q8',
    {
      inputs: {
        qa: { dtype: 'uint32', shape: [M, K / 4], data: new Uint32Array(qv.buffer) },
        da: { dtype: 'float32', shape: [M, K / 32], data: d },
        rs: { dtype: 'float32', shape: [M, K / 16], data: rs },
        w: { dtype: fmt, shape: [N, K], data: wBytes },
        y: { dtype: 'float32', shape: [M, N], data: y0 },
      },
      attributes: { alpha: 0.5, accumulate },
      tunables: { cpuMapping: 'off', ...tun },
    },
    ctx,
  );
  if (!out) return;
  expect(out.plan.variant).toBe(fmt === 'q6_k' ? 'q6k_rows' : 'gemvRowBlock' in tun && tun.gemvRowBlock === 0 ? 'q8a_gemv' : 'q8a_rows');
  if (fmt === 'q6_k') {
    // q6RowBlock (4 by default; 0: gemvRowBlock, 16 by default): ceil(N / rows) workgroups of that many rows
    const rows = tun.q6RowBlock === 0 ? Number(tun.gemvRowBlock ?? 16) : Number(tun.q6RowBlock ?? 4);
    expect(out.plan.derived.rowBlock).toBe(rows);
    expect(out.plan.passes[0]!.dispatch[0] * out.plan.passes[0]!.dispatch[1]).toBe(Math.ceil(N / rows));
  }
  const prod = matmulF32Reference(a, wRef, { M, N, K, alpha: 0.5 });
  const want = prod.map((v, i) => (accumulate ? v + y0[i]! : v));
  expect(maxRelErr(out.outputs.y!.data as Float32Array, want)).toBeLessThan(2e-5);
}
