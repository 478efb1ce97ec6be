import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { serveSmoke } from './browser/serve.ts';
import { residualRef } from '../src/reference/residual.ts';

const CHROMIUM = '/usr/bin/chromium';

// Playwright gives the browser a fresh temporary profile. Debian's chromium is installed by .ci/run; without it this test fails with the reason rather than skipping.
describe('browser smoke (headless chromium, WebGPU on SwiftShader)', () => {
  let browser: Browser;
  let server: Awaited<ReturnType<typeof serveSmoke>>;
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install chromium), as .ci/run does`);
    server = await serveSmoke();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--enable-unsafe-webgpu',
        '--enable-features=Vulkan',
        '--use-webgpu-adapter=swiftshader',
      ],
    });
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
});
