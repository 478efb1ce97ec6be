/**
 * A decode session whose KV cache is longer than the attention contract's bound for one-pass attention (shortKeys,
 * variant decode_short) compiles a second decode program on a prefix of the cache (Decoder.decodePrefix) and runs it
 * while the sequence fits there, then the whole cache's program (flash-decoding). Across that switch greedy decoding
 * gives the tokens of a session that runs the whole cache's program at every step (shortKeys 0), on a random Llama in
 * Q4_K (fused layers, as the decode benches run) whose prompt ends 6 positions before the prefix does; a prefix bound
 * to the wrong rows of the cache, or a switch that loses what the prefix program wrote, changes them. Attention's
 * cpuMapping is off so SwiftShader takes these paths too (they are the GPU's); the one-pass kernel itself is checked
 * against the CPU reference in kernels-attention-split.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import type { LoadedModel } from '../src/models/load.ts';
import { randomModel } from '../src/models/random-weights.ts';
import { decodeTokens } from '../src/runtime/decode-loop.ts';
import { resolveGenerationOptions } from '../src/runtime/options.ts';
import type { DecodeSession } from '../src/runtime/session.ts';
import { testDevice } from './helpers/device.ts';
import { tunablesSwitch } from './helpers/tunables.ts';

let dev: TesseraDevice;
const tun = tunablesSwitch();
const tunables = (attention: Record<string, string | number>) => tun.set({ attention: { cpuMapping: 'off', ...attention } });
beforeAll(async () => {
  dev = await testDevice();
});
afterAll(tun.restore);

const LLAMA = { architectures: ['LlamaForCausalLM'], hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, vocab_size: 384, max_position_embeddings: 512, rms_norm_eps: 1e-5 };

/** Greedy tokens after `prompt`, and the labels of the programs the session compiled. */
async function generate(model: LoadedModel, prompt: number[], maxTokens: number, topP: number): Promise<{ ids: number[]; programs: string[] }> {
  const ids: number[] = [];
  let session: DecodeSession | undefined;
  // topP (no effect at temperature 0) keys the session cache: each call gets a session of its own, made under the
  // tunables set now
  const opts = resolveGenerationOptions({ ignoreEos: true, maxTokens, temperature: 0, topP }, { eosTokenIds: [] });
  for await (const t of decodeTokens(model.decoder, prompt, opts, { onSession: (s) => (session = s) })) ids.push(t.id);
  return { ids, programs: session!.programs().map((p) => p.label).sort() };
}

describe('decode on a prefix of the cache (one-pass attention), then on the whole cache', () => {
  let model: LoadedModel;
  beforeAll(() => {
    tunables({});
    const cfg = decoderConfigFromHF(LLAMA, 'test config');
    model = randomModel(dev, cfg, 'q4k', { seed: 11, randomNorms: true, f32Embedding: true, decoder: { maxPositions: 512 }, label: 'random q4k' });
  });
  afterAll(() => model.decoder.destroy());

  it('a cache of 512 positions has a prefix of 256 where attention runs decode_short; 256 positions have none', () => {
    tunables({});
    expect(model.decoder.decodePrefix(512)).toBe(256);
    expect(model.decoder.decodePrefix(256)).toBeUndefined();
    tunables({ shortKeys: 0 });
    expect(model.decoder.decodePrefix(512)).toBeUndefined();
  });

  it('greedy tokens across the switch equal those of the whole cache at every step', async () => {
    const prompt = Array.from({ length: 250 }, (_, i) => (i * 37 + 11) % LLAMA.vocab_size);
    // 250 + 20 positions: a cache of 512; steps at positions 250 to 255 on the prefix, 256 to 268 on the whole cache
    tunables({});
    const a = await generate(model, prompt, 20, 0.99);
    expect(a.programs).toEqual(['decode', 'decode.P256', 'prefill.T256']);
    tunables({ shortKeys: 0 });
    const b = await generate(model, prompt, 20, 0.98);
    expect(b.programs).toEqual(['decode', 'prefill.T256']);
    expect(a.ids).toHaveLength(20);
    expect(new Set(a.ids).size).toBeGreaterThan(1);
    expect(a.ids).toEqual(b.ids);
  });
});
