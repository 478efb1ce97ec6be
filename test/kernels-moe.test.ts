/**
 * The moe contract (src/ops/contracts/moe.contract.json: route, up, down over src/kernels/moe/*.wgsl.jinja) against
 * the CPU reference of the MoE block (src/reference/moe.ts): gpt-oss (top-k then softmax, router and expert biases,
 * interleaved gate/up, clamped SwiGLU that binds) with float32, MXFP4 and ggml Q8_0 / Q4_K experts (also mixed),
 * Qwen3-MoE (softmax then top-k, with
 * and without norm_topk_prob); top-k 1, 2 and 4; 4 to 32 experts; 1 and several tokens; widths that leave partial
 * workgroups.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import { dequantizeMxfp4Hf, quantizeMxfp4Hf } from '../src/formats/quant/mxfp4.ts';
import { dequantize, quantize } from '../src/formats/quant/index.ts';
import { EXPERT_GGML_TYPES } from '../src/models/moe-weights.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import type { MoeConfig } from '../src/models/config.ts';
import { moeForward } from '../src/reference/moe.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

/** [E, R, C] -> [E, C, R] */
function t3(x: Float32Array, E: number, R: number, C: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let e = 0; e < E; e++) for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) y[e * R * C + c * R + r] = x[e * R * C + r * C + c]!;
  return y;
}

type Fmt = 'f32' | 'mxfp4' | 'q8_0' | 'q4_k' | 'q6_k';

interface Case {
  kind: 'gpt_oss' | 'qwen3_moe';
  /** expert storage: MXFP4 both, or a ggml format for up / down */
  mx: boolean;
  up?: Fmt;
  down?: Fmt;
  T: number;
  E: number;
  K: number;
  H: number;
  I: number;
  norm?: boolean;
}

const CASES: Case[] = [
  { kind: 'gpt_oss', mx: false, T: 1, E: 8, K: 2, H: 64, I: 48 },
  { kind: 'gpt_oss', mx: false, T: 6, E: 4, K: 1, H: 40, I: 70 },
  { kind: 'gpt_oss', mx: true, T: 5, E: 32, K: 4, H: 64, I: 64 },
  { kind: 'gpt_oss', mx: true, T: 1, E: 4, K: 1, H: 96, I: 32 },
  { kind: 'qwen3_moe', mx: false, T: 7, E: 8, K: 2, H: 40, I: 24, norm: true },
  { kind: 'qwen3_moe', mx: false, T: 1, E: 32, K: 4, H: 64, I: 32, norm: false },
  { kind: 'qwen3_moe', mx: true, T: 3, E: 16, K: 2, H: 64, I: 96, norm: true },
  { kind: 'qwen3_moe', mx: false, up: 'q8_0', down: 'q8_0', T: 4, E: 8, K: 2, H: 64, I: 96, norm: true },
  { kind: 'qwen3_moe', mx: false, up: 'q4_k', down: 'q4_k', T: 1, E: 8, K: 4, H: 256, I: 256, norm: false },
  { kind: 'qwen3_moe', mx: false, up: 'q4_k', down: 'f32', T: 3, E: 4, K: 2, H: 256, I: 96, norm: true },
  { kind: 'gpt_oss', mx: false, up: 'q8_0', down: 'q4_k', T: 2, E: 4, K: 2, H: 64, I: 256 },
  // Q4_K_M files: Q4_K gate/up with Q6_K down projections (210-byte blocks, rows not word-aligned); and Q6_K up
  { kind: 'qwen3_moe', mx: false, up: 'q4_k', down: 'q6_k', T: 2, E: 8, K: 2, H: 256, I: 512, norm: true },
  { kind: 'gpt_oss', mx: false, up: 'q6_k', down: 'q6_k', T: 3, E: 4, K: 2, H: 512, I: 256 },
  // many tokens (T x k >= 32): the by-expert passes when moeGroup is on (auto: GPUs only); f32 rows of 40 (a short unit)
  { kind: 'gpt_oss', mx: true, T: 40, E: 8, K: 2, H: 64, I: 64 },
  { kind: 'qwen3_moe', mx: false, up: 'q4_k', down: 'q6_k', T: 20, E: 8, K: 2, H: 256, I: 256, norm: true },
  { kind: 'qwen3_moe', mx: false, up: 'q6_k', down: 'q8_0', T: 12, E: 8, K: 4, H: 256, I: 64, norm: false },
  { kind: 'gpt_oss', mx: false, T: 33, E: 4, K: 1, H: 40, I: 70 },
  { kind: 'qwen3_moe', mx: false, T: 70, E: 16, K: 4, H: 40, I: 24, norm: true },
  // T * K past 65535 workgroups in one dimension: the slots continue in z
  { kind: 'qwen3_moe', mx: false, T: 16400, E: 8, K: 4, H: 8, I: 4, norm: true },
];


describe('moe contract vs the CPU reference', () => {
  it.for(CASES)('$kind mx=$mx up=$up down=$down T=$T E=$E K=$K H=$H I=$I', async (c) => {
    const r = new Rng(`moe/${JSON.stringify(c)}`);
    const gpt = c.kind === 'gpt_oss';
    const m: MoeConfig = {
      kind: c.kind,
      numExperts: c.E,
      topK: c.K,
      expertIntermediateSize: c.I,
      routing: gpt ? 'topk_softmax' : 'softmax_topk',
      normTopkProb: !!c.norm,
      routerBias: gpt,
      expertBias: gpt,
      activation: gpt ? 'swiglu_clamped' : 'silu',
      swigluAlpha: 1.702,
      swigluLimit: 7,
      expertFormat: c.mx ? 'mxfp4' : 'float',
      sparse: [true],
    };
    const { T, E, H, I } = c;
    const x = r.floats(T * H, -2, 2);
    const routerW = r.floats(E * H, -0.5 / Math.sqrt(H / 16), 0.5 / Math.sqrt(H / 16)); // logits of a few units
    const routerB = gpt ? r.floats(E, -0.2, 0.2) : new Float32Array(1);
    // rows = outputs (the GPU layout); gate/up pre-activations reach past the clamp at 7 (x ~ U(-2, 2), |w| <= 1.5)
    let up = r.floats(E * 2 * I * H, -1.5 / Math.sqrt(H / 16), 1.5 / Math.sqrt(H / 16));
    let down = r.floats(E * H * I, -0.2, 0.2);
    const bUp = gpt ? r.floats(E * 2 * I, -0.5, 0.5) : new Float32Array(1);
    const bDown = gpt ? r.floats(E * H, -0.1, 0.1) : new Float32Array(1);
    const inputs: Record<string, { dtype: string; shape: number[]; data: Float32Array | Uint8Array }> = {
      x: { dtype: 'float32', shape: [T, H], data: x },
      router_w: { dtype: 'float32', shape: [E, H], data: routerW },
      router_b: { dtype: 'float32', shape: [routerB.length], data: routerB },
      b_up: { dtype: 'float32', shape: [bUp.length], data: bUp },
      b_down: { dtype: 'float32', shape: [bDown.length], data: bDown },
    };
    if (c.mx) {
      const qu = quantizeMxfp4Hf(up);
      const qd = quantizeMxfp4Hf(down);
      up = dequantizeMxfp4Hf(qu.blocks, qu.scales);
      down = dequantizeMxfp4Hf(qd.blocks, qd.scales);
      inputs.w_up = { dtype: 'uint8', shape: [E, 2 * I, H / 32, 16], data: qu.blocks };
      inputs.w_up_scales = { dtype: 'uint8', shape: [E, 2 * I, H / 32], data: qu.scales };
      inputs.w_down = { dtype: 'uint8', shape: [E, H, I / 32, 16], data: qd.blocks };
      inputs.w_down_scales = { dtype: 'uint8', shape: [E, H, I / 32], data: qd.scales };
    } else {
      const stored = (x: Float32Array, fmt: Fmt | undefined, shape: number[]) => {
        if (!fmt || fmt === 'f32') return { x, t: { dtype: 'float32', shape, data: x } };
        const type = EXPERT_GGML_TYPES[fmt as keyof typeof EXPERT_GGML_TYPES];
        const q = quantize(type, x);
        return { x: dequantize(type, q, x.length), t: { dtype: fmt, shape, data: q } };
      };
      const su = stored(up, c.up, [E, 2 * I, H]);
      const sd = stored(down, c.down, [E, H, I]);
      up = su.x;
      down = sd.x;
      inputs.w_up = su.t;
      inputs.w_down = sd.t;
      inputs.w_up_scales = { dtype: 'uint8', shape: [1], data: new Uint8Array(1) };
      inputs.w_down_scales = { dtype: 'uint8', shape: [1], data: new Uint8Array(1) };
    }
    // the reference reads transformers' parameter layouts: gpt-oss [E, in, out], Qwen [E, out, in]
    const tensors: Record<string, Float32Array> = gpt
      ? {
          'mlp.router.weight': routerW,
          'mlp.router.bias': routerB,
          'mlp.experts.gate_up_proj': t3(up, E, 2 * I, H),
          'mlp.experts.down_proj': t3(down, E, H, I),
          'mlp.experts.gate_up_proj_bias': bUp,
          'mlp.experts.down_proj_bias': bDown,
        }
      : { 'mlp.gate.weight': routerW, 'mlp.experts.gate_up_proj': up, 'mlp.experts.down_proj': down };
    const want = moeForward(m, x, T, H, (n) => tensors[n]!, '');
    const attributes = { top_k: c.K, routing: m.routing, norm_topk_prob: c.norm ? 1 : 0, activation: m.activation, alpha: 1.702, limit: 7 };
    const { plan, outputs } = await runContract(dev, opContract('moe'), { inputs: inputs as never, attributes });
    expect(plan.variant).toBe(c.mx ? 'mxfp4' : (c.up ?? 'f32') !== 'f32' || (c.down ?? 'f32') !== 'f32' ? 'ggml' : 'float');
    const got = outputs.y!.data as Float32Array;
    let d = 0;
    let mag = 0;
    for (let i = 0; i < want.length; i++) {
      expect(Number.isFinite(got[i]!)).toBe(true);
      d = Math.max(d, Math.abs(got[i]! - want[i]!));
      mag = Math.max(mag, Math.abs(want[i]!));
    }
    expect(mag).toBeGreaterThan(0.1);
    expect(d / mag).toBeLessThan(1e-4);
    // the same with a workgroup per expert output row (tunable moeRows: each dot product's blocks split), and with the
    // slots grouped by expert (moeGroup on: each weight dequantized once per tile of slots; T x k >= 32 only)
    const modes = [
      ['moeRows workgroup', { moeRows: 'workgroup', moeGroup: 'off' }, ['route', 'up', 'down']],
      ['moeGroup on', { moeGroup: 'on' }, ['route', 'group', 'up_grouped', 'down_grouped', 'combine']],
    ] as const;
    for (const [label, tunables, passes] of modes) {
      if (c.T * c.K >= 10000 || (label === 'moeGroup on' && c.T * c.K < 32)) continue;
      const o = await runContract(dev, opContract('moe'), { inputs: inputs as never, attributes, tunables });
      expect(o.plan.passes.map((p) => p.id), label).toEqual(passes);
      if (label === 'moeRows workgroup') expect(o.plan.passes.find((p) => p.id === 'up')!.dispatch[0]).toBe(I);
      const g2 = o.outputs.y!.data as Float32Array;
      let d2 = 0;
      for (let i = 0; i < want.length; i++) d2 = Math.max(d2, Math.abs(g2[i]! - want[i]!));
      expect(d2 / mag, label).toBeLessThan(1e-4);
    }
    // the case exercises what it claims: the clamp binds (gpt-oss), and the routing weights matter
    const differs = (other: MoeConfig) => {
      const o = moeForward(other, x, T, H, (n) => tensors[n]!, '');
      let dd = 0;
      for (let i = 0; i < o.length; i++) dd = Math.max(dd, Math.abs(o[i]! - want[i]!));
      return dd / mag;
    };
    if (gpt) expect(differs({ ...m, swigluLimit: 1000 })).toBeGreaterThan(1e-3);
    // (softmax over the selected logits equals softmax over all then top-k renormalized: compare with no renormalization)
    if (c.K > 1) expect(differs(gpt ? { ...m, routing: 'softmax_topk', normTopkProb: false } : { ...m, normTopkProb: !m.normTopkProb })).toBeGreaterThan(1e-3);
  });
});
