/**
 * The server with an encoder: /v1/embeddings through the official `openai` client (floats and base64, texts and token
 * ids, usage), /v1/rerank in the Cohere/Jina shape (sorted, top_n, return_documents), and their 400s, on tiny random
 * BERT checkpoints with a WordPiece tokenizer; results equal the library's embed() and rerank().
 */
import { serve, type ServerType } from '@hono/node-server';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { embed, loadEmbeddingModel, rerank, type EmbeddingModel } from '../src/runtime/embed.ts';
import { createServerApp } from '../src/server/app.ts';
import { testDevice } from './helpers/device.ts';
import { bertTokenizerJson, TINY, writeModel } from './helpers/encoder-fixture.ts';

let dev: TesseraDevice;
const running: { server: ServerType; model: EmbeddingModel }[] = [];

async function start(config: Record<string, unknown>, seed: string): Promise<{ url: string; client: OpenAI; model: EmbeddingModel }> {
  const { dir } = writeModel(config, seed, { 'tokenizer.json': bertTokenizerJson() });
  const model = await loadEmbeddingModel(dev, dir);
  const s = createServerApp({ kind: 'embedding', name: 'tiny', model }, { log: () => {} });
  const { server, port } = await new Promise<{ server: ServerType; port: number }>((resolve) => {
    const server = serve({ fetch: s.app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => resolve({ server, port: info.port }));
  });
  running.push({ server, model });
  const url = `http://127.0.0.1:${port}`;
  return { url, model, client: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 }) };
}

beforeAll(async () => {
  dev = await testDevice();
});
afterAll(async () => {
  for (const r of running) {
    await new Promise<void>((res) => r.server.close(() => res()));
    r.model.destroy();
  }
});

const post = (url: string, path: string, body: unknown) => fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('/v1/embeddings', () => {
  let srv: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    srv = await start({ ...TINY, architectures: ['BertModel'] }, 'server-embeddings/bert');
  });

  it('embeds texts and token ids as embed() does, with usage', async () => {
    const texts = ['in the beginning was the word', 'light'];
    const res = await srv.client.embeddings.create({ model: 'tiny', input: texts, encoding_format: 'float' });
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    const want = await embed(srv.model, texts);
    res.data.forEach((d, i) => expect(d.embedding.map((x) => Math.fround(x))).toEqual([...want[i]!]));
    expect(res.usage.prompt_tokens).toBe(8 + 3);
    const ids = await srv.client.embeddings.create({ model: 'tiny', input: [2, 13, 3], encoding_format: 'float' });
    expect(ids.data[0]!.embedding.map((x) => Math.fround(x))).toEqual([...want[1]!]);
  });

  it('base64 carries the same float32 values', async () => {
    const res = await fetch(`${srv.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', input: 'light', encoding_format: 'base64' }) });
    const body = (await res.json()) as { data: { embedding: string }[] };
    const bytes = Uint8Array.from(atob(body.data[0]!.embedding), (c) => c.charCodeAt(0));
    const [want] = await embed(srv.model, ['light']);
    expect([...new Float32Array(bytes.buffer)]).toEqual([...want!]);
  });

  it('refuses bad requests with OpenAI-shaped 400s', async () => {
    const cases: [unknown, string][] = [
      [{ model: 'tiny' }, 'input'],
      [{ model: 'tiny', input: [] }, 'input'],
      [{ model: 'tiny', input: [1.5] }, 'input'],
      [{ model: 'other', input: 'x' }, 'model'],
      [{ model: 'tiny', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
      [{ model: 'tiny', input: [[2, 99, 3]] }, 'input'],
      [{ model: 'tiny', input: Array.from({ length: 41 }, () => 5) }, 'input'],
      [{ model: 'tiny', input: 'x', dimensions: 8 }, 'dimensions'],
    ];
    for (const [body, param] of cases) {
      const r = await post(srv.url, '/v1/embeddings', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      const e = (await r.json()) as { error: { type: string; param: string } };
      expect(e.error.type).toBe('invalid_request_error');
      expect(e.error.param, JSON.stringify(body)).toBe(param);
    }
  });

  it('/v1/rerank on a model without a classification head is a 400 that says so', async () => {
    const r = await post(srv.url, '/v1/rerank', { model: 'tiny', query: 'word', documents: ['light'] });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/not a cross-encoder/);
  });
});

describe('/v1/rerank', () => {
  it('scores documents as rerank() does, sorted, with top_n and return_documents', async () => {
    const srv = await start({ ...TINY, architectures: ['BertForSequenceClassification'], num_labels: 1 }, 'server-embeddings/cls');
    const docs = ['in the beginning was the word', 'the light shineth in darkness', 'and the word was god'];
    const r = await post(srv.url, '/v1/rerank', { model: 'tiny', query: 'where was the word', documents: [docs[0], { text: docs[1] }, docs[2]], top_n: 2, return_documents: true });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { results: { index: number; relevance_score: number; document: { text: string } }[] };
    const want = (await rerank(srv.model, 'where was the word', docs)).sort((a, b) => b.score - a.score);
    expect(body.results.map((x) => x.index)).toEqual(want.slice(0, 2).map((x) => x.index));
    body.results.forEach((x, i) => {
      expect(x.relevance_score).toBeCloseTo(want[i]!.score, 6);
      expect(x.document.text).toBe(docs[x.index]);
    });
    const bad = await post(srv.url, '/v1/rerank', { model: 'tiny', query: 'q', documents: [3] });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('documents');
  });
});
