/**
 * Fuzz: model configs (HF config.json and GGUF metadata) are refused only with the project's named errors, and
 * quickly, over structural mutations of the shipped fixtures' configs (huge, zero, negative, fractional and wrongly
 * typed values anywhere): nothing sized by a config is allocated before its bounds are checked.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { decoderConfigFromHF } from '../src/models/config.ts';
import { ModelConfigError, UnsupportedArchitectureError } from '../src/models/errors.ts';
import { hfConfigFromGguf } from '../src/models/gguf-map.ts';
import { expectOnly, jsonMutations, mutateJson } from './helpers/fuzz.ts';

const NAMED = [ModelConfigError, UnsupportedArchitectureError];
const configs = ['llama', 'qwen2', 'qwen3', 'gemma3'].map((n) => JSON.parse(readFileSync(`test/fixtures/hf/${n}/config.json`, 'utf8')) as Record<string, unknown>);
const ggufMeta: Record<string, unknown> = {
  'general.architecture': 'gemma3',
  'gemma3.block_count': 2,
  'gemma3.embedding_length': 64,
  'gemma3.feed_forward_length': 128,
  'gemma3.attention.head_count': 4,
  'gemma3.attention.head_count_kv': 2,
  'gemma3.attention.key_length': 16,
  'gemma3.context_length': 512,
  'gemma3.attention.sliding_window': 8,
  'gemma3.rope.freq_base': 10000,
  'gemma3.attention.layer_norm_rms_epsilon': 1e-6,
  'gemma3.vocab_size': 2048,
  'tokenizer.ggml.eos_token_id': 1,
};

describe('fuzz: model configs', () => {
  it('5,000 mutated config.json files: only named errors, each under 250 ms', () => {
    fc.assert(
      fc.property(fc.nat({ max: configs.length - 1 }), jsonMutations, (i, muts) => {
        const cfg = mutateJson(configs[i], muts);
        const t0 = performance.now();
        expectOnly(NAMED, () => decoderConfigFromHF(cfg as Record<string, unknown>, 'fuzz/config.json'));
        // a pathological parse takes seconds; a garbage-collection pause on a loaded machine reached 58 ms
        expect(performance.now() - t0).toBeLessThan(250);
      }),
      { numRuns: 5_000 },
    );
  });

  it('5,000 mutated GGUF metadata maps (numbers, bigints, strings in any key): only named errors', () => {
    const value = fc.oneof(fc.integer(), fc.double(), fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }), fc.string(), fc.constantFrom(0, 1e9, 2 ** 32, -1, 0.5, null, undefined, [], 'llama'));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...Object.keys(ggufMeta), 'gemma3.final_logit_softcapping', 'gemma3.rope.scaling.type'), value), { maxLength: 3 }), (edits) => {
        const meta = { ...ggufMeta, ...Object.fromEntries(edits) };
        expectOnly(NAMED, () => decoderConfigFromHF(hfConfigFromGguf(meta, 'fuzz.gguf').config, 'fuzz.gguf (GGUF metadata)'));
      }),
      { numRuns: 5_000 },
    );
  });
});

describe('config inputs the fuzzer found', () => {
  it.each(['__proto__', 'constructor', 'toString'])('architectures ["%s"] is an unsupported architecture (was a TypeError from a prototype lookup)', (arch) => {
    expect(() => decoderConfigFromHF({ ...configs[0], architectures: [arch] }, 'c.json')).toThrow(UnsupportedArchitectureError);
    expect(() => hfConfigFromGguf({ ...ggufMeta, 'general.architecture': arch }, 'm.gguf')).toThrow(UnsupportedArchitectureError);
  });

  it('a config that is not an object is a ModelConfigError', () => {
    for (const v of [undefined, null, [], 'x']) expect(() => decoderConfigFromHF(v as never, 'c.json')).toThrow('c.json: (file): must hold a JSON object');
  });
});
