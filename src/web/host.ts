/**
 * The engine behind a message port: what runs inside the Web Worker (src/web/worker.ts calls `serveEngine(self)`).
 * It owns one WebGPU device (created on first use) and the loaded models, and answers the requests of
 * src/web/protocol.ts. Generations run one at a time (one GPU queue); `cancel` stops a generation after the step in
 * flight, or a load at its next file chunk or tensor. Imports no Node module and no DOM: it runs in a worker, a page
 * or Node (over a MessagePort).
 */
import { createDevice, describeAdapter, type TesseraDevice } from '../gpu/device.ts';
import { cachedFolder, memoryCache, opfsCache, type FileCache } from '../formats/cache.ts';
import { blobFile, urlFile, urlFolder } from '../formats/web-files.ts';
import type { ModelFiles, ModelFolder } from '../formats/files.ts';
import { loadModelFromSource, openModel, type LoadedModel } from '../models/load.ts';
import { Engine } from '../runtime/engine.ts';
import { formatSelfTest, runSelfTest } from '../selftest/selftest.ts';
import { toWireError, type DeviceInfo, type GenerateInput, type LoadOptionsWire, type ModelInfo, type ModelSourceSpec, type Port, type Request, type Response, type WireResult } from './protocol.ts';

export class AbortError extends Error {
  constructor(what: string) {
    super(`${what} was cancelled`);
    this.name = 'AbortError';
  }
}

/** The model files a spec names (cached in OPFS where the runtime has it, else in memory, for URL sources). */
export async function modelFilesOf(source: ModelSourceSpec, opts: { cacheName?: string; onDownload?: (file: string, done: number, total: number) => void } = {}): Promise<ModelFiles> {
  if (source.kind === 'files') return filesFolder(source.files, source.path ?? 'picked files');
  if (source.kind === 'file') return { kind: 'file', path: source.file.name, file: blobFile(source.file, source.file.name) };
  const url = new URL(source.url, (globalThis as { location?: { href: string } }).location?.href).href;
  const cache = source.cache === false ? undefined : await pickCache(opts.cacheName ?? 'tessera-models');
  const progress = { onProgress: (p: { file: string; done: number; total: number }) => opts.onDownload?.(p.file, p.done, p.total) };
  const gguf = /\.gguf(\?|#|$)/i.test(new URL(url).pathname);
  if (!gguf) {
    const folder = urlFolder(url.endsWith('/') ? url : `${url}/`);
    return cache ? cachedFolder(folder, cache, progress) : folder;
  }
  if (!cache) return urlFile(url);
  const slash = url.lastIndexOf('/');
  const name = decodeURIComponent(url.slice(slash + 1));
  const folder = cachedFolder(urlFolder(url.slice(0, slash + 1)), cache, progress);
  const file = await folder.open(name);
  if (!file) throw new Error(`${url}: not found`);
  return { kind: 'file', path: url, file };
}

function filesFolder(files: { name: string; file: Blob }[], path: string): ModelFolder {
  const byName = new Map(files.map((f) => [f.name, f.file]));
  return {
    kind: 'folder',
    path,
    pathOf: (name) => `${path}/${name}`,
    open: async (name) => {
      const f = byName.get(name);
      return f ? blobFile(f, `${path}/${name}`) : undefined;
    },
    list: async () => [...byName.keys()].filter((n) => !n.includes('/')),
  };
}

async function pickCache(name: string): Promise<FileCache> {
  const storage = (globalThis as { navigator?: { storage?: { getDirectory?: unknown } } }).navigator?.storage;
  return typeof storage?.getDirectory === 'function' ? opfsCache(name) : memoryCache();
}

function modelInfo(handle: number, m: LoadedModel, parameters: number, loadMs: number): ModelInfo {
  return {
    handle,
    path: m.path,
    architecture: m.config.architecture,
    layers: m.config.numLayers,
    hidden: m.config.hiddenSize,
    vocab: m.config.vocabSize,
    parameters,
    weightBytes: m.weights.bytes,
    quant: m.weights.mode,
    storage: { ...m.weights.storage },
    contextLength: m.decoder.maxPositions,
    hasTokenizer: m.tokenizer !== null,
    hasChatTemplate: m.tokenizer?.chatTemplateSource !== undefined,
    loadMs,
  };
}

export function deviceInfo(dev: TesseraDevice): DeviceInfo {
  const a = dev.caps.adapterInfo as unknown as DeviceInfo['adapterInfo'];
  return {
    adapter: describeAdapter(dev.caps),
    features: [...dev.caps.features].sort(),
    limits: { ...dev.caps.limits },
    adapterInfo: { vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description, subgroupMinSize: a.subgroupMinSize, subgroupMaxSize: a.subgroupMaxSize },
  };
}

/** Answer the requests arriving on `port` until the port closes. */
export function serveEngine(port: Port): void {
  let device: Promise<TesseraDevice> | undefined;
  const getDevice = () => (device ??= createDevice());
  const models = new Map<number, { engine: Engine; model: LoadedModel }>();
  let nextHandle = 1;
  const aborts = new Map<number, AbortController>();
  let queue: Promise<unknown> = Promise.resolve(); // GPU work, one request at a time
  const send = (m: Response) => port.postMessage(m);
  const serial = <T>(f: () => Promise<T>): Promise<T> => {
    const r = queue.then(f);
    queue = r.catch(() => undefined);
    return r;
  };
  const engineOf = (handle: number) => {
    const m = models.get(handle);
    if (!m) throw new Error(`no model with handle ${handle} (unloaded, or never loaded)`);
    return m;
  };
  const encode = (engine: Engine, input: GenerateInput): number[] => {
    if ('ids' in input) return [...input.ids];
    if ('messages' in input) return engine.encodeChat(input.messages);
    return engine.encodeText(input.prompt);
  };

  async function handle(req: Request): Promise<unknown> {
    switch (req.type) {
      case 'device':
        return deviceInfo(await getDevice());
      case 'load': {
        const signal = aborts.get(req.id)!.signal;
        const check = () => {
          if (signal.aborted) throw new AbortError('loading the model');
        };
        const o: LoadOptionsWire = req.options ?? {};
        const t0 = performance.now();
        const files = await modelFilesOf(req.source, {
          cacheName: o.cacheName,
          onDownload: (file, done, total) => {
            check();
            send({ type: 'progress', id: req.id, progress: { phase: 'download', file, done, total } });
          },
        });
        const src = await openModel(files);
        let parameters = 0;
        for (const n of src.names()) parameters += src.info(n).shape.reduce((a, b) => a * b, 1);
        check();
        const dev = await getDevice();
        const model = await serial(() =>
          loadModelFromSource(dev, src, {
            quant: o.quant,
            maxPositions: o.maxPositions,
            onProgress: (p) => {
              check();
              send({ type: 'progress', id: req.id, progress: { phase: 'upload', tensor: p.tensor, index: p.index, total: p.total, bytes: p.bytes } });
            },
          }),
        );
        const h = nextHandle++;
        models.set(h, { engine: new Engine(model, model.path), model });
        return modelInfo(h, model, parameters, performance.now() - t0);
      }
      case 'unload': {
        const m = models.get(req.handle);
        models.delete(req.handle);
        if (m) await serial(async () => m.model.destroy());
        return true;
      }
      case 'encode':
        return encode(engineOf(req.handle).engine, req.input);
      case 'generate': {
        const { engine } = engineOf(req.handle);
        const ids = encode(engine, req.input);
        const signal = aborts.get(req.id)!.signal;
        return serial(async () => {
          const it = engine.stream({ promptIds: ids, options: req.options ?? {}, signal });
          const got: number[] = [];
          let text = '';
          const t0 = performance.now();
          for (;;) {
            const r = await it.next();
            if (r.done) {
              if (Array.isArray(r.value.ids)) return r.value;
              // Aborted: the engine returns no result of its own; the tokens streamed so far are the result.
              const ms = performance.now() - t0;
              const result: WireResult = {
                ids: got,
                text,
                finishReason: 'stop',
                promptTokens: ids.length,
                prefillMs: 0,
                decodeMs: ms,
                prefillTokensPerSecond: 0,
                decodeTokensPerSecond: ms > 0 ? (got.length / ms) * 1000 : 0,
                aborted: true,
              };
              return result;
            }
            if (r.value.token >= 0) got.push(r.value.token);
            text += r.value.text;
            send({ type: 'token', id: req.id, event: r.value });
          }
        });
      }
      case 'selftest': {
        const dev = await getDevice();
        return serial(async () => {
          const rows = await runSelfTest(dev, { filter: req.filter, heavy: req.heavy, onRow: (row) => send({ type: 'row', id: req.id, row }) });
          return { adapter: describeAdapter(dev.caps), rows, table: formatSelfTest(rows) };
        });
      }
      case 'dispose':
        return serial(async () => {
          for (const m of models.values()) m.model.destroy();
          models.clear();
          const d = device;
          device = undefined;
          if (d) (await d.catch(() => undefined))?.destroy();
          return true;
        });
      case 'cancel':
        aborts.get(req.target)?.abort();
        return true;
    }
  }

  port.addEventListener('message', (ev: MessageEvent) => {
    const req = ev.data as Request;
    if (!req || typeof req !== 'object' || typeof req.id !== 'number') return;
    if (req.type !== 'cancel') aborts.set(req.id, new AbortController());
    handle(req).then(
      (value) => send({ type: 'result', id: req.id, value }),
      (e) => send({ type: 'error', id: req.id, error: toWireError(e) }),
    ).finally(() => aborts.delete(req.id));
  });
}
