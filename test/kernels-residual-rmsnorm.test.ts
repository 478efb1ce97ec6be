/**
 * residual_rmsnorm: the residual add that ends a sub-layer fused with the next RMS norm. Every variant (the fused
 * registry kernel residual_rmsnorm_pair.subgroup, and the two-pass paths) against the CPU references, on rows shorter
 * and longer than a workgroup.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { residualRef } from '../src/reference/residual.ts';
import { rmsnormRef } from '../src/reference/rmsnorm.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const maxAbs = (got: ArrayLike<number>, want: ArrayLike<number>) => Array.from(want, (w, i) => Math.abs(got[i]! - w)).reduce((a, b) => Math.max(a, b), 0);

describe.each([
  ['fused', 'off'],
  ['two_pass_cpu', 'on'],
  ['two_pass', 'off'],
] as const)('residual_rmsnorm %s', (variant, cpuMapping) => {
  it.each([
    [1, 64],
    [3, 300],
    [2, 2048],
  ])('rows=%i H=%i: the sum and its norm match the references', async (rows, H) => {
    if (variant === 'fused' && !dev.caps.features.has('subgroups')) {
      console.log(`skipped on this device: residual_rmsnorm_pair.subgroup requires subgroups (the GPU lane runs it)`);
      return;
    }
    const r = new Rng(`residual_rmsnorm/${variant}/${rows}x${H}`);
    const a = r.normals(rows * H, 2);
    const b = r.normals(rows * H);
    const weight = r.floats(H, 0.5, 1.5);
    const { outputs, plan } = await runContract(dev, opContract('residual_rmsnorm'), {
      inputs: { a: { dtype: 'float32', shape: [rows, H], data: a }, b: { dtype: 'float32', shape: [rows, H], data: b }, weight: { dtype: 'float32', shape: [H], data: weight } },
      attributes: { eps: 1e-5, output_scale: 1.25 },
      tunables: { cpuMapping },
      variant,
    });
    expect(plan.variant).toBe(variant);
    const sum = residualRef(a, b, { size: rows * H, scale: 1 });
    expect(maxAbs(outputs.sum!.data as Float32Array, sum)).toBeLessThan(1e-6);
    const want = rmsnormRef(sum, weight, undefined, { hidden_size: H, num_tokens: rows, eps: 1e-5, has_residual: 0, token_stride: 0, output_scale: 1.25 });
    expect(maxAbs(outputs.out!.data as Float32Array, want)).toBeLessThan(2e-5);
  });
});
