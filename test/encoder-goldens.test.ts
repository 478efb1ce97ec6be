/**
 * Encoders against transformers and sentence-transformers: goldens of tiny random checkpoints made by
 * scripts/fixtures/make_encoder_fixtures.py on the GPU machine (test/fixtures/hf/{bert,xlmr,bert_cls,xlmr_cls,
 * qwen3_embed}/golden.json). Hidden states within 1e-3 relative (f32), pooled embeddings with cosine >= 0.99999, rerank
 * scores within 1e-3; the tokenizer gives transformers' ids for every text; padded batches equal one-by-one runs.
 * Until a fixture is committed its cases say so and are skipped (never passed silently).
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { loadModel, type LoadedModel } from '../src/models/load.ts';
import { embed, encodePair, loadEmbeddingModel, rerank, type EmbeddingModel } from '../src/runtime/embed.ts';
import { embedWithDecoder } from '../src/runtime/embed-decoder.ts';
import { cosine } from '../src/web/search.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';

const dirOf = (n: string) => `test/fixtures/hf/${n}`;
const MAKE = 'python3 scripts/fixtures/make_encoder_fixtures.py --out test/fixtures/hf (GPU machine: torch, transformers, sentence-transformers)';

function golden<T>(name: string): T | undefined {
  const file = `${dirOf(name)}/golden.json`;
  if (!existsSync(file)) {
    console.log(`skipped ${name}: no ${file} yet; make it with ${MAKE}`);
    return undefined;
  }
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

interface EncoderGolden {
  texts: string[];
  ids: number[][];
  hidden: number[][][];
  pooling: 'mean' | 'cls';
  normalize: boolean;
  embeddings: number[][];
}

interface CrossGolden {
  query: string;
  documents: string[];
  pair_ids: number[][];
  type_ids: number[][];
  logits: number[][];
  scores: number[];
}

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

for (const name of ['bert', 'xlmr']) {
  const g = golden<EncoderGolden>(name);
  describe.skipIf(!g)(`${name}: embeddings match sentence-transformers`, () => {
    let model: EmbeddingModel;
    beforeAll(async () => {
      model = await loadEmbeddingModel(dev, dirOf(name));
    });
    afterAll(() => model?.destroy());

    it('tokenizes every text to transformers ids and reads the sentence-transformers pooling', () => {
      for (const [i, t] of g!.texts.entries()) expect(model.tokenizer!.encode(t, { addSpecialTokens: true }), t).toEqual(g!.ids[i]);
      expect([model.pooling, model.normalize]).toEqual([g!.pooling, g!.normalize]);
    });

    it('last hidden states within 1e-3 relative, one text at a time and padded together', async () => {
      const together = await model.encoder.forwardBatch(g!.ids.map((ids) => ({ ids })));
      for (const [i, ids] of g!.ids.entries()) {
        const one = await model.encoder.forward(ids);
        const want = g!.hidden[i]!.flat();
        expect(one.tokens).toBe(ids.length);
        expect(maxRelErr(one.hidden, want), `text ${i}`).toBeLessThan(1e-3);
        expect(maxRelErr(together[i]!.hidden, one.hidden), `text ${i} padded`).toBeLessThan(1e-5);
      }
    });

    it('pooled, normalized embeddings with cosine >= 0.99999', async () => {
      const got = await embed(model, g!.texts);
      for (const [i, e] of g!.embeddings.entries()) {
        expect(cosine(got[i]!, e), `text ${i}`).toBeGreaterThanOrEqual(0.99999);
        expect(maxRelErr(got[i]!, e), `text ${i}`).toBeLessThan(1e-3);
      }
    });
  });
}

for (const name of ['bert_cls', 'xlmr_cls']) {
  const g = golden<CrossGolden>(name);
  describe.skipIf(!g)(`${name}: cross-encoder scores match sentence-transformers`, () => {
    let model: EmbeddingModel;
    beforeAll(async () => {
      model = await loadEmbeddingModel(dev, dirOf(name));
    });
    afterAll(() => model?.destroy());

    it('pairs (query, document) as the tokenizer does: ids and token types', () => {
      for (const [i, doc] of g!.documents.entries()) {
        const p = encodePair(model, g!.query, doc);
        expect(p.ids, doc).toEqual(g!.pair_ids[i]);
        expect(p.types, doc).toEqual(g!.type_ids[i]);
      }
    });

    it('logits and scores within 1e-3', async () => {
      const got = await rerank(model, g!.query, g!.documents);
      for (const [i, r] of got.entries()) {
        expect(r.index).toBe(i);
        expect(Math.abs(r.logits[0]! - g!.logits[i]![0]!), `logit ${i}`).toBeLessThan(1e-3 * Math.max(1, Math.abs(g!.logits[i]![0]!)));
        expect(Math.abs(r.score - g!.scores[i]!), `score ${i}`).toBeLessThan(1e-3);
      }
    });
  });
}

{
  const g = golden<{ texts: string[]; ids: number[][]; embeddings: number[][] }>('qwen3_embed');
  describe.skipIf(!g)('qwen3 as Qwen3-Embedding: last-token, normalized embeddings match sentence-transformers', () => {
    let model: LoadedModel;
    beforeAll(async () => {
      model = await loadModel(dev, dirOf('qwen3'), { quant: 'f32' });
    });
    afterAll(() => model?.destroy());

    it('same ids from the tokenizer, cosine >= 0.99999 per text', async () => {
      for (const [i, t] of g!.texts.entries()) expect(model.tokenizer!.encode(t, { addSpecialTokens: true }), t).toEqual(g!.ids[i]);
      const got = await embedWithDecoder(model, g!.texts);
      for (const [i, e] of g!.embeddings.entries()) {
        expect(cosine(got[i]!, e), `text ${i}`).toBeGreaterThanOrEqual(0.99999);
        expect(maxRelErr(got[i]!, e), `text ${i}`).toBeLessThan(1e-3);
      }
    });
  });
}
