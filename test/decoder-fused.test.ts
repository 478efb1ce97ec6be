/**
 * The fused single-token layer (linear_fused: input norm in the q|k|v GEMV, residual adds in the o_proj and down_proj
 * GEMVs, post-attention norm in the gate|up GEMV, SwiGLU in the down_proj GEMV) against the separate ops it replaces,
 * on the same random Q4_K weights (random norm weights, so the norm prologue's gamma matters): one-token logits agree
 * to float rounding (1e-5 of the largest logit) and greedy decoding gives the same tokens. The separate ops are checked against their CPU
 * references and transformers elsewhere (kernel and model tests). On Q8_0 weights the fused layers in int8 rows mode
 * (tunable gemvQ80Int8) agree with the separate f32-activation ops to the int8 rounding of the activations. On
 * llama.cpp's Q4_K_M mix (v_proj and down_proj of every third layer, and the LM head, in Q6_K) the layers whose v_proj
 * differs in format run q|k and v as two GEMVs into one q|k|v row (or, with tunable ropeKvSplit, each with rope and the
 * cache write of its heads: decoder-fused-variants.test.ts), and agree with the separate ops the same way, one
 * token at a time over the cache they write (the decode step at positions 0 to 5). On f16 weights the glu and rmsnorm
 * prologues in passes of their own (linear_fused glu_pass and norm_pass, tunables gluPass and normPass) agree with the
 * prologues in the GEMVs to float rounding, in the one-token logits and in greedy decoding (the compiled step).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveContract } from '../src/contracts/index.ts';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import type { LoadedModel } from '../src/models/load.ts';
import { RANDOM_QUANTS, randomModel, randomWeights } from '../src/models/random-weights.ts';
import { readBuffer } from '../src/gpu/buffers.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { opContract } from '../src/selftest/launch.ts';
import { maxRelErr } from './helpers/compare.ts';
import { greedyTokens } from './helpers/greedy.ts';
import { testDevice } from './helpers/device.ts';
import { tunablesSwitch, withTunables } from './helpers/tunables.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const LLAMA = { architectures: ['LlamaForCausalLM'], hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, vocab_size: 384, max_position_embeddings: 256, rms_norm_eps: 1e-5 };
// Qwen3: q/k norms between the q|k|v GEMV and rope
const QWEN3 = { ...LLAMA, architectures: ['Qwen3ForCausalLM'], num_key_value_heads: 4, tie_word_embeddings: true };

/** For each token id, the largest relative error of model a's one-token logits against model b's. */
async function oneTokenErrors(a: LoadedModel, b: LoadedModel, ids = [3, 100, 383]): Promise<[number, number][]> {
  const out: [number, number][] = [];
  for (const id of ids) out.push([id, maxRelErr((await computeLogits(a, [id])).last, (await computeLogits(b, [id])).last)]);
  return out;
}

function model(hf: Record<string, unknown>, fuse: boolean): LoadedModel {
  const cfg = decoderConfigFromHF(hf, 'test config');
  return randomModel(dev, cfg, 'q4k', { seed: 7, randomNorms: true, f32Embedding: true, decoder: { maxPositions: 64, fuseGemv: fuse }, label: `random q4k (fuseGemv ${fuse})` });
}

describe('random weights: the tensors fused at load have values of their own', () => {
  // a decoder that swapped gate and up (or k and v) in its fused GEMVs must see different logits, so up_proj and v_proj
  // may not repeat gate_proj's and k_proj's values (they did: one salt and one pool start for every tensor)
  it.each(RANDOM_QUANTS)('%s', async (quant) => {
    const w = randomWeights(dev, decoderConfigFromHF(LLAMA, 'test config'), quant, { seed: 7 });
    try {
      const bytes = async (name: string) => new Uint8Array(await readBuffer(dev.device, w.get(`model.layers.1.${name}.weight`).buffer));
      for (const [a, b] of [['mlp.gate_proj', 'mlp.up_proj'], ['self_attn.k_proj', 'self_attn.v_proj']]) {
        const x = await bytes(a!);
        const y = await bytes(b!);
        expect(y.length).toBe(x.length);
        let same = 0;
        for (let i = 0; i < x.length; i++) same += x[i] === y[i] ? 1 : 0;
        // block headers (scales) are shared by construction; the payload differs
        expect(same / x.length, `${b} against ${a}`).toBeLessThan(0.2);
      }
    } finally {
      w.destroy();
    }
  });
});

describe.each([
  ['Llama', LLAMA],
  ['Qwen3', QWEN3],
])('%s: fused single-token layers (linear_fused) vs the separate ops', (_name, hf) => {
  let fused: LoadedModel;
  let separate: LoadedModel;
  beforeAll(async () => {
    // the fused layers that round as the separate ops do (gate|up on o_proj's norm handoff rounds runs of 16, not
    // blocks of 32: decoder-fused-variants.test.ts compares it)
    await withTunables({ linear_glu_q8: { normHandoff: 'off' } }, () => {
      fused = model(hf, true);
      separate = model(hf, false);
    });
  });

  it('every layer runs fused where the contract accepts it, none when turned off', () => {
    expect(fused.decoder.fusedGemvLayers).toBe(2);
    expect(separate.decoder.fusedGemvLayers).toBe(0);
  });

  it('one-token logits agree', async () => {
    // float rounding (the fused and the separate kernels sum in different orders; zero-mean random weights cancel):
    // ~1e-6 on SwiftShader, 1-2e-5 on the H200 (1433676); a norm weight read at the wrong index gives ~1
    for (const [id, err] of await oneTokenErrors(fused, separate)) expect(err, `token ${id}`).toBeLessThan(1e-4);
  });

  it('greedy decoding gives the same tokens', async () => {
    const a = await greedyTokens(fused, [5, 17, 42], 10);
    expect(a).toHaveLength(10);
    expect(a).toEqual(await greedyTokens(separate, [5, 17, 42], 10));
  });
});

describe('Llama on Q8_0 weights: fused layers in int8 rows mode (gemvQ80Int8) vs the separate ops', () => {
  const tun = tunablesSwitch();
  // the fused layers' GEMVs on int8 activations (linear_fused q80_*_rows, and the LM head: linear q80_rows); the
  // separate ops on f32 activations (their one-row linears would take linear's int8 GEMV too), on every device
  const tunables = { linear_fused: { gemvQ80Int8: 'on', cpuMapping: 'off' }, linear: { gemvQ80Int8: 'on', cpuMapping: 'off' } };
  const f32Acts = { linear_fused: { gemvQ80Int8: 'off', cpuMapping: 'off' }, linear: { gemvQ80Int8: 'off', cpuMapping: 'off' } };
  let fused: LoadedModel;
  let separate: LoadedModel;
  beforeAll(() => {
    tun.set(tunables);
    const cfg = decoderConfigFromHF(LLAMA, 'test config');
    const build = (fuse: boolean) => randomModel(dev, cfg, 'q8_0', { seed: 7, randomNorms: true, f32Embedding: true, decoder: { maxPositions: 64, fuseGemv: fuse }, label: `random q8_0 (fuseGemv ${fuse})` });
    fused = build(true);
    separate = build(false);
  });
  afterAll(tun.restore);

  it('one-token logits agree to the int8 rounding of the activations', async (ctx) => {
    if (fused.decoder.fusedGemvLayers === 0) ctx.skip(`no fused layers on this device (${dev.caps.adapterInfo.description}): linear_fused needs subgroups; the GPU lane runs it`);
    expect(fused.decoder.fusedGemvLayers).toBe(2);
    for (const id of [3, 100, 383]) {
      tun.set(tunables);
      const a = (await computeLogits(fused, [id])).last;
      tun.set(f32Acts);
      const b = (await computeLogits(separate, [id])).last;
      // activations rounded to int8 per block of 32 (2^-8 of a block's largest value) in four GEMVs a layer: a few
      // 1e-3 of the largest logit; a wrong block scale or word offset gives ~1
      const err = maxRelErr(a, b);
      expect(err, `token ${id}`).toBeLessThan(3e-2);
      // and the int8 path ran: the f32 one agrees with the separate ops to float rounding (~1e-6)
      expect(err, `token ${id}`).toBeGreaterThan(1e-5);
    }
  });
});

describe("Llama on llama.cpp's Q4_K_M mix of Q4_K and Q6_K: fused layers with q|k and v apart vs the separate ops", () => {
  // 3 layers: layer 2 keeps v_proj and down_proj in Q6_K (q4kmKeepsQ6K), as does the LM head; K = 512 and 1024 reach
  // the Q6_K int8 rows GEMV (K a multiple of 512) where the device has it
  const cfg = decoderConfigFromHF({ ...LLAMA, hidden_size: 512, intermediate_size: 1024, num_hidden_layers: 3 }, 'test config');
  let fused: LoadedModel;
  let separate: LoadedModel;
  beforeAll(() => {
    const build = (fuse: boolean) => randomModel(dev, cfg, 'q4k_m', { seed: 7, randomNorms: true, f32Embedding: true, decoder: { maxPositions: 64, fuseGemv: fuse }, label: `random q4k_m (fuseGemv ${fuse})` });
    fused = build(true);
    separate = build(false);
  });

  it('the Q6_K layer runs fused, its q|k and v as two GEMVs', () => {
    expect(fused.weights.storage).toEqual({ q4_k: 19, q6_k: 3 });
    expect(fused.decoder.fusedGemvLayers).toBe(3);
    expect(fused.decoder.splitQkvLayers).toBe(1);
    expect(separate.decoder.fusedGemvLayers).toBe(0);
  });

  it('one-token logits agree', async () => {
    // f32 activations throughout where the device lacks the int8 GEMVs (~1e-6); int8 ones in the fused GEMVs a few
    // 1e-3 (see the Q8_0 case); v written at the wrong offset or with the wrong norm gives ~1
    for (const [id, err] of await oneTokenErrors(fused, separate)) expect(err, `token ${id}`).toBeLessThan(3e-2);
  });

  it('token by token (the decode step, positions 0 to 5) the logits agree with the separate ops at every position', async () => {
    const ids = [5, 17, 42, 100, 7, 250];
    // the fused single-token layers over the cache they write vs the separate ops' prefill of the whole sequence
    const a = (await computeLogits(fused, ids, { tokenByToken: true })).all;
    const b = (await computeLogits(separate, ids)).all;
    const V = cfg.vocabSize;
    for (let t = 0; t < ids.length; t++) expect(maxRelErr(a.subarray(t * V, (t + 1) * V), b.subarray(t * V, (t + 1) * V)), `position ${t}`).toBeLessThan(3e-2);
  });
});

describe('Llama on f16 weights: the glu and rmsnorm prologues in passes of their own (gluPass, normPass) vs in the GEMVs', () => {
  // each model is built and run under its own tunables: the passes write act(gate) * up and rmsnorm(x) * gamma into a
  // scratch row that the compiled step's activations share by liveness; the same sums in another order
  // (linear's CPU mapping has no f16 GEMV: the prompt's rows take f16_gemv_sg, as on a GPU)
  const passes = { linear_fused: { gluPass: 'on', normPass: 'on', cpuMapping: 'off' }, linear: { cpuMapping: 'off' } };
  const prologues = { linear_fused: { gluPass: 'off', normPass: 'off', cpuMapping: 'off' }, linear: { cpuMapping: 'off' } };
  const cfg = decoderConfigFromHF(LLAMA, 'test config');
  const build = (label: string) => randomModel(dev, cfg, 'f16', { seed: 7, randomNorms: true, f32Embedding: true, decoder: { maxPositions: 64 }, label: `random f16 (${label})` });
  let a: LoadedModel;
  let b: LoadedModel;
  beforeAll(async () => {
    a = await withTunables(passes, () => build('prologue passes'));
    b = await withTunables(prologues, () => build('prologues in the GEMVs'));
  });

  it('takes glu_pass and norm_pass where asked', async (ctx) => {
    if (a.decoder.fusedGemvLayers === 0) ctx.skip(`no fused layers on this device (${dev.caps.adapterInfo.description}): linear_fused needs subgroups; the GPU lane runs it`);
    const plan = (prologue: string, x: number[], w: number[], extra: object) =>
      resolveContract(opContract('linear_fused'), { shapes: { x, w, y: [1, w[0]!], ...extra }, dtypes: { w: 'float16' }, attributes: { prologue }, tunables: passes.linear_fused, device: dev.caps } as never).variant;
    const H = cfg.hiddenSize;
    const I = cfg.intermediateSize;
    expect(plan('glu', [1, 2 * I], [H, I], {})).toBe('glu_pass');
    expect(plan('rmsnorm', [1, H], [2 * I, H], { gamma: [H] })).toBe('norm_pass');
  });

  it('one-token logits agree and greedy decoding gives the same tokens', async (ctx) => {
    if (a.decoder.fusedGemvLayers === 0) ctx.skip(`no fused layers on this device (${dev.caps.adapterInfo.description}): linear_fused needs subgroups; the GPU lane runs it`);
    expect(a.decoder.fusedGemvLayers).toBe(2);
    for (const id of [3, 100, 383]) {
      const la = await withTunables(passes, async () => (await computeLogits(a, [id])).last);
      const lb = await withTunables(prologues, async () => (await computeLogits(b, [id])).last);
      // float rounding (~1e-6); a pass that wrote the wrong row or skipped gamma gives ~1
      expect(maxRelErr(la, lb), `token ${id}`).toBeLessThan(1e-4);
    }
    const ta = await withTunables(passes, () => greedyTokens(a, [5, 17, 42], 10));
    expect(ta).toHaveLength(10);
    expect(ta).toEqual(await withTunables(prologues, () => greedyTokens(b, [5, 17, 42], 10)));
  });
});
