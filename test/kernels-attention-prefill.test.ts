/**
 * Prefill attention, flash style (attention-prefill.wgsl.jinja: 32 query rows of one KV head's group per workgroup,
 * K/V blocks staged in workgroup memory, online softmax) against the CPU reference: GQA groups of 1, 2, 4 and 8
 * heads, head dims 32 to 256, f32 and f16 caches (f16 read as u32 words), a prompt continuing a cache (start > 0),
 * softcap, a sliding window, bidirectional attention, and token counts that leave the last tile part empty; the same
 * semantics on subgroup matrices (attention-prefill-sgmat.wgsl.jinja, f16 caches) where the device has them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ContractError } from '../src/contracts/index.ts';
import { runContract } from '../src/contracts/run.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { attentionRef, attentionUniforms } from '../src/reference/attention.ts';
import { opContract } from '../src/selftest/launch.ts';
import { Rng } from '../src/selftest/rng.ts';
import { maxRelErr } from './helpers/compare.ts';
import { attentionCase } from './helpers/attention-inputs.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

describe('attention prefill_flash', () => {
  it.for([
    // tokens, heads, kv heads, head dim, capacity, start, cache, softcap, window, causal
    [37, 4, 4, 64, 64, 0, 'float32', 0, 0, 1],
    [70, 8, 2, 128, 128, 0, 'float16', 0, 0, 1],
    [19, 8, 1, 32, 300, 200, 'float16', 0, 0, 1],
    [33, 4, 2, 256, 40, 0, 'float32', 30, 0, 1],
    [50, 16, 8, 64, 80, 10, 'float16', 0, 17, 1],
    [24, 4, 1, 128, 24, 0, 'float32', 0, 0, 0],
  ] as const)('T=%i H=%i Hkv=%i D=%i capacity %i start %i %s softcap %i window %i causal %i', async ([T, H, Hkv, D, cap, start, kvDt, softcap, win, causal], ctx) => {
    const r = new Rng(`attention-prefill/${T}/${H}/${Hkv}/${D}/${start}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, kvDt);
    let res;
    try {
      res = await runContract(dev, opContract('attention'), {
        inputs: c.inputs,
        attributes: { start_pos: start, kv_len: start + T, softcap, sliding_window: win, causal },
        tunables: { prefillFlash: 'on', cpuMapping: 'off' },
        variant: 'prefill_flash',
      });
    } catch (e) {
      // only a device without subgroups may skip
      if (e instanceof ContractError && e.rejected.every((x) => x.kind === 'requires')) {
        ctx.skip(`prefill_flash does not run here (${e.rejected.map((x) => x.reason).join('; ')}); the GPU lane runs it`);
        return;
      }
      throw e;
    }
    const G = H / Hkv;
    expect(res.plan.passes.map((p) => p.dispatch)).toEqual([[Math.ceil(T / (32 / G)), Hkv, 1]]);
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start, attn_softcap: softcap, sliding_window: win, is_causal: causal });
    expect(maxRelErr(res.outputs.out!.data as Float32Array, attentionRef(u, c.ref as never))).toBeLessThan(1e-5);
  });
});

describe('attention prefill_sgmat (subgroup matrices)', () => {
  it.for([
    // tokens, heads, kv heads, head dim, capacity, start, softcap, window, causal, query rows per workgroup
    [37, 4, 4, 64, 64, 0, 0, 0, 1, 64],
    [70, 8, 2, 128, 128, 0, 0, 0, 1, 64],
    [19, 8, 1, 128, 250, 200, 0, 0, 1, 64],
    [130, 32, 8, 128, 256, 0, 30, 0, 1, 64],
    [50, 16, 8, 64, 128, 10, 0, 17, 1, 64],
    [24, 4, 1, 128, 64, 0, 0, 0, 0, 64],
    [300, 8, 8, 128, 512, 40, 0, 0, 1, 64],
    [90, 16, 4, 64, 100, 5, 0, 40, 1, 64],
    [130, 32, 8, 128, 256, 0, 30, 0, 1, 128],
    [300, 8, 8, 128, 512, 40, 0, 0, 1, 128],
    [19, 8, 1, 128, 250, 200, 0, 0, 1, 128],
    [90, 16, 4, 64, 100, 5, 0, 40, 1, 128],
  ] as const)('T=%i H=%i Hkv=%i D=%i capacity %i start %i softcap %i window %i causal %i rows %i', async ([T, H, Hkv, D, cap, start, softcap, win, causal, rows], ctx) => {
    const r = new Rng(`attention-prefill-sgmat/${T}/${H}/${Hkv}/${D}/${start}`);
    const c = attentionCase(r, T, H, Hkv, D, cap, 'float16');
    let res;
    try {
      res = await runContract(dev, opContract('attention'), {
        inputs: c.inputs,
        attributes: { start_pos: start, kv_len: start + T, softcap, sliding_window: win, causal },
        tunables: { prefillSgmat: 'on', prefillSgmatRows: rows, cpuMapping: 'off' },
        variant: 'prefill_sgmat',
      });
    } catch (e) {
      // only a device without the features may skip (wave32 is a `when` on the subgroup size)
      if (e instanceof ContractError && e.rejected.every((x) => x.kind === 'requires' || /wave32/.test(x.reason))) {
        ctx.skip(`prefill_sgmat does not run here (${e.rejected.map((x) => x.reason).join('; ')}); the GPU lane runs it`);
        return;
      }
      throw e;
    }
    const G = H / Hkv;
    expect(res.plan.passes.map((p) => p.dispatch)).toEqual([[Math.ceil(T / (rows / G)), Hkv, 1]]);
    const u = attentionUniforms({ num_heads: H, num_kv_heads: Hkv, head_dim: D, kv_len: start + T, seq_len: T, start_pos: start, attn_softcap: softcap, sliding_window: win, is_causal: causal });
    // queries and softmax weights rounded to f16 (2^-11 relative each), f32 accumulation
    expect(maxRelErr(res.outputs.out!.data as Float32Array, attentionRef(u, c.ref as never))).toBeLessThan(5e-3);
  });
});
