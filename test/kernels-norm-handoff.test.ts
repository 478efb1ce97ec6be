/**
 * The decode GEMVs' norm handoff (gemv-q8a.wgsl.jinja): a GEMV that writes the residual stream h also rounds
 * h * gamma (the next rmsnorm's weight) to int8 in runs of 16 with each run's scale, int8 sum and sum of h^2, and the
 * GEMV that reads rmsnorm(h) takes those instead of rounding h itself.
 * - producers (linear_q8 q8a_rows_next, linear_fused q8a_plain_rows_next): y as without the handoff, and the handoff
 *   against the rows of y the GEMV wrote (expectHandoff);
 * - consumer linear_glu_q8 (q8h_glu_rows) on a handoff built on the host: act(gate) * up against the CPU product of
 *   rmsnorm's scale times the dequantized runs, rounded as the gate|up GEMV rounds its output (expectQ8Activations);
 *   linear_rope_kv's consumer is in kernels-linear-rope-kv.test.ts;
 * - the pair: linear_q8 with the handoff, then linear_glu_q8 on it, against linear_glu_q8's rmsnorm prologue on the
 *   same h;
 * - gate|up writing act(gate) * up in runs of 16 (q8h_glu16_rows, tunable gluRuns) and linear_q8 reading runs of 16
 *   without a norm (q8h_rows), each against the CPU reference.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract, type HostTensor } from '../src/contracts/run.ts';
import { dequantizeQ4_K, quantizeQ4_K } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { roundActivationsQ8 } from '../src/reference/activations-q8.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';
import { quantizeMemo } from './helpers/quant-memo.ts';
import { runOpOrSkip } from './helpers/run-or-skip.ts';
import { expectHandoff, expectQ8Activations, handoffActivations } from './helpers/q8.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const silu = (g: number) => g / (1 + Math.exp(-g));

/** Run `op`, or skip (saying why) where the device lacks what the variant requires. */
const runOrSkip = (op: string, req: Parameters<typeof runContract>[2], ctx: { skip: (why: string) => void }) => runOpOrSkip(dev, op, req, ctx);

/** int8 activations and their block scales of 32 as a producer writes them, and what they dequantize to. */
function q8Inputs(r: Rng, M: number, K: number) {
  const qv = new Int8Array(M * K).map(() => Math.round((r.next() * 2 - 1) * 127));
  const d = new Float32Array((M * K) / 32).map(() => 0.001 + r.next() * 0.05);
  const rs = new Float32Array((M * K) / 16).map((_, j) => qv.subarray(j * 16, j * 16 + 16).reduce((s, v) => s + v, 0));
  const a = new Float32Array(M * K).map((_, i) => qv[i]! * d[i >> 5]!);
  return { qa: new Uint32Array(qv.buffer), da: d, rs, a };
}

const stale = (n: number) => ({ u32: new Uint32Array(n).fill(0xdeadbeef), f32: new Float32Array(n).fill(NaN) });

describe('the norm handoff out of the GEMVs that write h', () => {
  it.for([
    // op, M, N, K, accumulate, tunables
    ['linear_q8', 1, 64, 512, 1, {}], // 16 rows a workgroup (the default)
    ['linear_q8', 2, 96, 2304, 0, {}],
    ['linear_q8', 1, 80, 14336, 1, { gemvRowBlock: 32 }], // the 8B down_proj's K; the last block half past N
    ['linear_q8', 3, 48, 1280, 1, { gemvRowBlock: 16, gemvWorkgroup: 16 }], // 3 slots a lane
    ['linear_fused', 1, 64, 512, 1, {}], // o_proj: 16 rows in 4 teams
    ['linear_fused', 2, 112, 1024, 1, { gemvRowBlock: 32, gemvTeams: 2 }],
    ['linear_fused', 2, 112, 1024, 1, { gemvRowBlock: 32, gemvTeams: 2, rowsReduce: 'add' }], // the rows' sums by subgroupAdd (scatter by default)
    ['linear_q8', 1, 80, 14336, 1, { gemvRowBlock: 32, rowsReduce: 'add' }],
    ['linear_fused', 1, 48, 256, 0, { gemvRowBlock: 64, gemvTeams: 1 }], // one block, past N from 48
  ] as const)('%s M=%i N=%i K=%i accumulate %i %o', async ([op, M, N, K, accumulate, tun], ctx) => {
    const r = new Rng(`handoff-out/${op}/${M}x${N}x${K}`);
    const wBytes = quantizeMemo('q4_k', r.floats(N * K)); // the same seed under other tunables: quantized once
    const wRef = dequantizeQ4_K(wBytes, N * K);
    const y0 = r.floats(M * N).map((v) => 4 * v);
    const ng = r.floats(N).map((v) => 1 + v);
    let a: Float32Array;
    let inputs: Record<string, { dtype: string; shape: number[]; data: ArrayBufferView }>;
    if (op === 'linear_q8') {
      const q8 = q8Inputs(r, M, K);
      a = q8.a;
      inputs = { qa: { dtype: 'uint32', shape: [M, K / 4], data: q8.qa }, da: { dtype: 'float32', shape: [M, K / 32], data: q8.da }, rs: { dtype: 'float32', shape: [M, K / 16], data: q8.rs } };
    } else {
      // linear_fused rounds its f32 activations to int8 in blocks of 32 in its prologue
      const x = r.floats(M * K);
      a = roundActivationsQ8(x);
      inputs = { x: { dtype: 'float32', shape: [M, K], data: x } };
    }
    const out = await runOrSkip(
      op,
      {
        inputs: {
          ...inputs,
          w: { dtype: 'q4_k', shape: [N, K], data: wBytes },
          y: { dtype: 'float32', shape: [M, N], data: y0 },
          ng: { dtype: 'float32', shape: [N], data: ng },
          nq: { dtype: 'uint32', shape: [M, N / 4], data: stale((M * N) / 4).u32 },
          nm: { dtype: 'float32', shape: [M, (3 * N) / 16], data: stale((M * 3 * N) / 16).f32 },
        },
        attributes: { alpha: 0.5, accumulate },
        tunables: { cpuMapping: 'off', ...tun },
      },
      ctx,
    );
    if (!out) return;
    expect(out.plan.variant).toBe(op === 'linear_q8' ? 'q8a_rows_next' : 'q8a_plain_rows_next');
    const prod = matmulF32Reference(a, wRef, { M, N, K, alpha: 0.5 });
    const y = out.outputs.y!.data as Float32Array;
    // (linear_fused: a value on a half step of the prologue's rounding may round either way)
    expect(maxRelErr(y, prod.map((v, i) => (accumulate ? v + y0[i]! : v)))).toBeLessThan(op === 'linear_q8' ? 2e-5 : 1e-4);
    expectHandoff(out.outputs.nq!.data as Uint32Array, out.outputs.nm!.data as Float32Array, y, ng, M, N);
  });

  it('refuses a handoff it cannot write, naming the condition', async () => {
    const f32 = (shape: number[]) => ({ dtype: 'float32' as const, shape, data: new Float32Array(shape.reduce((p, d) => p * d, 1)) });
    const u32 = (shape: number[]) => ({ dtype: 'uint32' as const, shape, data: new Uint32Array(shape.reduce((p, d) => p * d, 1)) });
    const run = (N: number, nm: number[], tunables: Record<string, number | string> = {}) =>
      runContract(dev, opContract('linear_q8'), {
        inputs: { qa: u32([1, 64]), da: f32([1, 8]), rs: f32([1, 16]), w: { dtype: 'q4_k', shape: [N, 256], data: new Uint8Array(N * 144) }, y: f32([1, N]), ng: f32([N]), nq: u32([1, N / 4]), nm: f32(nm) },
        tunables: { cpuMapping: 'off', ...tunables },
      });
    await expect(run(64, [1, 8])).rejects.toThrow(/nextShapeOk/); // nm is [M, 3 N / 16]
    await expect(run(40, [1, 7.5])).rejects.toThrow(/nextShapeOk|rank|shape/); // N not a multiple of 16
    await expect(run(64, [1, 12], { gemvRowBlock: 8 })).rejects.toThrow(/gemvRowBlock % 16/); // half a run a workgroup
    await expect(run(64, [1, 12], { gemvRowBlock: 64, gemvWorkgroup: 8 })).rejects.toThrow(/4 \* rowsWg/); // 16 runs, 8 lanes
  });
});

describe('linear_glu_q8 on the norm handoff (q8h_glu_rows)', () => {
  it.for([
    // M, I, K, tunables
    [1, 64, 256, {}], // 64 rows in 4 teams (the default)
    [2, 96, 512, {}], // 2 workgroups, the second's last 16 values past I
    [1, 128, 4096, { handoffRowBlock: 128, handoffTeams: 2 }],
    [3, 64, 1024, { handoffTeams: 1 }],
  ] as const)('M=%i I=%i K=%i %o', async ([M, I, K, tun], ctx) => {
    await gluOnHandoff(M, I, K, false, tun, ctx);
  });

  it('refuses the handoff with normHandoff off and with x given beside it, naming the condition', async () => {
    const f32 = (shape: number[]) => ({ dtype: 'float32' as const, shape, data: new Float32Array(shape.reduce((p, d) => p * d, 1)) });
    const u32 = (shape: number[]) => ({ dtype: 'uint32' as const, shape, data: new Uint32Array(shape.reduce((p, d) => p * d, 1)) });
    const base = { xq: u32([1, 64]), xm: f32([1, 48]), w: { dtype: 'q4_k' as const, shape: [128, 256], data: new Uint8Array(128 * 144) }, qa: u32([1, 16]), da: f32([1, 2]), rs: f32([1, 4]) };
    const run = (extra: Record<string, unknown>, tunables: Record<string, string> = {}) =>
      runContract(dev, opContract('linear_glu_q8'), { inputs: { ...base, ...extra } as never, tunables: { mlpQ8: 'on', cpuMapping: 'off', ...tunables } });
    await expect(run({}, { normHandoff: 'off' })).rejects.toThrow(/normHandoff/);
    await expect(run({ x: f32([1, 256]) })).rejects.toThrow(/shapeOk/);
  });
});

describe('the pair: linear_q8 writing the handoff, linear_glu_q8 reading it', () => {
  it('matches linear_glu_q8 with the rmsnorm prologue on the same h', async (ctx) => {
    const [H, I, K] = [256, 64, 512];
    const r = new Rng('handoff-pair');
    const q8 = q8Inputs(r, 1, K);
    const down = quantizeQ4_K(r.floats(H * K));
    const gate = quantizeQ4_K(r.floats(2 * I * H));
    const y0 = r.floats(H);
    const gamma = r.floats(H).map((v) => 1 + v);
    const tunables = { mlpQ8: 'on', cpuMapping: 'off' };
    const prod = await runOrSkip(
      'linear_q8',
      {
        inputs: {
          qa: { dtype: 'uint32', shape: [1, K / 4], data: q8.qa },
          da: { dtype: 'float32', shape: [1, K / 32], data: q8.da },
          rs: { dtype: 'float32', shape: [1, K / 16], data: q8.rs },
          w: { dtype: 'q4_k', shape: [H, K], data: down },
          y: { dtype: 'float32', shape: [1, H], data: y0 },
          ng: { dtype: 'float32', shape: [H], data: gamma },
          nq: { dtype: 'uint32', shape: [1, H / 4], data: new Uint32Array(H / 4) },
          nm: { dtype: 'float32', shape: [1, (3 * H) / 16], data: new Float32Array((3 * H) / 16) },
        },
        attributes: { accumulate: 1 },
        tunables: { cpuMapping: 'off' },
      },
      ctx,
    );
    if (!prod) return;
    const outs = { qa: { dtype: 'uint32', shape: [1, I / 4], data: new Uint32Array(I / 4) }, da: { dtype: 'float32', shape: [1, I / 32], data: new Float32Array(I / 32) }, rs: { dtype: 'float32', shape: [1, I / 16], data: new Float32Array(I / 16) } };
    const w = { dtype: 'q4_k', shape: [2 * I, H], data: gate };
    const viaHandoff = await runContract(dev, opContract('linear_glu_q8'), {
      inputs: { xq: { dtype: 'uint32', shape: [1, H / 4], data: prod.outputs.nq!.data }, xm: { dtype: 'float32', shape: [1, (3 * H) / 16], data: prod.outputs.nm!.data }, w, ...outs },
      tunables,
    });
    const viaPrologue = await runContract(dev, opContract('linear_glu_q8'), { inputs: { x: { dtype: 'float32', shape: [1, H], data: prod.outputs.y!.data }, gamma: { dtype: 'float32', shape: [H], data: gamma }, w, ...outs }, tunables });
    expect(viaHandoff.plan.variant).toBe('q8h_glu_rows');
    // both round rmsnorm(h) * gamma to int8 (runs of 16 vs blocks of 32): act(gate) * up agrees to the rounding's noise
    const deq = (o: typeof viaHandoff) => {
      const q = new Int8Array((o.outputs.qa!.data as Uint32Array).buffer);
      const d = o.outputs.da!.data as Float32Array;
      return Float32Array.from(q, (v, i) => v * d[i >> 5]!);
    };
    expect(maxRelErr(deq(viaHandoff), deq(viaPrologue))).toBeLessThan(0.05);
  });
});

describe('act(gate) * up in runs of 16: linear_glu_q8 q8h_glu16_rows and linear_q8 q8h_rows', () => {
  it.for([
    // M, I, K, tunables
    [1, 64, 256, {}], // 32 rows in 2 teams (the default): 16 values of h a workgroup
    [2, 96, 512, { glu16RowBlock: 64, glu16Teams: 4 }],
    [1, 96, 4096, { glu16Teams: 1 }], // 6 workgroups of one team
    // fewer workgroups than tiles (glu16Groups): each walks tiles g, g + G, ...
    [1, 96, 4096, { glu16Groups: 2 }], // 6 tiles: 3 a workgroup
    [2, 224, 512, { glu16Groups: 3 }], // 14 tiles over 3 workgroups: 5, 5, 4
    [1, 64, 256, { glu16Groups: 8 }], // more workgroups asked for than the 4 tiles: one a tile
  ] as const)('gate|up M=%i I=%i K=%i %o', async ([M, I, K, tun], ctx) => {
    await gluOnHandoff(M, I, K, true, tun, ctx);
  });

  it.for([
    // M, N, K, accumulate, tunables
    [1, 37, 512, 1, {}], // 16 rows a workgroup (the default)
    [2, 70, 2304, 0, { gemvRowBlock: 8 }],
    [1, 41, 14336, 1, {}], // the 8B down_proj's K
  ] as const)('down M=%i N=%i K=%i accumulate %i %o', async ([M, N, K, accumulate, tun], ctx) => {
    const r = new Rng(`handoff-runs-in/${M}x${N}x${K}`);
    const qv = new Int8Array(M * K).map(() => Math.round((r.next() * 2 - 1) * 127));
    qv.fill(0, 16, 32); // a run of zeros
    const R = K / 16;
    const xm = new Float32Array(M * 3 * R);
    const a = new Float32Array(M * K);
    for (let m = 0; m < M; m++)
      for (let j = 0; j < R; j++) {
        const d = 0.001 + r.next() * 0.05;
        xm[m * 3 * R + j] = d;
        let rs = 0;
        for (let i = 0; i < 16; i++) {
          rs += qv[m * K + j * 16 + i]!;
          a[m * K + j * 16 + i] = qv[m * K + j * 16 + i]! * d;
        }
        xm[m * 3 * R + R + j] = rs;
        xm[m * 3 * R + 2 * R + j] = NaN; // the sums of squares: not read without a norm
      }
    const wBytes = quantizeMemo('q4_k', r.floats(N * K));
    const y0 = r.floats(M * N);
    const out = await runOrSkip(
      'linear_q8',
      {
        inputs: {
          xq: { dtype: 'uint32', shape: [M, K / 4], data: new Uint32Array(qv.buffer) },
          xm: { dtype: 'float32', shape: [M, 3 * R], data: xm },
          w: { dtype: 'q4_k', shape: [N, K], data: wBytes },
          y: { dtype: 'float32', shape: [M, N], data: y0 },
        },
        attributes: { alpha: 0.5, accumulate },
        tunables: { cpuMapping: 'off', ...tun },
      },
      ctx,
    );
    if (!out) return;
    expect(out.plan.variant).toBe('q8h_rows');
    const prod = matmulF32Reference(a, dequantizeQ4_K(wBytes, N * K), { M, N, K, alpha: 0.5 });
    expect(maxRelErr(out.outputs.y!.data as Float32Array, prod.map((v, i) => (accumulate ? v + y0[i]! : v)))).toBeLessThan(2e-5);
  });
});

/**
 * linear_glu_q8 on a norm handoff built on the host (random h and gamma) against the CPU reference: act(gate) * up of
 * rmsnorm's scale times the dequantized runs, written in blocks of 32 (qa / da / rs: q8h_glu_rows) or in runs of 16
 * (nq / nm: q8h_glu16_rows, tunable gluRuns).
 */
async function gluOnHandoff(M: number, I: number, K: number, runs: boolean, tun: Record<string, string | number>, ctx: { skip: (why: string) => void }) {
  const r = new Rng(`${runs ? 'handoff-glu16' : 'handoff-glu'}/${M}x${I}x${K}`);
  const h = r.floats(M * K).map((v) => 3 * v);
  const gamma = r.floats(K).map((v) => 1 + v);
  const ho = handoffActivations(h, gamma, M, K, 1e-6);
  const wBytes = quantizeMemo('q4_k', r.floats(2 * I * K));
  const outs: Record<string, HostTensor> = runs
    ? { nq: { dtype: 'uint32', shape: [M, I / 4], data: stale((M * I) / 4).u32 }, nm: { dtype: 'float32', shape: [M, (3 * I) / 16], data: stale((M * 3 * I) / 16).f32 } }
    : {
        qa: { dtype: 'uint32', shape: [M, I / 4], data: stale((M * I) / 4).u32 },
        da: { dtype: 'float32', shape: [M, I / 32], data: stale((M * I) / 32).f32 },
        rs: { dtype: 'float32', shape: [M, I / 16], data: stale((M * I) / 16).f32 },
      };
  const out = await runOrSkip(
    'linear_glu_q8',
    {
      inputs: {
        xq: { dtype: 'uint32', shape: [M, K / 4], data: ho.xq },
        xm: { dtype: 'float32', shape: [M, (3 * K) / 16], data: ho.xm },
        w: { dtype: 'q4_k', shape: [2 * I, K], data: wBytes },
        ...outs,
      },
      attributes: { eps: 1e-6, activation: 'silu' },
      tunables: { mlpQ8: 'on', cpuMapping: 'off', ...(runs ? { gluRuns: 'on' } : {}), ...tun },
    },
    ctx,
  );
  if (!out) return;
  expect(out.plan.variant).toBe(runs ? 'q8h_glu16_rows' : 'q8h_glu_rows');
  if (runs) {
    // one workgroup a tile of glu16RowBlock rows (32 by default), or glu16Groups of them walking the tiles
    const tiles = Math.ceil((2 * I) / Number(tun.glu16RowBlock ?? 32));
    const groups = Math.min(tiles, Number(tun.glu16Groups ?? tiles));
    expect(out.plan.passes[0]!.dispatch[0] * out.plan.passes[0]!.dispatch[1]).toBe(groups);
  }
  const gu = matmulF32Reference(ho.a, dequantizeQ4_K(wBytes, 2 * I * K), { M, N: 2 * I, K, alpha: 1 });
  const want = new Float32Array(M * I);
  for (let m = 0; m < M; m++) for (let i = 0; i < I; i++) want[m * I + i] = silu(gu[m * 2 * I + i]!) * gu[m * 2 * I + I + i]!;
  const o = out.outputs;
  if (runs) expectHandoff(o.nq!.data as Uint32Array, o.nm!.data as Float32Array, want, new Float32Array(I).fill(1), M, I);
  else expectQ8Activations(o.qa!.data as Uint32Array, o.da!.data as Float32Array, o.rs!.data as Float32Array, want);
}
