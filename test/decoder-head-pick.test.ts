/**
 * The LM head picking the greedy token itself (linear_fused q8a_norm_argmax, tunable headArgmax) against the sample
 * op picking it from the head's logits, on the same random Q4_K model: the same tokens over a greedy decode (each step
 * reads the token the last one's head wrote into the sampler state), no sample op in the decode step, and the
 * sampling paths that need the logits (temperature, a repetition penalty) keep the sample op. cpuMapping is off for
 * the int8 GEMVs, so SwiftShader runs it too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import type { LoadedModel } from '../src/models/load.ts';
import { randomModel } from '../src/models/random-weights.ts';
import { acquireSession, releaseSession, type DecodeSession } from '../src/runtime/session.ts';
import { greedyTokens } from './helpers/greedy.ts';
import { testDevice } from './helpers/device.ts';
import { tunablesSwitch } from './helpers/tunables.ts';

// a vocabulary over 8192 rows: the head is linear_fused's q8a_norm_fused GEMV (many workgroups, so many tickets)
const LLAMA = { architectures: ['LlamaForCausalLM'], hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 64, vocab_size: 8320, max_position_embeddings: 256, rms_norm_eps: 1e-5 };
const INT8 = { linear_fused: { cpuMapping: 'off' }, linear: { cpuMapping: 'off' }, linear_rope_kv: { cpuMapping: 'off' }, linear_glu_q8: { cpuMapping: 'off' }, linear_q8: { cpuMapping: 'off' } };
const PICK = { ...INT8, linear_fused: { cpuMapping: 'off', headArgmax: 'on' } };

let dev: TesseraDevice;
let pickModel: LoadedModel;
let plainModel: LoadedModel;
const tun = tunablesSwitch();

function model(label: string, tunables: object): LoadedModel {
  tun.set(tunables);
  return randomModel(dev, decoderConfigFromHF(LLAMA, 'test config'), 'q4k', { seed: 11, randomNorms: true, f32Embedding: true, decoder: { maxPositions: 64 }, label });
}

beforeAll(async () => {
  dev = await testDevice();
  plainModel = model('random q4k (sample op)', INT8);
  pickModel = model('random q4k (head pick)', PICK);
});
afterAll(tun.restore);

describe('the LM head picking the greedy token (headArgmax)', () => {
  it('greedy decoding gives the sample op\'s tokens, with no sample op in the step', async (ctx) => {
    tun.set(PICK);
    let session: DecodeSession | undefined;
    const a = await greedyTokens(pickModel, [5, 17, 42], 16, (s) => (session = s));
    if (!session!.headPicks) ctx.skip(`the head GEMV does not pick here (linear_fused q8a_norm_argmax needs subgroups of 8+ lanes or a fixed size dividing 8; ${dev.caps.adapterInfo.description}); the GPU lane runs it`);
    tun.set(INT8);
    let plain: DecodeSession | undefined;
    const b = await greedyTokens(plainModel, [5, 17, 42], 16, (s) => (plain = s));
    expect(plain!.headPicks).toBe(false);
    expect(a).toHaveLength(16);
    // the decode program's calls: the same but for the sample op
    const decodeCalls = (s: DecodeSession) => s.programs().filter((p) => p.label.startsWith('decode')).map((p) => p.stats.calls);
    expect(decodeCalls(session!).length).toBeGreaterThan(0);
    expect(decodeCalls(session!)).toEqual(decodeCalls(plain!).map((n) => n - 1));
    expect(a).toEqual(b);
  });

  it('sampling that needs the logits keeps the sample op', (ctx) => {
    tun.set(PICK);
    const session = (sampling: { temperature: number; topK: number; topP: number; repetitionPenalty: number }) => {
      const s = acquireSession(pickModel.decoder, sampling, 64);
      releaseSession(s);
      return s.headPicks;
    };
    if (!session({ temperature: 0, topK: 0, topP: 1, repetitionPenalty: 1 })) ctx.skip(`the head GEMV does not pick here (${dev.caps.adapterInfo.description}); the GPU lane runs it`);
    expect(session({ temperature: 0.7, topK: 40, topP: 1, repetitionPenalty: 1 })).toBe(false);
    expect(session({ temperature: 0, topK: 0, topP: 1, repetitionPenalty: 1.1 })).toBe(false);
  });
});
