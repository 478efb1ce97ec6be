/**
 * Fuzz: tokenizer loading (tokenizer.json + tokenizer_config.json + chat template) never crashes and throws only the
 * project's named errors (FormatError and its subclasses), at load and at first use (encode, decode, streaming,
 * chat template), over structural mutations of a small BPE tokenizer and of the shipped tokenizer.json, and byte
 * mutations of the shipped files read from disk.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { mkdtempSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FormatError } from '../src/formats/errors.ts';
import { loadTokenizer, TextTokenizer, type TokenizerConfigJson, type TokenizerJson } from '../src/tokenizer/index.ts';
import { tinyTokenizer } from './fixtures/formats/tiny-bpe.ts';
import { byteMutations, expectOnly, expectOnlyAsync, jsonMutations, mutateBytes, mutateJson, type JsonMutation } from './helpers/fuzz.ts';

const NAMED = [FormatError];
const TEXT = 'Hello world 12345 <|im_start|>héllo\n\t<think>';

/** Load, then use every entry point a generation touches. */
function exercise(tok: TextTokenizer): void {
  const ids = tok.encode(TEXT);
  tok.decode(ids);
  const s = tok.streamDecoder();
  for (const id of ids) s.push(id);
  s.flush();
  tok.decode([0, 1, 2, tok.vocabSize + 5]);
  if (tok.chatTemplateSource !== undefined) tok.applyChatTemplate([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
}

describe('fuzz: tokenizer loading', () => {
  const tiny = tinyTokenizer('llama3');
  const dir = 'test/fixtures/hf/llama';
  const realJson = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const realConfig = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as TokenizerConfigJson;

  it('the unmutated tokenizers load and run', () => {
    exercise(new TextTokenizer(tiny.json, tiny.config));
    exercise(new TextTokenizer(realJson, realConfig));
  });

  // 5,000 + 5,000 + 300 + 300 = 10,600 tokenizer loads in all.
  it('5,000 structural mutations anywhere in a small BPE tokenizer (json + config): only named errors', () => {
    let ok = 0;
    fc.assert(
      fc.property(jsonMutations, (muts) => {
        const { json, config } = (mutateJson(tiny, muts) ?? {}) as { json: TokenizerJson; config: TokenizerConfigJson };
        expectOnly(NAMED, () => {
          exercise(new TextTokenizer(json, config, { origin: 'fuzz' }));
          ok++;
        });
      }),
      { numRuns: 5_000 },
    );
    expect(ok).toBeGreaterThan(0);
  });

  /** Mutate everything but the vocabulary and merges (which hold most nodes), then put them back. */
  function aroundVocab(seed: { json: TokenizerJson; config: TokenizerConfigJson }, muts: JsonMutation[]): { json: TokenizerJson; config: TokenizerConfigJson } {
    const { vocab, merges, ...modelRest } = seed.json.model as { vocab: unknown; merges: unknown };
    const m = (mutateJson({ json: { ...seed.json, model: modelRest }, config: seed.config }, muts) ?? {}) as { json: TokenizerJson; config: TokenizerConfigJson };
    const model = m.json && typeof m.json === 'object' ? (m.json.model as unknown) : undefined;
    const json = model && typeof model === 'object' && !Array.isArray(model) ? { ...m.json, model: { vocab, merges, ...model } } : m.json;
    return { json: json as TokenizerJson, config: m.config };
  }

  it('5,000 structural mutations of the components of a small BPE tokenizer (normalizer, pre-tokenizer, post-processor, decoder, added tokens, config): only named errors', () => {
    fc.assert(
      fc.property(jsonMutations, (muts) => {
        const { json, config } = aroundVocab(tiny, muts);
        expectOnly(NAMED, () => exercise(new TextTokenizer(json, config, { origin: 'fuzz' })));
      }),
      { numRuns: 5_000 },
    );
  });

  it('300 structural mutations of the shipped tokenizer.json and tokenizer_config.json (around the 2048-token vocabulary): only named errors', () => {
    fc.assert(
      fc.property(jsonMutations, (muts) => {
        const { json, config } = aroundVocab({ json: realJson, config: realConfig }, muts);
        expectOnly(NAMED, () => exercise(new TextTokenizer(json, config, { origin: 'fuzz' })));
      }),
      { numRuns: 300 },
    );
  });

  it('300 byte mutations of the shipped tokenizer files read from disk: only named errors', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'tessera-fuzz-tok-'));
    const files = ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'chat_template.jinja'];
    const seeds = files.map((f) => new Uint8Array(readFileSync(join(dir, f))));
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: files.length - 1 }), byteMutations, async (which, muts) => {
        files.forEach((f, i) => (i === which ? writeFileSync(join(tmp, f), mutateBytes(seeds[i]!, muts)) : copyFileSync(join(dir, f), join(tmp, f))));
        await expectOnlyAsync(NAMED, async () => exercise(await loadTokenizer(tmp)));
      }),
      { numRuns: 300 },
    );
  });
});

describe('tokenizer inputs the fuzzer found', () => {
  it('a vocabulary id that is not an integer fails at load, naming the entry (encode used to return strings)', () => {
    const { json, config } = tinyTokenizer();
    (json.model as { vocab: Record<string, unknown> }).vocab.o = '${';
    expect(() => new TextTokenizer(json, config, { origin: 'bad' })).toThrow('bad: field "model.vocab["o"]": id must be an integer from 0 to 4194303, got "${"');
  });

  it('a vocabulary id of 1.9e9 fails at once (the tokenizer library stalled for minutes sizing tables by it)', () => {
    const { json, config } = tinyTokenizer();
    (json.model as { vocab: Record<string, unknown> }).vocab['Ġthe'] = 1890140369;
    const t0 = performance.now();
    expect(() => new TextTokenizer(json, config, { origin: 'bad' })).toThrow(/field "model\.vocab\["Ġthe"\]": id must be an integer/);
    expect(performance.now() - t0).toBeLessThan(500);
  });

  it('a malformed post-processor fails at load as a CorruptFileError (it was a TypeError at the first encode)', () => {
    const { json, config } = tinyTokenizer();
    (json.post_processor as unknown as { single: unknown[] }).single[0] = 0;
    let err: unknown;
    try {
      new TextTokenizer(json, config, { origin: 'bad' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toMatch(/^bad: the tokenizer failed to load \(encoding a probe text\): Cannot use 'in' operator/);
  });

  it('a chat_template that is not a string or list of templates names the field', () => {
    const { json, config } = tinyTokenizer();
    expect(() => new TextTokenizer(json, { ...config, chat_template: [null] as never }, { origin: 'bad' })).toThrow('bad: field "chat_template": must be a string or a list of {name, template}');
  });
});
