/**
 * linear_fused (gemv-subgroup.wgsl.jinja) against the CPU reference, for f16, Q4_K, Q6_K and Q8_0 weights, every prologue (none,
 * rmsnorm with its gamma, glu with silu and gelu_tanh) and both epilogues (store, accumulate into y), with M = 1..3,
 * N not a multiple of the workgroup's columns, and several work splits (tunables). f16 weights are read as u32 pairs,
 * so this runs without shader-f16 (SwiftShader too).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract, type HostTensor } from '../src/contracts/run.ts';
import { dequantizeQ4_K, dequantizeQ6_K, dequantizeQ8_0, f16BytesToF32, f32ToF16Bytes, quantizeQ4_K } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { roundActivationsQ8 } from '../src/reference/activations-q8.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';
import { quantizeMemo } from './helpers/quant-memo.ts';
import { h200, swiftshader } from './contracts-helpers.ts';
import { resolveContract } from '../src/contracts/index.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const silu = (g: number) => g / (1 + Math.exp(-g));
const geluTanh = (g: number) => 0.5 * g * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (g + 0.044715 * g ** 3)));

/** The activations the GEMV multiplies: rmsnorm(x) * gamma, act(gate) * up, or x, [M, K]. */
function prologueRef(x: Float32Array, gamma: Float32Array, M: number, K: number, prologue: 'none' | 'rmsnorm' | 'glu', activation: 'silu' | 'gelu_tanh'): Float32Array {
  const a = new Float32Array(M * K);
  for (let m = 0; m < M; m++) {
    if (prologue === 'rmsnorm') {
      let ss = 0;
      for (let k = 0; k < K; k++) ss += x[m * K + k]! ** 2;
      const inv = 1 / Math.sqrt(ss / K + 1e-6);
      for (let k = 0; k < K; k++) a[m * K + k] = x[m * K + k]! * inv * gamma[k]!;
    } else if (prologue === 'glu') {
      const f = activation === 'silu' ? silu : geluTanh;
      for (let k = 0; k < K; k++) a[m * K + k] = f(x[m * 2 * K + k]!) * x[m * 2 * K + K + k]!;
    } else a.set(x.subarray(m * K, (m + 1) * K), m * K);
  }
  return a;
}

type Case = [fmt: 'float16' | 'q4_k' | 'q8_0' | 'q6_k', M: number, N: number, K: number, prologue: 'none' | 'rmsnorm' | 'glu', activation: 'silu' | 'gelu_tanh', accumulate: 0 | 1, tunables: Record<string, number | string>];
const CASES: Case[] = [
  ['float16', 1, 37, 264, 'none', 'silu', 0, {}],
  ['float16', 2, 129, 1024, 'rmsnorm', 'silu', 1, { gemvCols: 4, gemvUnroll: 1 }],
  ['float16', 2, 129, 1024, 'rmsnorm', 'silu', 1, { normPass: 'on' }], // rmsnorm(x) * gamma in a pass of its own
  ['float16', 3, 40, 264, 'rmsnorm', 'silu', 0, { normPass: 'on', gemvCols: 3 }], // 66 vec4 a row: most of the norm pass's invocations idle
  ['float16', 3, 70, 512, 'glu', 'gelu_tanh', 1, { gemvCols: 3, gemvItems: 3, gemvWorkgroup: 16 }],
  ['float16', 1, 300, 8192, 'glu', 'silu', 0, {}], // long rows, one column an item: act(gate) * up in a pass of its own (gluPass auto)
  ['float16', 1, 300, 8192, 'glu', 'silu', 0, { gluPass: 'off' }], // the same in the prologue
  ['float16', 3, 70, 512, 'glu', 'gelu_tanh', 1, { gluPass: 'on' }],
  ['q4_k', 1, 37, 512, 'none', 'silu', 1, {}],
  ['q4_k', 2, 65, 768, 'rmsnorm', 'silu', 0, { gemvCols: 1, gemvItems: 8, gemvWorkgroup: 64 }],
  ['q4_k', 1, 37, 2048, 'rmsnorm', 'silu', 1, { normPass: 'on' }],
  ['q4_k', 3, 70, 256, 'glu', 'silu', 1, { gemvCols: 3, gemvUnroll: 3 }],
  ['q4_k', 1, 1000, 2048, 'rmsnorm', 'silu', 1, { gemvCols: 4, gemvItems: 2 }],
  ['q4_k', 1, 33, 512, 'glu', 'gelu_tanh', 0, {}],
  ['q4_k', 2, 70, 256, 'glu', 'silu', 1, { gluPass: 'on', gemvCols: 3 }],
  ['q4_k', 1, 65537, 256, 'rmsnorm', 'silu', 0, {}], // a vocabulary-sized head (the final norm in its prologue): 4 columns, 32 items, 1 slot a turn
  // Q8_0: odd and even block counts per row (a row's blocks start 2 bytes off a word when the block before is odd)
  ['q8_0', 1, 37, 96, 'none', 'silu', 0, {}],
  ['q8_0', 2, 70, 160, 'rmsnorm', 'silu', 1, { gemvCols: 3, gemvUnroll: 2 }],
  ['q8_0', 2, 70, 160, 'rmsnorm', 'silu', 0, { normPass: 'on' }],
  ['q8_0', 3, 65, 64, 'glu', 'silu', 0, { gemvCols: 4, gemvItems: 3, gemvWorkgroup: 16 }],
  ['q8_0', 2, 65, 96, 'glu', 'silu', 1, { gluPass: 'on' }],
  ['q8_0', 1, 300, 8192, 'none', 'silu', 1, {}],
  // Q6_K: 210-byte blocks, every other one starting 2 bytes off a word
  ['q6_k', 1, 37, 256, 'none', 'silu', 0, {}],
  ['q6_k', 2, 33, 768, 'rmsnorm', 'silu', 1, { gemvCols: 3, gemvUnroll: 2 }],
  ['q6_k', 1, 33, 768, 'rmsnorm', 'silu', 1, { normPass: 'on' }],
  ['q6_k', 3, 70, 512, 'glu', 'gelu_tanh', 0, { gemvCols: 4, gemvItems: 3, gemvWorkgroup: 16 }],
  ['q6_k', 1, 33, 512, 'glu', 'silu', 0, { gluPass: 'on' }],
  ['q6_k', 1, 129, 2048, 'none', 'silu', 1, { gemvCols: 1 }],
];

/**
 * One linear_fused call on int8 activations (Q4_K: tunable gemvInt8; Q8_0: gemvQ80Int8; Q6_K: gemvQ6KInt8) on random x, gamma, y and
 * weights; `want` is the product of the prologue's activations rounded to int8 per block of 32 (as the GEMV and the
 * quant pass round them) with the dequantized weights.
 */
async function runInt8(fmt: 'q4_k' | 'q8_0' | 'q6_k', M: number, N: number, K: number, prologue: 'none' | 'rmsnorm' | 'glu', activation: 'silu' | 'gelu_tanh', accumulate: 0 | 1, tunables: Readonly<Record<string, string | number>>) {
  const r = new Rng(`linear_fused/${{ q4_k: 'q8a', q8_0: 'q80', q6_k: 'q6k' }[fmt]}/${M}x${N}x${K}/${prologue}`);
  const rowLen = prologue === 'glu' ? 2 * K : K;
  const x = r.floats(M * rowLen);
  const gamma = r.floats(K).map((v) => 1 + v);
  const y0 = r.floats(M * N);
  const dequantize = { q4_k: dequantizeQ4_K, q8_0: dequantizeQ8_0, q6_k: dequantizeQ6_K }[fmt];
  // cases that differ only in tunables (or accumulate, or activation) draw the same weights: quantized once
  const wBytes = quantizeMemo(fmt, r.floats(N * K));
  const inputs: Record<string, HostTensor> = {
    x: { dtype: 'float32', shape: [M, rowLen], data: x },
    w: { dtype: fmt, shape: [N, K], data: wBytes },
    y: { dtype: 'float32', shape: [M, N], data: y0 },
  };
  if (prologue === 'rmsnorm') inputs.gamma = { dtype: 'float32', shape: [K], data: gamma };
  const on: Record<string, string> = { [{ q4_k: 'gemvInt8', q8_0: 'gemvQ80Int8', q6_k: 'gemvQ6KInt8' }[fmt]]: 'on' };
  const { outputs, plan } = await runContract(dev, opContract('linear_fused'), { inputs, attributes: { alpha: 0.5, prologue, activation, accumulate }, tunables: { ...tunables, ...on, cpuMapping: 'off' } });
  const prod = matmulF32Reference(roundActivationsQ8(prologueRef(x, gamma, M, K, prologue, activation)), dequantize(wBytes, N * K), { M, N, K, alpha: 0.5 });
  return { y: outputs.y!.data as Float32Array, want: prod.map((v, i) => (accumulate ? v + y0[i]! : v)), plan };
}

describe('linear_fused: where the rmsnorm prologue takes a pass of its own by default (normPass auto)', () => {
  // the 8B decode's gate|up, q|k|v and head shapes: f16 weights on a GPU adapter take norm_pass (H200 at 7be9cf1:
  // 190.8 / 191.0 tok/s against 179.4 / 179.8 in the GEMVs' prologues); the quantized formats keep their int8
  // variants (the quant pass does the norm once), and a CPU adapter keeps the prologue in its f16 GEMV
  const variant = (device: typeof h200, w: string, N: number, K: number, tunables: object = {}) =>
    resolveContract(opContract('linear_fused'), { shapes: { x: [1, K], w: [N, K], y: [1, N], gamma: [K] }, dtypes: { w }, attributes: { prologue: 'rmsnorm' }, tunables, device } as never).variant;
  it.each([
    [28672, 4096],
    [6144, 4096],
    [128256, 4096],
  ])('N=%i K=%i', (N, K) => {
    expect(variant(h200, 'float16', N, K)).toBe('norm_pass');
    expect(variant(h200, 'float16', N, K, { normPass: 'off' })).toBe('norm');
    for (const w of ['q4_k', 'q8_0', 'q6_k']) expect(variant(h200, w, N, K)).not.toMatch(/^norm/);
    expect(variant(swiftshader, 'float16', N, K)).toBe('norm');
    expect(variant(swiftshader, 'float16', N, K, { normPass: 'on' })).toBe('norm_pass');
  });
});

describe('linear_fused vs the CPU reference', () => {
  it.each(CASES)('%s M=%i N=%i K=%i prologue %s (%s) accumulate %i %o', async (fmt, M, N, K, prologue, activation, accumulate, tunables) => {
    const r = new Rng(`linear_fused/${fmt}/${M}x${N}x${K}/${prologue}/${accumulate}`);
    const rowLen = prologue === 'glu' ? 2 * K : K;
    const x = r.floats(M * rowLen);
    const gamma = r.floats(K).map((v) => 1 + v);
    const y0 = r.floats(M * N);
    const wf = r.floats(N * K);
    const dequantize = { q4_k: dequantizeQ4_K, q8_0: dequantizeQ8_0, q6_k: dequantizeQ6_K } as const;
    const wBytes = fmt === 'float16' ? f32ToF16Bytes(wf) : quantizeMemo(fmt, wf);
    const wRef = fmt === 'float16' ? f16BytesToF32(wBytes) : dequantize[fmt](wBytes, N * K);
    const a = prologueRef(x, gamma, M, K, prologue, activation);
    const prod = matmulF32Reference(a, wRef, { M, N, K, alpha: 0.5 });
    const want = prod.map((v, i) => (accumulate ? v + y0[i]! : v));
    const inputs: Record<string, HostTensor> = {
      x: { dtype: 'float32', shape: [M, rowLen], data: x },
      w: { dtype: fmt, shape: [N, K], data: fmt !== 'float16' ? wBytes : new Uint16Array(wBytes.buffer, wBytes.byteOffset, wBytes.byteLength / 2) },
      y: { dtype: 'float32', shape: [M, N], data: y0 },
    };
    if (prologue === 'rmsnorm') inputs.gamma = { dtype: 'float32', shape: [K], data: gamma };
    // f32 activations: the int8-activation variants (chosen for Q4_K, Q8_0 and Q6_K where the device has subgroups) have
    // their own cases below
    const f32Acts = { gemvInt8: 'off', gemvQ80Int8: 'off', gemvQ6KInt8: 'off' };
    const { outputs, plan } = await runContract(dev, opContract('linear_fused'), { inputs, attributes: { alpha: 0.5, prologue, activation, accumulate }, tunables: { ...f32Acts, ...tunables } });
    // glu: a pass of its own where asked, or by default where an item is one column (the long-rows split); rmsnorm:
    // where asked, or by default for f16 weights on a GPU adapter
    const gluPass = prologue === 'glu' && (tunables.gluPass === 'on' || (tunables.gluPass === undefined && plan.derived.colsPerItem === 1));
    const normPass = prologue === 'rmsnorm' && (tunables.normPass === 'on' || (tunables.normPass === undefined && fmt === 'float16' && !plan.derived.cpuMapping));
    expect(plan.variant).toBe(normPass ? 'norm_pass' : prologue === 'rmsnorm' ? 'norm' : gluPass ? 'glu_pass' : 'plain');
    expect(plan.passes.map((p) => p.id)).toEqual(gluPass ? ['glu', 'matmul'] : normPass ? ['norm', 'matmul'] : ['matmul']);
    // f32 accumulation in a different order than the reference: ~1e-7 relative; Q4_K's 1 + q/16 trick ~1e-6
    expect(maxRelErr(outputs.y!.data as Float32Array, want)).toBeLessThan(1e-5);
  });

  it.each([
    // a quant pass, then the GEMV
    [1, 70, 512, 'rmsnorm', 'silu', 1, { gemvFuseQuant: 'off' }],
    [2, 37, 768, 'glu', 'silu', 0, { gemvCols: 3, gemvFuseQuant: 'off' }],
    [1, 129, 2048, 'glu', 'gelu_tanh', 1, { gemvCols: 4, gemvItems: 2, gemvFuseQuant: 'off' }],
    [3, 33, 256, 'none', 'silu', 0, { gemvWorkgroup: 32, gemvFuseQuant: 'off' }],
    // the activations rounded inside each GEMV workgroup (no quant pass; the default)
    [1, 70, 512, 'rmsnorm', 'silu', 1, {}],
    [2, 37, 768, 'glu', 'silu', 0, { gemvCols: 3, gemvFuseQuant: 'on' }],
    [1, 129, 2048, 'glu', 'gelu_tanh', 1, { gemvCols: 4, gemvItems: 2, gemvFuseQuant: 'on' }],
    [3, 33, 256, 'none', 'silu', 0, { gemvRowBlock: -1, gemvWorkgroup: 32, gemvFuseQuant: 'on' }],
    [2, 40, 1024, 'rmsnorm', 'silu', 0, { gemvWorkgroup: 64, gemvFuseQuant: 'on' }],
    [1, 70, 512, 'rmsnorm', 'silu', 1, { gemvRunSums: 'off', gemvPipeline: 'off' }], // both on by default: the plain loop
    [2, 37, 768, 'glu', 'silu', 0, { gemvCols: 3, gemvPipeline: 'off' }],
    [3, 33, 256, 'none', 'silu', 1, { gemvRowBlock: -1, gemvRunSums: 'off', gemvUnroll: 3 }],
    [2, 70, 1024, 'none', 'silu', 1, {}], // prologue none: rows mode by default (16 rows, 4 teams where the device allows)
    [1, 40, 4096, 'glu', 'silu', 1, { gemvPipeline: 'on', gemvRunSums: 'on', gemvWorkgroup: 64 }], // several loop turns
    [2, 70, 1024, 'rmsnorm', 'silu', 0, { gemvPipeline: 'on', gemvWorkgroup: 32 }], // prologue loads in several batches
    [3, 33, 256, 'none', 'silu', 1, { gemvRowBlock: -1, gemvUnroll: 3, gemvPipeline: 'off' }],
    // rows mode: a block of gemvRowBlock rows a workgroup, the activation slots in registers
    [1, 70, 512, 'rmsnorm', 'silu', 1, { gemvRowBlock: 16 }],
    [2, 37, 768, 'glu', 'silu', 0, { gemvRowBlock: 8, gemvTeams: 2 }],
    [3, 33, 2304, 'none', 'silu', 1, { gemvRowBlock: 12, gemvRunSums: 'off' }], // 72 slots: 96 lanes; sums recomputed
    [1, 90, 4096, 'rmsnorm', 'silu', 0, { gemvRowBlock: 32, gemvTeams: 2, gemvPipeline: 'off' }], // 2 teams of 128 lanes
    [2, 37, 768, 'rmsnorm', 'silu', 1, { gemvRowBlock: 16, rowsReduce: 'add' }], // the rows' sums by subgroupAdd (scatter by default)
    // the LM head's rows mode (headRowBlock, headTeams: rmsnorm prologue over more than 8192 rows); off by default
    [1, 8320, 256, 'rmsnorm', 'silu', 0, { headRowBlock: 32 }], // 4 teams of 32 lanes
    [2, 8200, 512, 'rmsnorm', 'silu', 1, { headRowBlock: 16, headTeams: 2 }], // the last block's half past N
    [1, 8320, 256, 'rmsnorm', 'silu', 0, {}],
    // an LM head's rows (65536 or more) under gemvFuseQuant auto: a quant pass with the norm, then the GEMV in
    // workgroups of one item of 32 lanes
    [1, 65600, 256, 'rmsnorm', 'silu', 0, { gemvFuseQuant: 'auto' }],
  ] as const)('q4_k on int8 activations (gemvInt8) M=%i N=%i K=%i prologue %s (%s) accumulate %i %o', async (M, N, K, prologue, activation, accumulate, tunables) => {
    // gemvFuseQuant on (the default); auto: fused but for an LM head's rows (65536 or more) outside its rows mode
    const headRows = 'headRowBlock' in tunables && tunables.headRowBlock > 0;
    const fq = 'gemvFuseQuant' in tunables ? tunables.gemvFuseQuant : 'on';
    const fused = fq === 'on' || (fq === 'auto' && (N < 65536 || headRows));
    const { y, want, plan } = await runInt8('q4_k', M, N, K, prologue, activation, accumulate, tunables);
    // rows mode: asked for, or by default for prologue none where 4 teams fit the device's workgroup
    const rowsAuto = prologue === 'none' && fused && !('gemvRowBlock' in tunables) && 4 * 32 * Math.ceil(K / 32 / 32) <= dev.caps.limits.maxComputeInvocationsPerWorkgroup!;
    const head = prologue === 'rmsnorm' && N > 8192 && headRows;
    const rows = ('gemvRowBlock' in tunables && tunables.gemvRowBlock > 0) || rowsAuto || head;
    expect(plan.variant).toBe((prologue === 'rmsnorm' ? 'q8a_norm' : 'q8a_plain') + (rows ? '_rows' : fused ? '_fused' : ''));
    expect(plan.passes.map((p) => p.id)).toEqual(fused ? ['matmul'] : ['quant', 'matmul']);
    if (!fused && N >= 65536) {
      expect(plan.passes[1]!.dispatch[0] * plan.passes[1]!.dispatch[1]).toBe(Math.ceil(N / 4)); // 4 rows a workgroup
      expect(plan.derived.workgroupSize).toBe(32);
    }
    if (head) {
      expect(plan.passes[0]!.derived.rowBlock).toBe(tunables.headRowBlock);
      expect(plan.passes[0]!.derived.rowTeams).toBe('headTeams' in tunables ? tunables.headTeams : 4);
      expect(plan.passes[0]!.dispatch[0] * plan.passes[0]!.dispatch[1]).toBe(Math.ceil(N / tunables.headRowBlock));
    }
    // f32 rounding; the prologue's exp / sqrt may flip a rounding to int8 by one step (2^-8 of a block's max)
    expect(maxRelErr(y, want)).toBeLessThan(1e-4);
  });

  it.each([
    // Q8_0 weights in rows mode (gemvQ80Int8): 16 rows a workgroup by default, one Q8_0 block a lane a row
    [1, 70, 512, 'none', 'silu', 1, {}], // 16 blocks: 32 lanes, half past the row
    [2, 37, 768, 'rmsnorm', 'silu', 0, {}], // odd and even blocks (24 a row), the last workgroup's rows past N
    [3, 33, 2304, 'glu', 'gelu_tanh', 1, { gemvRowBlock: 8 }], // 72 blocks: 96 lanes
    [1, 40, 4096, 'rmsnorm', 'silu', 1, { gemvRowBlock: 32, gemvTeams: 2 }], // 2 teams of 128 lanes
    [1, 20, 1280, 'none', 'silu', 0, { gemvRowBlock: 4, gemvPipeline: 'off' }],
  ] as const)('q8_0 on int8 activations (gemvQ80Int8) M=%i N=%i K=%i prologue %s (%s) accumulate %i %o', async (M, N, K, prologue, activation, accumulate, tunables) => {
    const { y, want, plan } = await runInt8('q8_0', M, N, K, prologue, activation, accumulate, tunables);
    expect(plan.variant).toBe(prologue === 'rmsnorm' ? 'q80_norm_rows' : 'q80_plain_rows');
    expect(maxRelErr(y, want)).toBeLessThan(1e-4);
  });

  it.each([
    // Q6_K weights in rows mode (gemvQ6KInt8): 32 values of a block a lane (8 lanes a block), K a multiple of 512
    [1, 70, 512, 'none', 'silu', 1, {}], // 2 blocks a row (odd and even), the last workgroup's rows past N
    [2, 37, 1024, 'rmsnorm', 'silu', 0, {}],
    [3, 33, 1536, 'glu', 'gelu_tanh', 1, { gemvRowBlock: 8 }],
    [1, 40, 4096, 'rmsnorm', 'silu', 1, { gemvRowBlock: 32, gemvTeams: 2 }], // 2 teams of 128 lanes
    [1, 20, 2048, 'none', 'silu', 0, { gemvRowBlock: 4, gemvRunSums: 'off' }], // the activation run sums recomputed
    // wide slots (q6Wide): 64 values a lane (4 lanes a block)
    [1, 70, 512, 'none', 'silu', 1, { q6Wide: 'on' }],
    [2, 37, 4096, 'rmsnorm', 'silu', 0, { q6Wide: 'on', gemvRowBlock: 32, gemvTeams: 2 }], // 2 teams of 64 lanes
    [3, 33, 1536, 'glu', 'gelu_tanh', 1, { q6Wide: 'on', gemvRowBlock: 8, gemvRunSums: 'off' }],
    // K > 8192: 32 rows in one team by default (q6RowBlock 0); 272 slots on 288 lanes
    [1, 40, 8704, 'rmsnorm', 'silu', 1, {}],
    [1, 37, 8704, 'none', 'silu', 0, { q6RowBlock: 8 }],
  ] as const)('q6_k on int8 activations (gemvQ6KInt8) M=%i N=%i K=%i prologue %s (%s) accumulate %i %o', async (M, N, K, prologue, activation, accumulate, tunables) => {
    const { y, want, plan } = await runInt8('q6_k', M, N, K, prologue, activation, accumulate, tunables);
    expect(plan.variant).toBe(prologue === 'rmsnorm' ? 'q6k_norm_rows' : 'q6k_plain_rows');
    expect(maxRelErr(y, want)).toBeLessThan(1e-4);
  });

  // the LM head's greedy pick (tunable headArgmax): the index of the largest logit the GEMV writes (ties to the lowest)
  // and the count of NaN/Inf ones, joined by the last workgroup to finish; its area of state is left zeroed
  it.each([
    [8320, 256, 1, 'plain'], // 2 columns an item, 8 items: 520 workgroups
    [65600, 256, 1, 'tie'], // 4 columns, 32 items: 513 workgroups; the best row copied to a lower row of another workgroup
    [8320, 512, 3e38, 'overflow'], // most logits +-Inf: the count, and the lowest +Inf
  ] as const)('q4_k head with the greedy pick (q8a_norm_argmax) N=%i K=%i alpha %d (%s)', async (N, K, alpha, kind) => {
    const r = new Rng(`linear_fused/argmax/${N}x${K}/${kind}`);
    const x = r.floats(K);
    const gamma = r.floats(K).map((v) => 1 + v);
    const wBytes = quantizeQ4_K(r.floats(N * K));
    const rowBytes = (K / 256) * 144;
    const tensors = (w: Uint8Array, state: Uint32Array): Record<string, HostTensor> => ({
      x: { dtype: 'float32', shape: [1, K], data: x },
      w: { dtype: 'q4_k', shape: [N, K], data: w },
      gamma: { dtype: 'float32', shape: [K], data: gamma },
      y: { dtype: 'float32', shape: [1, N], data: new Float32Array(N) },
      state: { dtype: 'uint32', shape: [state.length], data: state },
    });
    const base = 8;
    const run = (w: Uint8Array) => {
      const state = new Uint32Array(base + 1 + 3 * 2048);
      state.set([12345, 7, 7, 999]);
      return runContract(dev, opContract('linear_fused'), { inputs: tensors(w, state), attributes: { alpha, prologue: 'rmsnorm', state_base: base, nonfinite_word: 3 }, tunables: { gemvInt8: 'on', cpuMapping: 'off', headArgmax: 'on' } });
    };
    /** The index of the largest of y (ties to the lowest; undefined where a NaN makes it unspecified) and the NaN/Inf count. */
    const pick = (y: Float32Array) => {
      let best = 0;
      let bad = 0;
      let nan = false;
      y.forEach((v, i) => {
        if (!Number.isFinite(v)) bad++;
        if (Number.isNaN(v)) nan = true;
        else if (v > y[best]! || Number.isNaN(y[best]!)) best = i;
      });
      return { best: nan ? undefined : best, bad };
    };
    let w = wBytes;
    let { outputs, plan } = await run(w);
    expect(plan.variant).toBe('q8a_norm_argmax');
    const groups = plan.passes[0]!.dispatch[0] * plan.passes[0]!.dispatch[1];
    expect(groups).toBeGreaterThan(500);
    if (kind === 'tie') {
      // the best row's bytes copied into a row 3 workgroups lower: equal logits, the lower index wins
      const first = pick(outputs.y!.data as Float32Array).best!;
      const lower = first - 3 * 128 >= 0 ? first - 3 * 128 : first + 3 * 128;
      w = wBytes.slice();
      w.copyWithin(lower * rowBytes, first * rowBytes, (first + 1) * rowBytes);
      ({ outputs } = await run(w));
      expect((outputs.y!.data as Float32Array)[lower]).toBe((outputs.y!.data as Float32Array)[first]);
      expect(pick(outputs.y!.data as Float32Array).best).toBe(Math.min(first, lower));
    }
    const y = outputs.y!.data as Float32Array;
    const state = outputs.state!.data as Uint32Array;
    const want = pick(y);
    if (kind === 'overflow') expect(want.bad).toBeGreaterThan(N / 2);
    else expect(want.bad).toBe(0);
    if (want.best !== undefined) expect(state[0]).toBe(want.best);
    expect(state[3]).toBe(want.bad);
    expect([state[1], state[2]]).toEqual([7, 7]); // words the pick does not own are left alone
    // the counter and every workgroup's words are zero again, for the next dispatch
    expect(Array.from(state.subarray(base, base + 1 + 3 * groups)).every((v) => v === 0)).toBe(true);
    // the logits are the GEMV's as without the pick
    const { outputs: plain } = await runContract(dev, opContract('linear_fused'), {
      inputs: { x: tensors(w, new Uint32Array(1)).x!, w: { dtype: 'q4_k', shape: [N, K], data: w }, gamma: { dtype: 'float32', shape: [K], data: gamma }, y: { dtype: 'float32', shape: [1, N], data: new Float32Array(N) } },
      attributes: { alpha, prologue: 'rmsnorm' },
      tunables: { gemvInt8: 'on', cpuMapping: 'off' },
    });
    expect(Array.from(y)).toEqual(Array.from(plain.y!.data as Float32Array));
  });

  it('refuses what it cannot run, naming the reason', async () => {
    const bad = (shapes: Record<string, number[]>, attributes: Record<string, string | number> = {}) => () =>
      runContract(dev, opContract('linear_fused'), {
        inputs: Object.fromEntries(Object.entries(shapes).map(([k, s]) => [k, { dtype: k === 'w' ? 'q4_k' : 'float32', shape: s, data: k === 'w' ? new Uint8Array((s[0]! * s[1]! * 144) / 256) : new Float32Array(s.reduce((p, d) => p * d, 1)) }])),
        attributes,
      });
    await expect(bad({ x: [1, 256], w: [8, 256], y: [1, 8] }, { prologue: 'rmsnorm' })()).rejects.toThrow(/gammaOk/);
    await expect(bad({ x: [9, 256], w: [8, 256], y: [9, 8] })()).rejects.toThrow(/gemvRows/);
    await expect(bad({ x: [1, 256], w: [8, 256], y: [1, 8] }, { prologue: 'glu' })()).rejects.toThrow(/shapeOk/);
  });
});
