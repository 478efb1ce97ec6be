/**
 * MoE combine / routing-offset kernels and row-split embedding lookups vs their CPU references
 * (src/reference/moe-combine.ts), through the op-test harness and their op contracts (scatter_add,
 * scatter_add_accumulate, moe_offsets, gather_split4, gather_split8):
 *  - every scatter_add variant (dense, accumulate, vec4, dynamic +- expert scales, f16 outputs, f16 weights),
 *    moe_offsets.default (uint32 output, compared exactly; unrouted slots must keep their contents) and the three
 *    gather_split variants.
 *  - The f16 variants need shader-f16 by the registry: without it (SwiftShader) the registry run reports them skipped
 *    with the reason; their WGSL reads and writes f16 as packed u32 words (unpack2x16float / pack2x16float) and never
 *    enables f16, so they also run here with the requirement dropped (test/helpers/emulate-f16.ts): same WGSL, cases
 *    and checks.
 *  - The harness catches a wrong answer for these ops (perturbed expectations fail), and no model contract
 *    names these kernels (model selection is unchanged).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import { gatherSplitRef, moeOffsetsRef, scatterAddRef, topkRef } from '../src/reference/moe-combine.ts';
import { readBuffer, STORAGE_USAGE, uploadBuffer } from '../src/gpu/buffers.ts';
import { REFERENCE } from '../src/reference/ops.ts';
import { LM_HEAD_ARGMAX_CASES } from '../src/selftest/cases-moe-routing.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { planOp, runPlan } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';
import { registryWithoutF16 } from './helpers/emulate-f16.ts';

const OPS = ['scatter_add', 'moe_offsets', 'gather_split4', 'gather_split8', 'topk', 'lm_head_argmax', 'moe_gather'] as const;
const VARIANTS: Record<(typeof OPS)[number], string[]> = {
  scatter_add: ['default', 'accumulate', 'vec4', 'dynamic', 'dynamic_expert_scale', 'dynamic_f16', 'dynamic_f16_expert_scale', 'dynamic_f16_w16', 'dynamic_f16_w16_expert_scale'],
  moe_offsets: ['default'],
  gather_split4: ['f16_vec4_f16_out'],
  gather_split8: ['f16_vec4_f16_out', 'f16_vec4_f32_out'],
  topk: ['default', 'small', 'fused', 'fused_f16', 'fused_f16_w16', 'gptoss_router_topk'],
  lm_head_argmax: ['phase1_f16w_f32a', 'phase1_q4k_f32a', 'phase2', 'phase2_q4k'],
  moe_gather: ['single_pass'],
};

/** The variants these tests cover (the others of these operations are in src/selftest/not-recoverable.json). */
const mine = (id: string) => OPS.some((op) => VARIANTS[op].some((v) => `${op}.${v}` === id));
const NOT_RECOVERABLE = JSON.parse(readFileSync(new URL('../src/selftest/not-recoverable.json', import.meta.url), 'utf8')) as { variants: Record<string, string> };

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('CPU references (hand-computed)', () => {
  it('scatter_add: dense and dynamic layouts, padding slots, scales, accumulate', () => {
    // T=2, H=2, E=2, K=2; dense input [E, T, H]
    const input = [1, 2, 3, 4, /* e1 */ 10, 20, 30, 40];
    const u = { num_tokens: 2, hidden_size: 2, top_k: 2, num_experts: 2 };
    const dense = scatterAddRef({ input, indices: [0, 1, 1, 5], weights: [0.5, 0.25, 2, 9] }, u);
    expect([...dense]).toEqual([0.5 * 1 + 0.25 * 10, 0.5 * 2 + 0.25 * 20, 2 * 30, 2 * 40]);
    const acc = scatterAddRef({ input, indices: [0, 1, 1, 5], weights: [0.5, 0.25, 2, 9], accumulate: [1, 1, 1, 1] }, u);
    expect([...acc]).toEqual([...dense].map((x) => x + 1));
    // dynamic: rows by offset, expert scales
    const dyn = scatterAddRef({ input, indices: [0, 1, 1, 0], weights: [1, 1, 1, 1], tokenOffsets: [3, 0, 1, 2], expertScales: [2, 3] }, u);
    expect([...dyn]).toEqual([2 * 30 + 3 * 1, 2 * 40 + 3 * 2, 3 * 3 + 2 * 10, 3 * 4 + 2 * 20]);
  });

  it('moe_offsets: routed slots get e * max + slot, dropped ones keep their contents', () => {
    // E=2, M=2, T=2, K=2: expert 0 got (t1,j0) then (t0,j0); expert 1 got 3 slots (capped at 2): (t0,j1), (t1,j1)
    const out = moeOffsetsRef([2, 3], [1, 0, 0, 0, /* e1 */ 0, 1, 1, 1], [7, 7, 7, 7], { num_tokens: 2, num_experts: 2, top_k: 2, max_tokens_per_expert: 2 });
    expect([...out]).toEqual([1, 2, 0, 3]);
  });

  it('gather_split: ids map to their section, out of range gives 0', () => {
    const u = { num_tokens: 4, hidden_size: 2, vocab_size: 5, index_offset: 1, input_hidden_size: 3, hidden_offset: 1, section0_rows: 2, section1_rows: 0, section2_rows: 2 };
    const t0 = [0, 1, 2, 3, 4, 5];
    const t2 = [10, 11, 12, 13, 14, 15];
    const out = gatherSplitRef([9, 1, 3, 4, 0], [t0, [], t2], u);
    expect([...out]).toEqual([4, 5, 14, 15, 0, 0, 1, 2]);
  });

  it('topk: larger first, ties to the lower column; softmax over the row or over the k selected', () => {
    const x = [1, 3, 3, 0, /* row 1 */ 2, 2, 2, 2];
    const v = topkRef(x, 2, 4, 3, 'values');
    expect([...v.indices]).toEqual([1, 2, 0, 0, 1, 2]);
    expect([...v.values]).toEqual([3, 3, 1, 2, 2, 2]);
    const s = topkRef(x, 2, 4, 2, 'softmax');
    const z = 2 * Math.exp(0) + Math.exp(-2) + Math.exp(-3);
    expect(s.values[0]).toBeCloseTo(1 / z, 12);
    expect(s.values[2]).toBeCloseTo(0.25, 12);
    const g = topkRef(x, 2, 4, 2, 'softmax_selected');
    expect([...g.values]).toEqual([0.5, 0.5, 0.5, 0.5]);
  });
});

describe('op-test harness', () => {
  for (const op of OPS) {
    it(`${op}: registry variants on this device (f16 ones skipped without shader-f16, with the reason)`, async () => {
      const reps = await runOp(dev, op, { filter: mine });
      expect(reps.map((r) => r.variant).sort()).toEqual(VARIANTS[op].map((v) => `${op}.${v}`).sort());
      const f16 = !dev.caps.features.has('shader-f16');
      expect(describeFailures(reps)).toEqual([]);
      for (const r of reps) {
        const needsF16 = defaultRegistry().variant(r.variant).requires.includes('shader-f16');
        if (needsF16 && f16) expect(r, r.variant).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/shader-f16/) });
        else {
          expect(r.status, `${r.variant}: ${r.reason ?? ''}`).toBe('ok');
          expect(r.cases.length, r.variant).toBeGreaterThanOrEqual(5);
        }
      }
    });

    it(`${op}: every variant, the shader-f16 requirement dropped`, async () => {
      const reps = await runOp(dev, op, { filter: mine, registry: registryWithoutF16(defaultRegistry()) });
      expect(describeFailures(reps)).toEqual([]);
      for (const r of reps) {
        expect(r.status, `${r.variant}: ${r.reason ?? ''}`).toBe('ok');
        expect(r.cases.length, r.variant).toBeGreaterThanOrEqual(5);
      }
    });
  }

  it('a wrong expectation fails (the comparison is not vacuous, uint32 outputs included)', async () => {
    for (const op of OPS) {
      const reps = await runOp(dev, op, {
        filter: mine,
        registry: registryWithoutF16(defaultRegistry()),
        caseFilter: (n) => !n.startsWith('T1 '),
        perturbExpected: (_b, want) => {
          want[want.length >> 1] = want[want.length >> 1]! + 1;
        },
      });
      for (const r of reps) {
        expect(r.cases.length, r.variant).toBeGreaterThan(0);
        for (const c of r.cases) expect(c.pass, `${r.variant} [${c.case}] passed with a wrong expectation`).toBe(false);
      }
    }
  });
});

describe('registry coverage', () => {
  it('every other variant of these operations has no WGSL and a reason in not-recoverable.json', async () => {
    for (const op of [...OPS, 'swiglu', 'dequant'] as const) {
      const variants = [...defaultRegistry().operations.get(op)!.variants.values()];
      for (const v of variants) {
        if (mine(v.id)) continue;
        if (op === 'dequant' && !['dequant.mxfp4', 'dequant.mxfp4_expert', 'dequant.mxfp4_expert_f16'].includes(v.id)) continue; // the others are not this file's
        expect(NOT_RECOVERABLE.variants[v.id]?.length ?? 0, v.id).toBeGreaterThan(40);
      }
    }
    const reps = await runOp(dev, 'moe_gather');
    for (const r of reps) if (r.variant !== 'moe_gather.single_pass') expect(r.status, r.variant).toBe('no-wgsl');
  });
});

describe('contracts', () => {
  it('lm_head_argmax (both passes): the token is the reference argmax, written at output_index only', async () => {
    const registry = registryWithoutF16(defaultRegistry());
    for (const c of LM_HEAD_ARGMAX_CASES.cases.filter((x) => x.name.startsWith('phase1'))) {
      const t = c.inputs(new Rng(`lm_head_argmax/${c.name}`));
      const shapes = { ...(c.shapes as Record<string, number[]>), tokens: [4] };
      const plan = planOp(dev, 'lm_head_argmax', { shapes, dtypes: c.dtypes, attributes: { ...c.attributes, output_index: 2 }, registry });
      expect(plan.passes.map((p) => p.kernel)).toEqual(c.dtypes!.weights === 'q4_k' ? ['lm_head_argmax.phase1_q4k_f32a', 'lm_head_argmax.phase2_q4k'] : ['lm_head_argmax.phase1_f16w_f32a', 'lm_head_argmax.phase2']);
      // expected: phase1's reference, then phase2's
      const p1 = plan.passes[0]!.bindings.find((b) => b.kind === 'uniform')!;
      const u = (p1 as { values: Record<string, number> }).values;
      const v1 = plan.passes[0]!.kernel!;
      const r1 = REFERENCE.lm_head_argmax({ hidden: t.hidden!, weights: t.weights! }, u, 'phase1', v1);
      const tokens = new Uint32Array([7, 7, 7, 7]);
      const want = REFERENCE.lm_head_argmax({ temp_logits: Float32Array.from(r1.temp_logits!), temp_indices: Uint32Array.from(r1.temp_indices!), output: tokens }, u, 'phase2', 'lm_head_argmax.phase2').output!;
      const bufs = { hidden: uploadBuffer(dev.device, t.hidden!, 'hidden'), weights: uploadBuffer(dev.device, t.weights!, 'weights'), tokens: uploadBuffer(dev.device, tokens, 'tokens', STORAGE_USAGE) };
      await runPlan(dev, plan, bufs, { registry });
      const got = new Uint32Array(await readBuffer(dev.device, bufs.tokens, 16));
      expect([...got], c.name).toEqual(Array.from(want));
      for (const b of Object.values(bufs)) b.destroy();
    }
  });

  it('no model contract names these kernels (model selection unchanged)', () => {
    const dir = new URL('../src/ops/contracts/', import.meta.url);
    const own = new Set(['scatter_add', 'scatter_add_accumulate', 'moe_offsets', 'gather_split4', 'gather_split8', 'topk'].map((n) => `${n}.contract.json`));
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.contract.json') && !own.has(n))) {
      const text = readFileSync(new URL(f, dir), 'utf8');
      expect(text, f).not.toMatch(/"(scatter_add|moe_offsets|gather_split[48]|topk)\./);
    }
  });
});
