/**
 * Model sources behind the ModelFiles interface: the shipped model read over HTTP (range requests, and a server that
 * ignores ranges), from File objects, and from disk give the same config, tokenizer and tensors; the GGUF header
 * port reads what @huggingface/gguf reads.
 */
import { readFileSync, readdirSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gguf } from '@huggingface/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesFile } from '../src/formats/files.ts';
import { parseGgufHeader } from '../src/formats/gguf-header.ts';
import { GGUFValueType } from '../src/formats/gguf-value-type.ts';
import { gv, serializeGguf } from '../src/formats/gguf-writer.ts';
import { openGguf } from '../src/formats/gguf.ts';
import { GgmlType } from '../src/formats/quant/ggml-types.ts';
import { cachedFolder, memoryCache } from '../src/formats/cache.ts';
import { blobFolder, blobModelFile, urlFile, urlFolder } from '../src/formats/web-files.ts';
import { openModel } from '../src/models/load.ts';
import type { ModelSource } from '../src/models/source.ts';

const DIR = new URL('../models/default/', import.meta.url).pathname;

interface Served {
  url: string;
  requests: { method: string; path: string; range?: string }[];
  close(): Promise<void>;
}

async function serve(dir: string, ranges: boolean): Promise<Served> {
  const requests: Served['requests'] = [];
  const server: Server = createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
    requests.push({ method: req.method ?? '', path: name, range: req.headers.range });
    let body: Buffer;
    try {
      if (name.includes('/') || name.startsWith('.')) throw new Error('no');
      body = readFileSync(join(dir, name));
    } catch {
      return void res.writeHead(404).end();
    }
    const m = ranges ? /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '') : null;
    if (m) {
      const a = Number(m[1]);
      const b = Math.min(Number(m[2]), body.length - 1);
      res.writeHead(206, { 'content-range': `bytes ${a}-${b}/${body.length}`, 'content-length': b - a + 1 });
      return void res.end(req.method === 'HEAD' ? undefined : body.subarray(a, b + 1));
    }
    res.writeHead(200, { 'content-length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, requests, close: () => new Promise((r) => server.close(() => r())) };
}

async function sameModel(a: ModelSource, b: ModelSource): Promise<void> {
  expect(a.config).toEqual(b.config);
  expect(a.names().sort()).toEqual(b.names().sort());
  const text = 'In the beginning';
  expect(a.tokenizer!.encode(text)).toEqual(b.tokenizer!.encode(text));
  for (const n of a.names().slice(0, 3)) expect(await a.toFloat32(n)).toEqual(await b.toFloat32(n));
}

let disk: ModelSource;
beforeAll(async () => {
  disk = await openModel(DIR);
});

describe('the shipped model over HTTP', () => {
  let ranged: Served;
  let whole: Served;
  beforeAll(async () => {
    ranged = await serve(DIR, true);
    whole = await serve(DIR, false);
  });
  afterAll(async () => {
    await ranged.close();
    await whole.close();
  });

  it('with range requests: same model as on disk, weights read by range', async () => {
    const src = await openModel(urlFolder(ranged.url));
    await sameModel(src, disk);
    const weightReads = ranged.requests.filter((r) => r.path === 'model.safetensors' && r.method === 'GET');
    expect(weightReads.length).toBeGreaterThan(1);
    expect(weightReads.every((r) => r.range !== undefined)).toBe(true);
  });

  it('from a server that ignores ranges: same model, the weights fetched whole once', async () => {
    const src = await openModel(urlFolder(whole.url));
    await sameModel(src, disk);
    expect(whole.requests.filter((r) => r.path === 'model.safetensors' && r.method === 'GET').length).toBe(1);
  });

  it('from a server that ignores ranges, a file over maxWholeBytes is refused naming it, not held whole', async () => {
    const open = async () => sameModel(await openModel(urlFolder(whole.url, { maxWholeBytes: 1 << 20 })), disk);
    await expect(open()).rejects.toMatchObject({ name: 'RangeUnsupportedError', message: expect.stringMatching(/model\.safetensors: the server ignores HTTP range requests.*larger than the 1 MiB/) });
  });

  it('through a cache: the second open makes no request to the server', async () => {
    const cache = memoryCache();
    const progress: number[] = [];
    const first = await openModel(cachedFolder(urlFolder(ranged.url), cache, { onProgress: (p) => p.file.endsWith('model.safetensors') && progress.push(p.done / p.total) }));
    await sameModel(first, disk);
    expect(progress.at(-1)).toBe(1);
    const before = ranged.requests.length;
    const again = await openModel(cachedFolder(urlFolder(ranged.url), cache));
    await sameModel(again, disk);
    expect(ranged.requests.length).toBe(before);
  });

  it('a missing folder is reported with its config.json', async () => {
    await expect(openModel(urlFolder(`${ranged.url}nope/`))).rejects.toThrow(/config\.json/);
  });
});

describe('picked files (File objects)', () => {
  it('a folder of Files is the same model as on disk', async () => {
    const files = readdirSync(DIR).map((n) => new File([readFileSync(join(DIR, n))], n));
    await sameModel(await openModel(blobFolder(files, 'default')), disk);
  });

  it('webkitRelativePath names drop the picked folder', async () => {
    const files = readdirSync(DIR).map((n) => {
      const f = new File([readFileSync(join(DIR, n))], n);
      Object.defineProperty(f, 'webkitRelativePath', { value: `default/${n}` });
      return f;
    });
    await sameModel(await openModel(blobFolder(files)), disk);
  });
});

describe('GGUF through ModelFiles', () => {
  // Big enough that the header parser reads several 2 MB chunks.
  const tokens = Array.from({ length: 200_000 }, (_, i) => `token-${i}-${'x'.repeat(i % 13)}`);
  const f32 = new Float32Array(64 * 32).map((_, i) => Math.sin(i));
  const bytes = serializeGguf(
    {
      'general.architecture': 'llama',
      'general.alignment': gv.u32(32),
      'test.u64': gv.u64(1n << 40n),
      'test.f64': gv.f64(0.125),
      'test.bool': gv.bool(true),
      'test.tokens': gv.arr(GGUFValueType.STRING, tokens),
    },
    [{ name: 'w', type: GgmlType.F32, shape: [32, 64], data: new Uint8Array(f32.buffer) }],
  );

  it('the header port reads what @huggingface/gguf reads', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tessera-gguf-port-')), 'x.gguf');
    writeFileSync(file, bytes);
    const ref = await gguf(file, { allowLocalFile: true });
    const ours = await parseGgufHeader(bytesFile('x.gguf', bytes));
    expect(ours.metadata).toEqual(ref.metadata);
    expect(ours.tensorInfos).toEqual(ref.tensorInfos);
    expect(ours.tensorDataOffset).toBe(ref.tensorDataOffset);
    expect(ours.tensorInfoByteRange).toEqual(ref.tensorInfoByteRange);
  });

  it('opens from a File and over HTTP with the same tensors', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-gguf-http-'));
    writeFileSync(join(dir, 'x.gguf'), bytes);
    const s = await serve(dir, true);
    try {
      const fromUrl = await openGguf((await urlFile(`${s.url}x.gguf`)).file);
      const fromBlob = await openGguf(blobModelFile(new File([bytes as Uint8Array<ArrayBuffer>], 'x.gguf')).file);
      expect(await fromUrl.toFloat32('w')).toEqual(f32);
      expect(await fromBlob.toFloat32('w')).toEqual(f32);
      expect(fromUrl.metadata['test.tokens']).toEqual(tokens);
    } finally {
      await s.close();
    }
  });
});
