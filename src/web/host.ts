/**
 * The engine behind a message port: what runs inside the Web Worker (src/web/worker.ts calls `serveEngine(self)`).
 * It owns one WebGPU device (created on first use) and the loaded models, and answers the requests of
 * src/web/protocol.ts. Generations run one at a time (one GPU queue); `cancel` stops a generation after the step in
 * flight, or a load at its next file chunk or tensor. An encoder folder (BERT, XLM-R, cross-encoders) loads through the
 * library's loadEmbeddingModel and answers embed / rerank with its embed() / rerank(); a decoder folder configured by
 * sentence-transformers for last-token pooling (Qwen3-Embedding) embeds with embedWithDecoder(). Imports no Node module
 * and no DOM: it runs in a worker, a page or Node (over a MessagePort).
 */
import { createDevice, describeAdapter, type TesseraDevice } from '../gpu/device.ts';
import { cachedFolder, memoryCache, opfsCache, type FileCache } from '../formats/cache.ts';
import { blobFile, urlFile, urlFolder } from '../formats/web-files.ts';
import { readText, type ModelFiles, type ModelFolder } from '../formats/files.ts';
import { encoderTensorShapes, isEncoderConfig } from '../models/encoder.ts';
import { ModelConfigError } from '../models/errors.ts';
import { loadModelFromSource, openModel, type LoadedModel } from '../models/load.ts';
import { embed, loadEmbeddingModel, rerank, sentenceTransformersPooling, type EmbeddingModel, type EmbedOptions } from '../runtime/embed.ts';
import { decoderTextIds, decoderTextInput, embedWithDecoder, type DecoderTextInput } from '../runtime/embed-decoder.ts';
import { Engine } from '../runtime/engine.ts';
import { formatSelfTest, runSelfTest } from '../selftest/selftest.ts';
import { ModelKindError, toWireError, type DeviceInfo, type GenerateInput, type LoadOptionsWire, type ModelInfo, type ModelSourceSpec, type Port, type Request, type Response, type WireResult } from './protocol.ts';

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

/** A loaded model in the worker: a decoder (generation), an encoder, or a decoder that embeds (Qwen3-Embedding). */
type Loaded =
  | { kind: 'decoder'; engine: Engine; model: LoadedModel }
  | { kind: 'encoder'; model: EmbeddingModel }
  | { kind: 'decoder-embedder'; model: LoadedModel; normalize: boolean; input: DecoderTextInput };

/**
 * How a folder embeds, from its config.json and sentence-transformers files: 'encoder' (an architecture
 * isEncoderConfig accepts), 'decoder-embedder' (another architecture whose modules.json pools the last token), else
 * undefined (a decoder for generation).
 */
async function embeddingKindOf(files: ModelFiles): Promise<{ kind: 'encoder' } | { kind: 'decoder-embedder'; normalize: boolean } | undefined> {
  if (files.kind !== 'folder') return undefined;
  const cf = await files.open('config.json');
  if (!cf) return undefined; // the decoder loader names what is missing
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(await readText(cf)) as Record<string, unknown>;
  } catch (e) {
    throw new ModelConfigError(cf.path, '(json)', `is not valid JSON: ${(e as Error).message}`);
  }
  if (isEncoderConfig(json)) return { kind: 'encoder' };
  const st = await sentenceTransformersPooling(files);
  return st.pooling === 'last' ? { kind: 'decoder-embedder', normalize: st.normalize } : undefined;
}

function encoderInfo(handle: number, m: EmbeddingModel, loadMs: number): ModelInfo {
  const c = m.encoder.cfg;
  let parameters = 0;
  let weightBytes = 0;
  for (const shape of encoderTensorShapes(c).values()) {
    const n = shape.reduce((a, b) => a * b, 1);
    parameters += n;
    weightBytes += n * (shape.length === 2 && m.encoder.weightDtype === 'float16' ? 2 : 4);
  }
  const quant = m.encoder.weightDtype === 'float16' ? 'f16' : 'f32';
  return {
    handle,
    kind: 'encoder',
    embedding: { dims: c.hidden, pooling: m.pooling, normalize: m.normalize, reranker: c.head !== 'none', backbone: 'encoder' },
    path: m.path,
    architecture: c.architecture,
    layers: c.layers,
    hidden: c.hidden,
    vocab: c.vocabSize,
    parameters,
    weightBytes,
    quant,
    storage: {},
    contextLength: c.maxPositions - c.positionOffset,
    hasTokenizer: m.tokenizer !== null,
    hasChatTemplate: false,
    loadMs,
  };
}

function modelInfo(handle: number, m: LoadedModel, parameters: number, loadMs: number): ModelInfo {
  return {
    handle,
    kind: 'decoder',
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
  const models = new Map<number, Loaded>();
  let nextHandle = 1;
  const aborts = new Map<number, AbortController>();
  let queue: Promise<unknown> = Promise.resolve(); // GPU work, one request at a time
  const send = (m: Response) => port.postMessage(m);
  const serial = <T>(f: () => Promise<T>): Promise<T> => {
    const r = queue.then(f);
    queue = r.catch(() => undefined);
    return r;
  };
  const loadedOf = (handle: number): Loaded => {
    const m = models.get(handle);
    if (!m) throw new Error(`no model with handle ${handle} (unloaded, or never loaded)`);
    return m;
  };
  const engineOf = (handle: number, what: string) => {
    const m = loadedOf(handle);
    if (m.kind !== 'decoder') throw new ModelKindError(what, m.model.path, `is an embedding model (${architectureOf(m)}): use embed()${m.kind === 'encoder' && m.model.encoder.cfg.head !== 'none' ? ' or rerank()' : ''}, or load a decoder to generate`);
    return m;
  };
  const embedderOf = (handle: number, what: string) => {
    const m = loadedOf(handle);
    if (m.kind === 'decoder') throw new ModelKindError(what, m.model.path, `is a decoder for generation (${m.model.config.architecture}): ${what}() needs an embedding model (BertModel, XLMRobertaModel, a *ForSequenceClassification cross-encoder, or a sentence-transformers folder with last-token pooling such as Qwen3-Embedding)`);
    return m;
  };
  const architectureOf = (m: Loaded) => (m.kind === 'encoder' ? m.model.encoder.cfg.architecture : m.model.config.architecture);
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
        check();
        const dev = await getDevice();
        const embedding = await embeddingKindOf(files);
        if (embedding?.kind === 'encoder') {
          const m = await serial(() => loadEmbeddingModel(dev, files));
          if (signal.aborted) {
            m.destroy();
            check();
          }
          const h = nextHandle++;
          models.set(h, { kind: 'encoder', model: m });
          return encoderInfo(h, m, performance.now() - t0);
        }
        const src = await openModel(files);
        let parameters = 0;
        for (const n of src.names()) parameters += src.info(n).shape.reduce((a, b) => a * b, 1);
        check();
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
        if (embedding?.kind === 'decoder-embedder') {
          // how a text becomes ids, as sentence-transformers reads this folder (files: embeddingKindOf found it a folder)
          let input: DecoderTextInput;
          try {
            input = await decoderTextInput(files as ModelFolder, model.tokenizer);
          } catch (e) {
            model.destroy();
            throw e;
          }
          models.set(h, { kind: 'decoder-embedder', model, normalize: embedding.normalize, input });
          const info = modelInfo(h, model, parameters, performance.now() - t0);
          return { ...info, kind: 'encoder', embedding: { dims: model.config.hiddenSize, pooling: 'last', normalize: embedding.normalize, reranker: false, backbone: 'decoder' } } satisfies ModelInfo;
        }
        models.set(h, { kind: 'decoder', engine: new Engine(model, model.path), model });
        return modelInfo(h, model, parameters, performance.now() - t0);
      }
      case 'unload': {
        const m = models.get(req.handle);
        models.delete(req.handle);
        if (m) await serial(async () => m.model.destroy());
        return true;
      }
      case 'encode': {
        const m = loadedOf(req.handle);
        if (m.kind === 'decoder') return encode(m.engine, req.input);
        // an embedding model: the ids embed() feeds for a text (its tokenizer with special tokens; a decoder embedder's
        // text input, which may be the chat template)
        if ('ids' in req.input) return [...req.input.ids];
        if ('messages' in req.input) throw new ModelKindError('encode (chat messages)', m.model.path, `is an embedding model (${architectureOf(m)}) with no chat template: encode a text`);
        const tok = m.model.tokenizer;
        if (!tok) throw new ModelConfigError(`${m.model.path}/tokenizer.json`, '(file)', 'missing: encoding text needs a tokenizer');
        return m.kind === 'decoder-embedder' ? decoderTextIds(tok, req.input.prompt, m.input) : tok.encode(req.input.prompt, { addSpecialTokens: true });
      }
      case 'embed': {
        const m = embedderOf(req.handle, 'embed');
        const opts: EmbedOptions = req.options ?? {};
        if (m.kind === 'encoder') return serial(() => embed(m.model, req.inputs, opts));
        // a decoder embedder (Qwen3-Embedding): the last token's final hidden state
        if (opts.pooling !== undefined && opts.pooling !== 'last') throw new RangeError(`embed: pooling "${opts.pooling}": ${m.model.path} (${m.model.config.architecture}, a decoder) embeds with its last token only`);
        return serial(() => embedWithDecoder(m.model, req.inputs, { normalize: opts.normalize ?? m.normalize, input: m.input }));
      }
      case 'rerank': {
        const m = embedderOf(req.handle, 'rerank');
        if (m.kind !== 'encoder') throw new ModelKindError('rerank', m.model.path, `is an embedder (${m.model.config.architecture}, last-token pooling), not a cross-encoder: use embed() and compare vectors`);
        return serial(() => rerank(m.model, req.query, req.documents));
      }
      case 'generate': {
        const { engine } = engineOf(req.handle, 'generate');
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
