/** Builds the smoke page with esbuild and serves it on a loopback port (nothing else: registry, contracts and WGSL are in the bundle). */
import { build } from 'esbuild';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

export async function serveSmoke(): Promise<{ url: string; close: () => Promise<void> }> {
  const bundle = await build({
    entryPoints: [join(ROOT, 'src/web/smoke.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  });
  const js = bundle.outputFiles[0]!.text;
  const html = '<!doctype html><meta charset="utf-8"><title>tessera smoke</title><body>running…<script type="module" src="/smoke.js"></script>';
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    if (url.pathname === '/smoke.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address() as { port: number };
  return { url: `http://127.0.0.1:${addr.port}/`, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * Serves a bundle of `entry` as the page at / (and files of `dir` under /model/, with range requests), counting the
 * requests for /model/ files.
 */
export async function servePage(
  entry: string,
  dir: string,
  /** More bundles served at their paths, e.g. { '/worker.js': 'src/web/worker.ts' }. */
  extra: Record<string, string> = {},
): Promise<{ url: string; modelRequests: () => string[]; close: () => Promise<void> }> {
  const { readFileSync } = await import('node:fs');
  const bundleOf = async (file: string) =>
    (await build({ entryPoints: [file], bundle: true, format: 'esm', platform: 'browser', write: false, logLevel: 'silent' })).outputFiles[0]!.text;
  const js = await bundleOf(entry);
  const scripts = new Map<string, string>();
  for (const [at, file] of Object.entries(extra)) scripts.set(at, await bundleOf(file.startsWith('/') ? file : join(ROOT, file)));
  const html = '<!doctype html><meta charset="utf-8"><title>tessera test</title><body><script type="module" src="/page.js"></script>';
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    if (url.pathname === '/page.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    if (scripts.has(url.pathname)) return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(scripts.get(url.pathname));
    const name = url.pathname.startsWith('/model/') ? decodeURIComponent(url.pathname.slice('/model/'.length)) : '';
    requests.push(`${req.method} ${url.pathname}`);
    let body: Buffer;
    try {
      if (!name || name.includes('/') || name.startsWith('.')) throw new Error('not served');
      body = readFileSync(join(dir, name));
    } catch {
      return void res.writeHead(404).end();
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
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
  const addr = server.address() as { port: number };
  return { url: `http://127.0.0.1:${addr.port}/`, modelRequests: () => requests.filter((r) => r.includes('/model/')), close: () => new Promise((r) => server.close(() => r())) };
}
