/**
 * Small f32 operations vs their CPU references through the op-test harness: scale (default, inplace), bias_add,
 * gelu (GeGLU), rmsnorm_qk, layernorm, dequant.f32_rowwise (Q8_0), and the f16-reading cast.f16_to_f32 and gather.f16 (run here
 * with the shader-f16 requirement dropped: their WGSL reads packed u32 words, see test/helpers/emulate-f16.ts).
 * Grid-stride kernels are also run with a single workgroup, which must still cover every element. runContract runs op
 * contracts on host arrays with the shipped registry as its default lookup (outputs, and inputs written in place).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import type { ReferenceOp } from '../src/reference/ops.ts';
import { residualRef } from '../src/reference/residual.ts';
import { ropeLinearTables, ropeRef, type RopeUniforms } from '../src/reference/rope.ts';
import { describeFailures, runOp, type HarnessOptions } from '../src/selftest/harness.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';
import { registryWithoutF16 } from './helpers/emulate-f16.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

async function expectAllPass(op: ReferenceOp, ids: string[], opts: HarnessOptions = {}): Promise<void> {
  const reps = await runOp(dev, op, { ...opts, filter: (id) => ids.includes(id) });
  expect(reps.map((r) => r.variant).sort()).toEqual([...ids].sort());
  expect(describeFailures(reps)).toEqual([]);
  for (const r of reps) {
    expect(r.status, `${r.variant}: ${r.reason ?? ''}`).toBe('ok');
    expect(r.cases.length, r.variant).toBeGreaterThanOrEqual(5);
  }
}

const oneWorkgroup: HarnessOptions['dispatch'] = [1, 1, 1];

describe('small f32 operations', () => {
  it('scale.default, scale.inplace', () => expectAllPass('scale', ['scale.default', 'scale.inplace']));
  it('bias_add.default', () => expectAllPass('bias_add', ['bias_add.default']));
  it('gelu.gelu (gelu_pytorch_tanh GeGLU)', () => expectAllPass('gelu', ['gelu.gelu']));
  it('rmsnorm_qk.default', () => expectAllPass('rmsnorm_qk', ['rmsnorm_qk.default']));
  it('dequant.f32_rowwise (Q8_0)', () => expectAllPass('dequant', ['dequant.f32_rowwise']));
  it('layernorm.default (encoders; a row offset of 100 checks the two-pass variance)', () => expectAllPass('layernorm', ['layernorm.default']));

  it('grid-stride kernels cover everything from one workgroup', async () => {
    await expectAllPass('scale', ['scale.default', 'scale.inplace'], { dispatch: oneWorkgroup });
    await expectAllPass('bias_add', ['bias_add.default'], { dispatch: oneWorkgroup });
    await expectAllPass('gelu', ['gelu.gelu'], { dispatch: oneWorkgroup });
    await expectAllPass('dequant', ['dequant.f32_rowwise'], { dispatch: oneWorkgroup });
  });
});

describe('f16-reading operations (shader-f16 requirement dropped here; the GPU lane runs them as registered)', () => {
  const registry = registryWithoutF16(defaultRegistry());
  it('cast.f16_to_f32', () => expectAllPass('cast', ['cast.f16_to_f32'], { registry }));
  it('gather.f16', () => expectAllPass('gather', ['gather.f16'], { registry }));
});

describe('runContract with op contracts (registry-kernel passes resolve against the shipped registry by default)', () => {
  const maxDiff = (got: ArrayLike<number>, want: ArrayLike<number>) => Array.from(want, (w, i) => Math.abs(got[i]! - w)).reduce((a, b) => Math.max(a, b), 0);

  it('residual: the output comes back', async () => {
    const r = new Rng('runContract/residual');
    const [a, b] = [r.floats(1000), r.floats(1000)];
    const { outputs, plan } = await runContract(dev, opContract('residual'), {
      inputs: { a: { dtype: 'float32', shape: [1000], data: a }, b: { dtype: 'float32', shape: [1000], data: b } },
      attributes: { scale: 0.5 },
    });
    expect(plan.passes.map((p) => p.kernel)).toEqual(['residual.default']);
    expect(outputs.out!.shape).toEqual([1000]);
    expect(maxDiff(outputs.out!.data as Float32Array, residualRef(a, b, { size: 1000, scale: 0.5 }))).toBeLessThan(1e-6);
  });

  it('rope: an input written in place comes back', async () => {
    const u: RopeUniforms = { seq_len: 3, num_heads: 2, head_dim: 8, start_pos: 4, rope_base: 10000, rope_scale: 1, rotary_dim: 8, interleaved: 0, pair_span_dim: 0 };
    const { cos, sin } = ropeLinearTables(u, 7);
    const x = new Rng('runContract/rope').floats(3 * 2 * 8);
    const { outputs, plan } = await runContract(dev, opContract('rope'), {
      inputs: { x: { dtype: 'float32', shape: [3, 2, 8], data: x }, cos: { dtype: 'float32', shape: [7, 4], data: cos }, sin: { dtype: 'float32', shape: [7, 4], data: sin } },
      attributes: { start_pos: 4 },
    });
    expect(plan.passes.map((p) => p.kernel)).toEqual(['rope.default']);
    expect(Object.keys(outputs).sort()).toEqual(['cos', 'sin', 'x']); // rope.wgsl binds the tables read_write too
    expect(maxDiff(outputs.x!.data as Float32Array, ropeRef(x, u, 'tables', { cos, sin }))).toBeLessThan(1e-5);
    expect(Array.from(outputs.cos!.data as Float32Array)).toEqual(Array.from(cos));
  });
});
