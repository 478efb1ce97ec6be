/**
 * matmul kernels with f16 weights and f32 activations (matmul.f16w_f32a, f16w_f32a_tiled, gemv_subgroup,
 * gemv_subgroup_vec4, gemv_subgroup_multicol) vs the CPU reference, through the op-test harness.
 * They need shader-f16 by the registry, so on a device without it (SwiftShader) the registry run reports them
 * skipped (the GPU lane runs them). Their WGSL reads f16 as packed u32 words (unpack2x16float) and never enables f16,
 * so they are also run here with the requirement dropped (test/helpers/emulate-f16.ts): the same WGSL, cases and
 * checks, on SwiftShader's subgroups of 4.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { testDevice } from './helpers/device.ts';
import { registryWithoutF16 } from './helpers/emulate-f16.ts';

const F16W_VARIANTS = ['matmul.f16w_f32a', 'matmul.f16w_f32a_tiled', 'matmul.gemv_subgroup', 'matmul.gemv_subgroup_vec4', 'matmul.gemv_subgroup_multicol'];
const isF16W = (id: string) => F16W_VARIANTS.includes(id);

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('matmul with f16 weights', () => {
  it('registry variants on this device (skipped without shader-f16, with the reason)', async (ctx) => {
    const reps = await runOp(dev, 'matmul', { filter: isF16W });
    expect(reps.map((r) => r.variant).sort()).toEqual([...F16W_VARIANTS].sort());
    if (!dev.caps.features.has('shader-f16')) {
      for (const r of reps) expect(r, r.variant).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/shader-f16/) });
      ctx.skip('this device has no shader-f16: the GPU lane runs these variants (they are emulated below)');
    }
    expect(describeFailures(reps)).toEqual([]);
    for (const r of reps) expect(r.status, r.variant).toBe('ok');
  });

  it('the same WGSL with the shader-f16 requirement dropped, every case', async () => {
    const reps = await runOp(dev, 'matmul', { filter: isF16W, registry: registryWithoutF16(defaultRegistry()) });
    expect(describeFailures(reps)).toEqual([]);
    for (const r of reps) {
      expect(r.status, `${r.variant}: ${r.reason ?? ''}`).toBe('ok');
      expect(r.cases.length, r.variant).toBeGreaterThanOrEqual(5);
    }
  });
});
