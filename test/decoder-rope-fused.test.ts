/**
 * The fused single-token layer with rope and the KV-cache write inside the q|k|v GEMV (linear_rope_kv, tunable
 * ropeKvFuse) against the same layer with linear_fused then rope_kv, on the same random Q4_K weights: both round the
 * q|k|v activations to int8 the same way (cpuMapping off for both contracts, so SwiftShader takes the int8 GEMVs too),
 * so one-token logits agree to float rounding and greedy decoding, which reads every cached key and value the fused
 * epilogue wrote, gives the same tokens. The tunables are set before any plan (plans are cached without them) and
 * stay set while the models run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import type { LoadedModel } from '../src/models/load.ts';
import { randomModel } from '../src/models/random-weights.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { maxRelErr } from './helpers/compare.ts';
import { greedyTokens } from './helpers/greedy.ts';
import { testDevice } from './helpers/device.ts';

const LLAMA = { architectures: ['LlamaForCausalLM'], hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, vocab_size: 384, max_position_embeddings: 256, rms_norm_eps: 1e-5 };

let dev: TesseraDevice;
let rope: LoadedModel;
let plain: LoadedModel;
const saved = process.env.TESSERA_TUNABLES;

function model(label: string): LoadedModel {
  return randomModel(dev, decoderConfigFromHF(LLAMA, 'test config'), 'q4k', { seed: 7, randomNorms: true, f32Embedding: true, decoder: { maxPositions: 64 }, label });
}

beforeAll(async () => {
  dev = await testDevice();
  // first without linear_rope_kv (a rejected plan is not cached), then with it; the tunables stay set while the
  // models run (their programs plan again), and are restored after the file
  process.env.TESSERA_TUNABLES = JSON.stringify({ linear_fused: { cpuMapping: 'off' }, linear: { cpuMapping: 'off' } });
  plain = model('random q4k (linear_fused + rope_kv)');
  process.env.TESSERA_TUNABLES = JSON.stringify({ linear_fused: { cpuMapping: 'off' }, linear: { cpuMapping: 'off' }, linear_rope_kv: { cpuMapping: 'off', ropeKvFuse: 'on' } });
  rope = model('random q4k (linear_rope_kv)');
});
afterAll(() => {
  if (saved === undefined) delete process.env.TESSERA_TUNABLES;
  else process.env.TESSERA_TUNABLES = saved;
});

describe('Llama: q|k|v GEMV with rope and the cache write (linear_rope_kv) vs linear_fused + rope_kv', () => {
  it('every fused layer takes linear_rope_kv when the tunable is on, none otherwise', (ctx) => {
    if (rope.decoder.fusedGemvLayers === 0) ctx.skip(`no fused layers on this device (${dev.caps.adapterInfo.description}): linear_fused needs subgroups; the GPU lane runs it`);
    expect(rope.decoder.ropeFusedLayers).toBe(2);
    expect(plain.decoder.ropeFusedLayers).toBe(0);
    expect(plain.decoder.fusedGemvLayers).toBe(2);
  });

  it('one-token logits agree and greedy decoding gives the same tokens', async (ctx) => {
    if (rope.decoder.ropeFusedLayers === 0) ctx.skip('linear_rope_kv is not accepted on this device (subgroups needed); the GPU lane runs it');
    for (const id of [3, 100, 383]) {
      const a = (await computeLogits(rope, [id])).last;
      const b = (await computeLogits(plain, [id])).last;
      expect(maxRelErr(a, b), `token ${id}`).toBeLessThan(1e-4);
    }
    const a = await greedyTokens(rope, [5, 17, 42], 12);
    expect(a).toHaveLength(12);
    expect(a).toEqual(await greedyTokens(plain, [5, 17, 42], 12));
  });
});
