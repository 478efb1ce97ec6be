/**
 * The demo app (web/, built by Vite) in headless chromium with WebGPU on SwiftShader, served by `tessera web`:
 * the query-string run gives `tessera generate --temperature 0`'s 16 greedy tokens, the progress bar reaches 100%,
 * a reload takes the model from OPFS with no model request, a .gguf chosen through the file input generates, Stop
 * cancels a stream, and the self-test panel prints `tessera selftest`'s table. Fails (never skips) without chromium.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from './browser/launch.ts';
import { serveWeb, type WebServer } from '../src/cli/web.ts';
import { writeDefaultGguf } from './helpers/default-gguf.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const BIN = join(ROOT, 'bin/tessera.mjs');
const DIR = join(ROOT, 'models/default');
const PROMPT = 'In the beginning';
const run = promisify(execFile);

async function settled(page: Page, timeout = 150_000): Promise<{ state: string; error?: string; output: string; ids: number[]; tokens: number; progress: number }> {
  await page.waitForFunction(() => ['done', 'error', 'cancelled'].includes(document.body.dataset.state ?? ''), undefined, { timeout });
  return page.evaluate(() => {
    const out = document.querySelector('[data-testid=output]') as HTMLElement;
    return {
      state: document.body.dataset.state!,
      error: document.body.dataset.error,
      output: out.textContent ?? '',
      ids: JSON.parse(out.dataset.ids ?? '[]') as number[],
      tokens: Number(out.dataset.tokens ?? 0),
      progress: (document.querySelector('[data-testid=progress]') as HTMLProgressElement).value,
    };
  });
}

describe('the demo app (web/) in headless chromium, served by tessera web', () => {
  let browser: Browser;
  let server: WebServer;
  let cli: ChildProcess | undefined;
  let cliUrl = '';
  const temps: string[] = [];
  let want: { ids: number[]; text: string };
  beforeAll(async () => {
    browser = await launchChromium();
    // `tessera web` itself: builds the app when the build is missing or older than web/ and src/, serves it, prints the URL.
    // Built into a directory of this run (concurrent test runs do not share web/dist).
    const dist = mkdtempSync(join(tmpdir(), 'tessera-web-dist-'));
    temps.push(dist);
    cli = spawn(process.execPath, [BIN, 'web', '--port', '0', '--out', dist], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    cli.stderr!.on('data', (d) => (err += d));
    cliUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`tessera web printed no URL in 90 s: ${out} ${err}`)), 90_000);
      cli!.stdout!.on('data', (d) => {
        out += d;
        const m = /tessera web: (http:\/\/\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      cli!.once('exit', (code) => reject(new Error(`tessera web exited (${code}): ${out} ${err}`)));
    });
    // The same build behind an in-process server whose requests the tests count.
    server = await serveWeb({ dist });
    const g = await run(process.execPath, [BIN, 'generate', '--prompt', PROMPT, '--max-tokens', '16', '--temperature', '0', '--json'], { cwd: ROOT, maxBuffer: 1 << 24 });
    want = JSON.parse(g.stdout.slice(g.stdout.indexOf('{')));
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    cli?.kill('SIGTERM');
    for (const d of temps) rmSync(d, { recursive: true, force: true });
  });

  it('?model=default&…&autorun=1 leaves the same 16 greedy tokens as tessera generate --temperature 0; the progress bar reaches 100%', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${cliUrl}?model=default&prompt=${encodeURIComponent(PROMPT)}&max_tokens=16&temperature=0&autorun=1`);
      const r = await settled(page);
      expect(r.state, r.error).toBe('done');
      console.log(`app: ${JSON.stringify(r.output)}; tessera generate: ${JSON.stringify(want.text)}`);
      expect(r.ids).toEqual(want.ids);
      expect(r.output).toBe(want.text);
      expect(r.progress).toBe(100);
      expect(await page.textContent('[data-testid=adapter]')).toMatch(/swiftshader/i);
      expect(await page.textContent('[data-testid=features]')).toMatch(/^features: /);
      expect(await page.textContent('[data-testid=stats]')).toMatch(/tokens\/s/);
    } finally {
      await page.close();
    }
  }, 150_000);

  it('a reload takes the model from OPFS: no model request reaches the server', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}?model=default&prompt=${encodeURIComponent(PROMPT)}&max_tokens=16&temperature=0&autorun=1`);
      const first = await settled(page);
      expect(first.state, first.error).toBe('done');
      const before = server.modelRequests().length;
      expect(server.modelRequests().some((r) => r.endsWith('/models/default/model.safetensors'))).toBe(true);
      await page.reload();
      const again = await settled(page);
      expect(again.state, again.error).toBe('done');
      expect(again.ids).toEqual(first.ids);
      expect(again.progress).toBe(100);
      expect(server.modelRequests().slice(before)).toEqual([]);
    } finally {
      await page.close();
    }
  }, 150_000);

  it('a .gguf chosen through the file input loads and generates', async () => {
    const file = await writeDefaultGguf();
    temps.push(join(file, '..'));
    const page = await browser.newPage();
    try {
      await page.goto(server.url);
      await page.setInputFiles('[data-testid=gguf]', file);
      await page.click('[data-testid=load]');
      await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), undefined, { timeout: 120_000 });
      expect(await page.evaluate(() => document.body.dataset.error)).toBeUndefined();
      expect(await page.textContent('[data-testid=model-info]')).toMatch(/default-f32\.gguf/);
      expect(await page.evaluate(() => (document.querySelector('[data-testid=progress]') as HTMLProgressElement).value)).toBe(100);
      await page.fill('[data-testid=prompt]', PROMPT);
      await page.fill('[data-testid=max-tokens]', '16');
      await page.click('[data-testid=generate]');
      const r = await settled(page);
      expect(r.state, r.error).toBe('done');
      expect(r.ids).toEqual(want.ids); // the same weights as the folder, through llama.cpp's layout
      expect(r.output).toBe(want.text);
    } finally {
      await page.close();
    }
  }, 150_000);

  it('a local HF folder chosen through the directory input loads and generates', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(server.url);
      const before = server.modelRequests().length;
      await page.setInputFiles('[data-testid=folder]', DIR);
      await page.click('[data-testid=load]');
      await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), undefined, { timeout: 120_000 });
      expect(await page.evaluate(() => document.body.dataset.error)).toBeUndefined();
      expect(await page.textContent('[data-testid=model-info]')).toMatch(/^default: LlamaForCausalLM, 4 layers/);
      await page.fill('[data-testid=prompt]', PROMPT);
      await page.fill('[data-testid=max-tokens]', '16');
      await page.click('[data-testid=generate]');
      const r = await settled(page);
      expect(r.state, r.error).toBe('done');
      expect(r.ids).toEqual(want.ids);
      expect(server.modelRequests().slice(before)).toEqual([]); // the bytes came from the picked files
    } finally {
      await page.close();
    }
  }, 150_000);

  it('a model that cannot be loaded sets data-state="error" with the message', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}?model=${encodeURIComponent(`${server.url}models/nothing-here/`)}&prompt=x&autorun=1`);
      const r = await settled(page);
      expect(r.state).toBe('error');
      expect(r.error).toMatch(/nothing-here/);
      expect(await page.textContent('[data-testid=error]')).toBe(r.error);
    } finally {
      await page.close();
    }
  }, 60_000);

  it('Stop cancels the stream', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}?prompt=${encodeURIComponent(PROMPT)}&max_tokens=400&ignore_eos=1`);
      await page.click('[data-testid=load]');
      await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), undefined, { timeout: 120_000 });
      await page.click('[data-testid=generate]');
      await page.waitForFunction(() => Number((document.querySelector('[data-testid=output]') as HTMLElement).dataset.tokens ?? 0) >= 3, undefined, { timeout: 120_000 });
      await page.click('[data-testid=stop]');
      const r = await settled(page);
      expect(r.state, r.error).toBe('cancelled');
      expect(r.tokens).toBeLessThan(400);
      expect(r.ids.length).toBe(r.tokens);
      await page.waitForTimeout(500);
      expect(await page.evaluate(() => Number((document.querySelector('[data-testid=output]') as HTMLElement).dataset.tokens))).toBe(r.tokens);
      expect(await page.textContent('[data-testid=stats]')).toMatch(/cancelled/);
    } finally {
      await page.close();
    }
  }, 150_000);

  it("the self-test panel prints tessera selftest's table", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(server.url);
      await page.fill('[data-testid=selftest-filter]', 'residual.default'); // two variants, the f16 one skipped where the device lacks shader-f16
      await page.click('[data-testid=selftest]');
      await page.waitForFunction(() => (document.querySelector('[data-testid=selftest-table]') as HTMLElement).dataset.done === 'true' || document.body.dataset.state === 'error', undefined, { timeout: 120_000 });
      const table = (await page.textContent('[data-testid=selftest-table]')) ?? '';
      const cli = await run(process.execPath, [BIN, 'selftest', '--filter', 'residual.default'], { cwd: ROOT, maxBuffer: 1 << 24 });
      const firstCols = (t: string) =>
        t
          .split('\n')
          .filter((l) => /^\S+\s+(ok|fail|skipped|no-wgsl|no-cases)\b/.test(l) || l.startsWith('variant'))
          .map((l) => l.split(/\s+/).slice(0, 3).join(' '));
      expect(firstCols(table).length).toBeGreaterThan(1);
      expect(firstCols(table)).toEqual(firstCols(cli.stdout));
      expect(table).toMatch(/residual\.default\s+ok/);
    } finally {
      await page.close();
    }
  }, 150_000);
});
