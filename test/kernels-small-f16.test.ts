/**
 * Kernels that write f16 (packed two per u32 word): cast.f32_to_f16, kv_cache_write.f32_to_f16, dequant.f16_rowwise
 * (Q8_0). Compared bit by bit with the CPU reference (src/reference/f16-ops.ts): exact, or one f16 ulp away where
 * WGSL lets pack2x16float pick either neighbour of an inexact value, or +-0 where the exact result is subnormal (a
 * device may flush f16 subnormals). Half-words and words outside the written range must keep their old bits, and a
 * guard region after the buffer must stay untouched.
 * They require shader-f16 by the registry: without it (SwiftShader) the registry run is skipped with the reason and
 * the same WGSL runs with the requirement dropped (it never enables f16, see test/helpers/emulate-f16.ts).
 * Each kernel is launched through its op contract (cast_to_f16, kv_cache_write and the model's kv_write,
 * dequant_q8_0_f16) with the test's own pre-filled buffers.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { f16ToF32 } from '../src/formats/f16.ts';
import { quantizeQ8_0 } from '../src/formats/quant/index.ts';
import { readBuffer, uploadBuffer } from '../src/gpu/buffers.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { defaultRegistry } from '../src/node/registry.ts';
import type { Registry } from '../src/registry/types.ts';
import { castF32ToF16Ref, dequantQ8_0RowwiseF16Ref, kvCacheWriteRef, packF16Words, unpackF16Words } from '../src/reference/f16-ops.ts';
import { planOp, runPlan, type PlanRequest } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';
import { registryWithoutF16 } from './helpers/emulate-f16.ts';

const GUARD_WORDS = 64;
const GUARD = 0x7fbadbad;
const reg = defaultRegistry();

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

/** Why `got` is not an acceptable f16 result for `want` (both bit patterns), or undefined. */
function f16Mismatch(got: number, want: number): string | undefined {
  if (got === want) return undefined;
  const sameSign = (got & 0x8000) === (want & 0x8000);
  if (sameSign && Math.abs((got & 0x7fff) - (want & 0x7fff)) === 1) return undefined; // either neighbour
  if ((want & 0x7c00) === 0 && (got & 0x7fff) === 0) return undefined; // subnormal flushed to +-0
  return `got ${got.toString(16)} (${f16ToF32(got)}), want ${want.toString(16)} (${f16ToF32(want)})`;
}

/** Compare f16 halves [0, n) of `words` with `want`; halves n.. of the last word and the guard must hold `before`. */
function checkF16Words(words: Uint32Array, before: Uint32Array, want: Uint16Array, label: string): void {
  const got = unpackF16Words(words, want.length);
  const bad: string[] = [];
  for (let i = 0; i < want.length && bad.length < 5; i++) {
    const m = f16Mismatch(got[i]!, want[i]!);
    if (m) bad.push(`[${i}] ${m}`);
  }
  expect(bad, label).toEqual([]);
  const n = want.length;
  if (n % 2 === 1) expect(words[n >> 1]! >>> 16, `${label}: high half after the last element`).toBe(before[n >> 1]! >>> 16);
  for (let w = Math.ceil(n / 2); w < words.length; w++) {
    if (words[w] !== before[w]) throw new Error(`${label}: word ${w} past the output was overwritten`);
  }
}

/**
 * Run op contract `contract` on `buffers` (contents by contract tensor name, bound whole: outputs include their guard
 * words) and read back the `writable` ones. The plan must run `kernel`.
 */
async function run(
  contract: string,
  kernel: string,
  req: Omit<PlanRequest, 'registry'>,
  registry: Registry,
  buffers: Record<string, Uint32Array | Float32Array>,
  writable: string[],
): Promise<Record<string, Uint32Array>> {
  const plan = planOp(dev, contract, { ...req, registry });
  expect(plan.passes.map((p) => p.kernel)).toEqual([kernel]);
  const bufs: Record<string, GPUBuffer> = {};
  for (const [name, data] of Object.entries(buffers)) bufs[name] = uploadBuffer(dev.device, data, `${kernel}.${name}`);
  await runPlan(dev, plan, bufs, { registry });
  const out: Record<string, Uint32Array> = {};
  for (const name of writable) out[name] = new Uint32Array(await readBuffer(dev.device, bufs[name]!, buffers[name]!.byteLength));
  for (const b of Object.values(bufs)) b.destroy();
  return out;
}

/** Output words of n f16 values plus the guard, filled with a recognizable pattern. */
function outputWords(n: number): Uint32Array {
  const w = new Uint32Array(Math.ceil(n / 2) + GUARD_WORDS).fill(GUARD);
  return w;
}

const hasF16 = () => dev.caps.features.has('shader-f16');
const MODES = [
  { mode: 'registry', registry: reg },
  { mode: 'shader-f16 requirement dropped', registry: registryWithoutF16(reg) },
] as const;

describe.each(MODES)('f16-writing kernels ($mode)', ({ mode, registry }) => {
  const skipReason = (ctx: { skip: (note?: string) => never }) => {
    if (mode === 'registry' && !hasF16()) ctx.skip('this device has no shader-f16: the GPU lane runs the registry variants');
  };

  it('cast.f32_to_f16', async (ctx) => {
    skipReason(ctx);
    for (const size of [1, 2, 3, 255, 257, 1001]) {
      const r = new Rng(`cast.f32_to_f16/${size}`);
      const x = r.normals(size, 8);
      const specials = [0, -0, 65504, -65504, 1e6, -1e6, 65519, 1e-5, -3e-7, 0.1];
      for (let i = 0; i < Math.min(size, specials.length); i++) x[i] = specials[i]!;
      const before = outputWords(size);
      const { out: output } = await run('cast_to_f16', 'cast.f32_to_f16', { shapes: { x: [size] } }, registry, { x, out: before.slice() }, ['out']);
      checkF16Words(output!, before, castF32ToF16Ref(x, { size }), `size ${size}`);
    }
  });

  it('kv_cache_write.f32_to_f16: odd and even offsets, boundary half-words preserved', async (ctx) => {
    skipReason(ctx);
    const cacheLen = 64;
    for (const [src, dst, count] of [[0, 0, 64], [3, 5, 10], [1, 4, 7], [0, 7, 1], [10, 0, 0], [2, 1, 62], [5, 6, 1], [0, 0, 63]] as const) {
      const r = new Rng(`kv/${src}/${dst}/${count}`);
      const k = r.normals(src + count + 3, 4);
      const vv = r.normals(src + count + 3, 4);
      const cacheBits = new Uint16Array(cacheLen).map(() => r.int(0x7c00));
      const before = new Uint32Array(cacheLen / 2 + GUARD_WORDS).fill(GUARD);
      before.set(packF16Words(cacheBits));
      const u = { src_offset: src, dst_offset: dst, count };
      const req = { shapes: { k: [k.length], v: [vv.length], kCache: [cacheLen], vCache: [cacheLen] }, attributes: u };
      const out = await run('kv_cache_write', 'kv_cache_write.f32_to_f16', req, registry, { k, v: vv, kCache: before.slice(), vCache: before.slice() }, ['kCache', 'vCache']);
      checkF16Words(out.kCache!, before, kvCacheWriteRef(k, cacheBits, u), `K src ${src} dst ${dst} count ${count}`);
      checkF16Words(out.vCache!, before, kvCacheWriteRef(vv, cacheBits, u), `V src ${src} dst ${dst} count ${count}`);
    }
  });

  it('kv_cache_write.f32_to_f16 through the model\'s kv_write contract: tokens appended at start_pos', async (ctx) => {
    skipReason(ctx);
    const [tokens, heads, D, capacity] = [3, 2, 5, 8];
    const row = heads * D;
    for (const startPos of [0, 3, 5]) {
      const r = new Rng(`kv_write/${startPos}`);
      const k = r.normals(tokens * row, 4);
      const vv = r.normals(tokens * row, 4);
      const cacheBits = new Uint16Array(capacity * row).map(() => r.int(0x7c00));
      const before = new Uint32Array((capacity * row) / 2 + GUARD_WORDS).fill(GUARD);
      before.set(packF16Words(cacheBits));
      const req = { shapes: { k: [tokens, heads, D], v: [tokens, heads, D], kCache: [capacity, heads, D], vCache: [capacity, heads, D] }, dtypes: { kCache: 'float16', vCache: 'float16' }, attributes: { start_pos: startPos } };
      const out = await run('kv_write', 'kv_cache_write.f32_to_f16', req, registry, { k, v: vv, kCache: before.slice(), vCache: before.slice() }, ['kCache', 'vCache']);
      const u = { src_offset: 0, dst_offset: startPos * row, count: tokens * row };
      checkF16Words(out.kCache!, before, kvCacheWriteRef(k, cacheBits, u), `K at start_pos ${startPos}`);
      checkF16Words(out.vCache!, before, kvCacheWriteRef(vv, cacheBits, u), `V at start_pos ${startPos}`);
    }
  });

  it('dequant.f16_rowwise (Q8_0)', async (ctx) => {
    skipReason(ctx);
    for (const [rows, K] of [[1, 32], [3, 33], [7, 1000], [2, 31], [5, 64], [1, 1]] as const) {
      const bpr = Math.ceil(K / 32);
      const r = new Rng(`dequant.f16_rowwise/${rows}/${K}`);
      const bytes = quantizeQ8_0(r.normals(rows * bpr * 32, 2));
      const q = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
      q.set(bytes);
      const u = { num_blocks: rows * bpr, blocks_per_row: bpr, K, rows };
      const before = outputWords(rows * K);
      const { out: output } = await run('dequant_q8_0_f16', 'dequant.f16_rowwise', { shapes: { q: [rows, K] } }, registry, { q: new Uint32Array(q.buffer), out: before.slice() }, ['out']);
      checkF16Words(output!, before, dequantQ8_0RowwiseF16Ref(bytes, u), `rows ${rows} K ${K}`);
    }
  });
});
