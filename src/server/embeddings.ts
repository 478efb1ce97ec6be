/**
 * Encoder endpoints of the server: POST /v1/embeddings (OpenAI's shape: `input` a string, a list of strings, a list of
 * token ids or a list of such lists; `encoding_format` float or base64) and POST /v1/rerank (the shape Cohere and Jina
 * use: `query`, `documents` as strings or {text}, `top_n`, `return_documents`). Validation errors are OpenAI-shaped.
 */
import type { Context, Hono } from 'hono';
import { embed, encodePair, rerank, type EmbeddingModel } from '../runtime/embed.ts';
import { ApiError } from './openai.ts';
import type { Scheduler } from './scheduler.ts';

/** An encoder the server runs in place of a decoder. */
export interface EmbeddingServed {
  kind: 'embedding';
  name: string;
  model: EmbeddingModel;
}

const bad = (param: string, message: string, code: string | null = null) => new ApiError(400, message, 'invalid_request_error', param, code);

function checkModel(body: Record<string, unknown>, name: string): void {
  if (typeof body.model !== 'string') throw bad('model', '`model` must be a string naming the model (GET /v1/models)');
  if (body.model !== name) throw new ApiError(400, `The model "${body.model}" does not exist here; this server runs "${name}" (GET /v1/models)`, 'invalid_request_error', 'model', 'model_not_found');
}

const isIds = (x: unknown): x is number[] => Array.isArray(x) && x.length > 0 && x.every((v) => Number.isInteger(v) && v >= 0);

/** The inputs of an embeddings request, as texts or id lists. */
export function parseEmbeddingInput(input: unknown): (string | number[])[] {
  if (typeof input === 'string') return [input];
  if (isIds(input)) return [input];
  if (Array.isArray(input) && input.length > 0 && input.every((x) => typeof x === 'string' || isIds(x))) return input as (string | number[])[];
  throw bad('input', '`input` must be a string, a list of strings, a list of token ids, or a list of token id lists (not empty)');
}

function base64Floats(v: Float32Array): string {
  const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export function registerEmbeddingRoutes(app: Hono, served: EmbeddingServed, scheduler: Scheduler, json: (c: Context) => Promise<unknown>): void {
  const { model, name } = served;
  const maxTokens = model.encoder.cfg.maxPositions - model.encoder.cfg.positionOffset;
  const tokens = (x: string | number[]) => (typeof x === 'string' ? (model.tokenizer ? model.tokenizer.encode(x, { addSpecialTokens: true }).length : 0) : x.length);

  app.post('/v1/embeddings', async (c) => {
    const body = await json(c);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('body', 'The request body must be a JSON object');
    const b = body as Record<string, unknown>;
    checkModel(b, name);
    const inputs = parseEmbeddingInput(b.input);
    const format = b.encoding_format ?? 'float';
    if (format !== 'float' && format !== 'base64') throw bad('encoding_format', '`encoding_format` must be "float" or "base64"');
    if (b.dimensions !== undefined && b.dimensions !== model.encoder.cfg.hidden) throw bad('dimensions', `This model's embeddings have ${model.encoder.cfg.hidden} dimensions; other sizes are not supported`);
    if (inputs.some((x) => typeof x === 'string') && !model.tokenizer) throw bad('input', 'The model has no tokenizer: send token ids');
    const vocab = model.encoder.cfg.vocabSize;
    for (const [i, x] of inputs.entries()) {
      if (typeof x !== 'string' && x.some((v) => v >= vocab)) throw bad('input', `input ${i}: a token id is out of range: the vocabulary has ${vocab} tokens`);
      if (tokens(x) > maxTokens) throw new ApiError(400, `input ${i} has ${tokens(x)} tokens; this model takes at most ${maxTokens}`, 'invalid_request_error', 'input', 'context_length_exceeded');
    }
    const release = await scheduler.acquire(c.req.raw.signal);
    let vecs: Float32Array[];
    try {
      vecs = await embed(model, inputs);
    } finally {
      release();
    }
    const used = inputs.reduce((a, x) => a + tokens(x), 0);
    return c.json({
      object: 'list',
      data: vecs.map((v, index) => ({ object: 'embedding', index, embedding: format === 'base64' ? base64Floats(v) : [...v] })),
      model: name,
      usage: { prompt_tokens: used, total_tokens: used },
    });
  });

  app.post('/v1/rerank', async (c) => {
    const body = await json(c);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('body', 'The request body must be a JSON object');
    const b = body as Record<string, unknown>;
    checkModel(b, name);
    if (model.encoder.cfg.head === 'none') throw new ApiError(400, `${model.encoder.cfg.architecture} is not a cross-encoder: /v1/rerank needs a *ForSequenceClassification model`, 'invalid_request_error', 'model', 'model_not_reranker');
    if (!model.tokenizer) throw bad('model', 'The model has no tokenizer (tokenizer.json): rerank needs text');
    if (typeof b.query !== 'string' || !b.query) throw bad('query', '`query` must be a non-empty string');
    if (!Array.isArray(b.documents) || b.documents.length === 0) throw bad('documents', '`documents` must be a non-empty list of strings or {"text": ...} objects');
    const docs = b.documents.map((d, i) => {
      if (typeof d === 'string') return d;
      if (d && typeof d === 'object' && typeof (d as { text?: unknown }).text === 'string') return (d as { text: string }).text;
      throw bad('documents', `documents[${i}] must be a string or {"text": string}`);
    });
    const topN = b.top_n ?? docs.length;
    if (!Number.isInteger(topN) || (topN as number) < 1) throw bad('top_n', '`top_n` must be a positive integer');
    if (b.return_documents !== undefined && typeof b.return_documents !== 'boolean') throw bad('return_documents', '`return_documents` must be a boolean');
    const release = await scheduler.acquire(c.req.raw.signal);
    let res;
    try {
      res = await rerank(model, b.query, docs);
    } finally {
      release();
    }
    const used = docs.reduce((a, d) => a + encodePair(model, b.query as string, d).ids.length, 0);
    const results = [...res]
      .sort((x, y) => y.score - x.score)
      .slice(0, topN as number)
      .map((r) => ({ index: r.index, relevance_score: r.score, ...(b.return_documents ? { document: { text: docs[r.index] } } : {}) }));
    return c.json({ object: 'list', model: name, results, usage: { prompt_tokens: used, total_tokens: used } });
  });
}
