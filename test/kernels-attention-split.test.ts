/**
 * Decode attention split over the KV length (attention-split.wgsl.jinja, flash-decoding: each part of the key range
 * scores the query heads of one KV head with an online softmax over tiles of 16 to 128 keys, each tile's loads issued at
 * its start, then a combine pass) against the CPU reference: GQA groups of 1 to 8 heads, f32 and f16 caches (f16 read
 * as u32 words, no shader-f16 needed), softcap, a sliding window, 1 to 3 query tokens, parts of one key and parts of
 * several tiles, K rows scored whole by one invocation or in shares of 2 to 8 (splitLoads), a key's shares on
 * consecutive invocations (splitKOrder shares, the default) or not (keys); the combine with its part loads in one round or
 * in several; decode_split_lanes / decode_short_lanes (attention-split-lanes.wgsl.jinja, a subgroup per step of keys) at
 * the adapter's subgroup size.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract } from '../src/contracts/run.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { attentionRef, attentionUniforms } from '../src/reference/attention.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { attentionCase } from './helpers/attention-inputs.ts';
import { expectQ8Activations } from './helpers/q8.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

/** The int8 outputs for o_proj (qa, da, rs) of T rows of n values, filled with values the kernel must overwrite. */
function staleQ8(T: number, n: number) {
  const stale = (len: number) => new Float32Array(len).fill(NaN);
  return {
    qa: { dtype: 'uint32', shape: [T, n / 4], data: new Uint32Array((T * n) / 4).fill(0xdeadbeef) },
    da: { dtype: 'float32', shape: [T, n / 32], data: stale((T * n) / 32) },
    rs: { dtype: 'float32', shape: [T, n / 16], data: stale((T * n) / 16) },
  };
}

/**
 * The adapter's subgroup size where it is one fixed size (the lanes variants need it), else 0 with a line saying why
 * `what` does not run here (the GPU lane runs it).
 */
function fixedSubgroupSize(what: string): number {
  const a = dev.caps.adapterInfo;
  if (a.subgroupMinSize !== undefined && a.subgroupMinSize === a.subgroupMaxSize && dev.caps.features.has('subgroups')) return a.subgroupMinSize;
  console.warn(`${what} needs subgroups of one fixed size; this adapter has ${a.subgroupMinSize ?? '-'}..${a.subgroupMaxSize ?? '-'}: the GPU lane runs it`);
  return 0;
}

describe('attention decode_split (flash-decoding)', () => {
  it.each([
    // tokens, heads, kv heads, head dim, capacity, start, cache, softcap, window, tunables (splitWorkgroups 256 and
    // splitCombine serial and splitLoads 8 by default: tiles of 128 keys up to 64 vec4 of f16 or 32 of f32 dims, 64
    // keys at 128 f16 dims, 32 at 256 f16 or 128 f32, 16 at 256 f32)
    [1, 4, 2, 64, 600, 300, 'float32', 0, 0, {}],
    [2, 8, 2, 32, 512, 257, 'float16', 0, 0, {}],
    [1, 4, 4, 128, 300, 5, 'float32', 30, 0, {}],
    [3, 6, 3, 64, 1024, 700, 'float16', 0, 100, {}],
    [1, 2, 1, 256, 256, 0, 'float32', 0, 0, {}],
    [2, 32, 8, 64, 5000, 4500, 'float16', 0, 0, {}], // 16 parts of 282 keys: three tiles each
    [1, 16, 2, 64, 34000, 33990, 'float16', 0, 0, {}], // groups of 8 heads, 128 parts of 266 keys
    [1, 32, 8, 128, 8192, 1000, 'float16', 0, 0, { splitWorkgroups: 2048 }], // 128 parts (one per tile of capacity) of 8 keys
    [1, 32, 8, 128, 20000, 1000, 'float16', 0, 0, { splitWorkgroups: 2048, splitCombine: 'tree' }], // 256 parts of 4 keys: 64 a combine lane, 8 loads at a time
    [3, 6, 3, 64, 1024, 700, 'float16', 0, 100, { splitCombine: 'tree' }], // a sliding window, 3 tokens
    [1, 4, 2, 64, 600, 3, 'float32', 0, 0, { splitCombine: 'tree' }], // 4 keys over 10 parts: six see none
    [2, 8, 2, 64, 4096, 3000, 'float32', 0, 0, { splitWorkgroups: 64, splitCombine: 'tree' }], // 16 parts of 188 keys: three tiles each
    [1, 32, 8, 128, 8192, 1000, 'float16', 0, 0, { splitLoads: 16 }], // tiles of 128 keys, whole rows
    [1, 32, 8, 128, 3000, 2500, 'float16', 30, 0, { splitLoads: 2, splitWorkgroups: 64 }], // tiles of 16 keys, rows in 8 shares
    [2, 8, 2, 256, 2000, 1500, 'float32', 0, 0, { splitLoads: 16 }], // 32-key tiles of 256 f32 dims: rows in 4 shares
    [1, 8, 8, 32, 700, 650, 'float16', 0, 0, { splitLoads: 1, splitWorkgroups: 16 }], // 32-key tiles, one vec4 a share
    [2, 32, 8, 128, 5000, 4500, 'float16', 0, 0, { splitOrder: 'heads' }], // the KV head on workgroup_id.x, the part on y
    [3, 6, 3, 64, 1024, 700, 'float32', 30, 100, { splitOrder: 'heads', splitCombine: 'tree' }],
    // splitKOrder keys (the default is shares: a key's shares on consecutive invocations, vec4s interleaved): consecutive
    // invocations on consecutive keys, each share of a row a run of vec4s
    [1, 32, 8, 128, 8192, 8000, 'float16', 0, 0, { splitKOrder: 'keys' }], // 2 shares of 8 vec4
    [2, 32, 8, 128, 3000, 2500, 'float16', 30, 0, { splitKOrder: 'keys', splitLoads: 2, splitWorkgroups: 64 }], // 8 shares of 2
    [2, 8, 2, 256, 2000, 1500, 'float32', 0, 0, { splitKOrder: 'keys', splitLoads: 16 }], // 4 shares of 16
    [3, 6, 3, 64, 1024, 700, 'float32', 0, 100, { splitKOrder: 'keys' }], // one share: the whole row
    [1, 8, 8, 32, 700, 650, 'float16', 0, 0, { splitKOrder: 'keys', splitLoads: 1, splitWorkgroups: 16 }],
  ] as const)('T=%i H=%i Hkv=%i D=%i capacity %i start %i %s softcap %i window %i tunables %o', async (T, H, Hkv, D, cap, start, kvDt, softcap, win, tun) => {
    const wgs = 'splitWorkgroups' in tun ? tun.splitWorkgroups : 256;
    const loads = 'splitLoads' in tun ? tun.splitLoads : 8;
    const tile = Math.max(16, Math.min(128, Math.floor((loads * 128 * (kvDt === 'float16' ? 8 : 4)) / D)));
    const r = new Rng(`attention-split/${T}/${H}/${D}/${cap}/${start}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, kvDt);
    const { outputs, plan } = await runContract(dev, opContract('attention'), {
      inputs: c.inputs,
      attributes: { start_pos: start, kv_len: start + T, softcap, sliding_window: win },
      tunables: { splitDecode: 'on', cpuMapping: 'off', shortKeys: 0, ...tun },
    });
    expect(plan.variant).toBe('decode_split');
    // parts per (KV head, token): enough for ~splitWorkgroups (256 by default), at most one per tile of capacity
    const splits = Math.max(1, Math.min(Math.ceil(cap / tile), Math.ceil(wgs / (Hkv * T))));
    expect(plan.passes.map((p) => p.dispatch)).toEqual([
      'splitOrder' in tun && tun.splitOrder === 'heads' ? [Hkv, splits, T] : [splits, Hkv, T],
      [(H * D) / Math.min(D, 32), T, 1], // the combine: a workgroup per (head, 32 dims)
    ]);
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start, attn_softcap: softcap, sliding_window: win });
    expect(maxRelErr(outputs.out!.data as Float32Array, attentionRef(u, c.ref as never))).toBeLessThan(1e-5);
  });
});

describe('attention decode_split_lanes (the partial pass a subgroup per step of keys, one key a lane)', () => {
  // The adapter's subgroup size S (4 on SwiftShader, 32 on the H200) sets the layout: a step is S keys; a V row is
  // read by min(S, 16-byte loads a row) lanes, so one round covers 1 to 8 rows (SwiftShader: one row a round, 1 to 8
  // slices a lane; the H200: 1 to 8 rows a round, rows summed by shuffles at the end).
  let sg = 0;
  beforeAll(() => {
    sg = fixedSubgroupSize('decode_split_lanes');
  });
  it.each([
    // tokens, heads, kv heads, head dim, capacity, start, cache, softcap, window, int8 outputs, tunables
    [1, 32, 8, 128, 8192, 8000, 'float16', 0, 0, false, {}],
    [1, 32, 8, 128, 8192, 1000, 'float16', 0, 0, true, { splitLanesWarps: 2 }],
    [2, 8, 2, 32, 512, 257, 'float16', 0, 0, false, {}],
    [1, 4, 4, 128, 300, 5, 'float32', 30, 0, false, {}],
    [3, 6, 3, 64, 1024, 700, 'float16', 0, 100, true, {}], // a sliding window, 3 tokens
    [1, 2, 1, 256, 600, 500, 'float16', 0, 0, false, { splitLanesWarps: 8 }],
    [1, 32, 8, 128, 8192, 5000, 'float16', 0, 0, true, { splitLanesV: 'late' }], // the V loads after the scores
    [2, 4, 2, 64, 900, 800, 'float32', 20, 0, false, { splitLanesV: 'late' }],
    [1, 16, 2, 64, 34000, 33990, 'float16', 0, 0, false, { splitLanesWarps: 1 }], // groups of 8 heads
    [1, 4, 2, 64, 600, 3, 'float32', 0, 0, false, {}], // 4 keys over many parts: most see none
    [2, 8, 2, 64, 4096, 3000, 'float32', 0, 0, false, { splitWorkgroups: 64, splitCombine: 'tree', splitOrder: 'heads' }],
  ] as const)('T=%i H=%i Hkv=%i D=%i capacity %i start %i %s softcap %i window %i int8 %s tunables %o', async (T, H, Hkv, D, cap, start, kvDt, softcap, win, q8, tun) => {
    if (!sg) return;
    const r = new Rng(`attention-split-lanes/${T}/${H}/${D}/${cap}/${start}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, kvDt);
    const { outputs, plan } = await runContract(dev, opContract('attention'), {
      inputs: { ...c.inputs, ...(q8 ? staleQ8(T, H * D) : {}) },
      attributes: { start_pos: start, kv_len: start + T, softcap, sliding_window: win },
      tunables: { splitDecode: 'on', cpuMapping: 'off', shortKeys: 0, splitPartial: 'lanes', attnQ8: 'on', ...tun },
    });
    expect(plan.variant).toBe(q8 ? 'decode_split_lanes_q8' : 'decode_split_lanes');
    // parts per (KV head, token): enough for ~splitWorkgroups, at most one per step of the workgroup's subgroups
    const warps = 'splitLanesWarps' in tun ? tun.splitLanesWarps : 4;
    const wgs = 'splitWorkgroups' in tun ? tun.splitWorkgroups : 256;
    const splits = Math.max(1, Math.min(Math.ceil(cap / (sg * warps)), Math.ceil(wgs / (Hkv * T))));
    expect(plan.passes[0]!.dispatch).toEqual('splitOrder' in tun ? [Hkv, splits, T] : [splits, Hkv, T]);
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start, attn_softcap: softcap, sliding_window: win });
    const out = outputs.out!.data as Float32Array;
    expect(maxRelErr(out, attentionRef(u, c.ref as never))).toBeLessThan(1e-5);
    if (q8) expectQ8Activations(outputs.qa!.data as Uint32Array, outputs.da!.data as Float32Array, outputs.rs!.data as Float32Array, out);
  });
});

describe('attention decode_split_q8 (the combine also writes int8 activations for o_proj)', () => {
  it.each([
    // tokens, heads, kv heads, head dim, capacity, start, cache, tunables
    [1, 4, 2, 64, 600, 300, 'float32', {}],
    [2, 8, 2, 32, 512, 257, 'float16', {}],
    [3, 6, 3, 128, 1024, 700, 'float16', { splitCombine: 'tree' }],
    [1, 32, 8, 128, 8192, 1000, 'float16', { splitWorkgroups: 2048 }],
    [1, 2, 1, 256, 256, 0, 'float32', {}],
  ] as const)('T=%i H=%i Hkv=%i D=%i capacity %i start %i %s %o', async (T, H, Hkv, D, cap, start, kvDt, tun) => {
    const r = new Rng(`attention-split-q8/${T}/${H}/${D}/${cap}/${start}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, kvDt);
    const { outputs, plan } = await runContract(dev, opContract('attention'), {
      inputs: { ...c.inputs, ...staleQ8(T, H * D) },
      attributes: { start_pos: start, kv_len: start + T },
      tunables: { splitDecode: 'on', cpuMapping: 'off', shortKeys: 0, attnQ8: 'on', ...tun },
    });
    expect(plan.variant).toBe('decode_split_q8');
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start, attn_softcap: 0, sliding_window: 0 });
    const out = outputs.out!.data as Float32Array;
    expect(maxRelErr(out, attentionRef(u, c.ref as never))).toBeLessThan(1e-5);
    // the int8 activations: the f32 output rounded per block of 32
    expectQ8Activations(outputs.qa!.data as Uint32Array, outputs.da!.data as Float32Array, outputs.rs!.data as Float32Array, out);
  });

  it('is chosen only where the int8 outputs are asked for', async () => {
    const c = attentionCase(new Rng('attention-split-q8/none'), 1, 4, 2, 64, 64, 'float32');
    const { plan } = await runContract(dev, opContract('attention'), { inputs: c.inputs, attributes: { start_pos: 10, kv_len: 11 }, tunables: { splitDecode: 'on', cpuMapping: 'off', shortKeys: 0, attnQ8: 'on' } });
    expect(plan.variant).toBe('decode_split');
  });
});

describe('attention decode_short (one pass for caches of at most shortKeys positions)', () => {
  it.each([
    // tokens, heads, kv heads, head dim, capacity, start, cache, softcap, window, int8 outputs: tiles of 256 keys
    // (128 at 128 f32 dims and at 256 f16, 64 at 256 f32), so the larger caches walk two to four
    [1, 32, 8, 128, 256, 143, 'float16', 0, 0, false],
    [1, 32, 8, 128, 256, 255, 'float16', 0, 0, true], // the whole cache
    [1, 4, 2, 64, 256, 0, 'float32', 0, 0, false], // one key
    [2, 8, 2, 32, 200, 150, 'float16', 30, 0, true],
    [3, 6, 3, 64, 256, 200, 'float16', 0, 100, false], // a sliding window, 3 tokens
    [1, 4, 4, 128, 256, 250, 'float32', 0, 0, true], // f32 rows: two tiles of 128
    [1, 2, 1, 256, 256, 255, 'float32', 0, 0, false], // four tiles of 64
    [2, 16, 2, 256, 256, 100, 'float16', 0, 0, true], // groups of 8 heads, 256 f16 dims: tiles of 128
    [1, 32, 8, 128, 256, 200, 'float16', 0, 0, true, { splitKOrder: 'keys' }],
    [2, 8, 2, 64, 256, 250, 'float32', 30, 0, false, { splitKOrder: 'keys' }],
  ] as const)('T=%i H=%i Hkv=%i D=%i capacity %i start %i %s softcap %i window %i int8 %s %o', async (T, H, Hkv, D, cap, start, kvDt, softcap, win, q8, tun: Record<string, string> = {}) => {
    const r = new Rng(`attention-short/${T}/${H}/${D}/${cap}/${start}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, kvDt);
    const { outputs, plan } = await runContract(dev, opContract('attention'), {
      inputs: { ...c.inputs, ...(q8 ? staleQ8(T, H * D) : {}) },
      attributes: { start_pos: start, kv_len: start + T, softcap, sliding_window: win },
      tunables: { splitDecode: 'on', cpuMapping: 'off', attnQ8: 'on', shortLanes: 'off', ...tun },
    });
    expect(plan.variant).toBe(q8 ? 'decode_short_q8' : 'decode_short');
    expect(plan.passes.map((p) => p.dispatch)).toEqual([[H, T, 1]]); // a workgroup per (head, token), no combine
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start, attn_softcap: softcap, sliding_window: win });
    const out = outputs.out!.data as Float32Array;
    expect(maxRelErr(out, attentionRef(u, c.ref as never))).toBeLessThan(1e-5);
    if (q8) expectQ8Activations(outputs.qa!.data as Uint32Array, outputs.da!.data as Float32Array, outputs.rs!.data as Float32Array, out);
  });

  it.each([
    // tokens, heads, kv heads, head dim, capacity, start, cache, softcap, window, tunables: decode_short_lanes, a
    // workgroup of up to shortLanesWarps (8) subgroups per head, at most one per step of capacity
    [1, 32, 8, 128, 256, 143, 'float16', 0, 0, {}],
    [1, 32, 8, 128, 256, 255, 'float16', 0, 0, { shortLanesWarps: 2 }], // several steps a subgroup
    [1, 4, 2, 64, 256, 0, 'float32', 0, 0, {}], // one key
    [2, 8, 2, 32, 200, 150, 'float16', 30, 0, { splitLanesV: 'late' }],
    [3, 6, 3, 64, 256, 200, 'float16', 0, 100, {}], // a sliding window, 3 tokens
    [1, 2, 1, 128, 256, 255, 'float32', 0, 0, { shortLanesWarps: 1 }], // one subgroup walks every step
    [2, 16, 2, 256, 256, 100, 'float16', 0, 0, {}], // groups of 8 heads
    // a capacity within one step a subgroup (the H200's default: 8 subgroups of 32 for 256 positions; here also
    // SwiftShader's 8 of 4 for 32): straight-line, the loads before the query rows are staged
    [1, 4, 2, 64, 32, 20, 'float16', 0, 0, {}],
    [3, 6, 3, 64, 24, 20, 'float32', 30, 10, {}],
    [2, 8, 2, 32, 30, 27, 'float16', 0, 0, { splitLanesV: 'late' }],
  ] as const)('lanes: T=%i H=%i Hkv=%i D=%i capacity %i start %i %s softcap %i window %i tunables %o', async (T, H, Hkv, D, cap, start, kvDt, softcap, win, tun) => {
    if (!fixedSubgroupSize('decode_short_lanes')) return;
    const r = new Rng(`attention-short-lanes/${T}/${H}/${D}/${cap}/${start}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, kvDt);
    const { outputs, plan } = await runContract(dev, opContract('attention'), {
      inputs: c.inputs,
      attributes: { start_pos: start, kv_len: start + T, softcap, sliding_window: win },
      tunables: { splitDecode: 'on', cpuMapping: 'off', shortLanes: 'on', ...tun },
    });
    expect(plan.variant).toBe('decode_short_lanes');
    expect(plan.passes.map((p) => p.dispatch)).toEqual([[H, T, 1]]);
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start, attn_softcap: softcap, sliding_window: win });
    expect(maxRelErr(outputs.out!.data as Float32Array, attentionRef(u, c.ref as never))).toBeLessThan(1e-5);
  });

  it.each([
    // tokens, heads, kv heads, head dim, capacity, start, the weight read into the L2 (dtype, rows, columns), tunables
    [1, 32, 8, 128, 256, 143, 'q4_k', 64, 256, {}], // 576 words over 128 workgroups of up to 8 subgroups: most read none
    [1, 4, 2, 64, 32, 20, 'q4_k', 37, 512, { prefetchGroups: 3 }], // 666 words: rounds of 4 loads a lane, then the tail loop
    [2, 8, 2, 32, 30, 27, 'float16', 33, 8, { prefetchGroups: 5 }], // 2 tokens: token 1's extra workgroups read nothing
  ] as const)('lanes with a weight prefetch: T=%i H=%i Hkv=%i D=%i capacity %i start %i, pf %s [%i, %i] tunables %o', async (T, H, Hkv, D, cap, start, pfDt, N, K, tun) => {
    if (!fixedSubgroupSize('decode_short_lanes_pf')) return;
    const r = new Rng(`attention-short-lanes-pf/${T}/${H}/${D}/${cap}/${start}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, 'float16');
    const bytes = pfDt === 'q4_k' ? (N * K * 144) / 256 : N * K * 2;
    const pf = { dtype: pfDt, shape: [N, K], data: Uint8Array.from({ length: bytes }, () => r.int(256)) };
    const attributes = { start_pos: start, kv_len: start + T };
    const tunables = { splitDecode: 'on', cpuMapping: 'off', shortLanes: 'on', weightPrefetch: 'on', ...tun };
    const { outputs, plan } = await runContract(dev, opContract('attention'), { inputs: { ...c.inputs, pf }, attributes, tunables });
    expect(plan.variant).toBe('decode_short_lanes_pf');
    expect(plan.passes.map((p) => p.dispatch)).toEqual([[H + ('prefetchGroups' in tun ? tun.prefetchGroups : 128), T, 1]]);
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start });
    const out = outputs.out!.data as Float32Array;
    expect(maxRelErr(out, attentionRef(u, c.ref as never))).toBeLessThan(1e-5);
    // the extra workgroups write nothing: the output is decode_short_lanes' to the bit
    const plain = await runContract(dev, opContract('attention'), { inputs: c.inputs, attributes, tunables });
    expect(plain.plan.variant).toBe('decode_short_lanes');
    expect(out).toEqual(plain.outputs.out!.data);
  });

  it.each([
    // tokens, heads, kv heads, head dim, capacity, start, cache, subgroups asked (attribute lanes = subgroups x the
    // subgroup size: a caller linking attention with a kernel of that workgroup size)
    [1, 32, 8, 128, 256, 143, 'float16', 12], // 12 subgroups (the H200: 384 lanes for 8 steps of keys, 4 join with none)
    [1, 4, 2, 64, 32, 20, 'float32', 12], // most subgroups past the cache
    [2, 8, 2, 32, 200, 150, 'float16', 2], // fewer subgroups than steps: several steps a subgroup
  ] as const)('lanes attribute: T=%i H=%i Hkv=%i D=%i capacity %i start %i %s, %i subgroups', async (T, H, Hkv, D, cap, start, kvDt, warps) => {
    const sg = fixedSubgroupSize('decode_short_lanes with the lanes attribute');
    if (!sg) return;
    const r = new Rng(`attention-short-lanes-asked/${T}/${H}/${D}/${cap}/${warps}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, kvDt);
    const { outputs, plan } = await runContract(dev, opContract('attention'), {
      inputs: c.inputs,
      attributes: { start_pos: start, kv_len: start + T, lanes: warps * sg },
      tunables: { splitDecode: 'on', cpuMapping: 'off', shortLanes: 'on' },
    });
    expect(plan.variant).toBe('decode_short_lanes');
    expect(plan.derived.warps).toBe(warps);
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start, attn_softcap: 0, sliding_window: 0 });
    expect(maxRelErr(outputs.out!.data as Float32Array, attentionRef(u, c.ref as never))).toBeLessThan(1e-5);
  });

  it('takes the lanes attribute only in decode_short_lanes, and only a whole number of subgroups', async () => {
    const r = new Rng('attention-short-lanes-asked/refusals');
    const run = (cap: number, lanes: number, tunables: Record<string, string | number> = {}) => {
      const c = attentionCase(r, 1, 4, 2, 64, cap, 'float16');
      return runContract(dev, opContract('attention'), { inputs: c.inputs, attributes: { start_pos: 3, kv_len: 4, lanes }, tunables: { splitDecode: 'on', cpuMapping: 'off', shortLanes: 'on', ...tunables } });
    };
    // above shortKeys (decode_split) and with shortLanes off (decode_short): no variant takes it
    await expect(run(512, 64)).rejects.toThrow(/lanes/);
    await expect(run(32, 64, { shortLanes: 'off' })).rejects.toThrow(/lanes/);
    const sg = fixedSubgroupSize('decode_short_lanes with the lanes attribute');
    if (!sg) return;
    await expect(run(32, sg + 1)).rejects.toThrow(/lanes/);
    expect((await run(32, 2 * sg)).plan.derived.warps).toBe(2);
  });

  it('takes a weight to prefetch only where weightPrefetch is on and the short lanes walk runs', async () => {
    const r = new Rng('attention-short-lanes-pf/refusals');
    const c = attentionCase(r, 1, 4, 2, 64, 32, 'float16');
    const pf = { dtype: 'q4_k', shape: [8, 256], data: new Uint8Array(8 * 144) };
    const run = (tunables: Record<string, string | number>) =>
      runContract(dev, opContract('attention'), { inputs: { ...c.inputs, pf }, attributes: { start_pos: 3, kv_len: 4 }, tunables: { splitDecode: 'on', cpuMapping: 'off', shortLanes: 'on', ...tunables } });
    await expect(run({ weightPrefetch: 'off' })).rejects.toThrow(/weightPrefetch/);
    await expect(run({ weightPrefetch: 'on', shortLanes: 'off' })).rejects.toThrow(/pfIn/);
  });

  it('is left for decode_split above shortKeys positions, and when shortKeys is 0', async () => {
    const r = new Rng('attention-short/bounds');
    for (const [cap, shortKeys, want] of [
      [257, 256, 'decode_split'],
      [256, 0, 'decode_split'],
      [512, 512, 'decode_short'],
    ] as const) {
      const c = attentionCase(r, 1, 4, 2, 64, cap, 'float16');
      const { plan } = await runContract(dev, opContract('attention'), { inputs: c.inputs, attributes: { start_pos: 3, kv_len: 4 }, tunables: { splitDecode: 'on', cpuMapping: 'off', shortKeys, shortLanes: 'off' } });
      expect(plan.variant, `capacity ${cap}, shortKeys ${shortKeys}`).toBe(want);
    }
  });
});
