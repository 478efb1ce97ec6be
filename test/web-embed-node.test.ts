/**
 * Embedding models through the worker protocol without a browser: src/web/client.ts and src/web/host.ts over a Node
 * MessageChannel. A tiny random BertModel (sentence-transformers mean pooling + Normalize) as picked files gives the
 * same vectors as the library's embed() in Node, with and without overrides; a tiny BertForSequenceClassification over
 * HTTP gives rerank()'s scores; the Qwen3 fixture with a last-token Pooling module embeds as embedWithDecoder() does;
 * generate() on an encoder and embed() on a decoder reject with ModelKindError; searchDocuments() ranks by the cosine
 * of the library's vectors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveWeb } from '../src/cli/web.ts';
import { TesseraClient } from '../src/web/client.ts';
import { serveEngine } from '../src/web/host.ts';
import type { Port } from '../src/web/protocol.ts';
import { cosine, searchDocuments } from '../src/web/search.ts';
import { embed, loadEmbeddingModel, rerank } from '../src/runtime/embed.ts';
import { embedWithDecoder } from '../src/runtime/embed-decoder.ts';
import { loadModel } from '../src/models/load.ts';
import { bertTokenizerJson, TINY, writeModel } from './helpers/encoder-fixture.ts';
import { testDevice } from './helpers/device.ts';

const QUERY = 'the word was with god';
const DOCS = ['in the beginning was the word', 'the light shineth in darkness', 'and the darkness comprehended it not', 'all things were made by him', 'let there be light'];
const ST = {
  'modules.json': JSON.stringify([
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
  ]),
  '1_Pooling/config.json': JSON.stringify({ word_embedding_dimension: 32, pooling_mode_cls_token: false, pooling_mode_mean_tokens: true, pooling_mode_max_tokens: false, pooling_mode_mean_sqrt_len_tokens: false }),
};

/** A folder's files as picked Blobs, by path relative to the folder (subfolders included). */
function picked(dir: string, sub = ''): { name: string; file: Blob }[] {
  return readdirSync(join(dir, sub)).flatMap((n) => {
    const rel = sub ? `${sub}/${n}` : n;
    return statSync(join(dir, rel)).isDirectory() ? picked(dir, rel) : [{ name: rel, file: new Blob([readFileSync(join(dir, rel))]) }];
  });
}

describe('embedding models through the web client and engine host (Node MessageChannel)', () => {
  const ch = new MessageChannel();
  serveEngine(ch.port1 as unknown as Port);
  ch.port1.start();
  ch.port2.start();
  const client = new TesseraClient(ch.port2 as unknown as Port);
  const temps: string[] = [];
  let bert: string;
  let cross: string;
  beforeAll(() => {
    bert = writeModel({ ...TINY, architectures: ['BertModel'] }, 'web-bert', { 'tokenizer.json': bertTokenizerJson(), ...ST }).dir;
    cross = writeModel({ ...TINY, architectures: ['BertForSequenceClassification'], num_labels: 1 }, 'web-cross', { 'tokenizer.json': bertTokenizerJson() }).dir;
    temps.push(bert, cross);
  });
  afterAll(async () => {
    await client.dispose();
    ch.port1.close();
    ch.port2.close();
    for (const d of temps) rmSync(d, { recursive: true, force: true });
  });

  it('a BertModel folder as picked files: info says encoder; embed() equals the library embed() exactly; generate() and rerank() reject', async () => {
    const model = await client.loadModel({ kind: 'files', files: picked(bert), path: 'tiny-bert' });
    expect(model.kind).toBe('encoder');
    expect(model.info).toMatchObject({ kind: 'encoder', architecture: 'BertModel', layers: 2, hidden: 32, vocab: 50, hasTokenizer: true, contextLength: 40 });
    expect(model.info.embedding).toEqual({ dims: 32, pooling: 'mean', normalize: true, reranker: false, backbone: 'encoder' });

    const dev = await testDevice();
    const ref = await loadEmbeddingModel(dev, bert);
    try {
      const texts = [QUERY, ...DOCS];
      const want = await embed(ref, texts);
      const got = await model.embed(texts);
      expect(got).toHaveLength(texts.length);
      got.forEach((v, i) => {
        expect(v).toBeInstanceOf(Float32Array);
        expect([...v]).toEqual([...want[i]!]);
      });
      expect(Math.hypot(...got[0]!)).toBeCloseTo(1, 5);
      // overrides reach the library's embed(), token ids too
      const wantCls = await embed(ref, [DOCS[1]!, [2, 9, 10, 3]], { pooling: 'cls', normalize: false });
      const gotCls = await model.embed([DOCS[1]!, [2, 9, 10, 3]], { pooling: 'cls', normalize: false });
      gotCls.forEach((v, i) => expect([...v]).toEqual([...wantCls[i]!]));
      expect(Math.abs(Math.hypot(...gotCls[0]!) - 1)).toBeGreaterThan(1e-3);
      expect(await model.encode(DOCS[0]!)).toEqual(ref.tokenizer!.encode(DOCS[0]!, { addSpecialTokens: true }));

      // the search panel's ranking: the cosine of the library's vectors, best first
      const s = await searchDocuments(model, QUERY, DOCS);
      expect(s.method).toBe('cosine');
      const cos = DOCS.map((_, i) => cosine(want[0]!, want[i + 1]!));
      expect(s.hits.map((h) => h.index)).toEqual(DOCS.map((_, i) => i).sort((a, b) => cos[b]! - cos[a]!));
      s.hits.forEach((h) => {
        expect(h.score).toBe(cos[h.index]);
        expect(h.text).toBe(DOCS[h.index]);
      });
    } finally {
      ref.destroy();
    }

    await expect(model.generate('in the beginning').next()).rejects.toMatchObject({ name: 'ModelKindError', message: expect.stringMatching(/generate: tiny-bert is an embedding model \(BertModel\): use embed\(\)/) });
    await expect(model.chat([{ role: 'user', content: 'hi' }]).next()).rejects.toMatchObject({ name: 'ModelKindError' });
    await expect(model.rerank(QUERY, DOCS)).rejects.toMatchObject({ name: 'ModelConfigError', message: expect.stringContaining('rerank needs a cross-encoder') });
    await expect(model.embed(['x'], { pooling: 'max' as never })).rejects.toMatchObject({ name: 'RangeError', message: expect.stringContaining('pooling "max"') });
    await model.unload();
    await expect(model.embed(['x'])).rejects.toThrow(/no model with handle/);
  }, 120_000);

  it('a BertForSequenceClassification folder over HTTP: rerank() equals the library rerank(); search ranks by its scores', async () => {
    const srv = await serveWeb({ modelDir: cross, dist: cross });
    const dev = await testDevice();
    const ref = await loadEmbeddingModel(dev, cross);
    try {
      const model = await client.loadModel(`${srv.url}models/default/`, { cache: false });
      expect(model.info).toMatchObject({ kind: 'encoder', architecture: 'BertForSequenceClassification' });
      expect(model.info.embedding).toMatchObject({ reranker: true, backbone: 'encoder' });
      const want = await rerank(ref, QUERY, DOCS);
      const got = await model.rerank(QUERY, DOCS);
      expect(got).toEqual(want);
      expect(new Set(got.map((r) => r.score)).size).toBe(DOCS.length); // distinct scores: the order below is meaningful
      const s = await searchDocuments(model, QUERY, DOCS);
      expect(s.method).toBe('rerank');
      expect(s.hits.map((h) => h.index)).toEqual([...want].sort((a, b) => b.score - a.score).map((r) => r.index));
      expect(s.hits.map((h) => h.score)).toEqual([...want].sort((a, b) => b.score - a.score).map((r) => r.score));
      await model.unload();
    } finally {
      ref.destroy();
      await srv.close();
    }
  }, 120_000);

  it('a decoder rejects embed() and rerank() with ModelKindError; with a last-token Pooling module (Qwen3-Embedding) it embeds as embedWithDecoder()', async () => {
    const QWEN = 'test/fixtures/hf/qwen3';
    const dec = await client.loadModel({ kind: 'files', files: picked(QWEN), path: 'qwen3' });
    expect(dec.kind).toBe('decoder');
    expect(dec.info.embedding).toBeUndefined();
    await expect(dec.embed(['hello'])).rejects.toMatchObject({ name: 'ModelKindError', message: expect.stringMatching(/^embed: qwen3 is a decoder for generation \(Qwen3ForCausalLM\)/) });
    await expect(dec.rerank('q', ['d'])).rejects.toMatchObject({ name: 'ModelKindError' });
    await expect(searchDocuments(dec, 'q', ['d'])).rejects.toMatchObject({ name: 'ModelKindError' });
    await dec.unload();

    // the same checkpoint as a sentence-transformers embedder: last-token pooling, normalized
    const dir = mkdtempSync(join(tmpdir(), 'tessera-qwen3-embedder-'));
    temps.push(dir);
    cpSync(QWEN, dir, { recursive: true });
    writeFileSync(join(dir, 'modules.json'), ST['modules.json']);
    mkdirSync(join(dir, '1_Pooling'));
    writeFileSync(join(dir, '1_Pooling/config.json'), JSON.stringify({ pooling_mode_lasttoken: true, include_prompt: true }));
    const emb = await client.loadModel({ kind: 'files', files: picked(dir), path: 'qwen3-embedder' });
    expect(emb.kind).toBe('encoder');
    expect(emb.info.embedding).toMatchObject({ pooling: 'last', normalize: true, reranker: false, backbone: 'decoder' });
    const dev = await testDevice();
    const ref = await loadModel(dev, dir);
    try {
      const texts = ['hello world', 'the quick brown fox'];
      const want = await embedWithDecoder(ref, texts);
      const got = await emb.embed(texts);
      got.forEach((v, i) => expect([...v]).toEqual([...want[i]!]));
      expect(Math.hypot(...got[1]!)).toBeCloseTo(1, 5);
    } finally {
      ref.destroy();
    }
    await expect(emb.embed(['x'], { pooling: 'mean' })).rejects.toMatchObject({ name: 'RangeError', message: expect.stringContaining('last token only') });
    await expect(emb.generate('x').next()).rejects.toMatchObject({ name: 'ModelKindError' });
    await expect(emb.rerank('q', ['d'])).rejects.toMatchObject({ name: 'ModelKindError', message: expect.stringContaining('not a cross-encoder') });
    await emb.unload();
  }, 180_000);
});
