/**
 * The demo app's semantic-search panel in headless chromium (WebGPU on SwiftShader): the app built by Vite and served
 * by serveWeb with a tiny random BERT folder as its model. `?model=<served folder>&query=..&docs=a|b|c&autorun=1` shows
 * the documents in the order of the cosine similarities the library's embed() gives in Node for the same texts, each
 * score within 1e-4 (and shown to 4 decimals); the Search button ranks a new query the same way; the generation panel is
 * hidden for an encoder; a cross-encoder's page ranks by the library's rerank() scores. Fails (never skips) without
 * chromium.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from './browser/launch.ts';
import { buildWebApp, serveWeb, type WebServer } from '../src/cli/web.ts';
import { embed, loadEmbeddingModel, rerank, type EmbeddingModel } from '../src/runtime/embed.ts';
import { bertTokenizerJson, TINY, writeModel } from './helpers/encoder-fixture.ts';
import { testDevice } from './helpers/device.ts';

const QUERY = 'the word was with god';
const DOCS = ['in the beginning was the word', 'the light shineth in darkness', 'and the darkness comprehended it not', 'all things were made by him', 'let there be light'];
const QUERY2 = 'god said let there be light';

type Shown = { state: string; error?: string; results: { index: number; score: number; text: string; shown: string }[]; stats: string; searchHidden: boolean; chatHidden: boolean };

async function shown(page: Page): Promise<Shown> {
  return page.evaluate(() => {
    const items = Array.from(document.querySelectorAll('[data-testid=search-results] [data-testid=search-result]')) as HTMLElement[];
    return {
      state: document.body.dataset.state!,
      error: document.body.dataset.error,
      results: items.map((li) => ({ index: Number(li.dataset.index), score: Number(li.dataset.score), text: li.childNodes[1]?.textContent ?? '', shown: li.querySelector('.score')?.textContent ?? '' })),
      stats: document.querySelector('[data-testid=search-stats]')!.textContent ?? '',
      searchHidden: (document.getElementById('search-panel') as HTMLElement).hidden,
      chatHidden: (document.getElementById('chat-panel') as HTMLElement).hidden,
    };
  });
}

async function settled(page: Page): Promise<Shown> {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state ?? ''), undefined, { timeout: 120_000 });
  return shown(page);
}

/** Plain dot / norms in float64: the oracle for the page's cosine. */
function cos(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) [d, na, nb] = [d + a[i]! * b[i]!, na + a[i]! * a[i]!, nb + b[i]! * b[i]!];
  return d / Math.sqrt(na * nb);
}

/** The expected ranking, best first; the scores must be apart by more than the tolerance for the order to be checked. */
function ranked(scores: number[]): { index: number; score: number }[] {
  const r = scores.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score);
  for (let i = 1; i < r.length; i++) expect(r[i - 1]!.score - r[i]!.score, 'fixture: scores too close to order').toBeGreaterThan(1e-3);
  return r;
}

function expectRanking(got: Shown, want: { index: number; score: number }[], docs: string[]): void {
  expect(got.error).toBeUndefined();
  expect(got.state).toBe('done');
  expect(got.results.map((r) => r.index)).toEqual(want.map((r) => r.index));
  got.results.forEach((r, k) => {
    expect(Math.abs(r.score - want[k]!.score)).toBeLessThan(1e-4);
    expect(r.shown).toBe(r.score.toFixed(4));
    expect(r.text).toBe(docs[r.index]);
  });
}

describe('the semantic-search panel of the demo app in headless chromium', () => {
  let browser: Browser;
  let bertSrv: WebServer;
  let crossSrv: WebServer;
  let bertRef: EmbeddingModel;
  let crossRef: EmbeddingModel;
  const temps: string[] = [];
  beforeAll(async () => {
    browser = await launchChromium();
    const dist = mkdtempSync(join(tmpdir(), 'tessera-web-search-dist-'));
    temps.push(dist);
    await buildWebApp({ outDir: dist, force: true });
    const bert = writeModel({ ...TINY, architectures: ['BertModel'] }, 'web-search-bert', { 'tokenizer.json': bertTokenizerJson() }).dir;
    const cross = writeModel({ ...TINY, architectures: ['BertForSequenceClassification'], num_labels: 1 }, 'web-search-cross', { 'tokenizer.json': bertTokenizerJson() }).dir;
    temps.push(bert, cross);
    bertSrv = await serveWeb({ dist, modelDir: bert });
    crossSrv = await serveWeb({ dist, modelDir: cross });
    const dev = await testDevice();
    bertRef = await loadEmbeddingModel(dev, bert);
    crossRef = await loadEmbeddingModel(dev, cross);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await bertSrv?.close();
    await crossSrv?.close();
    bertRef?.destroy();
    crossRef?.destroy();
    for (const d of temps) rmSync(d, { recursive: true, force: true });
  });

  const pageUrl = (srv: WebServer, query: string, docs: string[]) =>
    `${srv.url}?model=${encodeURIComponent(`${srv.url}models/default/`)}&query=${encodeURIComponent(query)}&docs=${encodeURIComponent(docs.join('|'))}&autorun=1`;

  it('?model=<tiny BERT>&query&docs&autorun=1 ranks the documents by the cosine of the library embeddings; the Search button does it again', async () => {
    const [q, ...d] = await embed(bertRef, [QUERY, ...DOCS]);
    const want = ranked(d.map((v) => cos(q!, v)));
    const page = await browser.newPage();
    try {
      await page.goto(pageUrl(bertSrv, QUERY, DOCS));
      const got = await settled(page);
      expectRanking(got, want, DOCS);
      expect(got.stats).toMatch(/^5 documents ranked by cosine similarity in \d+\.\d ms$/);
      expect(got.searchHidden).toBe(false);
      expect(got.chatHidden).toBe(true);
      expect(await page.textContent('[data-testid=model-info]')).toMatch(/BertModel, 2 layers, hidden 32.*embeddings: 32 dims, pooling mean/);
      expect(await page.isDisabled('[data-testid=generate]')).toBe(true);

      // a new query and documents through the panel's own controls
      const docs2 = [...DOCS].reverse();
      const [q2, ...d2] = await embed(bertRef, [QUERY2, ...docs2]);
      const want2 = ranked(d2.map((v) => cos(q2!, v)));
      await page.fill('[data-testid=query]', QUERY2);
      await page.fill('[data-testid=docs]', docs2.join('\n'));
      await page.click('[data-testid=search]');
      expectRanking(await settled(page), want2, docs2);
    } finally {
      await page.close();
    }
  }, 180_000);

  it('a cross-encoder (BertForSequenceClassification) ranks by the library rerank() scores', async () => {
    const want = ranked((await rerank(crossRef, QUERY, DOCS)).map((r) => r.score));
    const page = await browser.newPage();
    try {
      await page.goto(pageUrl(crossSrv, QUERY, DOCS));
      const got = await settled(page);
      expectRanking(got, want, DOCS);
      expect(got.stats).toMatch(/ranked by cross-encoder score/);
      expect(await page.textContent('[data-testid=search-method]')).toMatch(/cross-encoder/);
    } finally {
      await page.close();
    }
  }, 180_000);
});
