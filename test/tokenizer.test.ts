import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChatTemplateError, MissingFileError } from '../src/formats/errors.ts';
import { loadTokenizer, TextTokenizer } from '../src/tokenizer/tokenizer.ts';
import type { TokenizerConfigJson, TokenizerJson } from '../src/tokenizer/types.ts';
import { tinyTokenizer } from './fixtures/formats/tiny-bpe.ts';

// Ids of the hand-built vocabulary (see fixtures/formats/tiny-bpe.ts): bytes 0..255, then merges.
const HELLO = 259, G_WORLD = 264, BOS = 273, EOS = 274, IM_START = 275, IM_END = 276, THINK = 277;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-tok-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeModelDir(extra: Record<string, unknown> = {}): Promise<void> {
  const { json, config } = tinyTokenizer();
  await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(json));
  await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  for (const [name, content] of Object.entries(extra)) {
    await writeFile(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
  }
}

describe('loadTokenizer', () => {
  it('encodes and decodes with the BPE merges, BOS and special tokens', async () => {
    await writeModelDir({ 'generation_config.json': { eos_token_id: [EOS, IM_END] } });
    const tok = await loadTokenizer(dir);
    expect(tok.bosTokenId).toBe(BOS);
    expect(tok.eosTokenIds).toEqual([EOS, IM_END]);
    expect(tok.vocabSize).toBe(278);
    expect(tok.encode('Hello world')).toEqual([BOS, HELLO, G_WORLD]);
    expect(tok.encode('Hello world', { addSpecialTokens: false })).toEqual([HELLO, G_WORLD]);
    // "!" is byte 0x21, which maps to itself and has id 0x21 in this vocabulary
    expect(tok.encode('Hello!', { addSpecialTokens: false })).toEqual([HELLO, 0x21]);
    // special and user-defined added tokens in text are single ids
    expect(tok.encode('<|im_start|>Hello<think>', { addSpecialTokens: false })).toEqual([IM_START, HELLO, THINK]);
    expect(tok.decode([BOS, HELLO, G_WORLD, EOS])).toBe('<|bos|>Hello world<|eos|>');
    expect(tok.decode([BOS, HELLO, G_WORLD, EOS], { skipSpecialTokens: true })).toBe('Hello world');
    expect(tok.decode([])).toBe('');
    expect(tok.isSpecial(IM_END)).toBe(true);
    expect(tok.isSpecial(THINK)).toBe(false);
    expect(tok.isEos(IM_END)).toBe(true);
  });

  it('round-trips arbitrary UTF-8 through byte-level BPE', async () => {
    await writeModelDir();
    const tok = await loadTokenizer(dir);
    const text = 'héllo wörld 😀 12345\n\ttabs  and  spaces';
    const ids = tok.encode(text, { addSpecialTokens: false });
    expect(tok.decode(ids)).toBe(text);
    // "é" is two bytes, so two byte tokens
    expect(tok.encode('é', { addSpecialTokens: false })).toHaveLength(2);
  });

  it('fails with the path when tokenizer.json is missing', async () => {
    const err = await loadTokenizer(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingFileError);
    expect((err as Error).message).toContain(join(dir, 'tokenizer.json'));
  });

  it('rejects a bos_token that is not in the vocabulary', () => {
    const { json, config } = tinyTokenizer();
    expect(() => new TextTokenizer(json, { ...config, bos_token: '<s>' }, { origin: 'x/tokenizer_config.json' })).toThrow(
      /x\/tokenizer_config.json: field "bos_token": token "<s>" is not in the vocabulary/,
    );
  });
});

describe('streamDecoder', () => {
  it('emits only complete characters and reproduces the text', async () => {
    await writeModelDir();
    const tok = await loadTokenizer(dir);
    const text = 'Hello wörld 😀!';
    const ids = tok.encode(text, { addSpecialTokens: false });
    const stream = tok.streamDecoder();
    const chunks = ids.map((id) => stream.push(id));
    chunks.push(stream.flush());
    expect(chunks.join('')).toBe(text);
    expect(stream.text).toBe(text);
    expect(chunks.some((c) => c.includes('\uFFFD'))).toBe(false);
    // " 😀!" has no merges: tokens Ġ, F0, 9F, 98, 80, "!". The first three emoji bytes complete
    // nothing; the fourth emits the emoji.
    expect(ids.slice(-6, -1).map((id) => tok.idToToken(id))).toEqual(['Ġ', 'ð', 'Ł', 'ĺ', 'Ģ']);
    expect(chunks.slice(-7, -1)).toEqual([' ', '', '', '', '😀', '!']);
  });

  it('skips special tokens when asked', async () => {
    await writeModelDir();
    const tok = await loadTokenizer(dir);
    const stream = tok.streamDecoder({ skipSpecialTokens: true });
    const out = [IM_START, HELLO, G_WORLD, IM_END].map((id) => stream.push(id)).join('') + stream.flush();
    expect(out).toBe('Hello world');
  });
});

describe('applyChatTemplate', () => {
  const messages = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
  ];

  it('renders tokenizer_config.json chat_template with special tokens', async () => {
    await writeModelDir();
    const tok = await loadTokenizer(dir);
    expect(tok.applyChatTemplate(messages, { addGenerationPrompt: true })).toBe(
      '<|bos|><|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(tok.applyChatTemplate(messages)).not.toContain('assistant');
    // the rendered prompt tokenizes markers as single ids (no BOS added twice)
    const ids = tok.encode(tok.applyChatTemplate(messages), { addSpecialTokens: false });
    expect(ids[0]).toBe(BOS);
    expect(ids[1]).toBe(IM_START);
  });

  it('turns raise_exception into a ChatTemplateError naming the origin', async () => {
    await writeModelDir();
    const tok = await loadTokenizer(dir);
    const err = (() => {
      try {
        tok.applyChatTemplate([{ role: 'robot', content: 'x' }]);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ChatTemplateError);
    expect((err as Error).message).toContain(dir);
    expect((err as Error).message).toContain('unknown role: robot');
  });

  it('prefers chat_template.jinja over tokenizer_config.json', async () => {
    await writeModelDir({ 'chat_template.jinja': '{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}' });
    const tok = await loadTokenizer(dir);
    expect(tok.applyChatTemplate(messages)).toBe('[system]Be brief.[user]Hi');
  });

  it('says so when there is no template', () => {
    const { json, config } = tinyTokenizer();
    const tok = new TextTokenizer(json, { ...config, chat_template: undefined }, { origin: 'm' });
    expect(() => tok.applyChatTemplate(messages)).toThrow(/m: field "chat_template": this tokenizer has no chat template/);
  });
});

describe('encodePair', () => {
  // the bert_cls fixture (scripts/fixtures/make_encoder_fixtures.py): pair template [CLS] $A [SEP] $B:1 [SEP]:1, saved
  // by transformers 5 with tokenizer_class TokenizersBackend
  const json = JSON.parse(readFileSync('test/fixtures/hf/bert_cls/tokenizer.json', 'utf8')) as TokenizerJson;
  const config = JSON.parse(readFileSync('test/fixtures/hf/bert_cls/tokenizer_config.json', 'utf8')) as TokenizerConfigJson;
  const tok = (c: TokenizerConfigJson) => new TextTokenizer(json, c, { origin: 'bert_cls' });

  it("joins a pair as the post-processor does, with the post-processor's token types", () => {
    const t = tok(config);
    const q = t.encode('where was the word', { addSpecialTokens: false });
    const d = t.encode('light', { addSpecialTokens: false });
    const [CLS, SEP] = [2, 3];
    expect(t.encodePair('where was the word', 'light')).toEqual({ ids: [CLS, ...q, SEP, ...d, SEP], typeIds: [...q.map(() => 0), 0, 0, ...d.map(() => 1), 1] });
  });

  it('says whether transformers 5 returns token_type_ids: model_input_names, else the tokenizer class', () => {
    expect(tok(config).returnsTokenTypeIds).toBe(false); // TokenizersBackend
    expect(tok({ ...config, tokenizer_class: 'PreTrainedTokenizerFast' }).returnsTokenTypeIds).toBe(false);
    expect(tok({ ...config, tokenizer_class: 'BertTokenizerFast' }).returnsTokenTypeIds).toBe(true);
    expect(tok({ ...config, tokenizer_class: 'BertTokenizer' }).returnsTokenTypeIds).toBe(true);
    expect(tok({ ...config, model_input_names: ['input_ids', 'token_type_ids', 'attention_mask'] }).returnsTokenTypeIds).toBe(true);
    expect(tok({ ...config, tokenizer_class: 'BertTokenizer', model_input_names: ['input_ids', 'attention_mask'] }).returnsTokenTypeIds).toBe(false);
    const { tokenizer_class: _, ...noClass } = config;
    expect(tok(noClass).returnsTokenTypeIds).toBeUndefined();
    expect(tok({ ...config, tokenizer_class: 'ElectraTokenizerFast' }).returnsTokenTypeIds).toBeUndefined();
  });
});
