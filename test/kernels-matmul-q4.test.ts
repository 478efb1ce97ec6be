/**
 * matmul kernels with Q4_K weights vs the CPU reference (src/reference/matmul-quant.ts), through the op-test harness:
 * every case of src/selftest/cases-matmul-quant.ts on every Q4_K variant this device supports (SwiftShader: all four,
 * its subgroups have size 4). Guard regions, unwritten elements, NaN/Inf, max error and NMSE are the harness's checks.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { describeFailures, runOp } from '../src/selftest/harness.ts';
import { testDevice } from './helpers/device.ts';

const Q4_VARIANTS = ['matmul.q4_fused_gemv', 'matmul.q4_fused_multicol', 'matmul.q4_fused_batched', 'matmul.q4_fused_batched_multicol_shared', 'matmul.q4_fused_metal_simd16'];

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('matmul with Q4_K weights', () => {
  for (const id of Q4_VARIANTS) {
    it(id, async (ctx) => {
      const [rep] = await runOp(dev, 'matmul', { filter: (vid) => vid === id });
      expect(rep, `${id} is not in the registry`).toBeDefined();
      if (rep!.status === 'skipped') ctx.skip(`${id}: ${rep!.reason} (the GPU lane runs it)`);
      expect(describeFailures([rep!])).toEqual([]);
      expect(rep!.status).toBe('ok');
      // at least 5 shapes, including M > 1 and columns that are not a multiple of the workgroup tile
      expect(rep!.cases.length).toBeGreaterThanOrEqual(5);
      expect(rep!.cases.some((c) => /M1 /.test(c.case))).toBe(true);
      expect(rep!.cases.some((c) => !/M1 /.test(c.case))).toBe(true);
    });
  }
});
