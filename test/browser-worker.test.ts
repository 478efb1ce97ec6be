/**
 * The engine in a Web Worker (src/web/worker.ts + src/web/client.ts) in headless chromium: models/default over HTTP
 * streams the same 16 greedy tokens as Node, a cancelled generation stops, an early `break` stops the worker too,
 * chat runs through the chat template, and an error in the worker arrives with its message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium } from './browser/launch.ts';
import { servePage } from './browser/serve.ts';
import { createDevice } from '../src/gpu/device.ts';
import { loadModel, requireTokenizer } from '../src/models/load.ts';
import { generate } from '../src/runtime/generate.ts';

const DIR = new URL('../models/default/', import.meta.url).pathname;

describe('engine in a Web Worker (headless chromium, WebGPU on SwiftShader)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('loads models/default, streams 16 greedy tokens equal to Node, cancels by AbortSignal, carries errors', async () => {
    const page = await browser.newPage();
    const srv = await servePage(new URL('./browser/worker-page.ts', import.meta.url).pathname, DIR, { '/worker.js': 'src/web/worker.ts' });
    try {
      await page.goto(srv.url);
      await page.waitForFunction(() => (window as unknown as { tesseraWorker?: unknown }).tesseraWorker !== undefined, undefined, { timeout: 150_000 });
      const r = (await page.evaluate(() => (window as unknown as { tesseraWorker: unknown }).tesseraWorker)) as {
        error: string;
        failed?: boolean;
        adapter: string;
        features: string[];
        info: { layers: number; vocab: number; hasChatTemplate: boolean; architecture: string };
        progress: { phase: string; index?: number; total: number }[];
        ids: number[];
        text: string;
        result: { ids: number[]; text: string; finishReason: string; aborted: boolean };
        frames: number;
        cancelled: { tokens: number; aborted: boolean; ids: number; finishReason: string };
        broke: number;
        chat: string;
        loadAbort: string;
      };
      expect(r.failed, r.error).toBeUndefined();
      expect(r.adapter).toMatch(/swiftshader/i);
      expect(r.info.layers).toBe(4);
      expect(r.info.architecture).toBe('LlamaForCausalLM');
      const uploads = r.progress.filter((p) => p.phase === 'upload');
      expect(uploads.length).toBeGreaterThan(0);
      expect(uploads.at(-1)!.index).toBe(uploads.at(-1)!.total);
      expect(r.progress.some((p) => p.phase === 'download')).toBe(true);

      const dev = await createDevice();
      try {
        const model = await loadModel(dev, DIR);
        const ids = requireTokenizer(model, 'the test').encode('In the beginning', { addSpecialTokens: true });
        const want = await generate(model, ids, { maxTokens: 16, temperature: 0 });
        model.destroy();
        console.log(`worker (${r.adapter}): ${JSON.stringify(r.text)}; node: ${JSON.stringify(want.text)}; ${r.frames} frames while streaming`);
        expect(r.ids).toEqual(want.ids);
        expect(r.text).toBe(want.text);
        expect(r.result.ids).toEqual(want.ids);
        expect(r.result.aborted).toBe(false);
      } finally {
        dev.destroy();
      }
      expect(r.frames).toBeGreaterThan(1); // the page kept painting while the worker generated
      // Aborted after the 3rd token: only the tokens in flight when the cancel message arrives follow, far from 400.
      expect(r.cancelled.aborted).toBe(true);
      expect(r.cancelled.tokens).toBeGreaterThanOrEqual(3);
      expect(r.cancelled.tokens).toBeLessThan(50);
      expect(r.broke).toBe(2);
      expect(r.info.hasChatTemplate).toBe(true);
      expect(r.chat.length).toBeGreaterThan(0);
      expect(r.error).toMatch(/missing/);
      expect(r.loadAbort).toMatch(/^AbortError: loading the model was cancelled/);
    } finally {
      await page.close();
      await srv.close();
    }
  }, 180_000);
});
