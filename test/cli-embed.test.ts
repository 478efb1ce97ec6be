/**
 * `tessera embed` and `tessera rerank` as a user runs them: JSON output equal to the library's embed() / rerank(),
 * the model's pooling by default and the flags' overrides, and errors for missing or bad arguments.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { embed, loadEmbeddingModel, rerank, type EmbeddingModel } from '../src/runtime/embed.ts';
import { tessera } from './helpers/cli.ts';
import { testDevice } from './helpers/device.ts';
import { bertTokenizerJson, TINY, writeModel } from './helpers/encoder-fixture.ts';

let dev: TesseraDevice;
const bert = writeModel({ ...TINY, architectures: ['BertModel'] }, 'cli-embed/bert', { 'tokenizer.json': bertTokenizerJson() }).dir;
const cls = writeModel({ ...TINY, architectures: ['BertForSequenceClassification'], num_labels: 1 }, 'cli-embed/cls', { 'tokenizer.json': bertTokenizerJson() }).dir;
let mBert: EmbeddingModel;
let mCls: EmbeddingModel;
beforeAll(async () => {
  dev = await testDevice();
  mBert = await loadEmbeddingModel(dev, bert);
  mCls = await loadEmbeddingModel(dev, cls);
});
afterAll(() => {
  mBert?.destroy();
  mCls?.destroy();
});

describe('tessera embed / rerank', () => {
  it('embed --text ... --json prints {"embeddings", "dims"} as embed() computes them', async () => {
    const r = await tessera('embed', '--model', bert, '--text', 'in the beginning was the word', 'light', '--json');
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { embeddings: number[][]; dims: number };
    expect(out.dims).toBe(32);
    const want = await embed(mBert, ['in the beginning was the word', 'light']);
    out.embeddings.forEach((e, i) => expect(e.map((x) => Math.fround(x))).toEqual([...want[i]!]));
  });

  it('embed --ids with --pooling cls --normalize', async () => {
    const r = await tessera('embed', '--model', bert, '--ids', '2,13,3', '--pooling', 'cls', '--normalize', '--json');
    expect(r.code, r.stderr).toBe(0);
    const [e] = (JSON.parse(r.stdout) as { embeddings: number[][] }).embeddings;
    const [want] = await embed(mBert, [[2, 13, 3]], { pooling: 'cls', normalize: true });
    expect(e!.map((x) => Math.fround(x))).toEqual([...want!]);
  });

  it('rerank --json scores as rerank() does', async () => {
    const docs = ['in the beginning was the word', 'light shineth'];
    const r = await tessera('rerank', '--model', cls, '--query', 'where was the word', '--doc', ...docs, '--json');
    expect(r.code, r.stderr).toBe(0);
    const got = (JSON.parse(r.stdout) as { results: { index: number; score: number }[] }).results;
    const want = await rerank(mCls, 'where was the word', docs);
    expect(got.map((x) => x.index)).toEqual([0, 1]);
    got.forEach((x, i) => expect(x.score).toBeCloseTo(want[i]!.score, 6));
  });

  it('errors name the argument', async () => {
    const none = await tessera('embed', '--model', bert);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/give --text \(one or more\) or --ids/);
    const badIds = await tessera('embed', '--model', bert, '--ids', '1,x');
    expect(badIds.stderr).toMatch(/--ids: "x" is not a token id/);
    const badPool = await tessera('embed', '--model', bert, '--text', 'a', '--pooling', 'max');
    expect(badPool.stderr).toMatch(/--pooling: "max" is not one of mean, cls, last/);
    const noHead = await tessera('rerank', '--model', bert, '--query', 'q', '--doc', 'd');
    expect(noHead.stderr).toMatch(/has no classification head: rerank needs a cross-encoder/);
  });
});
