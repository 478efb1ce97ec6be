/**
 * Embeddings and reranking over an encoder (src/models/encoder.ts): `embed(model, texts)` returns one vector per text,
 * pooled as the model's sentence-transformers configuration says (modules.json, 1_Pooling/config.json, a Normalize
 * module) unless the caller overrides it; `rerank(model, query, documents)` scores each (query, document) pair with a
 * cross-encoder's classification head. Texts run together in order of length, up to 64 per compiled run (one program
 * per batch and length bucket), and come back in the caller's order.
 */
import type { ModelFiles, ModelFolder } from '../formats/files.ts';
import { readText } from '../formats/files.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import { loadEncoder, type Encoder, type EncoderOptions } from '../models/encoder.ts';
import { ModelConfigError } from '../models/errors.ts';
import { loadTokenizer, type TextTokenizer } from '../tokenizer/index.ts';

export type Pooling = 'mean' | 'cls' | 'last';
export const POOLINGS: readonly Pooling[] = ['mean', 'cls', 'last'];

export interface EmbeddingModel {
  encoder: Encoder;
  /** null when the folder has no tokenizer.json (token ids only). */
  tokenizer: TextTokenizer | null;
  /** From the sentence-transformers configuration, else mean. */
  pooling: Pooling;
  /** A Normalize module in modules.json. */
  normalize: boolean;
  path: string;
  destroy(): void;
}

export interface EmbedOptions {
  pooling?: Pooling;
  normalize?: boolean;
}

/** A JSON file of a model folder, parsed; undefined when the folder has no such file (invalid JSON: an error naming it). */
export async function readFolderJson(folder: ModelFolder, name: string): Promise<unknown> {
  const f = await folder.open(name);
  if (!f) return undefined;
  try {
    return JSON.parse(await readText(f)) as unknown;
  } catch (e) {
    throw new ModelConfigError(f.path, '(json)', `is not valid JSON: ${(e as Error).message}`);
  }
}

/** sentence-transformers' pooling mode names (its Pooling.POOLING_MODES) -> ours; null: a mode Tessera does not run. */
const ST_POOLING: Record<string, Pooling | null> = { cls: 'cls', mean: 'mean', lasttoken: 'last', max: null, mean_sqrt_len_tokens: null, weightedmean: null };
/** The older boolean keys (sentence-transformers < 6 writes these), in the order it concatenates them. */
const ST_LEGACY_POOLING: [string, string][] = [
  ['pooling_mode_cls_token', 'cls'],
  ['pooling_mode_max_tokens', 'max'],
  ['pooling_mode_mean_tokens', 'mean'],
  ['pooling_mode_mean_sqrt_len_tokens', 'mean_sqrt_len_tokens'],
  ['pooling_mode_weightedmean_tokens', 'weightedmean'],
  ['pooling_mode_lasttoken', 'lasttoken'],
];

/**
 * Pooling and normalization as sentence-transformers configures them (modules.json -> the Pooling module's config.json).
 * The Pooling config names its mode as sentence-transformers >= 6 saves it (`"pooling_mode": "cls"`, or a list of
 * modes) or with the older booleans (`"pooling_mode_cls_token": true`, ...; none set means mean); when both are
 * there, `pooling_mode` wins, as in sentence-transformers.
 */
export async function sentenceTransformersPooling(folder: ModelFolder): Promise<{ pooling?: Pooling; normalize: boolean }> {
  const modules = await readFolderJson(folder, 'modules.json');
  if (!Array.isArray(modules)) return { normalize: false };
  const list = modules as { type?: string; path?: string }[];
  const normalize = list.some((m) => typeof m.type === 'string' && m.type.endsWith('.Normalize'));
  const pm = list.find((m) => typeof m.type === 'string' && m.type.endsWith('.Pooling'));
  if (!pm) return { normalize };
  const name = `${pm.path ?? '1_Pooling'}/config.json`;
  const cfg = (await readFolderJson(folder, name)) as Record<string, unknown> | undefined;
  if (!cfg) return { normalize };
  let modes: string[];
  let field: string;
  if ('pooling_mode' in cfg) {
    field = 'pooling_mode';
    const m = cfg.pooling_mode;
    modes = typeof m === 'string' ? [m] : Array.isArray(m) && m.length > 0 && m.every((x) => typeof x === 'string') ? (m as string[]) : [];
    if (!modes.length) throw new ModelConfigError(folder.pathOf(name), field, `${JSON.stringify(m)} is not a pooling mode (one of ${Object.keys(ST_POOLING).join(', ')}) or a list of them`);
    const unknown = modes.find((x) => !(x in ST_POOLING));
    if (unknown !== undefined) throw new ModelConfigError(folder.pathOf(name), field, `"${unknown}" is not a sentence-transformers pooling mode (one of ${Object.keys(ST_POOLING).join(', ')})`);
  } else {
    const on = ST_LEGACY_POOLING.filter(([k]) => cfg[k] === true);
    field = on.length === 1 ? on[0]![0] : 'pooling_mode_*';
    modes = on.length ? on.map(([, mode]) => mode) : ['mean'];
  }
  const ours = modes.map((m) => ST_POOLING[m]);
  if (modes.length > 1 || ours[0] === null) {
    const named = modes.map((m) => ST_POOLING[m] ?? m);
    throw new ModelConfigError(folder.pathOf(name), field, `pooling ${named.join(' + ')} is not supported (one of cls, mean, last); pass pooling explicitly`);
  }
  return { pooling: ours[0]!, normalize };
}

/** Load an encoder folder with its tokenizer and pooling configuration. */
export async function loadEmbeddingModel(dev: TesseraDevice, path: string | ModelFiles, opts: EncoderOptions = {}): Promise<EmbeddingModel> {
  const { encoder, files } = await loadEncoder(dev, path, opts);
  try {
    const folder = files as ModelFolder;
    const tokenizer = (await folder.open('tokenizer.json')) ? await loadTokenizer(folder) : null;
    const st = await sentenceTransformersPooling(folder);
    return { encoder, tokenizer, pooling: st.pooling ?? 'mean', normalize: st.normalize, path: files.path, destroy: () => encoder.destroy() };
  } catch (e) {
    encoder.destroy();
    throw e;
  }
}

/** One vector from hidden states [tokens, hidden]. */
export function pool(hidden: Float32Array, tokens: number, width: number, pooling: Pooling, normalize: boolean): Float32Array {
  const out = new Float32Array(width);
  if (pooling === 'cls') out.set(hidden.subarray(0, width));
  else if (pooling === 'last') out.set(hidden.subarray((tokens - 1) * width, tokens * width));
  else {
    for (let t = 0; t < tokens; t++) for (let i = 0; i < width; i++) out[i]! += hidden[t * width + i]!;
    for (let i = 0; i < width; i++) out[i]! /= tokens;
  }
  if (normalize) {
    let n = 0;
    for (const v of out) n += v * v;
    // sentence-transformers' Normalize: x / max(||x||, 1e-12)
    const inv = 1 / Math.max(Math.sqrt(n), 1e-12);
    for (let i = 0; i < width; i++) out[i]! *= inv;
  }
  return out;
}

function tokenize(model: EmbeddingModel, input: string | readonly number[], what: string): number[] {
  if (typeof input !== 'string') return [...input];
  if (!model.tokenizer) throw new ModelConfigError(`${model.path}/tokenizer.json`, '(file)', `missing: ${what} needs a tokenizer for text (or pass token ids)`);
  return model.tokenizer.encode(input, { addSpecialTokens: true });
}

function truncate(model: EmbeddingModel, ids: number[]): number[] {
  const max = model.encoder.cfg.maxPositions - model.encoder.cfg.positionOffset;
  return ids.length > max ? ids.slice(0, max) : ids;
}

/** Embeddings of texts (or token id lists), in the order given. */
export async function embed(model: EmbeddingModel, inputs: readonly (string | readonly number[])[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
  const pooling = opts.pooling ?? model.pooling;
  if (!POOLINGS.includes(pooling)) throw new RangeError(`embed: pooling "${pooling}" is not one of ${POOLINGS.join(', ')}`);
  const normalize = opts.normalize ?? model.normalize;
  const seqs = inputs.map((x, i) => truncate(model, tokenize(model, x, `embed (input ${i})`)));
  const order = seqs.map((_, i) => i).sort((a, b) => seqs[a]!.length - seqs[b]!.length);
  const out: Float32Array[] = new Array(seqs.length);
  // sorted by length, so each run of up to 64 pads to a similar length
  const res = await model.encoder.forwardBatch(order.map((i) => ({ ids: seqs[i]! })));
  order.forEach((i, k) => (out[i] = pool(res[k]!.hidden, res[k]!.tokens, model.encoder.cfg.hidden, pooling, normalize)));
  return out;
}

export interface RerankResult {
  index: number;
  /** sigmoid(logit) for a one-label head, else the softmax probability of the last label. */
  score: number;
  logits: number[];
}

/**
 * The token ids and types of a (query, document) pair as transformers' tokenizer gives them: joined by the
 * tokenizer.json post-processor (BERT: [CLS] q [SEP] d [SEP]; RoBERTa / XLM-R: <s> q </s></s> d </s>), with the
 * post-processor's token types when that tokenizer returns token_type_ids (TextTokenizer.returnsTokenTypeIds; when
 * the tokenizer config does not say, BERT models get them and RoBERTa models none), else all 0 (the model's default).
 */
export function encodePair(model: EmbeddingModel, query: string, doc: string): { ids: number[]; types: number[] } {
  if (!model.tokenizer) throw new ModelConfigError(`${model.path}/tokenizer.json`, '(file)', 'missing: rerank needs a tokenizer for text');
  const pair = model.tokenizer.encodePair(query, doc);
  const withTypes = model.tokenizer.returnsTokenTypeIds ?? model.encoder.cfg.family === 'bert';
  const ids = truncate(model, pair.ids);
  const types = withTypes ? pair.typeIds.slice(0, ids.length) : ids.map(() => 0);
  return { ids, types };
}

/** Cross-encoder scores of each document for the query (a *ForSequenceClassification model), in the order given. */
export async function rerank(model: EmbeddingModel, query: string, documents: readonly string[]): Promise<RerankResult[]> {
  if (model.encoder.cfg.head === 'none') throw new ModelConfigError(model.path, 'architectures', `${model.encoder.cfg.architecture} has no classification head: rerank needs a cross-encoder (*ForSequenceClassification)`);
  const out: RerankResult[] = [];
  const pairs = documents.map((doc) => encodePair(model, query, doc));
  const hidden = await model.encoder.forwardBatch(pairs.map((p) => ({ ids: p.ids, typeIds: p.types })));
  for (const [index, h] of hidden.entries()) {
    const logits = [...model.encoder.classify(h.hidden)];
    let score: number;
    if (logits.length === 1) score = 1 / (1 + Math.exp(-logits[0]!));
    else {
      const m = Math.max(...logits);
      const z = logits.reduce((a, l) => a + Math.exp(l - m), 0);
      score = Math.exp(logits[logits.length - 1]! - m) / z;
    }
    out.push({ index, score, logits });
  }
  return out;
}
