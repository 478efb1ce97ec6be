/**
 * The worker protocol without a browser: src/web/client.ts and src/web/host.ts over a Node MessageChannel (the same
 * messages a Web Worker carries). models/default as picked files (Blobs) streams Node's 16 greedy tokens; an abort
 * stops the stream; errors keep their name and message; encode() gives the tokenizer's ids; a .gguf URL loads through
 * the download cache (memoryCache in Node) with range reads.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { serveWeb } from '../src/cli/web.ts';
import { writeDefaultGguf } from './helpers/default-gguf.ts';
import { TesseraClient } from '../src/web/client.ts';
import { serveEngine } from '../src/web/host.ts';
import type { Port } from '../src/web/protocol.ts';
import { loadModel, requireTokenizer } from '../src/models/load.ts';
import { generate } from '../src/runtime/generate.ts';
import { testDevice } from './helpers/device.ts';

const DIR = new URL('../models/default/', import.meta.url).pathname;

async function collect<T, R>(it: AsyncGenerator<T, R, void>): Promise<R> {
  for (;;) {
    const r = await it.next();
    if (r.done) return r.value;
  }
}

describe('web client and engine host over a MessageChannel (Node)', () => {
  const ch = new MessageChannel();
  serveEngine(ch.port1 as unknown as Port);
  ch.port1.start();
  ch.port2.start();
  const client = new TesseraClient(ch.port2 as unknown as Port);
  let wantIds: number[] = [];
  afterAll(async () => {
    await client.dispose();
    ch.port1.close();
    ch.port2.close();
  });

  it('loads picked files, streams the same greedy tokens as generate(), cancels, carries errors', async () => {
    const files = readdirSync(DIR).map((name) => ({ name, file: new Blob([readFileSync(join(DIR, name))]) }));
    const progress: number[] = [];
    const model = await client.loadModel({ kind: 'files', files, path: 'default' }, { onProgress: (p) => p.phase === 'upload' && progress.push(p.index / p.total) });
    expect(progress.at(-1)).toBe(1);
    expect(model.info.layers).toBe(4);

    const dev = await testDevice();
    const ref = await loadModel(dev, DIR);
    const ids = requireTokenizer(ref, 'the test').encode('In the beginning', { addSpecialTokens: true });
    const want = await generate(ref, ids, { maxTokens: 16, temperature: 0 });
    ref.destroy();
    expect(await model.encode('In the beginning')).toEqual(ids);

    const got: number[] = [];
    const it = model.generate('In the beginning', { maxTokens: 16, temperature: 0 });
    let r = await it.next();
    while (!r.done) {
      if (r.value.token >= 0) got.push(r.value.token);
      r = await it.next();
    }
    expect(got).toEqual(want.ids);
    expect(r.value.text).toBe(want.text);
    expect(r.value.aborted).toBe(false);

    const ac = new AbortController();
    let n = 0;
    const s = model.generate(ids, { maxTokens: 300, temperature: 0, ignoreEos: true, signal: ac.signal });
    let sr = await s.next();
    while (!sr.done) {
      if (++n === 2) ac.abort();
      sr = await s.next();
    }
    expect(sr.value.aborted).toBe(true);
    expect(n).toBeLessThan(50); // the tokens already in flight when the cancel message arrives, far from 300
    expect(sr.value.ids.length).toBe(n);

    await expect(model.generate('x', { temperature: -1 }).next()).rejects.toMatchObject({ name: 'GenerationOptionsError', message: expect.stringContaining('temperature') });
    await model.unload();
    await expect(model.generate('x').next()).rejects.toThrow(/no model with handle/);
    wantIds = want.ids;
  }, 120_000);

  it('loads a .gguf over HTTP through the download cache (range reads, download progress) and gives the same tokens', async () => {
    const file = await writeDefaultGguf();
    const srv = await serveWeb({ modelDir: dirname(file), dist: dirname(file) });
    try {
      const downloads: { done: number; total: number }[] = [];
      const model = await client.loadModel(`${srv.url}models/default/${basename(file)}`, { onProgress: (p) => p.phase === 'download' && downloads.push({ done: p.done, total: p.total }) });
      expect(downloads.at(-1)!.done).toBe(downloads.at(-1)!.total);
      expect(model.info.path).toMatch(/\.gguf$/);
      const r = await collect(model.generate('In the beginning', { maxTokens: 16, temperature: 0 }));
      expect(r.ids).toEqual(wantIds);
      await model.unload();
    } finally {
      await srv.close();
      rmSync(dirname(file), { recursive: true, force: true });
    }
  }, 120_000);
});
