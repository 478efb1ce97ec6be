/**
 * Encoders (src/models/encoder.ts) against the f64 CPU reference (src/reference/encoder.ts) on tiny random
 * checkpoints written here: BertModel, BertForSequenceClassification (bert. prefix, pooler, token types) and
 * XLMRobertaForSequenceClassification (positions from pad_token_id + 1); pooling and normalization as
 * sentence-transformers configures them; texts of several lengths embedded together equal one-by-one runs; bad
 * checkpoints fail naming the file and field.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { encoderConfigFromHF, loadEncoder, type EncoderConfig } from '../src/models/encoder.ts';
import { encoderRef } from '../src/reference/encoder.ts';
import { embed, loadEmbeddingModel, pool, sentenceTransformersPooling, type EmbeddingModel } from '../src/runtime/embed.ts';
import { diskFolder } from '../src/node/files.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';
import { TINY, writeModel } from './helpers/encoder-fixture.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

const weights = (m: Map<string, Float32Array>) => (name: string) => {
  const t = m.get(name);
  if (!t) throw new Error(`no tensor ${name}`);
  return t;
};

describe('BertModel', () => {
  const { dir, tensors } = writeModel({ ...TINY, architectures: ['BertModel'] }, 'encoder/bert', {
    'modules.json': JSON.stringify([
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ]),
    '1_Pooling/config.json': JSON.stringify({ word_embedding_dimension: 32, pooling_mode_cls_token: true, pooling_mode_mean_tokens: false }),
  });
  let model: EmbeddingModel;
  let cfg: EncoderConfig;
  beforeAll(async () => {
    model = await loadEmbeddingModel(dev, dir);
    cfg = model.encoder.cfg;
  });
  afterAll(() => model?.destroy());

  it('hidden states match the reference for lengths in several buckets', async () => {
    for (const ids of [[1, 7, 3], [2, 5, 9, 11, 4, 6, 8, 10, 12], [3, 49, 0, 17, 22, 31, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19]]) {
      const got = await model.encoder.forward(ids);
      expect(got.tokens).toBe(ids.length);
      expect(maxRelErr(got.hidden, encoderRef(cfg, weights(tensors), ids)), `${ids.length} tokens`).toBeLessThan(1e-4);
    }
  });

  it('pooling and normalization follow modules.json / 1_Pooling (cls, normalized); overrides apply', async () => {
    expect(model.pooling).toBe('cls');
    expect(model.normalize).toBe(true);
    const ids = [4, 8, 15, 16, 23, 42];
    const ref = encoderRef(cfg, weights(tensors), ids);
    const [cls] = await embed(model, [ids]);
    expect(maxRelErr(cls!, pool(ref, ids.length, 32, 'cls', true))).toBeLessThan(1e-4);
    expect(Math.hypot(...cls!)).toBeCloseTo(1, 5);
    const [mean] = await embed(model, [ids], { pooling: 'mean', normalize: false });
    const want = new Float32Array(32);
    for (let t = 0; t < ids.length; t++) for (let i = 0; i < 32; i++) want[i]! += ref[t * 32 + i]! / ids.length;
    expect(maxRelErr(mean!, want)).toBeLessThan(1e-4);
    const [last] = await embed(model, [ids], { pooling: 'last', normalize: false });
    expect(maxRelErr(last!, ref.subarray(5 * 32, 6 * 32))).toBeLessThan(1e-4);
  });

  it('a padded batch of different lengths equals one-by-one runs, in the caller order', async () => {
    const batch = [[5, 6, 7, 8, 9, 10, 11, 12, 13, 14], [1, 2], [30, 31, 32, 33, 34]];
    const all = await embed(model, batch);
    for (const [i, ids] of batch.entries()) {
      const [one] = await embed(model, [ids]);
      // the batch's linears run over more rows (another tiling may sum in another order): f32 rounding only
      expect(maxRelErr(all[i]!, one!)).toBeLessThan(1e-5);
    }
    // 19 texts: one run, padded to 32 sequences
    const many = Array.from({ length: 19 }, (_, i) => Array.from({ length: 1 + (i % 11) }, (_, t) => (i * 7 + t * 3) % 50));
    const hs = await model.encoder.forwardBatch(many.map((ids) => ({ ids })));
    for (const j of [0, 15, 16, 18]) expect(maxRelErr(hs[j]!.hidden, encoderRef(cfg, weights(tensors), many[j]!)), `text ${j}`).toBeLessThan(1e-4);
  });

  it('f16 dense weights stay within f16 rounding of the f32 reference (needs shader-f16: the GPU lane)', async (ctx) => {
    if (!dev.caps.features.has('shader-f16')) {
      await expect(loadEncoder(dev, dir, { weights: 'f16' })).rejects.toThrow(/f16 weights need a device with shader-f16/);
      ctx.skip('this device lacks shader-f16 (the f16 weights were refused with the reason); the GPU lane runs the comparison');
      return;
    }
    const { encoder } = await loadEncoder(dev, dir, { weights: 'f16' });
    try {
      expect(encoder.weightDtype).toBe('float16');
      const ids = [2, 5, 9, 11, 4, 6, 8];
      expect(maxRelErr((await encoder.forward(ids)).hidden, encoderRef(cfg, weights(tensors), ids))).toBeLessThan(5e-3);
    } finally {
      encoder.destroy();
    }
  });

  it('refuses ids outside the vocabulary and sequences past max_position_embeddings', async () => {
    await expect(model.encoder.forward([1, 50])).rejects.toThrow(/token 1 is 50, outside the vocabulary \[0, 50\)/);
    await expect(model.encoder.forward(Array.from({ length: 41 }, () => 1))).rejects.toThrow(/41 tokens exceed max_position_embeddings 40/);
  });
});

describe('cross-encoders', () => {
  it('BertForSequenceClassification (bert. prefix, pooler, token types) matches the reference', async () => {
    const { dir, tensors } = writeModel({ ...TINY, architectures: ['BertForSequenceClassification'], num_labels: 1 }, 'encoder/bert-cls');
    const { encoder } = await loadEncoder(dev, dir);
    try {
      expect(encoder.cfg.prefix).toBe('bert.');
      const ids = [2, 7, 9, 3, 11, 12, 3];
      const types = [0, 0, 0, 0, 1, 1, 1];
      const ref = encoderRef(encoder.cfg, weights(tensors), ids, types);
      const { hidden } = await encoder.forward(ids, types);
      expect(maxRelErr(hidden, ref)).toBeLessThan(1e-4);
      // pooler: tanh(W_p h_cls + b_p), classifier on it
      const W = weights(tensors);
      const pooled = Array.from({ length: 32 }, (_, n) => Math.tanh(W('bert.pooler.dense.bias')[n]! + Array.from({ length: 32 }, (_, k) => W('bert.pooler.dense.weight')[n * 32 + k]! * ref[k]!).reduce((a, b) => a + b, 0)));
      const logit = W('classifier.bias')[0]! + pooled.reduce((a, p, k) => a + p * W('classifier.weight')[k]!, 0);
      expect(encoder.classify(hidden)[0]).toBeCloseTo(logit, 4);
    } finally {
      encoder.destroy();
    }
  });

  it('XLMRobertaForSequenceClassification: positions from pad_token_id + 1, dense-tanh-out_proj head', async () => {
    const { dir, tensors } = writeModel({ ...TINY, architectures: ['XLMRobertaForSequenceClassification'], num_labels: 2, pad_token_id: 1, type_vocab_size: 1 }, 'encoder/xlmr-cls');
    const { encoder } = await loadEncoder(dev, dir);
    try {
      expect(encoder.cfg.positionOffset).toBe(2);
      const ids = [0, 10, 20, 2, 2, 30, 2];
      const ref = encoderRef(encoder.cfg, weights(tensors), ids);
      const { hidden } = await encoder.forward(ids);
      expect(maxRelErr(hidden, ref)).toBeLessThan(1e-4);
      expect(encoder.classify(hidden)).toHaveLength(2);
    } finally {
      encoder.destroy();
    }
  });
});

describe('bad encoder checkpoints', () => {
  it('name the field or the tensor', async () => {
    const has = () => true;
    expect(() => encoderConfigFromHF({ ...TINY, architectures: ['BertModel'], hidden_act: 'swish' }, 'c.json', has)).toThrow(/c\.json: hidden_act: "swish" is not supported/);
    expect(() => encoderConfigFromHF({ ...TINY, architectures: ['BertModel'], num_attention_heads: 5 }, 'c.json', has)).toThrow(/num_attention_heads: 5 does not divide hidden_size 32/);
    expect(() => encoderConfigFromHF({ ...TINY, architectures: ['GPT2Model'] }, 'c.json', has)).toThrow(/architecture "GPT2Model" is not supported/);
    const { dir } = writeModel({ ...TINY, architectures: ['BertModel'] }, 'encoder/bad');
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...TINY, architectures: ['BertModel'], intermediate_size: 48 }));
    await expect(loadEncoder(dev, dir)).rejects.toThrow(/encoder\.layer\.0\.intermediate\.dense\.weight: has shape \[64, 32\], the config implies \[48, 32\]/);
  });

  it('sentence-transformers pooling: several modes at once are refused naming the file', async () => {
    const { dir } = writeModel({ ...TINY, architectures: ['BertModel'] }, 'encoder/st', {
      'modules.json': JSON.stringify([{ path: '1_Pooling', type: 'sentence_transformers.models.Pooling' }]),
      '1_Pooling/config.json': JSON.stringify({ pooling_mode_cls_token: true, pooling_mode_mean_tokens: true }),
    });
    await expect(sentenceTransformersPooling(diskFolder(dir))).rejects.toThrow(/1_Pooling\/config\.json: pooling_mode_\*: pooling cls \+ mean is not supported/);
  });

  it('sentence-transformers 6 pooling_mode: a mode name (over the older booleans), or a list refused naming the field', async () => {
    const { dir } = writeModel({ ...TINY, architectures: ['BertModel'] }, 'encoder/st6', {
      'modules.json': JSON.stringify([{ path: '1_Pooling', type: 'sentence_transformers.sentence_transformer.modules.pooling.Pooling' }, { path: '2_Normalize', type: 'sentence_transformers.base.modules.normalize.Normalize' }]),
    });
    const pooling = async (cfg: Record<string, unknown>) => {
      writeFileSync(join(dir, '1_Pooling/config.json'), JSON.stringify({ embedding_dimension: 32, include_prompt: true, ...cfg }));
      return sentenceTransformersPooling(diskFolder(dir));
    };
    mkdirSync(join(dir, '1_Pooling'), { recursive: true });
    expect(await pooling({ pooling_mode: 'cls' })).toEqual({ pooling: 'cls', normalize: true });
    expect(await pooling({ pooling_mode: 'lasttoken' })).toEqual({ pooling: 'last', normalize: true });
    expect(await pooling({ pooling_mode: ['mean'] })).toEqual({ pooling: 'mean', normalize: true });
    expect(await pooling({ pooling_mode: 'cls', pooling_mode_mean_tokens: true })).toEqual({ pooling: 'cls', normalize: true });
    expect(await pooling({})).toEqual({ pooling: 'mean', normalize: true });
    await expect(pooling({ pooling_mode: ['cls', 'mean'] })).rejects.toThrow(/1_Pooling\/config\.json: pooling_mode: pooling cls \+ mean is not supported/);
    await expect(pooling({ pooling_mode: 'max' })).rejects.toThrow(/pooling_mode: pooling max is not supported/);
    await expect(pooling({ pooling_mode: 'first' })).rejects.toThrow(/pooling_mode: "first" is not a sentence-transformers pooling mode/);
  });
});
