import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ContractInputError, ContractPlanError, resolveContract, validateContract, type KernelLookup, type PlanBinding, type RegistryKernelInfo } from '../src/contracts/index.ts';
import { caught, h200, swiftshader } from './contracts-helpers.ts';

/** A registry lookup built straight from spec/kernel-registry.json (base bindings/uniforms + variant requires). */
const registry = JSON.parse(readFileSync(new URL('../spec/kernel-registry.json', import.meta.url), 'utf8')) as {
  operations: Record<string, { baseBindings: RegistryKernelInfo['bindings']; baseUniforms: RegistryKernelInfo['uniforms']; variants: Record<string, { wgsl: string; requires?: string[] }> }>;
};
const kernels: KernelLookup = (id) => {
  const [op, name] = id.split('.');
  const o = registry.operations[op!];
  const v = o?.variants[name!];
  return o && v ? { requires: v.requires ?? [], bindings: o.baseBindings, uniforms: o.baseUniforms, wgsl: v.wgsl } : undefined;
};

const pass = (kernel: string) => ({
  id: 'mm',
  name: 'MatMul.Main',
  kernel,
  uniforms: { M: 'M', N: 'N', K: 'K', alpha: 'attrs.alpha' },
  buffers: { A: 'a', B: 'b', C: 'c' },
  dispatch: { x: 'ceilDiv(N, 16)', y: 'ceilDiv(M, 16)' },
});
const matmul = validateContract(
  {
    name: 'MatMulTest',
    inputs: { a: { dtype: 'T', rank: 2 }, b: { dtype: 'T', rank: 2 } },
    outputs: { c: { dtype: 'T', shape: '[M, N]' } },
    attributes: { alpha: { default: 1 } },
    typeConstraints: { T: ['float32', 'float16'] },
    derive: { M: 'dim(shapes.a, 0)', K: 'dim(shapes.a, 1)', N: 'dim(shapes.b, 0)' },
    variants: [
      { id: 'f16', priority: 20, when: ['tensorDtypes.a == "float16"'], passes: [pass('matmul.f16')] },
      { id: 'q4_shared', priority: 10, passes: [pass('matmul.q4_fused_batched_multicol_shared')] },
    ],
  },
  'matmul-test.contract.json',
);

describe('registry-kernel passes (the DESIGN.md contract extension)', () => {
  const shapes = { a: [4, 32], b: [64, 32] };

  it('packs uniforms by the registry layout and orders bindings by registry index', () => {
    const p = resolveContract(matmul, { shapes, dtypes: { a: 'float16', b: 'float16' }, attributes: { alpha: 0.5 }, device: h200, kernels });
    expect(p.variant).toBe('f16');
    const mm = p.passes[0]!;
    expect(mm).toMatchObject({ kernel: 'matmul.f16', wgsl: 'matmul_f16.wgsl', dispatch: [4, 1, 1] });
    expect(p.outputs).toEqual([{ name: 'c', dtype: 'float16', shape: [4, 64] }]);
    expect(mm.bindings.map((b) => [b.index, b.name, b.kind, b.kind === 'uniform' ? b.size : b.access])).toEqual([
      [0, 'uniforms', 'uniform', 32],
      [1, 'A', 'tensor', 'read-only-storage'],
      [2, 'B', 'tensor', 'read-only-storage'],
      [3, 'C', 'tensor', 'storage'],
    ]);
    const u = mm.bindings[0] as Extract<PlanBinding, { kind: 'uniform' }>;
    expect(u.values).toEqual({ M: 4, N: 64, K: 32, alpha: 0.5 });
    expect([...new Uint32Array(u.data, 0, 3)]).toEqual([4, 64, 32]);
    expect(new Float32Array(u.data, 12, 1)[0]).toBe(0.5);
  });

  it("a registry kernel's required features reject the variant on devices without them", () => {
    const p = resolveContract(matmul, { shapes, dtypes: { a: 'float16', b: 'float16' }, device: swiftshader, kernels });
    expect(p.variant).toBe('q4_shared');
    expect(p.rejected).toEqual([{ variant: 'f16', priority: 20, kind: 'requires', reason: 'registry kernel matmul.f16 requires "shader-f16", which the device lacks', refs: [] }]);
  });

  it('errors: missing dtype for a multi-type constraint, missing lookup, missing uniform, unknown buffer slot', () => {
    expect(caught(() => resolveContract(matmul, { shapes, device: h200, kernels }), ContractInputError).message).toBe(
      'MatMulTest: input a: dtype not given and type constraint T allows float32, float16; pass one',
    );
    expect(caught(() => resolveContract(matmul, { shapes, dtypes: { a: 'float32', b: 'float32' }, device: h200 }), ContractPlanError).message).toContain(
      'pass mm: names registry kernel "matmul.q4_fused_batched_multicol_shared"; pass a registry lookup as options.kernels',
    );
    const noAlpha = validateContract({ ...matmul, variants: [{ id: 'v', priority: 1, passes: [{ ...pass('matmul.f16'), uniforms: { M: 'M', N: 'N', K: 'K' } }] }] });
    expect(caught(() => resolveContract(noAlpha, { shapes, dtypes: { a: 'float32', b: 'float32' }, device: h200, kernels }), ContractPlanError).message).toBe(
      'MatMulTest variant v: pass mm uniform uniforms.alpha: uniform field "alpha" (f32) has no value; add it to the pass\'s "uniforms"',
    );
    const badSlot = validateContract({ ...matmul, variants: [{ id: 'v', priority: 1, passes: [{ ...pass('matmul.f16'), buffers: { A: 'a', B: 'b', C: 'c', D: 'a' } }] }] });
    expect(caught(() => resolveContract(badSlot, { shapes, dtypes: { a: 'float32', b: 'float32' }, device: h200, kernels }), ContractPlanError).message).toContain(
      'pass mm buffers.D: kernel matmul.f16 has no binding "D"; its bindings: uniforms, A, B, C',
    );
  });

  it('an unknown registry kernel is a rejection', () => {
    const c = validateContract({ ...matmul, variants: [{ id: 'ghost', priority: 99, passes: [pass('matmul.nope')] }, matmul.variants[1]] });
    const p = resolveContract(c, { shapes, dtypes: { a: 'float32', b: 'float32' }, device: h200, kernels });
    expect(p.rejected[0]).toMatchObject({ variant: 'ghost', kind: 'error', reason: 'names registry kernel "matmul.nope", which the registry does not have' });
  });
});

describe('uniform struct packing (WGSL layout)', () => {
  it('u32/i32/f32 are 4 bytes, struct size rounds up to 16; bad values name the field', () => {
    const c = validateContract({
      name: 'U',
      inputs: { x: { dtype: 'float32' } },
      outputs: { y: { dtype: 'float32', shape: 'shapes.x' } },
      attributes: { v: { default: -3 } },
      bindings: { p: { name: 'params', struct: [{ name: 'a', type: 'u32', value: 'numel(shapes.x)' }, { name: 'b', type: 'i32', value: 'attrs.v' }, { name: 'c', type: 'f32', value: '0.25' }, { name: 'd', type: 'u32', value: 7 }, { name: 'e', type: 'u32', value: 'true' }] } },
      variants: [{ id: 'only', priority: 0, passes: [{ id: 'p0', shader: 'u.wgsl.jinja', bindings: ['p'], dispatch: { x: 1 } }] }],
    });
    const p = resolveContract(c, { shapes: { x: [2, 3] }, device: swiftshader });
    const u = p.passes[0]!.bindings[0] as Extract<PlanBinding, { kind: 'uniform' }>;
    expect(u.name).toBe('params');
    expect(u.fields.map((f) => f.offset)).toEqual([0, 4, 8, 12, 16]);
    expect(u.size).toBe(32);
    const view = new DataView(u.data);
    expect([view.getUint32(0, true), view.getInt32(4, true), view.getFloat32(8, true), view.getUint32(12, true), view.getUint32(16, true)]).toEqual([6, -3, 0.25, 7, 1]);
    const neg = () => resolveContract(c, { shapes: { x: [2, 3] }, attributes: { v: 2 ** 31 }, device: swiftshader });
    expect(caught(neg, ContractPlanError).message).toBe('U variant only: pass p0 uniform params.b: b (i32) must be an integer in [-2147483648, 2147483647], got 2147483648');
  });
});

describe('registry layouts with an aliased slot', () => {
  it('packing refuses two fields at one offset (the shipped lm_head_select_logits layout)', async () => {
    const { packByLayout, PackError } = await import('../src/contracts/index.ts');
    const layout = registry.operations.lm_head_select_logits!.baseUniforms!;
    const values = Object.fromEntries(layout.fields.filter((f) => !f.name.startsWith('_')).map((f) => [f.name, 1]));
    expect(() => packByLayout(layout, values)).toThrow(PackError);
    expect(() => packByLayout(layout, values)).toThrow(/"num_blocks_per_row" and "logit_softcap" share offset 20/);
  });
});
