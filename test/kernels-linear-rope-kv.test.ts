/**
 * linear_rope_kv (the decode q|k|v GEMV over Q4_K weights with rope and the KV-cache write as its epilogue) against
 * the host: rmsnorm(x) * gamma rounded to int8 per block of 32 (as the GEMV's workgroups round it), times the
 * dequantized weights, then rope of the query and key heads at start_pos + m and the cache rows written; every other
 * cache row stays as it was. Both rope pair layouts, f16 and f32 caches, one and several tokens. On the norm handoff
 * (q8h_rope_rows: xq / xm from the previous layer's down GEMV instead of x and gamma), the activations are rmsnorm's
 * scale times h * gamma rounded in runs of 16 (handoffActivations). A layer whose v_proj is in another format (Q4_K_M)
 * runs its q|k weight and its v weight (Q4_K or Q6_K) as two calls: each writes its heads and leaves the rest as it was.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runContract, type HostTensor } from '../src/contracts/run.ts';
import { dequantizeQ4_K, dequantizeQ6_K, f16BytesToF32, f32ToF16Bytes } from '../src/formats/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { roundActivationsQ8 } from '../src/reference/activations-q8.ts';
import { matmulF32Reference } from '../src/reference/matmul-quant.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { testDevice } from './helpers/device.ts';
import { quantizeMemo } from './helpers/quant-memo.ts';
import { runOpOrSkip } from './helpers/run-or-skip.ts';
import { handoffActivations } from './helpers/q8.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

/** Rope of one head of `x` (at `base`, D values, full rotary dims) for position pos. */
function ropeHead(x: Float32Array, base: number, D: number, interleaved: boolean, cos: Float32Array, sin: Float32Array, pos: number): number[] {
  const half = D / 2;
  const out: number[] = [];
  for (let e = 0; e < D; e++) {
    const p = interleaved ? e >> 1 : e % half;
    const c = cos[pos * half + p]!;
    const s = sin[pos * half + p]!;
    const first = interleaved ? e % 2 === 0 : e < half;
    const partner = interleaved ? (first ? e + 1 : e - 1) : first ? e + half : e - half;
    out.push(first ? x[base + e]! * c - x[base + partner]! * s : x[base + partner]! * s + x[base + e]! * c);
  }
  return out;
}

describe('linear_rope_kv (q|k|v GEMV with rope and the cache write as its epilogue)', () => {
  it.for([
    // M, qHeads, kvHeads, D, K, interleaved, cache, start, tunables
    // rows mode by default (gemvRowBlock 16): gemvRowBlock / 4 items of 4 columns a workgroup, in 2 teams where those
    // hold >= 90,000 lanes in all or 4 teams do not fit a workgroup, else 4 (gemvTeams auto)
    [1, 4, 2, 64, 256, 0, 'float16', 5, {}],
    [2, 2, 1, 32, 512, 1, 'float32', 3, {}],
    [1, 8, 2, 128, 2048, 0, 'float16', 4, {}], // 64 lanes a team: 256 a workgroup
    [1, 32, 8, 128, 4096, 0, 'float16', 3, {}], // the 8B's q|k|v: 384 workgroups of 2 teams of 128 lanes (98,304)
    [1, 8, 2, 128, 2048, 0, 'float32', 4, { gemvTeams: 2 }],
    [1, 4, 2, 64, 4096, 0, 'float16', 2, {}], // 128 lanes a team: 2 teams where the device's workgroups hold 256
    [1, 4, 2, 64, 256, 0, 'float16', 5, { gemvRowBlock: 16, gemvTeams: 1 }],
    // the subgroup-item (fused) variant: gemvRowBlock 0
    [1, 4, 2, 64, 256, 0, 'float16', 5, { gemvRowBlock: 0 }],
    [1, 8, 2, 128, 256, 0, 'float32', 0, { gemvRowBlock: 0, gemvItems: 2, gemvUnroll: 1 }],
    [3, 3, 3, 16, 768, 1, 'float16', 1, { gemvRowBlock: 0, gemvWorkgroup: 64 }],
    [2, 4, 2, 64, 512, 0, 'float16', 2, { gemvRowBlock: 0, gemvRunSums: 'off', gemvPipeline: 'off' }], // both on by default
    [2, 3, 1, 32, 768, 1, 'float32', 3, { gemvRowBlock: 24, gemvTeams: 2 }], // 40 items: the last block's half past N
    // the norm handoff (handoff: not a tunable; the case feeds xq / xm): 16 rows a workgroup by default
    [1, 4, 2, 64, 256, 0, 'float16', 5, { handoff: 1, normHandoff: 'on' }],
    [2, 3, 1, 32, 768, 1, 'float32', 3, { handoff: 1, normHandoff: 'on', handoffRowBlock: 24 }], // 40 items: the last block's half past N
    [1, 8, 2, 128, 4096, 0, 'float16', 7, { handoff: 1, normHandoff: 'on', handoffRowBlock: 32, handoffTeams: 2 }],
    [1, 8, 2, 128, 4096, 0, 'float16', 7, { handoff: 1, normHandoff: 'on', handoffRowBlock: 32, handoffTeams: 2, rowsReduce: 'add' }], // the rows' sums by subgroupAdd
    [2, 3, 1, 32, 768, 1, 'float32', 3, { gemvRowBlock: 24, gemvTeams: 2, rowsReduce: 'add' }],
    // a Q4_K_M layer's two calls (heads, fmt: not tunables): q|k (Q4_K), v (Q6_K, rows mode; or Q4_K)
    [1, 4, 2, 64, 512, 0, 'float16', 5, { heads: 'qk', ropeKvSplit: 'on' }],
    [2, 3, 1, 32, 768, 1, 'float32', 3, { heads: 'qk', ropeKvSplit: 'on', gemvRowBlock: 16 }],
    [1, 4, 2, 64, 512, 0, 'float16', 5, { heads: 'v', fmt: 'q6_k', ropeKvSplit: 'on' }], // 128 rows: 32 workgroups of 4 (q6RowBlock's default)
    [2, 8, 4, 128, 1024, 1, 'float32', 6, { heads: 'v', fmt: 'q6_k', ropeKvSplit: 'on', q6RowBlock: 0, gemvRowBlock: 24, gemvTeams: 1 }], // 128 items: the last block's third past N
    // the Q6_K v_proj's own row block (q6RowBlock, 4 by default): one item a workgroup in one team; 8 rows in two teams of 4
    [1, 4, 2, 64, 512, 0, 'float16', 5, { heads: 'v', fmt: 'q6_k', ropeKvSplit: 'on', q6RowBlock: 4 }],
    [2, 8, 4, 128, 1024, 1, 'float32', 6, { heads: 'v', fmt: 'q6_k', ropeKvSplit: 'on', q6RowBlock: 8 }],
    [1, 4, 2, 64, 256, 0, 'float32', 2, { heads: 'v', ropeKvSplit: 'on' }],
  ] as const)('M=%i q=%i kv=%i D=%i K=%i interleaved=%i %s cache at %i %o', async ([M, QH, KVH, D, K, il, cache, start, given], ctx) => {
    const { handoff, heads = 'qkv', fmt = 'q4_k', ...tun } = given as { handoff?: number; heads?: 'qkv' | 'qk' | 'v'; fmt?: 'q4_k' | 'q6_k' } & Record<string, string | number>;
    const r = new Rng(`linear_rope_kv/${M}/${QH}/${KVH}/${D}/${K}/${il}/${cache}/${heads}/${fmt}`);
    // the weight's heads: q|k|v, q|k, or v (after the q and k heads)
    const N = (heads === 'qkv' ? QH + 2 * KVH : heads === 'qk' ? QH + KVH : KVH) * D;
    const first = heads === 'v' ? QH + KVH : 0;
    const dequantize = fmt === 'q6_k' ? dequantizeQ6_K : dequantizeQ4_K;
    const cap = 8;
    const positions = 10;
    const x = r.floats(M * K);
    const gamma = r.floats(K).map((v) => 1 + v);
    const wBytes = quantizeMemo(fmt, r.floats(N * K)); // the same seed under other tunables: quantized once
    const cos = r.floats(positions * (D / 2));
    const sin = r.floats(positions * (D / 2));
    const init = r.floats(cap * KVH * D);
    const cacheData = () => (cache === 'float16' ? new Uint16Array(f32ToF16Bytes(init).buffer) : init.slice());
    const ho = handoff ? handoffActivations(x, gamma, M, K, 1e-6) : undefined;
    const acts: Record<string, HostTensor> = ho
      ? { xq: { dtype: 'uint32', shape: [M, K / 4], data: ho.xq }, xm: { dtype: 'float32', shape: [M, (3 * K) / 16], data: ho.xm } }
      : { x: { dtype: 'float32', shape: [M, K], data: x }, gamma: { dtype: 'float32', shape: [K], data: gamma } };
    const out = await runOpOrSkip(
      dev,
      'linear_rope_kv',
      {
        inputs: {
          ...acts,
          w: { dtype: fmt, shape: [N, K], data: wBytes },
          cos: { dtype: 'float32', shape: [positions, D / 2], data: cos },
          sin: { dtype: 'float32', shape: [positions, D / 2], data: sin },
          kCache: { dtype: cache, shape: [cap, KVH, D], data: cacheData() },
          vCache: { dtype: cache, shape: [cap, KVH, D], data: cacheData() },
          q: { dtype: 'float32', shape: [M, QH, D], data: new Float32Array(M * QH * D) },
        },
        attributes: { start_pos: start, interleaved: il, eps: 1e-6 },
        tunables: { ropeKvFuse: 'on', cpuMapping: 'off', ...tun },
      },
      ctx,
    );
    if (!out) return;
    expect(out.plan.variant).toBe(ho ? 'q8h_rope_rows' : fmt === 'q6_k' ? 'q6k_norm_rope_rows' : Number(tun.gemvRowBlock ?? 16) > 0 ? 'q8a_norm_rope_rows' : 'q8a_norm_rope_fused');
    expect(out.plan.passes.map((p) => p.id)).toEqual(['matmul']);
    if (fmt === 'q6_k') {
      // the v GEMV's own row block (4 by default; 0: gemvRowBlock, in gemvTeams): N / rows workgroups, one team below 8 rows
      const rb = tun.q6RowBlock === 0 ? Number(tun.gemvRowBlock ?? 16) : Number(tun.q6RowBlock ?? 4);
      expect(out.plan.passes[0]!.derived.rowBlock).toBe(rb);
      expect(out.plan.passes[0]!.dispatch[0] * out.plan.passes[0]!.dispatch[1]).toBe(Math.ceil(N / rb));
      expect(out.plan.passes[0]!.derived.rowTeams).toBe(tun.q6RowBlock === 0 && Number(tun.gemvTeams ?? 0) > 0 ? Number(tun.gemvTeams) : rb % 8 === 0 ? 2 : 1);
    }
    if (!ho && fmt !== 'q6_k' && Number(tun.gemvRowBlock ?? 16) > 0) {
      // rows mode: gemvRowBlock rows a workgroup (16 by default) in gemvTeams teams (auto: 2 where the workgroups of 2
      // teams hold >= 90,000 lanes, one lane a block of 32 values of K, or where 4 teams do not fit a workgroup; else 4)
      const rb = Number(tun.gemvRowBlock ?? 16);
      const lanes = 32 * Math.ceil(K / 32 / 32);
      expect(out.plan.passes[0]!.derived.rowBlock).toBe(rb);
      expect(out.plan.passes[0]!.dispatch[0] * out.plan.passes[0]!.dispatch[1]).toBe(Math.ceil(N / rb));
      const fit4 = 4 * lanes <= dev.caps.limits.maxComputeInvocationsPerWorkgroup!;
      expect(out.plan.passes[0]!.derived.rowTeams).toBe(Number(tun.gemvTeams ?? (2 * lanes * Math.ceil(N / rb) >= 90000 || !fit4 ? 2 : 4)));
    }
    // the GEMV's activations: rmsnorm(x) * gamma rounded to int8 per block of 32
    const a = new Float32Array(M * K);
    for (let m = 0; m < M; m++) {
      let ss = 0;
      for (let k = 0; k < K; k++) ss += x[m * K + k]! ** 2;
      const inv = 1 / Math.sqrt(ss / K + 1e-6);
      for (let k = 0; k < K; k++) a[m * K + k] = x[m * K + k]! * inv * gamma[k]!;
    }
    const qkv = matmulF32Reference(ho ? ho.a : roundActivationsQ8(a), dequantize(wBytes, N * K), { M, N, K, alpha: 1 });
    const asF32 = (t: { data: ArrayBufferView }) => (cache === 'float16' ? f16BytesToF32(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)) : (t.data as Float32Array));
    const round = (v: number) => (cache === 'float16' ? f16BytesToF32(f32ToF16Bytes([v]))[0]! : v);
    const wantQ: number[] = new Array(M * QH * D).fill(0); // q starts as zeros
    const wantK = Array.from(asF32({ data: cacheData() }));
    const wantV = wantK.slice();
    for (let m = 0; m < M; m++) {
      const pos = start + m;
      for (let h = 0; h < N / D; h++) {
        const head = first + h;
        const base = m * N + h * D;
        if (head < QH) ropeHead(qkv, base, D, il === 1, cos, sin, pos).forEach((v, e) => (wantQ[(m * QH + head) * D + e] = v));
        else if (head < QH + KVH) ropeHead(qkv, base, D, il === 1, cos, sin, pos).forEach((v, e) => (wantK[(pos * KVH + head - QH) * D + e] = round(v)));
        else for (let e = 0; e < D; e++) wantV[(pos * KVH + head - QH - KVH) * D + e] = round(qkv[base + e]!);
      }
    }
    // relative to the largest value: f32 summation order (and one f16 rounding step in the cache) apart
    const close = (got: ArrayLike<number>, want: number[], what: string) => {
      expect(got.length, what).toBe(want.length);
      let d = 0;
      let scale = 0;
      for (let i = 0; i < want.length; i++) {
        d = Math.max(d, Math.abs(got[i]! - want[i]!));
        scale = Math.max(scale, Math.abs(want[i]!));
      }
      expect(d / scale, what).toBeLessThan(cache === 'float16' && what !== 'q' ? 2e-3 : 1e-4);
    };
    // the heads the weight holds are written; q and the caches of the others are exactly as they were
    const before = asF32({ data: cacheData() });
    if (heads === 'v') expect(Array.from(out.outputs.q!.data as Float32Array)).toEqual(wantQ);
    else close(out.outputs.q!.data as Float32Array, wantQ, 'q');
    if (heads === 'v') expect(asF32(out.outputs.kCache!)).toEqual(before);
    else close(asF32(out.outputs.kCache!), wantK, 'kCache');
    if (heads === 'qk') expect(asF32(out.outputs.vCache!)).toEqual(before);
    else close(asF32(out.outputs.vCache!), wantV, 'vCache');
    // rows other than start .. start + M - 1 are exactly as they were
    const k = asF32(out.outputs.kCache!);
    for (let row = 0; row < cap; row++) {
      if (row >= start && row < start + M) continue;
      for (let i = row * KVH * D; i < (row + 1) * KVH * D; i++) expect(k[i], `kCache row ${row}`).toBe(before[i]);
    }
  });

  it('refuses partial rotary dims, a weight that is not q|k|v, q|k or v of these heads, and q|k alone with ropeKvSplit off, naming the condition', async () => {
    const f32 = (shape: number[]) => ({ dtype: 'float32' as const, shape, data: new Float32Array(shape.reduce((p, d) => p * d, 1)) });
    const run = (N: number, rot: number, ropeKvSplit = 'on') =>
      runContract(dev, opContract('linear_rope_kv'), {
        inputs: { x: f32([1, 256]), w: { dtype: 'q4_k', shape: [N, 256], data: new Uint8Array((N * 144 * 256) / 256 / 1) }, gamma: f32([256]), cos: f32([4, rot / 2]), sin: f32([4, rot / 2]), kCache: f32([4, 1, 32]), vCache: f32([4, 1, 32]), q: f32([1, 2, 32]) },
        tunables: { ropeKvFuse: 'on', cpuMapping: 'off', ropeKvSplit },
      });
    await expect(run(4 * 32, 16)).rejects.toThrow(/shapeOk/);
    await expect(run(5 * 32, 32)).rejects.toThrow(/shapeOk/);
    await expect(run(3 * 32, 32, 'off')).rejects.toThrow(/splitOk/); // a q|k weight alone, with ropeKvSplit off
  });
});
