import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GGUFValueType, type MetadataValue } from '@huggingface/gguf';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnsupportedFormatError } from '../src/formats/errors.ts';
import { openGguf } from '../src/formats/gguf.ts';
import { gv, writeGguf } from '../src/formats/gguf-writer.ts';
import { GgmlType } from '../src/formats/quant/ggml-types.ts';
import { GgufTokenType, tokenizerFromGguf, tokenizerJsonToGgufMetadata } from '../src/tokenizer/gguf-vocab.ts';
import { TextTokenizer } from '../src/tokenizer/tokenizer.ts';
import { CHATML_TEMPLATE, tinyTokenizer } from './fixtures/formats/tiny-bpe.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tessera-ggtok-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const TEXTS = [
  'Hello world',
  'Hello!  the world\n\nthe end',
  'héllo wörld 😀 12345 1234567',
  "<|im_start|>user\nit's <think>Hello<|im_end|>",
  "DON'T shout, it's fine",
];

/** Write the tokenizer as GGUF metadata next to one tensor, read it back, build a tokenizer. */
async function viaGguf(pre: 'gpt2' | 'llama3'): Promise<{ original: TextTokenizer; fromGguf: TextTokenizer; md: Record<string, MetadataValue> }> {
  const { json, config } = tinyTokenizer(pre);
  const original = new TextTokenizer(json, config);
  const file = join(dir, 'tok.gguf');
  await writeGguf(file, { 'general.architecture': 'llama', ...tokenizerJsonToGgufMetadata(json, config) }, [
    { name: 'w', type: GgmlType.F32, shape: [1], data: new Uint8Array(4) },
  ]);
  const g = await openGguf(file);
  const md = { ...g.metadata };
  return { original, fromGguf: tokenizerFromGguf(md, { origin: file }), md };
}

describe('GGUF byte-level BPE ("gpt2") tokenizer', () => {
  it('stores the vocabulary, types and merges', async () => {
    const { md } = await viaGguf('gpt2');
    expect(md['tokenizer.ggml.model']).toBe('gpt2');
    expect(md['tokenizer.ggml.pre']).toBe('gpt-2');
    const tokens = md['tokenizer.ggml.tokens'] as string[];
    expect(tokens).toHaveLength(278);
    expect(tokens[259]).toBe('Hello');
    expect(tokens[273]).toBe('<|bos|>');
    const types = md['tokenizer.ggml.token_type'] as number[];
    expect([types[0], types[259], types[273], types[277]]).toEqual([
      GgufTokenType.NORMAL,
      GgufTokenType.NORMAL,
      GgufTokenType.CONTROL,
      GgufTokenType.USER_DEFINED,
    ]);
    expect((md['tokenizer.ggml.merges'] as string[])[0]).toBe('H e');
    expect(md['tokenizer.ggml.bos_token_id']).toBe(273);
    expect(md['tokenizer.ggml.eos_token_id']).toBe(274);
    expect(md['tokenizer.ggml.add_bos_token']).toBe(true);
    expect(md['tokenizer.chat_template']).toBe(CHATML_TEMPLATE);
  });

  it('encodes and decodes exactly like the tokenizer.json it came from', async () => {
    const { original, fromGguf } = await viaGguf('gpt2');
    expect(fromGguf.bosTokenId).toBe(original.bosTokenId);
    expect(fromGguf.eosTokenIds).toEqual(original.eosTokenIds);
    for (const text of TEXTS) {
      for (const addSpecialTokens of [true, false]) {
        const ids = original.encode(text, { addSpecialTokens });
        expect(fromGguf.encode(text, { addSpecialTokens })).toEqual(ids);
        expect(fromGguf.decode(ids)).toBe(original.decode(ids));
        expect(fromGguf.decode(ids, { skipSpecialTokens: true })).toBe(original.decode(ids, { skipSpecialTokens: true }));
      }
    }
    const messages = [{ role: 'user', content: 'Hi' }];
    expect(fromGguf.applyChatTemplate(messages, { addGenerationPrompt: true })).toBe(
      original.applyChatTemplate(messages, { addGenerationPrompt: true }),
    );
  });

  it('keeps the Llama 3 pre-tokenizer (digits in groups of three)', async () => {
    const { original, fromGguf, md } = await viaGguf('llama3');
    expect(md['tokenizer.ggml.pre']).toBe('llama-bpe');
    for (const text of TEXTS) expect(fromGguf.encode(text)).toEqual(original.encode(text));
    // "12345" splits as "123" + "45" before BPE, so the "3 4" merge cannot apply
    const ids = fromGguf.encode('12345', { addSpecialTokens: false });
    expect(ids.map((id) => fromGguf.idToToken(id))).toEqual(['123', '45']);
    // the GPT-2 regex keeps "12345" whole, and merge "3 4" wins over "12 3"
    const { fromGguf: gpt2 } = await viaGguf('gpt2');
    expect(gpt2.encode('12345', { addSpecialTokens: false }).map((id) => gpt2.idToToken(id))).toEqual(['12', '34', '5']);
  });

  it('names the field when the pre-tokenizer or tokenizer kind is unknown', async () => {
    const { md } = await viaGguf('gpt2');
    expect(() => tokenizerFromGguf({ ...md, 'tokenizer.ggml.pre': 'mystery' }, { origin: 'm.gguf' })).toThrow(
      /m.gguf: field "tokenizer.ggml.pre": pre-tokenizer "mystery" is not known/,
    );
    expect(() => tokenizerFromGguf({ ...md, 'tokenizer.ggml.model': 'bert' }, { origin: 'm.gguf' })).toThrow(UnsupportedFormatError);
    expect(() => tokenizerFromGguf({ ...md, 'tokenizer.ggml.bos_token_id': 9999 }, { origin: 'm.gguf' })).toThrow(
      /field "tokenizer.ggml.bos_token_id": token id 9999 is outside the vocabulary of 278/,
    );
  });
});

describe('GGUF SentencePiece ("llama") tokenizer', () => {
  // <unk> <s> </s>, 256 byte tokens, then pieces with scores that drive the merges.
  const PIECES: [string, number][] = [
    ['▁', 0], ['h', 0], ['e', 0], ['l', 0], ['o', 0], ['w', 0], ['r', 0], ['d', 0],
    ['he', -1], ['ll', -2], ['llo', -3], ['▁he', -4], ['▁hello', -5],
    ['or', -6], ['ld', -7], ['▁w', -8], ['▁wor', -8.5], ['▁world', -9],
  ];
  const BYTES = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const tokens = ['<unk>', '<s>', '</s>', ...BYTES, ...PIECES.map((p) => p[0])];
  const id = (t: string) => tokens.indexOf(t);
  const md: Record<string, MetadataValue> = {
    'tokenizer.ggml.model': 'llama',
    'tokenizer.ggml.tokens': tokens,
    'tokenizer.ggml.scores': [0, 0, 0, ...BYTES.map(() => 0), ...PIECES.map((p) => p[1])],
    'tokenizer.ggml.token_type': [
      GgufTokenType.UNKNOWN, GgufTokenType.CONTROL, GgufTokenType.CONTROL,
      ...BYTES.map(() => GgufTokenType.BYTE),
      ...PIECES.map(() => GgufTokenType.NORMAL),
    ],
    'tokenizer.ggml.bos_token_id': 1,
    'tokenizer.ggml.eos_token_id': 2,
    'tokenizer.ggml.unknown_token_id': 0,
  };

  it('merges by score, prefixes a space and adds BOS', () => {
    const tok = tokenizerFromGguf(md);
    // ▁ h e l l o ▁ w o r l d -> he, ll, llo, ▁he, ▁hello, or, ld, ▁w, ▁wor, ▁world
    expect(tok.encode('hello world')).toEqual([1, id('▁hello'), id('▁world')]);
    expect(tok.decode(tok.encode('hello world'), { skipSpecialTokens: true })).toBe('hello world');
    expect(tok.eosTokenIds).toEqual([2]);
  });

  it('falls back to UTF-8 byte tokens and decodes them back', () => {
    const tok = tokenizerFromGguf(md);
    // "é" is not a piece: bytes C3 A9
    const ids = tok.encode('hé', { addSpecialTokens: false });
    expect(ids).toEqual([id('▁'), id('h'), id('<0xC3>'), id('<0xA9>')]);
    expect(tok.decode(ids)).toBe('hé');
    const stream = tok.streamDecoder();
    expect(ids.map((i) => stream.push(i))).toEqual(['', 'h', '', 'é']);
  });

  it('survives a write/read through a GGUF file', async () => {
    const file = join(dir, 'spm.gguf');
    await writeGguf(
      file,
      {
        ...md,
        'tokenizer.ggml.scores': gv.arr(GGUFValueType.FLOAT32, md['tokenizer.ggml.scores'] as number[]),
        'tokenizer.ggml.token_type': gv.arr(GGUFValueType.INT32, md['tokenizer.ggml.token_type'] as number[]),
      },
      [],
    );
    const g = await openGguf(file);
    expect(tokenizerFromGguf(g.metadata).encode('hello world')).toEqual([1, id('▁hello'), id('▁world')]);
  });
});
