/**
 * rope_kv (rope of q and k, keys and values written into the KV cache, one dispatch) against a host computation
 * from the same cos/sin tables: both pair layouts, partial rotary dims, f32 and f16 caches, one and several tokens
 * at a start position; cache rows outside the written positions and the input qk stay untouched.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import { f16BytesToF32, f32ToF16Bytes } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

function rope(x: Float32Array, base: number, D: number, rot: number, interleaved: boolean, cos: Float32Array, sin: Float32Array, pos: number): number[] {
  const half = rot / 2;
  const out: number[] = [];
  for (let e = 0; e < D; e++) {
    const xe = x[base + e]!;
    if (e >= rot) {
      out.push(xe);
      continue;
    }
    const p = interleaved ? e >> 1 : e % half;
    const c = cos[pos * half + p]!;
    const s = sin[pos * half + p]!;
    const first = interleaved ? e % 2 === 0 : e < half;
    const partner = interleaved ? (first ? e + 1 : e - 1) : first ? e + half : e - half;
    out.push(first ? xe * c - x[base + partner]! * s : x[base + partner]! * s + xe * c);
  }
  return out;
}

describe('rope_kv', () => {
  it.each([
    // T, qHeads, kvHeads, D, rotary, interleaved, cache, start
    [1, 4, 2, 64, 64, 0, 'float32', 5],
    [1, 4, 2, 64, 64, 1, 'float16', 0],
    [3, 2, 2, 32, 16, 0, 'float16', 7],
    [2, 6, 3, 16, 8, 1, 'float32', 1],
  ] as const)('T=%i q=%i kv=%i D=%i rotary=%i interleaved=%i %s cache at %i', async (T, QH, KVH, D, rot, il, cache, start) => {
    const r = new Rng(`rope_kv/${T}/${QH}/${D}/${rot}/${il}/${cache}`);
    const cap = 12;
    const positions = 16;
    const qk = r.floats(T * (QH + KVH) * D);
    const v = r.floats(T * KVH * D);
    const cos = r.floats(positions * (rot / 2));
    const sin = r.floats(positions * (rot / 2));
    const init = r.floats(cap * KVH * D);
    const cacheData = () => (cache === 'float16' ? new Uint16Array(f32ToF16Bytes(init).buffer) : init.slice());
    const { outputs } = await runContract(dev, opContract('rope_kv'), {
      inputs: {
        qk: { dtype: 'float32', shape: [T, QH + KVH, D], data: qk },
        v: { dtype: 'float32', shape: [T, KVH, D], data: v },
        cos: { dtype: 'float32', shape: [positions, rot / 2], data: cos },
        sin: { dtype: 'float32', shape: [positions, rot / 2], data: sin },
        kCache: { dtype: cache, shape: [cap, KVH, D], data: cacheData() },
        vCache: { dtype: cache, shape: [cap, KVH, D], data: cacheData() },
      },
      attributes: { start_pos: start, interleaved: il },
    });
    const asF32 = (t: { data: ArrayBufferView }) => (cache === 'float16' ? f16BytesToF32(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)) : (t.data as Float32Array));
    const round = (x: number) => (cache === 'float16' ? f16BytesToF32(f32ToF16Bytes([x]))[0]! : x);
    const wantQ: number[] = [];
    const wantK = Array.from(asF32({ data: cacheData() }));
    const wantV = wantK.slice();
    for (let t = 0; t < T; t++) {
      const pos = start + t;
      for (let h = 0; h < QH + KVH; h++) {
        const out = rope(qk, (t * (QH + KVH) + h) * D, D, rot, il === 1, cos, sin, pos);
        if (h < QH) wantQ.push(...out);
        else out.forEach((x, e) => (wantK[(pos * KVH + h - QH) * D + e] = round(x)));
      }
      for (let j = 0; j < KVH; j++) for (let e = 0; e < D; e++) wantV[(pos * KVH + j) * D + e] = round(v[(t * KVH + j) * D + e]!);
    }
    const close = (got: ArrayLike<number>, want: number[], what: string) => {
      expect(got.length, what).toBe(want.length);
      let d = 0;
      for (let i = 0; i < want.length; i++) d = Math.max(d, Math.abs(got[i]! - want[i]!));
      // f32: the same products in the same order (FMA contraction may differ); f16: one rounding step apart at most
      expect(d, what).toBeLessThan(cache === 'float16' && what !== 'q' ? 2e-3 : 1e-6);
    };
    close(outputs.q!.data as Float32Array, wantQ, 'q');
    close(asF32(outputs.kCache!), wantK, 'kCache');
    close(asF32(outputs.vCache!), wantV, 'vCache');
    expect(Array.from((outputs.qk?.data as Float32Array | undefined) ?? qk)).toEqual(Array.from(qk));
  });
});
