/**
 * The Web Worker entry: the engine (src/web/host.ts) answering the page's client (src/web/client.ts) over
 * postMessage, so loading and generation never block the page. Start it with
 * `new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })` (Vite, esbuild) and hand it to
 * `new TesseraClient(worker)`.
 */
import { serveEngine } from './host.ts';
import type { Port } from './protocol.ts';

serveEngine(globalThis as unknown as Port);
