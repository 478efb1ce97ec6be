/**
 * The page's side of the engine in a Web Worker, with the library's API: `loadModel(source, { onProgress })`, then
 * `model.generate(prompt)` / `model.chat(messages)` as async iterators of token events (their return value is the
 * generation result), cancelled by an AbortSignal (or by leaving the loop). Errors thrown in the worker arrive
 * with their name and message.
 *
 *   const client = new TesseraClient(new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' }));
 *   const model = await client.loadModel('/models/default/', { onProgress: (p) => ... });
 *   for await (const t of model.generate('In the beginning', { maxTokens: 16, signal })) show(t.text);
 *
 * An encoder folder (BERT, XLM-R, a *ForSequenceClassification cross-encoder, or Qwen3-Embedding) loads the same way;
 * its info.kind is 'encoder' and it answers embed() / rerank() instead of generate():
 *
 *   const enc = await client.loadModel('/models/bge-small/');
 *   const [q, d] = await enc.embed(['query', 'document']);   // Float32Array each, pooled as the folder configures
 */
import type { TokenEvent } from '../runtime/generate.ts';
import type { GenerationOptions } from '../runtime/options.ts';
import type { SelfTestRow } from '../selftest/selftest.ts';
import type { ChatMessage } from '../tokenizer/types.ts';
import {
  ModelKindError,
  WorkerError,
  type DeviceInfo,
  type EmbedOptions,
  type EmbeddingInfo,
  type GenerateInput,
  type LoadOptionsWire,
  type LoadProgressEvent,
  type ModelInfo,
  type ModelKind,
  type ModelSourceSpec,
  type Port,
  type SelfTestReport,
  type Request,
  type RerankResult,
  type Response,
  type WireResult,
} from './protocol.ts';

export { ModelKindError, WorkerError, type EmbedOptions, type EmbeddingInfo, type ModelKind, type RerankResult, type SelfTestReport, type DeviceInfo, type LoadProgressEvent, type ModelInfo, type ModelSourceSpec, type WireResult };

/** A URL (an HF folder ending in "/" or a .gguf), a picked .gguf File, the files of a picked folder, or a spec. */
export type ModelSourceInput = string | URL | File | File[] | FileList | ModelSourceSpec;

export interface ClientLoadOptions extends LoadOptionsWire {
  onProgress?: (p: LoadProgressEvent) => void;
  signal?: AbortSignal;
  /** URL sources: keep the files in OPFS (default true). */
  cache?: boolean;
}

export interface ClientGenerateOptions extends GenerationOptions {
  /** Aborting stops the generation after the step in flight; the stream then ends with `aborted: true`. */
  signal?: AbortSignal;
}

export type TokenStream = AsyncGenerator<TokenEvent, WireResult, void>;

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void; onEvent?: (m: Response) => void };

/** The files of an <input webkitdirectory> as names relative to the picked folder (its first path segment dropped). */
export function folderSpec(files: Iterable<File>, path?: string): ModelSourceSpec {
  const out: { name: string; file: File }[] = [];
  let root = path;
  for (const f of files) {
    const rel = (f as File & { webkitRelativePath?: string }).webkitRelativePath;
    const parts = rel ? rel.split('/') : [f.name];
    if (parts.length > 1) root ??= parts[0];
    out.push({ name: parts.length > 1 ? parts.slice(1).join('/') : f.name, file: f });
  }
  return { kind: 'files', files: out, path: root ?? 'picked files' };
}

export function sourceSpec(source: ModelSourceInput, cache = true): ModelSourceSpec {
  if (typeof source === 'string' || source instanceof URL) return { kind: 'url', url: String(source), cache };
  if (typeof File !== 'undefined' && source instanceof File) return { kind: 'file', file: source };
  if (Array.isArray(source) || (typeof FileList !== 'undefined' && source instanceof FileList)) {
    const files = [...(source as ArrayLike<File> & Iterable<File>)];
    if (files.length === 1 && /\.gguf$/i.test(files[0]!.name) && !(files[0] as File & { webkitRelativePath?: string }).webkitRelativePath) return { kind: 'file', file: files[0]! };
    return folderSpec(files);
  }
  return source as ModelSourceSpec;
}

export class TesseraClient {
  private nextId = 1;
  private pending = new Map<number, Pending>();

  constructor(private readonly port: Port & { terminate?: () => void }) {
    port.addEventListener('message', (ev: MessageEvent) => {
      const m = ev.data as Response;
      const p = m && this.pending.get(m.id);
      if (!p) return;
      if (m.type === 'result') {
        this.pending.delete(m.id);
        p.resolve(m.value);
      } else if (m.type === 'error') {
        this.pending.delete(m.id);
        p.reject(new WorkerError(m.error));
      } else p.onEvent?.(m);
    });
    // A worker that fails to start (a bundling or syntax error) rejects everything pending.
    (port as Partial<Worker>).addEventListener?.('error', ((ev: ErrorEvent) => {
      const e = new Error(`the engine worker failed: ${ev.message ?? 'unknown error'}`);
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    }) as EventListener);
  }

  /** A client over a new module worker at `url` (e.g. the bundled src/web/worker.ts). */
  static fromUrl(url: string | URL): TesseraClient {
    return new TesseraClient(new Worker(url, { type: 'module' }));
  }

  private call<T>(req: Omit<Request, 'id'>, onEvent?: (m: Response) => void, signal?: AbortSignal): { id: number; result: Promise<T> } {
    const id = this.nextId++;
    const result = new Promise<T>((resolve, reject) => this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, onEvent }));
    this.port.postMessage({ ...req, id });
    if (signal) {
      const cancel = () => this.cancel(id);
      if (signal.aborted) cancel();
      else {
        signal.addEventListener('abort', cancel, { once: true });
        result.then(
          () => signal.removeEventListener('abort', cancel),
          () => signal.removeEventListener('abort', cancel),
        );
      }
    }
    return { id, result };
  }

  private cancel(target: number): void {
    if (this.pending.has(target)) this.port.postMessage({ type: 'cancel', id: this.nextId++, target });
  }

  /** The worker's WebGPU adapter: description, features, limits. */
  device(): Promise<DeviceInfo> {
    return this.call<DeviceInfo>({ type: 'device' }).result;
  }

  async loadModel(source: ModelSourceInput, opts: ClientLoadOptions = {}): Promise<RemoteModel> {
    const { onProgress, signal, cache, ...options } = opts;
    const { result } = this.call<ModelInfo>(
      { type: 'load', source: sourceSpec(source, cache ?? true), options } as Omit<Request, 'id'>,
      (m) => m.type === 'progress' && onProgress?.(m.progress),
      signal,
    );
    return new RemoteModel(this, await result);
  }

  /** The kernel self-test in the worker: the rows and table of `tessera selftest`; `onRow` sees each variant as it finishes. */
  selfTest(opts: { filter?: string; heavy?: boolean; onRow?: (row: SelfTestRow) => void } = {}): Promise<SelfTestReport> {
    return this.call<SelfTestReport>({ type: 'selftest', filter: opts.filter, heavy: opts.heavy } as Omit<Request, 'id'>, (m) => m.type === 'row' && opts.onRow?.(m.row)).result;
  }

  /** @internal */
  request<T>(req: Omit<Request, 'id'>): Promise<T> {
    return this.call<T>(req).result;
  }

  /** @internal A generation as an async iterator over the worker's token events. */
  stream(req: Omit<Request, 'id'>, signal?: AbortSignal): TokenStream {
    const queue: TokenEvent[] = [];
    let end: { value: WireResult } | { error: Error } | undefined;
    let wake: (() => void) | undefined;
    const { id, result } = this.call<WireResult>(
      req,
      (m) => {
        if (m.type !== 'token') return;
        queue.push(m.event);
        wake?.();
      },
      signal,
    );
    result.then(
      (value) => void (end = { value }),
      (error: Error) => void (end = { error }),
    ).finally(() => wake?.());
    const self = this;
    return (async function* () {
      try {
        for (;;) {
          if (queue.length) {
            yield queue.shift()!;
            continue;
          }
          if (end) {
            if ('error' in end) throw end.error;
            return end.value;
          }
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
      } finally {
        if (!end) {
          self.cancel(id); // the consumer left the loop: stop the worker too
          await result.catch(() => undefined);
        }
      }
    })();
  }

  /** Frees every model and the worker's device (a later request makes a new device). */
  dispose(): Promise<boolean> {
    return this.call<boolean>({ type: 'dispose' } as Omit<Request, 'id'>).result;
  }

  /** Stops the worker (and with it the device and every model). */
  terminate(): void {
    this.port.terminate?.();
    for (const p of this.pending.values()) p.reject(new Error('the engine worker was terminated'));
    this.pending.clear();
  }
}

/** A model loaded in the worker. */
export class RemoteModel {
  constructor(
    readonly client: TesseraClient,
    readonly info: ModelInfo,
  ) {}

  /** Text (encoded with the tokenizer's special tokens) or token ids; yields tokens, returns the result. An embedding model (kind 'encoder') rejects with ModelKindError. */
  generate(prompt: string | readonly number[], opts: ClientGenerateOptions = {}): TokenStream {
    const input: GenerateInput = typeof prompt === 'string' ? { prompt } : { ids: [...prompt] };
    return this.run(input, opts);
  }

  /** Messages through the model's chat template, the assistant turn opened. */
  chat(messages: readonly ChatMessage[], opts: ClientGenerateOptions = {}): TokenStream {
    return this.run({ messages: messages.map((m) => ({ ...m })) }, opts);
  }

  /** The token ids the engine would feed for this input. */
  encode(input: string | readonly ChatMessage[]): Promise<number[]> {
    return this.client.request({ type: 'encode', handle: this.info.handle, input: typeof input === 'string' ? { prompt: input } : { messages: [...input] } } as Omit<Request, 'id'>);
  }

  /** 'decoder' (generate, chat) or 'encoder' (embed, rerank). */
  get kind(): ModelKind {
    return this.info.kind;
  }

  /**
   * Embeddings of texts (or token id lists), one Float32Array each in the order given, as the library's embed() computes
   * them in the worker: pooled and normalized as the folder's sentence-transformers configuration says unless `opts`
   * overrides it. An embedding model only (kind 'encoder'); a decoder rejects with ModelKindError.
   */
  embed(inputs: readonly (string | readonly number[])[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    return this.client.request({ type: 'embed', handle: this.info.handle, inputs: inputs.map((x) => (typeof x === 'string' ? x : [...x])), options: { ...opts } } as Omit<Request, 'id'>);
  }

  /**
   * Cross-encoder scores of each document for the query (a *ForSequenceClassification model), in the order given: the
   * library's rerank() in the worker. Other models reject (ModelKindError, or ModelConfigError for an encoder with no
   * classification head).
   */
  rerank(query: string, documents: readonly string[]): Promise<RerankResult[]> {
    return this.client.request({ type: 'rerank', handle: this.info.handle, query, documents: [...documents] } as Omit<Request, 'id'>);
  }

  /** Frees the model's GPU memory in the worker. */
  unload(): Promise<boolean> {
    return this.client.request({ type: 'unload', handle: this.info.handle } as Omit<Request, 'id'>);
  }

  private run(input: GenerateInput, opts: ClientGenerateOptions): TokenStream {
    const { signal, ...options } = opts;
    return this.client.stream({ type: 'generate', handle: this.info.handle, input, options } as Omit<Request, 'id'>, signal);
  }
}
