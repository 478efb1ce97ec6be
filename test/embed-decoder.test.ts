/**
 * Decoder-based embeddings and reranking (Qwen3-Embedding / Qwen3-Reranker recipes) on the qwen3 transformers
 * fixture: the last-token hidden state times the tied embedding matrix gives the logits computeLogits (and
 * transformers' golden) gives at that position; embeddings are unit vectors; the reranker's score is the softmax of
 * the "yes"/"no" logits at the prompt's end.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { loadModel, type LoadedModel } from '../src/models/load.ts';
import { embedWithDecoder, lastHiddenState } from '../src/runtime/embed-decoder.ts';
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
