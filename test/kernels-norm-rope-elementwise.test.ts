/**
 * Issue 13 deliverable 2: norm / rope / elementwise variants (rmsnorm, layernorm, rmsnorm_qk, rope, rope_qk, scale,
 * relu, bias_add, clamp, softmax, transpose, bf16_to_f32 / bf16_to_f16, split_qkv, split_qg).
 *  1. Every variant of these operations with WGSL runs the op-test harness through its op contract: the f32 and
 *     subgroup kernels pass every case here; the shader-f16 ones report the missing feature here (and run where the
 *     device has it). rope.yarn / yarn_f16 have no WGSL and are listed in src/selftest/not-recoverable.json.
 *  2. Each shader-f16 kernel is rendered from the template of an f32 kernel: its text with the f16 substitutions
 *     undone (`enable f16;` dropped, f16 -> f32) equals the template rendered with T = f32, and that f32 text (the
 *     twin) runs as the f32 sibling's registry kernel (its entry point, bindings and contract pass) against the CPU
 *     reference on this device.
 *  3. Each f16 case resolves to a plan of the f16 variant's contract place (with the f16 requirement dropped).
 *  4. With float32 tensors and tunables at their defaults, no contract selects a kernel added here on the
 *     SwiftShader or H200 profiles (model selection unchanged).
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveContract } from '../src/contracts/index.ts';
import { capsFromJson } from '../src/gpu/caps.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { registryLookup } from '../src/registry/binder.ts';
import { readWgslSync } from '../src/registry/bundled.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import type { KernelVariant, Operation, Registry } from '../src/registry/types.ts';
import type { ReferenceOp } from '../src/reference/ops.ts';
import { OP_CASES, shapesOf } from '../src/selftest/cases.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { opContract, planForKernel } from '../src/selftest/launch.ts';
import notRecoverable from '../src/selftest/not-recoverable.json' with { type: 'json' };
import { testDevice } from './helpers/device.ts';
import { codeOnly, renderTemplate } from './helpers/templates.ts';
import { registryWithoutF16 } from './helpers/emulate-f16.ts';

const OPS: ReferenceOp[] = ['rmsnorm', 'layernorm', 'rmsnorm_qk', 'rope', 'rope_qk', 'scale', 'relu', 'bias_add', 'clamp', 'softmax', 'transpose', 'bf16_to_f32', 'bf16_to_f16', 'split_qkv', 'split_qg'];

/** shader-f16 kernel -> [template, rendered file, f32 sibling whose contract pass and cases the twin runs with] */
const F16: Record<string, [string, string, string]> = {
  'rmsnorm.default_f16': ['rmsnorm', 'rmsnorm_f16.wgsl', 'rmsnorm.default'],
  'rmsnorm.small_f16': ['rmsnorm', 'rmsnorm_f16.wgsl', 'rmsnorm.small'],
  'layernorm.default_f16': ['layernorm', 'layernorm_f16.wgsl', 'layernorm.default'],
  'rmsnorm_qk.default_f16': ['rmsnorm_qk', 'rmsnorm_qk_f16.wgsl', 'rmsnorm_qk.default'],
  'rope.default_f16': ['rope', 'rope_f16.wgsl', 'rope.default'],
  'rope.compute_freqs_f16': ['rope', 'rope_f16.wgsl', 'rope.compute_freqs'],
  'rope.qk_f16': ['rope', 'rope_f16.wgsl', 'rope.qk'],
  'rope.ntk_f16': ['rope', 'rope_f16.wgsl', 'rope.ntk'],
  'rope_qk.default_f16': ['rope', 'rope_qk_f16.wgsl', 'rope_qk.default'],
  'scale.default_f16': ['scale', 'scale_f16.wgsl', 'scale.default'],
  'scale.inplace_f16': ['scale', 'scale_f16.wgsl', 'scale.inplace'],
  'relu.default_f16': ['relu', 'relu_f16.wgsl', 'relu.default'],
  'bias_add.f16': ['bias_add', 'bias_add_f16.wgsl', 'bias_add.default'],
  'split_qkv.f16': ['split_qkv', 'split_qkv_f16.wgsl', 'split_qkv.default'],
  'split_qg.f16': ['split_qg', 'split_qg_f16.wgsl', 'split_qg.default'],
  'bf16_to_f16.default': ['bf16_convert', 'bf16_to_f16.wgsl', 'bf16_to_f32.default'],
};
/** f32 / subgroup kernels added with this change (plus the f16 ones above) */
const NEW_F32 = ['rope_qk.default', 'relu.default', 'clamp.default', 'softmax.subgroup', 'softmax.small_subgroup', 'transpose.default', 'bf16_to_f32.default', 'split_qkv.default', 'split_qg.default'];
const NEW = new Set([...NEW_F32, ...Object.keys(F16)]);

const render = renderTemplate;
const wgslFile = (id: string) => readFileSync(new URL(`../src/kernels/${reg.variant(id).wgsl}`, import.meta.url), 'utf8');
const code = codeOnly;
/** The f16 substitutions undone: `enable f16;` dropped, the type f16 read as f32 (identifiers such as rmsnorm_small_f16 stay). */
const asF32 = (s: string) => s.replace(/^enable f16;$/m, '').replace(/\bf16\b/g, 'f32');

/** A view of `reg` where variant `id` compiles `source` at entry point `entryPoint` (stable objects: pipelines are cached per variant). */
function withKernel(reg: Registry, id: string, source: string, entryPoint: string): Registry {
  const swapped: KernelVariant = { ...reg.variant(id), source, entryPoint };
  const operations = new Map<string, Operation>();
  for (const [name, op] of reg.operations) {
    const variants = new Map<string, KernelVariant>();
    for (const [vn, v] of op.variants) variants.set(vn, v.id === id ? swapped : v);
    operations.set(name, { ...op, variants });
  }
  return { ...reg, operations, variant: (v: string) => (v === id ? swapped : reg.variant(v)) };
}

const reg = defaultRegistry();
let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('norm / rope / elementwise variants in the op-test harness', () => {
  for (const op of OPS) {
    it(`${op}: every variant with WGSL passes here or reports the feature it lacks`, async () => {
      const reps = await runOp(dev, op);
      expect(describeFailures(reps)).toEqual([]);
      for (const r of reps) {
        const v = reg.variant(r.variant);
        if (r.status === 'no-wgsl') {
          expect(Object.keys(notRecoverable.variants), `${r.variant} has no WGSL and is not listed as not recoverable`).toContain(r.variant);
          continue;
        }
        const lacks = v.requires.filter((f) => !dev.caps.features.has(f as GPUFeatureName));
        if (lacks.length) expect(r, r.variant).toMatchObject({ status: 'skipped', reason: expect.stringContaining(lacks[0]!) });
        else {
          expect(r.status, `${r.variant}: ${r.reason ?? ''}`).toBe('ok');
          expect(r.cases.length, r.variant).toBeGreaterThanOrEqual(4);
        }
      }
      // the variants of this change are all there, with WGSL
      for (const id of NEW) if (id.startsWith(`${op}.`)) expect(reps.find((r) => r.variant === id)?.status, id).not.toBe('no-wgsl');
    });
  }
});

describe('shader-f16 kernels: one template with an f32 twin', () => {
  for (const [id, [algo, out, sibling]] of Object.entries(F16)) {
    it(`${id}: the rendered file is the f32 twin up to the f16 substitutions`, () => {
      const file = wgslFile(id);
      expect(file.split('\n').slice(1).join('\n'), 'the file is the template rendering').toBe(render(algo, out).replace(/\n{3,}/g, '\n\n').trimStart());
      expect(code(file)).toMatch(/^enable f16;$/m);
      expect(code(file)).toMatch(/\bf16\b/);
      // templates with a type variable: the f32 rendering of the same entry is the f16 file with f16 read as f32
      if (algo !== 'bf16_convert') expect(code(asF32(file))).toBe(code(render(algo, out, { T: 'f32' })));
      else expect(code(asF32(file))).toBe(code(render(algo, out, { out_t: 'f32' })).replace('output[i] = bf16_at(i);', 'output[i] = f32(clamp(bf16_at(i), -65504.0, 65504.0));'));
      expect(code(asF32(file))).not.toMatch(/\bf16\b/);
      expect(reg.variant(id).entryPoint).toBe(id === 'rmsnorm.small_f16' ? 'rmsnorm_small_f16' : reg.variant(sibling).entryPoint);
    });

    it(`${id}: its f32 twin runs as ${sibling} (its contract pass and cases) against the CPU reference`, async () => {
      const v = reg.variant(id);
      const twin = asF32(wgslFile(id));
      const op = reg.variant(sibling).operation as ReferenceOp;
      // bf16_to_f16 clamps to the f16 range; its twin is compared with the bf16_to_f32 reference clamped the same way
      const clampF16 = id === 'bf16_to_f16.default' ? { perturbExpected: (_: string, want: Float64Array) => want.forEach((w, i) => (want[i] = Math.min(Math.max(w, -65504), 65504))) } : {};
      const [rep] = await runOp(dev, op, { filter: (x) => x === sibling, registry: withKernel(reg, sibling, twin, v.entryPoint), ...clampF16 });
      expect(describeFailures([rep!])).toEqual([]);
      expect(rep!.status).toBe('ok');
      expect(rep!.cases.length).toBeGreaterThanOrEqual(4);
    });
  }

  it('the f16 cases resolve to a plan of each f16 kernel (its contract place), with the device requirement dropped', () => {
    const noF16 = registryWithoutF16(reg);
    for (const id of Object.keys(F16)) {
      const v = reg.variant(id);
      const spec = OP_CASES[v.operation as ReferenceOp];
      expect(spec.notCovered(v), id).toBeUndefined();
      const cases = spec.cases.filter((c) => !c.heavy && (!c.only || c.only(v)));
      expect(cases.length, `${id}: f16 cases`).toBeGreaterThanOrEqual(4);
      for (const c of cases) {
        const got = planForKernel(dev, c.contracts ?? spec.contracts, id, {
          shapes: shapesOf(c, v),
          ...(c.dtypes ? { dtypes: c.dtypes } : {}),
          ...(c.attributes ? { attributes: c.attributes } : {}),
          ...(c.tunables ? { tunables: c.tunables } : {}),
          registry: noF16,
        });
        expect('plan' in got ? got.plan.passes[0]!.kernel : got.reasons.join(' | '), `${id} [${c.name}]`).toBe(id);
      }
    }
  });
});

describe('model selection unchanged', () => {
  const DEVICES = ['swiftshader', 'nvidia-h200'].map((p) => ({ name: p, caps: capsFromJson(JSON.parse(readFileSync(`spec/device-profiles/${p}.json`, 'utf8')), p) }));
  const kernels = registryLookup(reg, readWgslSync);
  it('float32 tensors with default tunables select no kernel of this change (each f32 case, both device profiles)', () => {
    let resolved = 0;
    for (const op of ['rmsnorm', 'layernorm', 'rmsnorm_qk', 'rope', 'scale', 'bias_add', 'softmax'] as ReferenceOp[]) {
      const spec = OP_CASES[op];
      for (const c of spec.cases.filter((x) => !x.name.startsWith('f16 '))) {
        for (const name of c.contracts ?? spec.contracts) {
          const contract = opContract(name);
          for (const d of DEVICES) {
            let plan;
            try {
              plan = resolveContract(contract, { shapes: shapesOf(c, reg.variant(`${op}.default`)), ...(c.attributes ? { attributes: c.attributes } : {}), device: d.caps, kernels, source: name });
            } catch {
              continue; // a case this contract does not take (e.g. column offsets)
            }
            resolved++;
            for (const p of plan.passes) expect(NEW.has(p.kernel ?? ''), `${name} on ${d.name} [${c.name}] selects ${p.kernel}`).toBe(false);
          }
        }
      }
    }
    expect(resolved).toBeGreaterThan(50);
  });
});
