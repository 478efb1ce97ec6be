/**
 * matmul.f32's M <= 4 GEMV mapping under both dispatch widths the linear contract uses (8 or 64 columns per
 * workgroup): the contract variants f32_gemv_cols8 and f32_gemv_cols64 pin each width (the model's f32 variant picks
 * one by device), launched through the contract like every other kernel.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { readFloat32, uploadBuffer, writeBuffer } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { planOp, runPlan } from '../src/selftest/launch.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('matmul.f32 GEMV mapping (M <= 4)', () => {
  it.each([
    [1, 1, 1],
    [1, 300, 257],
    [2, 65, 64],
    [3, 1000, 33],
    [4, 17, 1024],
  ])('M=%i N=%i K=%i with 8 and 64 columns per workgroup', async (M, N, K) => {
    let s = 7;
    const rnd = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32 - 0.5);
    const a = Float32Array.from({ length: M * K }, rnd);
    const w = Float32Array.from({ length: N * K }, rnd);
    const u = { M, N, K, alpha: 0.5 };
    const want = matmulF32Reference(a, w, u);
    for (const [variant, cols] of [['f32_gemv_cols8', 8], ['f32_gemv_cols64', 64]] as const) {
      const plan = planOp(dev, 'linear', { shapes: { x: [M, K], w: [N, K] }, dtypes: { w: 'float32' }, attributes: { alpha: 0.5 }, variant });
      expect(plan.passes.map((p) => p.kernel)).toEqual(['matmul.f32']);
      const c = dev.buffers.acquire(M * N * 4 + 1024, undefined, 'C');
      const guard = new Float32Array(c.size / 4).fill(1234.5);
      writeBuffer(dev.device, c, guard);
      const x = uploadBuffer(dev.device, a, 'A');
      const wb = uploadBuffer(dev.device, w, 'B');
      await runPlan(dev, plan, { x, w: wb, y: c });
      const got = await readFloat32(dev.device, c, c.size / 4);
      let err = 0;
      for (let i = 0; i < M * N; i++) err = Math.max(err, Math.abs(got[i]! - want[i]!));
      expect(err, `${cols} columns per workgroup`).toBeLessThan(1e-4 * Math.max(1, Math.sqrt(K)));
      for (let i = M * N; i < got.length; i++) expect(got[i]).toBe(1234.5);
      x.destroy();
      wb.destroy();
      dev.buffers.release(c);
    }
  });
});
