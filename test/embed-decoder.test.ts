/**
 * Decoder-based embeddings and reranking (Qwen3-Embedding / Qwen3-Reranker recipes) on the qwen3 transformers
 * fixture: the last-token hidden state times the tied embedding matrix gives the logits computeLogits (and
 * transformers' golden) gives at that position; embeddings are unit vectors; the reranker's score is the softmax of
 * the "yes"/"no" logits at the prompt's end; a text becomes ids as sentence-transformers 6 reads the folder (the chat
 * template for a plain folder whose tokenizer has one, the config of a saved one).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { loadModel, type LoadedModel } from '../src/models/load.ts';
import { decoderTextIds, decoderTextInput, embedWithDecoder, lastHiddenState, type DecoderTextInput } from '../src/runtime/embed-decoder.ts';
import { diskFolder } from '../src/node/files.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
let model: LoadedModel;
const golden = JSON.parse(readFileSync('test/fixtures/hf/qwen3/golden.json', 'utf8')) as { input_ids: number[]; logits: number[][] };
beforeAll(async () => {
  dev = await testDevice();
  model = await loadModel(dev, 'test/fixtures/hf/qwen3', { quant: 'f32' });
});
afterAll(() => model?.destroy());

describe('decoder embeddings', () => {
  it('the last hidden state through the tied embeddings is the last position of the logits', async () => {
    const ids = golden.input_ids;
    const h = await lastHiddenState(model, ids);
    expect(h).toHaveLength(model.config.hiddenSize);
    const { last } = await computeLogits(model, ids);
    const emb = new Float32Array(model.config.vocabSize * model.config.hiddenSize);
    // the tied embedding table, read back from the checkpoint
    const { openCheckpoint } = await import('../src/formats/checkpoint.ts');
    emb.set(await (await openCheckpoint('test/fixtures/hf/qwen3')).toFloat32('model.embed_tokens.weight'));
    const H = model.config.hiddenSize;
    const logits = Float32Array.from({ length: model.config.vocabSize }, (_, v) => {
      let s = 0;
      for (let i = 0; i < H; i++) s += emb[v * H + i]! * h[i]!;
      return s;
    });
    expect(maxRelErr(logits, last)).toBeLessThan(1e-4);
    expect(maxRelErr(logits, golden.logits[ids.length - 1]!)).toBeLessThan(1e-3);
  });

  it('embeddings are unit vectors, one per input, in order', async () => {
    const a = golden.input_ids.slice(0, 5);
    const b = golden.input_ids.slice(0, 9);
    const [ea, eb] = await embedWithDecoder(model, [a, b]);
    expect(Math.hypot(...ea!)).toBeCloseTo(1, 5);
    const hb = await lastHiddenState(model, b);
    expect(maxRelErr(eb!, hb.map((x) => x / Math.hypot(...hb)))).toBeLessThan(1e-6);
  });
});

describe('how a text becomes ids (sentence-transformers 6)', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  /** A folder with the qwen3 fixture's config plus the given sentence-transformers files. */
  const folder = (files: Record<string, unknown>) => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-st-input-'));
    dirs.push(dir);
    cpSync('test/fixtures/hf/qwen3/config.json', join(dir, 'config.json'));
    for (const [name, v] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(v));
    return diskFolder(dir);
  };
  const modules = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ];
  const chat = { kind: 'chat', content: 'flat', addGenerationPrompt: false, extra: {} };

  it('a plain folder whose tokenizer has a chat template: one user message through it; a saved one as its config says', async () => {
    const tok = model.tokenizer!;
    expect(await decoderTextInput(diskFolder('test/fixtures/hf/qwen3'), tok)).toEqual(chat);
    // saved before modality_config existed (Qwen3-Embedding): texts as they are
    expect(await decoderTextInput(folder({ 'modules.json': modules }), tok)).toEqual({ kind: 'text' });
    expect(await decoderTextInput(folder({ 'modules.json': modules, 'sentence_bert_config.json': { max_seq_length: 512 } }), tok)).toEqual({ kind: 'text' });
    const text = { method: 'forward', method_output_name: 'last_hidden_state' };
    expect(await decoderTextInput(folder({ 'modules.json': modules, 'sentence_bert_config.json': { modality_config: { text } } }), tok)).toEqual({ kind: 'text' });
    const st6 = { modality_config: { text, message: { ...text, format: 'structured' } }, processing_kwargs: { chat_template: { add_generation_prompt: true, enable_thinking: false } } };
    expect(await decoderTextInput(folder({ 'modules.json': modules, 'sentence_bert_config.json': st6 }), tok)).toEqual({ kind: 'chat', content: 'structured', addGenerationPrompt: true, extra: { enable_thinking: false } });
    expect(decoderTextIds(tok, 'light', chat as DecoderTextInput)).toEqual(tok.encode('<|bos|>user: light\n', { addSpecialTokens: false }));
    expect(decoderTextIds(tok, 'light', { kind: 'text' })).toEqual(tok.encode('light'));
  });

  it('embedWithDecoder reads the folder it was loaded from, or takes the input given', async () => {
    const tok = model.tokenizer!;
    const [viaFolder] = await embedWithDecoder(model, ['light']);
    const [viaIds] = await embedWithDecoder(model, [decoderTextIds(tok, 'light', chat as DecoderTextInput)]);
    expect([...viaFolder!]).toEqual([...viaIds!]);
    const [asText] = await embedWithDecoder(model, ['light'], { input: { kind: 'text' } });
    const [textIds] = await embedWithDecoder(model, [tok.encode('light')]);
    expect([...asText!]).toEqual([...textIds!]);
  });
});
