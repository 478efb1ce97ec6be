import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium } from './browser/launch.ts';
import { servePage, serveSmoke } from './browser/serve.ts';
import { openModelSource } from '../src/models/source.ts';
import { createDevice } from '../src/gpu/device.ts';
import { loadModel, requireTokenizer } from '../src/models/load.ts';
import { generate } from '../src/runtime/generate.ts';
import { residualRef } from '../src/reference/residual.ts';

// Playwright gives the browser a fresh temporary profile. Debian's chromium is installed by .ci/run; without it this test fails with the reason rather than skipping.
describe('browser smoke (headless chromium, WebGPU on SwiftShader)', () => {
  let browser: Browser;
  let server: Awaited<ReturnType<typeof serveSmoke>>;
  beforeAll(async () => {
    server = await serveSmoke();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('runs the residual contract (residual.default) in the page and matches the CPU reference', async () => {
    const page = await browser.newPage();
    await page.goto(server.url);
    await page.waitForFunction(() => (window as unknown as { tesseraSmoke?: unknown }).tesseraSmoke !== undefined, undefined, { timeout: 60_000 });
    const r = (await page.evaluate(() => (window as unknown as { tesseraSmoke: unknown }).tesseraSmoke)) as {
      error?: string;
      adapter: string;
      contract: string;
      kernel: string;
      input: number[];
      residual: number[];
      output: number[];
    };
    expect(r.error).toBeUndefined();
    console.log(`browser adapter: ${r.adapter}; contract ${r.contract} (kernel ${r.kernel})`);
    expect(r.adapter).toMatch(/swiftshader/i);
    expect(r.contract).toBe('residual.default');
    expect(r.kernel).toBe('residual.default');
    const want = residualRef(r.input, r.residual, { size: r.input.length, scale: 1 });
    expect(r.output.length).toBe(want.length);
    let maxErr = 0;
    for (let i = 0; i < want.length; i++) maxErr = Math.max(maxErr, Math.abs(r.output[i]! - want[i]!));
    expect(maxErr).toBeLessThan(1e-6);
  });

  it('opens models/default over HTTP through the OPFS cache; a reload makes no model request', async () => {
    const page = await browser.newPage();
    const srv = await servePage(new URL('./browser/opfs-page.ts', import.meta.url).pathname, new URL('../models/default/', import.meta.url).pathname);
    type R = { error?: string; layers: number; tensors: number; name: string; sum: number; downloaded: string[]; tokens: number[] };
    const result = async (): Promise<R> => {
      await page.waitForFunction(() => (window as unknown as { tesseraOpfs?: unknown }).tesseraOpfs !== undefined, undefined, { timeout: 60_000 });
      return (await page.evaluate(() => (window as unknown as { tesseraOpfs: unknown }).tesseraOpfs)) as R;
    };
    try {
      await page.goto(srv.url);
      const first = await result();
      expect(first.error).toBeUndefined();
      const disk = await openModelSource(new URL('../models/default/', import.meta.url).pathname);
      expect(first.layers).toBe(disk.config.numLayers);
      expect(first.tensors).toBe(disk.names().length);
      expect(first.sum).toBeCloseTo((await disk.toFloat32(first.name)).reduce((a, b) => a + b, 0), 3);
      expect(first.tokens).toEqual(disk.tokenizer!.encode('In the beginning'));
      expect(first.downloaded.some((f) => f.endsWith('model.safetensors'))).toBe(true);
      const before = srv.modelRequests().length;
      expect(before).toBeGreaterThan(0);
      await page.reload();
      const again = await result();
      expect(again.error).toBeUndefined();
      expect(again.sum).toBe(first.sum);
      expect(again.downloaded).toEqual([]);
      expect(srv.modelRequests().slice(before)).toEqual([]);
    } finally {
      await page.close();
      await srv.close();
    }
  });

  it('generates 16 greedy tokens of models/default in the page, the same as in Node', async () => {
    const dir = new URL('../models/default/', import.meta.url).pathname;
    const page = await browser.newPage();
    const srv = await servePage(new URL('./browser/generate-page.ts', import.meta.url).pathname, dir);
    try {
      await page.goto(srv.url);
      await page.waitForFunction(() => (window as unknown as { tesseraGenerate?: unknown }).tesseraGenerate !== undefined, undefined, { timeout: 110_000 });
      const r = (await page.evaluate(() => (window as unknown as { tesseraGenerate: unknown }).tesseraGenerate)) as { error?: string; adapter: string; ids: number[]; text: string };
      expect(r.error).toBeUndefined();
      const dev = await createDevice();
      try {
        const model = await loadModel(dev, dir);
        const ids = requireTokenizer(model, 'the test').encode('In the beginning', { addSpecialTokens: true });
        const want = await generate(model, ids, { maxTokens: 16, temperature: 0 });
        model.destroy();
        console.log(`browser (${r.adapter}): ${JSON.stringify(r.text)}; node: ${JSON.stringify(want.text)}`);
        expect(r.ids).toEqual(want.ids);
        expect(r.text).toBe(want.text);
      } finally {
        dev.destroy();
      }
    } finally {
      await page.close();
      await srv.close();
    }
  }, 120_000);
});
