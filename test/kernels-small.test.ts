/**
 * Small f32 operations vs their CPU references through the op-test harness: scale (default, inplace), bias_add,
 * gelu (GeGLU), rmsnorm_qk, dequant.f32_rowwise (Q8_0), and the f16-reading cast.f16_to_f32 and gather.f16 (run here
 * with the shader-f16 requirement dropped: their WGSL reads packed u32 words, see test/helpers/emulate-f16.ts).
 * Grid-stride kernels are also run with a single workgroup, which must still cover every element.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { defaultRegistry } from '../src/registry/load.ts';
import type { ReferenceOp } from '../src/reference/ops.ts';
import { describeFailures, runOp, type HarnessOptions } from '../src/selftest/harness.ts';
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

const oneWorkgroup: HarnessOptions['dispatch'] = () => [1, 1, 1];

describe('small f32 operations', () => {
  it('scale.default, scale.inplace', () => expectAllPass('scale', ['scale.default', 'scale.inplace']));
  it('bias_add.default', () => expectAllPass('bias_add', ['bias_add.default']));
  it('gelu.gelu (gelu_pytorch_tanh GeGLU)', () => expectAllPass('gelu', ['gelu.gelu']));
  it('rmsnorm_qk.default', () => expectAllPass('rmsnorm_qk', ['rmsnorm_qk.default']));
  it('dequant.f32_rowwise (Q8_0)', () => expectAllPass('dequant', ['dequant.f32_rowwise']));

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
