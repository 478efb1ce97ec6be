/**
 * The messages between a page (src/web/client.ts) and the engine in a Web Worker (src/web/worker.ts,
 * src/web/host.ts). Every request carries an id; the worker answers with events for that id (progress, tokens,
 * self-test rows) and then exactly one `result` or `error`. `cancel` names the id of the request to stop.
 */
import type { GenerationResult, TokenEvent } from '../runtime/generate.ts';
import type { GenerationOptions } from '../runtime/options.ts';
import type { ChatMessage } from '../tokenizer/types.ts';
import type { QuantMode } from '../models/weights.ts';
import type { SelfTestRow } from '../selftest/selftest.ts';
import type { EmbedOptions, Pooling, RerankResult } from '../runtime/embed.ts';

/** Where a model comes from, in a form that crosses postMessage (File objects are structured-cloneable). */
export type ModelSourceSpec =
  /** An HF folder (URL ending in "/") or a single .gguf file over HTTP; `cache` (default true) keeps the files in OPFS. */
  | { kind: 'url'; url: string; cache?: boolean }
  /** Picked files of an HF folder, by name relative to the folder (config.json, model.safetensors, ...). */
  | { kind: 'files'; files: { name: string; file: Blob }[]; path?: string }
  /** One picked .gguf file. */
  | { kind: 'file'; file: File };

export interface LoadOptionsWire {
  quant?: QuantMode;
  maxPositions?: number;
  /** OPFS directory for the cache (default 'tessera-models'). */
  cacheName?: string;
}

/** Load progress: files copied into the cache (download), then tensors uploaded to the GPU (upload). */
export type LoadProgressEvent =
  | { phase: 'download'; file: string; done: number; total: number }
  | { phase: 'upload'; tensor: string; index: number; total: number; bytes: number };

export interface DeviceInfo {
  adapter: string;
  features: string[];
  limits: Record<string, number>;
  adapterInfo: { vendor: string; architecture: string; device: string; description: string; subgroupMinSize?: number; subgroupMaxSize?: number };
}

/**
 * What a loaded model does. 'decoder': generate() / chat() / encode(). 'encoder': an embedding model, embed() and (a
 * cross-encoder) rerank(): a BERT / XLM-R folder (BertModel, XLMRobertaModel, *ForSequenceClassification), or a decoder
 * folder that sentence-transformers configures for last-token pooling (Qwen3-Embedding), which runs as an embedder.
 */
export type ModelKind = 'decoder' | 'encoder';

/** An embedding model's defaults (kind 'encoder'). */
export interface EmbeddingInfo {
  /** Length of each vector. */
  dims: number;
  /** From the folder's sentence-transformers configuration (modules.json, 1_Pooling/config.json), else mean. */
  pooling: Pooling;
  /** A Normalize module in modules.json (Qwen3-Embedding: always). */
  normalize: boolean;
  /** A cross-encoder (*ForSequenceClassification): rerank() scores (query, document) pairs. */
  reranker: boolean;
  /** The network behind it: a bidirectional encoder (BERT family) or a decoder (Qwen3-Embedding, last-token pooling). */
  backbone: 'encoder' | 'decoder';
}

export interface ModelInfo {
  /** Handle of the model in the worker. */
  handle: number;
  kind: ModelKind;
  /** Present when kind is 'encoder'. */
  embedding?: EmbeddingInfo;
  path: string;
  architecture: string;
  layers: number;
  hidden: number;
  vocab: number;
  parameters: number;
  weightBytes: number;
  quant: string;
  storage: Record<string, number>;
  contextLength: number;
  hasTokenizer: boolean;
  hasChatTemplate: boolean;
  loadMs: number;
}

/** What to generate from: text (encoded with special tokens), token ids, or chat messages (through the chat template). */
export type GenerateInput = { prompt: string } | { ids: number[] } | { messages: ChatMessage[] };

/** The self-test's answer: the adapter, one row per variant, and the table `tessera selftest` prints. */
export interface SelfTestReport {
  adapter: string;
  rows: SelfTestRow[];
  table: string;
}

export type WireResult = GenerationResult & { aborted: boolean };

export type { EmbedOptions, Pooling, RerankResult };

export type Request =
  | { type: 'device'; id: number }
  | { type: 'load'; id: number; source: ModelSourceSpec; options?: LoadOptionsWire }
  | { type: 'unload'; id: number; handle: number }
  | { type: 'generate'; id: number; handle: number; input: GenerateInput; options?: GenerationOptions }
  | { type: 'encode'; id: number; handle: number; input: GenerateInput }
  /** Embeddings (kind 'encoder'): one Float32Array per input, in order. */
  | { type: 'embed'; id: number; handle: number; inputs: (string | number[])[]; options?: EmbedOptions }
  /** Cross-encoder scores (an encoder with reranker true), in the order of the documents. */
  | { type: 'rerank'; id: number; handle: number; query: string; documents: string[] }
  | { type: 'selftest'; id: number; filter?: string; heavy?: boolean }
  | { type: 'cancel'; id: number; target: number }
  /** Frees every model and the device (the worker can then be terminated, or used again: a new device is made). */
  | { type: 'dispose'; id: number };

export interface WireError {
  name: string;
  message: string;
  stack?: string;
}

export type Response =
  | { type: 'progress'; id: number; progress: LoadProgressEvent }
  | { type: 'token'; id: number; event: TokenEvent }
  | { type: 'row'; id: number; row: SelfTestRow }
  | { type: 'result'; id: number; value: unknown }
  | { type: 'error'; id: number; error: WireError };

/** The two ends of a message channel (a Worker, the worker's global scope, a MessagePort). */
export interface Port {
  postMessage(message: unknown): void;
  addEventListener(type: 'message', listener: (ev: MessageEvent) => void): void;
  removeEventListener?(type: 'message', listener: (ev: MessageEvent) => void): void;
}

export function toWireError(e: unknown): WireError {
  if (e instanceof Error) return { name: e.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}) };
  return { name: 'Error', message: String(e) };
}

/** A request the loaded model cannot serve: generate() on an embedding model, embed() on a decoder, rerank() without a classification head. */
export class ModelKindError extends Error {
  constructor(what: string, model: string, why: string) {
    super(`${what}: ${model} ${why}`);
    this.name = 'ModelKindError';
  }
}

/** An error as it arrived from the worker: the same name and message. */
export class WorkerError extends Error {
  constructor(w: WireError) {
    super(w.message);
    this.name = w.name;
    if (w.stack) this.workerStack = w.stack;
  }
  workerStack?: string;
}
