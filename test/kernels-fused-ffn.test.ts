/**
 * fused_ffn kernels (fused gate/up projection + gated activation) vs the CPU reference (src/reference/fused-ffn.ts),
 * through the op-test harness and fused_ffn.contract.json: every case of src/selftest/cases-fused-ffn.ts on every
 * variant this device supports (SwiftShader: the f32-activation kernels over f32, packed f16 and Q4_K weights,
 * including the 16-lane-partition Q4_K kernel on 4-wide subgroups). Variants that need shader-f16 are reported skipped
 * with the reason (their f32 twins run in test/kernels-matmul-ffn-twins.test.ts); fused_ffn.gate_up_gelu_gated_tiled_f16
 * has no WGSL (its layout is not given by the registry).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('fused_ffn', () => {
  it('every variant passes its cases, or says why it cannot run here', async () => {
    const reps = await runOp(dev, 'fused_ffn');
    expect(describeFailures(reps)).toEqual([]);
    const f16 = dev.caps.features.has('shader-f16');
    for (const r of reps) {
      if (r.variant === 'fused_ffn.gate_up_gelu_gated_tiled_f16') {
        expect(r.status).toBe('no-wgsl');
        continue;
      }
      const needsF16 = /f16_native|f16a/.test(r.variant);
      if (needsF16 && !f16) {
        expect(r, r.variant).toMatchObject({ status: 'skipped', reason: expect.stringMatching(/shader-f16/) });
        continue;
      }
      expect(r.status, r.variant).toBe('ok');
      expect(r.cases.length, r.variant).toBeGreaterThanOrEqual(2);
      // silu and gelu_tanh both covered
      expect(r.cases.some((c) => /silu/.test(c.case)) && r.cases.some((c) => /gelu_tanh/.test(c.case)), r.variant).toBe(true);
    }
    expect(reps.filter((r) => r.status === 'ok').length).toBeGreaterThanOrEqual(f16 ? 12 : 8);
  });
});
