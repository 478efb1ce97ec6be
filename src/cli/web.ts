/**
 * `tessera web`: the demo app (web/, built with Vite into web/dist on first use and whenever web/ or src/ is newer
 * than the build) and models/default (at /models/default/, with HTTP range requests), on loopback; prints the URL.
 */
import type { Command } from 'commander';
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const WEB_DIR = join(ROOT, 'web');
export const WEB_DIST = join(WEB_DIR, 'dist');
const MODEL_DIR = join(ROOT, 'models', 'default');

function newestMtime(dir: string, skip: (p: string) => boolean): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (skip(p)) continue;
    if (e.isDirectory()) t = Math.max(t, newestMtime(p, skip));
    else if (e.isFile()) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

/** Whether `outDir` holds a build at least as new as web/ and src/. */
export function webBuildIsFresh(outDir = WEB_DIST): boolean {
  const index = join(outDir, 'index.html');
  if (!existsSync(index)) return false;
  const built = statSync(index).mtimeMs;
  const skip = (p: string) => p === outDir || p.endsWith(`${sep}node_modules`);
  return Math.max(newestMtime(WEB_DIR, skip), newestMtime(join(ROOT, 'src'), skip)) <= built;
}

/** Builds the app with Vite into `outDir` (default web/dist) unless a fresh build is there (or `force`). */
export async function buildWebApp(opts: { outDir?: string; force?: boolean; log?: (s: string) => void } = {}): Promise<string> {
  const outDir = opts.outDir ?? WEB_DIST;
  if (!opts.force && webBuildIsFresh(outDir)) return outDir;
  let vite: typeof import('vite');
  try {
    vite = await import('vite');
  } catch (e) {
    throw new Error(`building the web app needs Vite (a devDependency): run npm install in ${ROOT} (${(e as Error).message})`);
  }
  opts.log?.(`building the web app into ${outDir} …`);
  await vite.build({ configFile: join(WEB_DIR, 'vite.config.ts'), logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  return outDir;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
  '.jinja': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
};

export interface WebServer {
  url: string;
  /** Every request as "METHOD /path", in order. */
  requests(): string[];
  /** The requests for model files (under /models/). */
  modelRequests(): string[];
  close(): Promise<void>;
}

/** A file under `root` by URL path, or undefined (no escaping the root, no dot files). */
function fileUnder(root: string, rel: string): string | undefined {
  const p = normalize(join(root, rel));
  if (!p.startsWith(root.endsWith(sep) ? root : root + sep) || rel.split('/').some((s) => s.startsWith('.'))) return undefined;
  return existsSync(p) && statSync(p).isFile() ? p : undefined;
}

/** Serves `dist` at / and `modelDir` at /models/default/ (range requests) on host:port (port 0: any free port). */
export async function serveWeb(opts: { dist?: string; modelDir?: string; host?: string; port?: number } = {}): Promise<WebServer> {
  const dist = opts.dist ?? WEB_DIST;
  const modelDir = opts.modelDir ?? MODEL_DIR;
  const log: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      return void res.writeHead(400).end();
    }
    log.push(`${req.method} ${path}`);
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
    const model = path.startsWith('/models/default/');
    const file = model ? fileUnder(modelDir, path.slice('/models/default/'.length)) : fileUnder(dist, path === '/' ? 'index.html' : path.slice(1));
    if (!file) return void res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${path}\n`);
    const size = statSync(file).size;
    const headers: Record<string, string | number> = { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'accept-ranges': 'bytes', 'cache-control': 'no-cache' };
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (m) {
      const a = Number(m[1]);
      const b = Math.min(m[2] ? Number(m[2]) : size - 1, size - 1);
      if (a > b) return void res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      res.writeHead(206, { ...headers, 'content-range': `bytes ${a}-${b}/${size}`, 'content-length': b - a + 1 });
      if (req.method === 'HEAD') return void res.end();
      return void createReadStream(file, { start: a, end: b }).pipe(res);
    }
    res.writeHead(200, { ...headers, 'content-length': size });
    if (req.method === 'HEAD') return void res.end();
    createReadStream(file).pipe(res);
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const addr = server.address() as { port: number };
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${addr.port}/`,
    requests: () => [...log],
    modelRequests: () => log.filter((r) => r.includes(' /models/')),
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export function registerWebCommand(program: Command): void {
  program
    .command('web')
    .description('serve the browser demo (web/, built with Vite on first use) and models/default on loopback; prints the URL')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <n>', 'port (0: any free port)', '8088')
    .option('--build', 'rebuild the app even when the build is fresh')
    .option('--out <dir>', 'where the app is built and served from', WEB_DIST)
    .action(async (f: { host: string; port: string; build?: boolean; out: string }) => {
      const port = Number(f.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port ${f.port}: use an integer in 0..65535`);
      const dist = await buildWebApp({ outDir: resolve(f.out), force: f.build, log: (s) => console.error(s) });
      const s = await serveWeb({ dist, host: f.host, port });
      console.log(`tessera web: ${s.url}`);
      console.log(`  try ${s.url}?model=default&prompt=In%20the%20beginning&max_tokens=16&temperature=0&autorun=1`);
      // Serve until interrupted (main() exits once the action returns).
      await new Promise<void>((resolve) => {
        const stop = () => void s.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
