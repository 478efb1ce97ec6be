/** Builds the smoke page with esbuild and serves it (plus src/kernels, src/ops/contracts and spec/) on a loopback port. */
import { build } from 'esbuild';
import { createServer, type Server } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join, normalize } from 'node:path';

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
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    try {
      if (url.pathname === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end(html);
      if (url.pathname === '/smoke.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
      const rel = normalize(url.pathname).replace(/^\/+/, '');
      const file = rel.startsWith('kernels/')
        ? join(ROOT, 'src', rel)
        : rel.startsWith('contracts/')
          ? join(ROOT, 'src', 'ops', rel)
          : rel.startsWith('spec/')
            ? join(ROOT, rel)
            : undefined;
      if (!file || rel.includes('..')) return void res.writeHead(404).end();
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': rel.endsWith('.json') ? 'application/json' : 'text/plain' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address() as { port: number };
  return { url: `http://127.0.0.1:${addr.port}/`, close: () => new Promise((r) => server.close(() => r())) };
}
