/**
 * bias_act (bias-act.wgsl.jinja): an encoder's dense-layer bias and activation in place, against the f64 CPU
 * reference (src/reference/activations.ts: erf by its series): exact GELU (BERT), GELU tanh, ReLU and none, with and
 * without a bias, over sizes that leave a partial workgroup.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { biasActRef, erf, type Activation } from '../src/reference/activations.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('bias_act', () => {
  it('erf reference: known values', () => {
    expect(erf(0)).toBe(0);
    expect(erf(0.5)).toBeCloseTo(0.5204998778130465, 14);
    expect(erf(1)).toBeCloseTo(0.8427007929497149, 14);
    expect(erf(-2)).toBeCloseTo(-0.9953222650189527, 14);
    expect(erf(3.5)).toBeCloseTo(0.9999992569016276, 11);
  });

  it.for([
    ['gelu_erf', 7, 768, true],
    ['gelu_erf', 3, 100, false],
    ['gelu_tanh', 5, 257, true],
    ['relu', 2, 64, true],
    ['none', 4, 33, true],
  ] as const)('%s rows %i width %i bias %s', async ([act, rows, width, withBias]) => {
    const r = new Rng(`bias-act/${act}/${rows}/${width}`);
    const x = r.floats(rows * width, -4, 4);
    const bias = withBias ? r.floats(width, -0.5, 0.5) : new Float32Array(1);
    const { outputs } = await runContract(dev, opContract('bias_act'), {
      inputs: { x: { dtype: 'float32', shape: [rows, width], data: x }, bias: { dtype: 'float32', shape: [bias.length], data: bias } },
      attributes: { activation: act },
    });
    const want = biasActRef(x, width, withBias ? bias : undefined, act as Activation);
    expect(maxRelErr(outputs.x!.data as Float32Array, want)).toBeLessThan(2e-6);
  });
});
