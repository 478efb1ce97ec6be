/** `tessera serve`: the OpenAI-compatible HTTP server (src/server) on @hono/node-server. */
import type { Command } from 'commander';
import { basename } from 'node:path';
import { readConfig } from '../config.ts';
import { QUANT_MODES, type QuantMode } from '../models/weights.ts';
import { isEncoderFolder } from './embed.ts';
import { DEFAULT_MODEL, loadWithProgress } from './model.ts';

interface ServeFlags {
  model: string;
  name?: string;
  host: string;
  port: string;
  apiKey?: string;
  maxQueue: string;
  maxBody: string;
  ctx?: string;
  quant?: string;
}

function int(flag: string, v: string, min: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} ${v}: use an integer >= ${min}`);
  return n;
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve the model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/completions, /v1/models, /health, /metrics; for an encoder folder /v1/embeddings and /v1/rerank)')
    .option('--model <path>', 'HF model folder or .gguf file', DEFAULT_MODEL)
    .option('--name <id>', 'the model name clients send as "model" (default: the folder or file name)')
    .option('--host <host>', 'address to bind (loopback unless you say otherwise)', '127.0.0.1')
    .option('--port <n>', 'port (0: any free port, printed at start)', '8080')
    .option('--api-key <key>', 'require "Authorization: Bearer <key>" on /v1/* (default: env TESSERA_API_KEY)')
    .option('--max-queue <n>', 'requests that may wait for the engine before new ones get 429', '16')
    .option('--max-body <bytes>', 'largest request body accepted (413 above)', String(1 << 20))
    .option('--ctx <n>', 'context length (prompt + completion) the KV cache is built for (default: min(4096, the model\'s))')
    .option('--quant <mode>', `weights on the GPU: ${QUANT_MODES.join(' | ')}`)
    .action(async (f: ServeFlags) => {
      const port = int('--port', f.port, 0);
      const maxQueue = int('--max-queue', f.maxQueue, 0);
      const maxBodyBytes = int('--max-body', f.maxBody, 1);
      const ctx = f.ctx !== undefined ? int('--ctx', f.ctx, 2) : undefined;
      const name = f.name ?? (basename(f.model.replace(/\/+$/, '')).replace(/\.gguf$/i, '') || 'model');
      const { createServerApp } = await import('../server/app.ts');
      const { serve } = await import('@hono/node-server');
      let served: Parameters<typeof createServerApp>[0];
      let what: string;
      let dev: { destroy(): void };
      let model: { destroy(): void };
      if (await isEncoderFolder(f.model)) {
        // an encoder (BERT, XLM-R, cross-encoders): /v1/embeddings and /v1/rerank
        const { createDevice } = await import('../gpu/device.ts');
        const { loadEmbeddingModel } = await import('../runtime/embed.ts');
        const d = await createDevice();
        const m = await loadEmbeddingModel(d, f.model).catch((e: unknown) => {
          d.destroy();
          throw e;
        });
        [dev, model] = [d, m];
        served = { kind: 'embedding', name, model: m };
        what = `${m.encoder.cfg.architecture}: /v1/embeddings${m.encoder.cfg.head !== 'none' ? ', /v1/rerank' : ''}`;
      } else {
        const loaded = await loadWithProgress(f.model, f.quant as QuantMode | undefined, false, ctx);
        [dev, model] = [loaded.dev, loaded.model];
        const { Engine } = await import('../runtime/engine.ts');
        const engine = new Engine(loaded.model, name);
        void engine.tokenizer; // a model without a tokenizer cannot be served: say so before listening
        served = engine;
        what = `context ${engine.contextLength}`;
      }
      const apiKey = f.apiKey ?? readConfig().apiKey;
      const { app, scheduler } = createServerApp(served, { ...(apiKey ? { apiKey } : {}), maxQueue, maxBodyBytes });
      await new Promise<void>((resolve, reject) => {
        const server = serve({ fetch: app.fetch, hostname: f.host, port }, (info) => {
          process.stderr.write(`serving "${name}" (${what}) on http://${f.host}:${info.port}/v1${apiKey ? ' (API key required)' : ''}\n`);
        });
        server.on('error', reject);
        let stopping = false;
        const stop = (sig: string) => {
          if (stopping) return;
          stopping = true;
          process.stderr.write(`${sig}: finishing ${scheduler.running + scheduler.depth} request(s), refusing new ones\n`);
          void scheduler.drain().then(() => {
            server.close(() => resolve());
            // every request is done: idle keep-alive connections would hold close() open
            (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
          });
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
      model.destroy();
      dev.destroy();
    });
}
