/**
 * attention_oproj (attention-oproj.wgsl.jinja) against the CPU reference: one token's attention over a short cache
 * (f32 and f16 caches, 1 to 4 rounds of 64 keys, a GQA group of 4), its pairs' outputs rounded to int8 in blocks of 32
 * as o_proj's prologue rounds them, times the Q4_K o_proj weight, added into y; then the norm handoff of h = y (runs of
 * 16 of h * ng rounded to int8, their scales, int8 sums and sums of h^2) against the same rounding of the GPU's own h.
 * cpuMapping is off, so SwiftShader runs it too.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract, type HostTensor } from '../src/contracts/run.ts';
import { dequantizeQ4_K, f16BytesToF32, f32ToF16Bytes, quantizeQ4_K } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { quantizeActivationsQ8, roundActivationsQ8 } from '../src/reference/activations-q8.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const D = 128;

/** Attention of one query row per head over keys 0 .. n - 1 (f64 softmax), [heads * D]. */
function attentionRef(q: Float32Array, k: Float32Array, v: Float32Array, heads: number, kvHeads: number, n: number, scale: number): Float32Array {
  const out = new Float32Array(heads * D);
  const group = heads / kvHeads;
  for (let h = 0; h < heads; h++) {
    const kv = Math.floor(h / group);
    const s = new Float64Array(n);
    for (let t = 0; t < n; t++) {
      let d = 0;
      for (let e = 0; e < D; e++) d += q[h * D + e]! * k[(t * kvHeads + kv) * D + e]!;
      s[t] = d * scale;
    }
    const m = Math.max(...s);
    const p = s.map((x) => Math.exp(x - m));
    const z = p.reduce((a, b) => a + b, 0);
    for (let e = 0; e < D; e++) {
      let acc = 0;
      for (let t = 0; t < n; t++) acc += (p[t]! / z) * v[(t * kvHeads + kv) * D + e]!;
      out[h * D + e] = acc;
    }
  }
  return out;
}

describe('attention_oproj vs the CPU reference', () => {
  it.each([
    ['float32', 64, 37, 8, 2, 512, 1],
    ['float16', 200, 200, 8, 2, 512, 1],
    ['float16', 256, 129, 4, 1, 256, 1],
    ['float32', 128, 1, 8, 2, 768, 1],
    ['float16', 160, 100, 8, 2, 1024, 2], // 2 rows a lane: 512 rows a workgroup
  ] as const)('%s cache of %i positions, kv_len %i, %i heads on %i kv heads, %i rows, %s row(s) a lane', async (kvDtype, capacity, n, heads, kvHeads, rows, rowsPerLane = 1) => {
    const r = new Rng(`attention_oproj/${kvDtype}/${capacity}/${n}/${heads}/${rows}`);
    const K = heads * D;
    const q = r.floats(heads * D);
    const kf = r.floats(capacity * kvHeads * D);
    const vf = r.floats(capacity * kvHeads * D);
    const cache = (x: Float32Array): { data: Float32Array | Uint16Array; ref: Float32Array } => {
      if (kvDtype === 'float32') return { data: x, ref: x };
      const b = f32ToF16Bytes(x);
      return { data: new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2), ref: f16BytesToF32(b) };
    };
    const kc = cache(kf);
    const vc = cache(vf);
    const wBytes = quantizeQ4_K(r.floats(rows * K));
    const y0 = r.floats(rows);
    const ng = r.floats(rows).map((x) => 1 + x);
    const sync = new Uint32Array(16 + rows / 256);
    sync[0] = 7; // a word before the call's counters: left alone
    const inputs: Record<string, HostTensor> = {
      q: { dtype: 'float32', shape: [1, heads, D], data: q },
      k: { dtype: kvDtype, shape: [capacity, kvHeads, D], data: kc.data },
      v: { dtype: kvDtype, shape: [capacity, kvHeads, D], data: vc.data },
      w: { dtype: 'q4_k', shape: [rows, K], data: wBytes },
      y: { dtype: 'float32', shape: [1, rows], data: y0 },
      ng: { dtype: 'float32', shape: [rows], data: ng },
      nq: { dtype: 'uint32', shape: [1, rows / 4], data: new Uint32Array(rows / 4) },
      nm: { dtype: 'float32', shape: [1, (3 * rows) / 16], data: new Float32Array((3 * rows) / 16) },
      sync: { dtype: 'uint32', shape: [sync.length], data: sync },
    };
    const { outputs, plan } = await runContract(dev, opContract('attention_oproj'), { inputs, attributes: { kv_len: n, sync_base: 16 }, tunables: { cpuMapping: 'off', attnOproj: 'on', oprojRowsPerLane: rowsPerLane } });
    expect(plan.variant).toBe('pairs');
    expect(plan.passes[0]!.dispatch[0]).toBe((heads / 2) * (rows / (256 * rowsPerLane)));
    // blocks of 32 outputs by subgroupMax where subgroups are exactly 32 wide (the H200), else through workgroup memory
    const info = dev.caps.adapterInfo;
    expect(plan.derived.sg32).toBe(info.subgroupMinSize === 32 && info.subgroupMaxSize === 32);
    const att = attentionRef(q, kc.ref, vc.ref, heads, kvHeads, n, 1 / Math.sqrt(D));
    const want = matmulF32Reference(roundActivationsQ8(att), dequantizeQ4_K(wBytes, rows * K), { M: 1, N: rows, K, alpha: 1 }).map((x, i) => x + y0[i]!);
    const h = outputs.y!.data as Float32Array;
    // f32 sums in another order; an activation's int8 rounding may flip by one step (2^-8 of its block's maximum)
    expect(maxRelErr(h, want)).toBeLessThan(2e-3);
    // the handoff of the GPU's own h: runs of 16 of h * ng rounded as the shader rounds them
    const v = new Float32Array(rows).map((_, i) => Math.fround(h[i]! * ng[i]!));
    const { q: hq, d } = quantizeActivationsQ8(v, 16);
    const nq = new Int8Array((outputs.nq!.data as Uint32Array).buffer);
    const nm = outputs.nm!.data as Float32Array;
    const runs = rows / 16;
    // the scale max|v| / 127: a GPU's f32 division may differ from the correctly rounded one in the last place, and
    // so a value on a rounding boundary may land one step off
    expect(maxRelErr(nm.subarray(0, runs), d)).toBeLessThan(1e-6);
    const off = Array.from(nq).filter((x, i) => x !== hq[i]);
    expect(Array.from(nq).every((x, i) => Math.abs(x - hq[i]!) <= 1)).toBe(true);
    expect(off.length).toBeLessThan(rows / 100 + 1);
    for (let j = 0; j < runs; j++) {
      let sum = 0;
      let ss = 0;
      for (let e = 0; e < 16; e++) {
        sum += nq[16 * j + e]!;
        ss += h[16 * j + e]! ** 2;
      }
      expect(nm[runs + j]).toBe(sum);
      expect(Math.abs(nm[2 * runs + j]! - ss)).toBeLessThan(1e-5 * ss + 1e-30);
    }
    // the call's counters are back at zero; the word before them untouched
    expect(Array.from(outputs.sync!.data as Uint32Array)).toEqual([7, ...new Array(15 + rows / 256).fill(0)]);
  });

  it('refuses what it cannot run, naming the reason', async () => {
    const plan = (capacity: number, heads: number, kvHeads: number, attrs: Record<string, number> = {}) => () =>
      runContract(dev, opContract('attention_oproj'), {
        inputs: {
          q: { dtype: 'float32', shape: [1, heads, D], data: new Float32Array(heads * D) },
          k: { dtype: 'float32', shape: [capacity, kvHeads, D], data: new Float32Array(capacity * kvHeads * D) },
          v: { dtype: 'float32', shape: [capacity, kvHeads, D], data: new Float32Array(capacity * kvHeads * D) },
          w: { dtype: 'q4_k', shape: [256, heads * D], data: new Uint8Array(256 * (heads / 2) * 144) },
          y: { dtype: 'float32', shape: [1, 256], data: new Float32Array(256) },
          ng: { dtype: 'float32', shape: [256], data: new Float32Array(256) },
          nq: { dtype: 'uint32', shape: [1, 64], data: new Uint32Array(64) },
          nm: { dtype: 'float32', shape: [1, 48], data: new Float32Array(48) },
          sync: { dtype: 'uint32', shape: [1], data: new Uint32Array(1) },
        },
        attributes: { kv_len: 1, ...attrs },
        tunables: { cpuMapping: 'off', attnOproj: 'on' },
      });
    await expect(plan(300, 4, 1)()).rejects.toThrow(/shortOk/);
    await expect(plan(64, 4, 4)()).rejects.toThrow(/shapeOk/); // a group of 1: a pair spans two kv heads
    await expect(plan(64, 4, 1, { softcap: 30 })()).rejects.toThrow(/attrsOk/);
    await expect(plan(64, 4, 1, { sync_base: 1 })()).rejects.toThrow(/syncOk/);
  });
});
