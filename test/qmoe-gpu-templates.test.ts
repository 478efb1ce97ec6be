/**
 * The QMoE `.wgsl.jinja` templates rendered for fixed plans (device profiles, fixed shapes and attributes), stored as
 * file snapshots under test/snapshots/qmoe/ so that template edits show up as reviewable WGSL diffs; each rendering
 * whose features this device has is also compiled here (H200 renderings included: they compile on SwiftShader unless
 * they need shader-f16 or subgroup matrices).
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveContract, type KernelContract, type Plan, type PlanPass } from '../src/contracts/index.ts';
import { loadContract } from '../src/node/contracts.ts';
import { renderPassShader } from '../src/contracts/run.ts';
import { capsFromJson, type DeviceCaps, type DeviceProfileJson } from '../src/gpu/caps.ts';
import { describeAdapter, type TesseraDevice } from '../src/gpu/device.ts';
import { testDevice } from './helpers/device.ts';

const spec = (f: string) => new URL(`../spec/${f}`, import.meta.url).pathname;
const V1 = loadContract(spec('qmoe.contract.json'));
const V2 = loadContract(spec('qmoe.v2.contract.json'));
const profile = (name: string, edit?: (p: DeviceProfileJson) => void): DeviceCaps => {
  const p = JSON.parse(readFileSync(spec(`device-profiles/${name}.json`), 'utf8')) as DeviceProfileJson;
  edit?.(p);
  return capsFromJson(p);
};
const SWIFTSHADER = profile('swiftshader');
const H200 = profile('nvidia-h200');
const H200_F32_SGMAT = profile('nvidia-h200', (p) => p.adapterInfo.subgroupMatrixConfigs.push({ componentType: 'f32', resultComponentType: 'f32', M: 8, N: 8, K: 8 }));

interface Dims {
  T: number;
  E: number;
  k: number;
  H: number;
  I: number;
  bits: 4 | 8;
  block: number;
  swiglu: boolean;
  biases?: boolean;
  f16?: boolean;
}
function shapes(d: Dims): { shapes: Record<string, number[]>; dtypes: Record<string, string> } {
  const pack = d.bits === 4 ? 2 : 1;
  const rows = (d.swiglu ? 2 : 1) * d.I;
  const s: Record<string, number[]> = {
    inputT: [d.T, d.H],
    routerT: [d.T, d.E],
    fc1T: [d.E, rows, d.H / pack],
    fc1ScalesT: d.block ? [d.E, rows, d.H / d.block] : [d.E, rows],
    fc2T: [d.E, d.H, d.I / pack],
    fc2ScalesT: d.block ? [d.E, d.H, d.I / d.block] : [d.E, d.H],
  };
  if (d.biases) {
    s.fc1BiasT = [d.E, rows];
    s.fc2BiasT = [d.E, d.H];
  }
  const dtypes: Record<string, string> = {};
  for (const k of ['inputT', 'routerT', ...(d.biases ? ['fc1BiasT', 'fc2BiasT'] : [])]) dtypes[k] = d.f16 ? 'float16' : 'float32';
  return { shapes: s, dtypes };
}
const SWIGLU = { activation_type: 'swiglu', swiglu_fusion: 1, swiglu_limit: 7, activation_alpha: 1.702, activation_beta: 1 };

interface Fixture {
  label: string;
  contract: KernelContract;
  device: DeviceCaps;
  dims: Dims;
  attrs: Record<string, number | string>;
  tunables?: Record<string, number | boolean>;
  variant: string;
}
const small = { E: 4, k: 2, H: 64, I: 32 };
const gptoss = { E: 32, k: 4, H: 2880, I: 2880, bits: 4 as const, block: 32, swiglu: true };
const FIXTURES: Fixture[] = [
  // Small shapes on SwiftShader (the seed contract): every f32 kernel once.
  { label: 'swiftshader-v1', contract: V1, device: SWIFTSHADER, dims: { ...small, T: 1, bits: 4, block: 16, swiglu: true }, attrs: { k: 2, ...SWIGLU, block_size: 16 }, tunables: { decodeLanes: 4 }, variant: 'quant_gemv_routed' },
  { label: 'swiftshader-v1', contract: V1, device: SWIFTSHADER, dims: { ...small, T: 64, bits: 4, block: 16, swiglu: true }, attrs: { k: 2, ...SWIGLU, block_size: 16 }, variant: 'quant_grouped_routed' },
  { label: 'swiftshader-v1', contract: V1, device: SWIFTSHADER, dims: { ...small, T: 5, bits: 8, block: 0, swiglu: false }, attrs: { k: 2, expert_weight_bits: 8 }, variant: 'quant_split_routed' },
  { label: 'swiftshader-v1', contract: V1, device: SWIFTSHADER, dims: { ...small, T: 3, I: 0, bits: 4, block: 0, swiglu: false }, attrs: { k: 2 }, variant: 'quant_zero_inter' },
  // ReLU, 8-bit, per-row scales; and rows that are not whole u32 words (byte-wise paths).
  { label: 'swiftshader-v2-relu8', contract: V2, device: SWIFTSHADER, dims: { ...small, T: 1, bits: 8, block: 0, swiglu: false, biases: true }, attrs: { k: 2, expert_weight_bits: 8 }, tunables: { decodeLanes: 8 }, variant: 'quant_gemv_routed' },
  { label: 'swiftshader-v2-relu8', contract: V2, device: SWIFTSHADER, dims: { ...small, T: 64, bits: 8, block: 0, swiglu: false, biases: true }, attrs: { k: 2, expert_weight_bits: 8 }, variant: 'quant_grouped_routed' },
  { label: 'swiftshader-v2-unaligned', contract: V2, device: SWIFTSHADER, dims: { E: 3, k: 2, H: 36, I: 10, T: 2, bits: 4, block: 0, swiglu: true }, attrs: { k: 2, ...SWIGLU }, tunables: { decodeLanes: 2, decodeMinLaneTrips: 1 }, variant: 'quant_gemv_routed' },
  { label: 'swiftshader-v2-unaligned', contract: V2, device: SWIFTSHADER, dims: { E: 3, k: 2, H: 36, I: 10, T: 64, bits: 4, block: 0, swiglu: true }, attrs: { k: 2, ...SWIGLU }, variant: 'quant_grouped_routed' },
  // gpt-oss-20b experts on an H200 (v2, biases): decode with subgroup reductions; grouped.
  { label: 'h200-v2-gptoss', contract: V2, device: H200, dims: { ...gptoss, T: 1, biases: true }, attrs: { k: 4, ...SWIGLU, block_size: 32 }, variant: 'quant_gemv_routed' },
  { label: 'h200-v2-gptoss', contract: V2, device: H200, dims: { ...gptoss, T: 128, biases: true }, attrs: { k: 4, ...SWIGLU, block_size: 32 }, tunables: { sgmatF16Compute: false }, variant: 'quant_grouped_routed' },
  // float32 activations with the default tunables: the f16 subgroup-matrix variant (inputs rounded to f16 as staged)
  { label: 'h200-v2-gptoss', contract: V2, device: H200, dims: { ...gptoss, T: 128, biases: true }, attrs: { k: 4, ...SWIGLU, block_size: 32 }, variant: 'quant_grouped_sgmat_f16_routed' },
  // f16 activations on an H200: decode, and the f16 subgroup-matrix variant.
  { label: 'h200-v2-gptoss-f16', contract: V2, device: H200, dims: { ...gptoss, T: 1, biases: true, f16: true }, attrs: { k: 4, ...SWIGLU, block_size: 32 }, variant: 'quant_gemv_routed' },
  { label: 'h200-v2-gptoss-f16', contract: V2, device: H200, dims: { ...gptoss, T: 128, biases: true, f16: true }, attrs: { k: 4, ...SWIGLU, block_size: 32 }, variant: 'quant_grouped_sgmat_f16_routed' },
  // The seed's f32 8x8x8 subgroup-matrix variant (no real device offers that config; rendered for review).
  { label: 'h200-f32sgmat-v1-gptoss', contract: V1, device: H200_F32_SGMAT, dims: { ...gptoss, T: 128 }, attrs: { k: 4, ...SWIGLU, block_size: 32 }, variant: 'quant_grouped_sgmat_routed' },
];

function planOf(f: Fixture): Plan {
  const { shapes: s, dtypes } = shapes(f.dims);
  return resolveContract(f.contract, { shapes: s, dtypes, attributes: f.attrs, ...(f.tunables ? { tunables: f.tunables } : {}), device: f.device });
}
/** The first pass of each id (later token chunks render the same source). */
function distinctPasses(plan: Plan): PlanPass[] {
  const seen = new Set<string>();
  return plan.passes.filter((p) => !seen.has(p.id) && seen.add(p.id));
}
function shaderNames(c: KernelContract): Set<string> {
  const out = new Set<string>();
  const walk = (ps: readonly { shader?: string; passes?: readonly unknown[] }[]) => {
    for (const p of ps) {
      if (p.shader) out.add(p.shader);
      if (p.passes) walk(p.passes as never);
    }
  };
  for (const v of c.variants) walk(v.passes as never);
  return out;
}

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
  console.log(`QMoE template compile checks on adapter: ${describeAdapter(dev.caps)}`);
});

describe('QMoE templates: file snapshots of fixed renderings', () => {
  it('every shader the contracts name has a template and a snapshot below', () => {
    const named = new Set([...shaderNames(V1), ...shaderNames(V2)]);
    const rendered = new Set(FIXTURES.flatMap((f) => distinctPasses(planOf(f)).map((p) => p.shader!)));
    expect([...named].sort()).toEqual([...rendered].sort());
    expect(named.size).toBe(12);
  });

  for (const f of FIXTURES) {
    it(`${f.label}: ${f.variant} (T = ${f.dims.T})`, async () => {
      const plan = planOf(f);
      expect(plan.variant).toBe(f.variant);
      for (const pass of distinctPasses(plan)) {
        const src = renderPassShader(plan, pass);
        expect(src).not.toMatch(/undefined|NaN|\[object Object\]/);
        await expect(src).toMatchFileSnapshot(`./snapshots/qmoe/${f.label}/T${f.dims.T}.${f.variant}.${pass.id}.wgsl`);
      }
    });
  }
});

describe('QMoE templates: the renderings compile on this device', () => {
  const needs = (src: string): string[] => [
    ...(/^enable f16;/m.test(src) ? ['shader-f16'] : []),
    ...(/^enable subgroups;/m.test(src) ? ['subgroups'] : []),
    ...(/^enable chromium_experimental_subgroup_matrix;/m.test(src) ? ['chromium-experimental-subgroup-matrix'] : []),
  ];
  for (const f of FIXTURES) {
    it(`${f.label}: ${f.variant} (T = ${f.dims.T})`, async (ctx) => {
      const plan = planOf(f);
      const skipped: string[] = [];
      // The plan may come from a profile with subgroup-matrix configs this device lacks (the seed's f32 8x8x8).
      const spec = f.contract.variants.find((v) => v.id === plan.variant)!;
      const configs = dev.caps.adapterInfo.subgroupMatrixConfigs;
      const missingConfigs = (spec.requires?.subgroupMatrixConfigs ?? []).filter(
        (c) => !configs.some((d) => d.componentType === c.componentType && d.resultComponentType === c.resultComponentType && d.M === c.M && d.N === c.N && d.K === c.K),
      );
      for (const pass of distinctPasses(plan)) {
        const src = renderPassShader(plan, pass);
        const lacks = needs(src).filter((x) => !dev.caps.features.has(x));
        if (/subgroup_matrix/.test(src) && missingConfigs.length) lacks.push(`subgroup-matrix config ${missingConfigs.map((c) => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`).join(', ')}`);
        if (lacks.length) {
          skipped.push(`${pass.id} (needs ${lacks.join(', ')})`);
          continue;
        }
        const layout = pass.bindings.map((b, i) => ({ binding: b.index ?? i, type: b.kind === 'uniform' ? ('uniform' as const) : b.access }));
        await dev.pipelines.get({ code: src, entryPoint: 'main', layout, label: `${pass.name} [${f.label}]` });
      }
      if (skipped.length) {
        console.log(`not compiled on ${describeAdapter(dev.caps)}: ${f.label} ${skipped.join(', ')} (the GPU lane compiles them)`);
        if (skipped.length === distinctPasses(plan).length) ctx.skip();
      }
    });
  }
});

describe('optional contract inputs (v2 biases) in plans', () => {
  const dims: Dims = { T: 1, E: 4, k: 2, H: 64, I: 32, bits: 4, block: 16, swiglu: true };
  const attrs = { k: 2, ...SWIGLU, block_size: 16 };

  it('an absent optional input has no shape; its binding is marked absent; indices follow the pass list', () => {
    const { shapes: s, dtypes } = shapes(dims);
    const plan = resolveContract(V2, { shapes: s, dtypes, attributes: attrs, device: SWIFTSHADER, tunables: { decodeLanes: 4 } });
    expect(plan.derived.hasFc1Bias).toBe(false);
    expect('fc1BiasT' in plan.shapes).toBe(false);
    const fc1 = plan.passes.find((p) => p.id === 'fc1_activation_stage')!;
    expect(fc1.bindings.map((b) => [b.index, b.name])).toEqual([
      [0, 'input'],
      [1, 'route_expert'],
      [2, 'fc1_experts_weights'],
      [3, 'fc1_scales'],
      [4, 'fc1_bias'],
      [5, 'hidden_act'],
      [6, 'params'],
    ]);
    expect(fc1.bindings[4]).toMatchObject({ kind: 'tensor', tensor: 'fc1BiasT', absent: true });
  });

  it('a present optional input is bound and checked', () => {
    const { shapes: s, dtypes } = shapes({ ...dims, biases: true });
    const plan = resolveContract(V2, { shapes: s, dtypes, attributes: attrs, device: SWIFTSHADER, tunables: { decodeLanes: 4 } });
    expect(plan.derived.hasFc1Bias).toBe(true);
    const fc1 = plan.passes.find((p) => p.id === 'fc1_activation_stage')!;
    expect(fc1.bindings[4]).not.toHaveProperty('absent');
    expect(() => resolveContract(V2, { shapes: { ...s, fc1BiasT: [4, 63] }, dtypes, attributes: attrs, device: SWIFTSHADER })).toThrow(/fc1BiasOk/);
  });

  it('a dtype for an absent optional input is refused', () => {
    const { shapes: s, dtypes } = shapes(dims);
    expect(() => resolveContract(V2, { shapes: s, dtypes: { ...dtypes, fc2BiasT: 'float32' }, attributes: attrs, device: SWIFTSHADER })).toThrow(
      'com.microsoft.QMoE: input fc2BiasT: dtype given, but the optional input has no shape (leave both out when the input is absent)',
    );
  });

  it('a variant can be requested by id (and an unknown id is named)', () => {
    const { shapes: s, dtypes } = shapes(dims);
    const plan = resolveContract(V2, { shapes: s, dtypes, attributes: attrs, device: SWIFTSHADER, variant: 'quant_split_routed' });
    expect(plan.variant).toBe('quant_split_routed');
    expect(plan.rejected).toEqual([]);
    expect(() => resolveContract(V2, { shapes: s, dtypes, attributes: attrs, device: SWIFTSHADER, variant: 'nope' })).toThrow(/variant "nope": not a variant of QMoE; variants: quant_zero_inter, /);
  });
});
