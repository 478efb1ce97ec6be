/**
 * count_nonfinite (the decode step's NaN/Inf check on the logits row) against a count on the host: NaN, +Inf and -Inf
 * at the first, last and scattered positions, lengths around the workgroup's unrolled stride, and the word it writes
 * (every other word of the state buffer untouched).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('count_nonfinite', () => {
  it.each([1, 7, 4096, 4097, 16 * 1024 + 3, 70000])('length %i', async (n) => {
    const r = new Rng(`nonfinite/${n}`);
    const x = r.floats(n);
    const bad = new Set([0, n - 1, Math.floor(n / 3), Math.floor((2 * n) / 3) + 1].filter((i) => i < n));
    const specials = [NaN, Infinity, -Infinity];
    [...bad].forEach((i, j) => (x[i] = specials[j % 3]!));
    const flags = Uint32Array.from([11, 22, 33, 44, 55]);
    const { outputs } = await runContract(dev, opContract('count_nonfinite'), {
      inputs: { x: { dtype: 'float32', shape: [n], data: x }, flags: { dtype: 'uint32', shape: [5], data: flags } },
      attributes: { word: 3 },
    });
    expect(Array.from(outputs.flags!.data as Uint32Array)).toEqual([11, 22, 33, bad.size, 55]);
  });

  it('writes 0 when every value is finite (the word is reset every run)', async () => {
    const x = new Rng('nonfinite/finite').floats(5000);
    x[17] = 3.4e38;
    const { outputs } = await runContract(dev, opContract('count_nonfinite'), {
      inputs: { x: { dtype: 'float32', shape: [5000], data: x }, flags: { dtype: 'uint32', shape: [4], data: Uint32Array.from([9, 9, 9, 9]) } },
      attributes: { word: 3 },
    });
    expect(Array.from(outputs.flags!.data as Uint32Array)).toEqual([9, 9, 9, 0]);
  });
});
