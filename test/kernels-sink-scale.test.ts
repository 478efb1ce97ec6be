/**
 * sink_scale (sink-scale.wgsl.jinja): gpt-oss attention sinks applied after attention, against a direct CPU
 * computation: out[t, h] *= 1 / (1 + exp(sink[h] - LSE over the keys query t sees)); prefill from 0, decode steps at a
 * later position, sliding windows, GQA; the f16 KV cache variant where the device has shader-f16 (GPU lane).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import { f16BytesToF32, f32ToF16Bytes } from '../src/formats/f16.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

function expected(q: Float32Array, k: Float32Array, out: Float32Array, sinks: Float32Array, c: { T: number; H: number; KV: number; D: number; start: number; window: number }): Float32Array {
  const y = out.slice();
  const scale = 1 / Math.sqrt(c.D);
  const kvLen = c.start + c.T;
  for (let t = 0; t < c.T; t++) {
    const p = c.start + t;
    for (let h = 0; h < c.H; h++) {
      const kvh = Math.floor(h / (c.H / c.KV));
      const lo = c.window > 0 ? Math.max(0, p - c.window + 1) : 0;
      const s: number[] = [];
      for (let j = lo; j <= Math.min(p, kvLen - 1); j++) {
        let d = 0;
        for (let i = 0; i < c.D; i++) d += q[(t * c.H + h) * c.D + i]! * k[(j * c.KV + kvh) * c.D + i]!;
        s.push(d * scale);
      }
      const m = Math.max(...s);
      const lse = m + Math.log(s.reduce((a, v) => a + Math.exp(v - m), 0));
      const f = 1 / (1 + Math.exp(sinks[h]! - lse));
      for (let i = 0; i < c.D; i++) y[(t * c.H + h) * c.D + i]! *= f;
    }
  }
  return y;
}

describe('sink_scale', () => {
  it.for([
    { T: 5, H: 4, KV: 4, D: 16, start: 0, window: 0, cap: 8 },
    { T: 1, H: 4, KV: 2, D: 32, start: 9, window: 4, cap: 16 },
    { T: 3, H: 8, KV: 2, D: 64, start: 2, window: 3, cap: 8 },
    { T: 70, H: 2, KV: 1, D: 8, start: 0, window: 0, cap: 70 },
  ])('T=$T heads $H/$KV D=$D start $start window $window', async (c) => {
    for (const kvDtype of ['float32', 'float16'] as const) {
      if (kvDtype === 'float16' && !dev.caps.features.has('shader-f16')) {
        console.log(`f16 KV skipped on ${dev.caps.adapterInfo.vendor} ${dev.caps.adapterInfo.architecture}: needs shader-f16 (the GPU lane runs it)`);
        continue;
      }
      const r = new Rng(`sink-scale/${JSON.stringify(c)}`);
      const q = r.floats(c.T * c.H * c.D, -1, 1);
      let k = r.floats(c.cap * c.KV * c.D, -1, 1);
      const kBytes = kvDtype === 'float16' ? f32ToF16Bytes(k) : new Uint8Array(k.buffer);
      if (kvDtype === 'float16') k = f16BytesToF32(kBytes);
      const out = r.floats(c.T * c.H * c.D, -2, 2);
      const sinks = r.floats(c.H, -2, 2);
      const { outputs, plan } = await runContract(dev, opContract('sink_scale'), {
        inputs: {
          q: { dtype: 'float32', shape: [c.T, c.H, c.D], data: q },
          k: { dtype: kvDtype, shape: [c.cap, c.KV, c.D], data: kvDtype === 'float16' ? kBytes : k },
          sinks: { dtype: 'float32', shape: [c.H], data: sinks },
          out: { dtype: 'float32', shape: [c.T, c.H, c.D], data: out },
        } as never,
        attributes: { start_pos: c.start, kv_len: c.start + c.T, sliding_window: c.window },
      });
      expect(plan.variant).toBe(kvDtype === 'float16' ? 'f16kv' : 'f32kv');
      const got = outputs.out!.data as Float32Array;
      const want = expected(q, k, out, sinks, c);
      let d = 0;
      for (let i = 0; i < want.length; i++) d = Math.max(d, Math.abs(got[i]! - want[i]!));
      expect(d).toBeLessThan(1e-5);
      // the sinks change the output (factor well below 1 somewhere)
      let changed = 0;
      for (let i = 0; i < want.length; i++) changed = Math.max(changed, Math.abs(want[i]! - out[i]!));
      expect(changed).toBeGreaterThan(0.1);
    }
  });
});
