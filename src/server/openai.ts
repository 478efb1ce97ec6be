/**
 * OpenAI API request validation (one step per endpoint: unknown or ill-typed fields become a 400 naming the
 * parameter and the fix) and the response shapes of chat completions and completions.
 */
import type { ChatMessage } from '../tokenizer/types.ts';

/** An error a client sees: status and the OpenAI error object. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  body() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

const bad = (param: string, message: string, code: string | null = null) => new ApiError(400, message, 'invalid_request_error', param, code);

export interface SamplingRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  temperature: number;
  topP: number;
  topK: number;
  maxTokens: number | undefined;
  stop: string[];
  seed: number | undefined;
  repetitionPenalty: number;
  /** Top log-probabilities per token (0: chosen token only), or undefined without logprobs. */
  logprobs: number | undefined;
}

export interface ChatRequest extends SamplingRequest {
  messages: ChatMessage[];
}

export interface CompletionRequest extends SamplingRequest {
  prompt: string | number[];
}

type Json = Record<string, unknown>;

function num(body: Json, key: string, check: (v: number) => boolean, want: string): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || !check(v)) throw bad(key, `${key} must be ${want}; got ${JSON.stringify(v)}`);
  return v;
}

function bool(body: Json, key: string, param = key): boolean | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(param, `${param} must be true or false; got ${JSON.stringify(v)}`);
  return v;
}

const CHAT_FIELDS = new Set([
  'model', 'messages', 'stream', 'stream_options', 'temperature', 'top_p', 'top_k', 'max_tokens', 'max_completion_tokens', 'stop', 'seed',
  'presence_penalty', 'frequency_penalty', 'repetition_penalty', 'n', 'logprobs', 'top_logprobs', 'user', 'response_format',
]);
const COMPLETION_FIELDS = new Set([
  'model', 'prompt', 'stream', 'stream_options', 'temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'seed', 'presence_penalty',
  'frequency_penalty', 'repetition_penalty', 'n', 'logprobs', 'echo', 'suffix', 'user', 'best_of',
]);

/** Fields common to both endpoints. */
function sampling(body: Json, served: string, chat: boolean): SamplingRequest {
  if (typeof body.model !== 'string' || !body.model) throw bad('model', 'model is required: the name GET /v1/models lists');
  if (body.model !== served) throw new ApiError(400, `The model "${body.model}" does not exist here; this server runs "${served}" (GET /v1/models)`, 'invalid_request_error', 'model', 'model_not_found');
  const n = num(body, 'n', (v) => Number.isInteger(v), 'an integer');
  if (n !== undefined && n !== 1) throw bad('n', 'n must be 1: one choice per request is supported');
  for (const k of ['presence_penalty', 'frequency_penalty']) {
    const v = num(body, k, (x) => x >= -2 && x <= 2, 'a number in [-2, 2]');
    if (v !== undefined && v !== 0) throw bad(k, `${k} is not implemented; use repetition_penalty (HF's multiplicative penalty, 1 = off) instead`, 'unsupported_parameter');
  }
  const stream = bool(body, 'stream') ?? false;
  const so = body.stream_options;
  if (so !== undefined && so !== null && (typeof so !== 'object' || Array.isArray(so))) throw bad('stream_options', 'stream_options must be an object');
  if (so && !stream) throw bad('stream_options', 'stream_options is only allowed with stream: true');
  const includeUsage = so ? bool(so as Json, 'include_usage', 'stream_options.include_usage') === true : false;
  let stop: string[] = [];
  if (typeof body.stop === 'string') stop = [body.stop];
  else if (Array.isArray(body.stop)) {
    if (body.stop.length > 4 || body.stop.some((s) => typeof s !== 'string' || !s)) throw bad('stop', 'stop must be a non-empty string or a list of up to 4 non-empty strings');
    stop = body.stop as string[];
  } else if (body.stop !== undefined && body.stop !== null) throw bad('stop', 'stop must be a string or a list of strings');
  const maxKey = chat && body.max_completion_tokens !== undefined && body.max_completion_tokens !== null ? 'max_completion_tokens' : 'max_tokens';
  const maxTokens = num(body, maxKey, (v) => Number.isInteger(v) && v >= 1, 'a positive integer');
  let logprobs: number | undefined;
  if (chat) {
    const lp = bool(body, 'logprobs');
    const top = num(body, 'top_logprobs', (v) => Number.isInteger(v) && v >= 0 && v <= 5, 'an integer in 0..5');
    if (top !== undefined && !lp) throw bad('top_logprobs', 'top_logprobs needs logprobs: true');
    if (lp) logprobs = top ?? 0;
  } else {
    logprobs = num(body, 'logprobs', (v) => Number.isInteger(v) && v >= 0 && v <= 5, 'an integer in 0..5');
  }
  return {
    model: body.model,
    stream,
    includeUsage,
    temperature: num(body, 'temperature', (v) => v >= 0 && v <= 2, 'a number in [0, 2]') ?? 1,
    topP: num(body, 'top_p', (v) => v > 0 && v <= 1, 'a number in (0, 1]') ?? 1,
    topK: num(body, 'top_k', (v) => Number.isInteger(v) && v >= 0, 'a non-negative integer (0 = off)') ?? 0,
    maxTokens,
    stop,
    seed: num(body, 'seed', (v) => Number.isInteger(v) && v >= 0 && v <= 0xffffffff, 'an integer in 0..2^32-1'),
    repetitionPenalty: num(body, 'repetition_penalty', (v) => v > 0, 'a positive number (1 = off)') ?? 1,
    logprobs,
  };
}

function object(body: unknown): Json {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('body', 'the request body must be a JSON object');
  return body as Json;
}

function unknownFields(body: Json, allowed: Set<string>): void {
  const extra = Object.keys(body).find((k) => !allowed.has(k));
  if (extra) throw bad(extra, `unknown parameter ${extra}`, 'unknown_parameter');
}

export function parseChatRequest(raw: unknown, served: string): ChatRequest {
  const body = object(raw);
  unknownFields(body, CHAT_FIELDS);
  const s = sampling(body, served, true);
  const rf = body.response_format as Json | undefined;
  if (rf !== undefined && rf !== null && (typeof rf !== 'object' || rf.type !== 'text')) throw bad('response_format', 'only response_format {"type": "text"} is supported');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw bad('messages', 'messages must be a non-empty list of {role, content}');
  const messages = body.messages.map((m, i) => {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw bad(`messages[${i}]`, `messages[${i}] must be an object with role and content`);
    const msg = m as Json;
    if (typeof msg.role !== 'string' || !['system', 'developer', 'user', 'assistant', 'tool'].includes(msg.role)) {
      throw bad(`messages[${i}].role`, `messages[${i}].role must be one of system, developer, user, assistant, tool`);
    }
    let content = msg.content;
    if (Array.isArray(content)) {
      // text parts only: joined, as the templates of text models expect a string
      if (content.some((p) => typeof p !== 'object' || p === null || (p as Json).type !== 'text' || typeof (p as Json).text !== 'string')) {
        throw bad(`messages[${i}].content`, `messages[${i}].content parts must be {"type": "text", "text": "..."} (this model reads text only)`);
      }
      content = content.map((p) => (p as Json).text as string).join('');
    } else if (typeof content !== 'string' && !(content === null && msg.role === 'assistant')) {
      throw bad(`messages[${i}].content`, `messages[${i}].content must be a string`);
    }
    return { role: msg.role === 'developer' ? 'system' : msg.role, content: (content as string | null) ?? '' };
  });
  return { ...s, messages };
}

export function parseCompletionRequest(raw: unknown, served: string): CompletionRequest {
  const body = object(raw);
  unknownFields(body, COMPLETION_FIELDS);
  const s = sampling(body, served, false);
  if (body.echo === true) throw bad('echo', 'echo is not supported', 'unsupported_parameter');
  if (body.suffix !== undefined && body.suffix !== null) throw bad('suffix', 'suffix is not supported', 'unsupported_parameter');
  const bo = num(body, 'best_of', (v) => Number.isInteger(v), 'an integer');
  if (bo !== undefined && bo !== 1) throw bad('best_of', 'best_of must be 1');
  let prompt = body.prompt;
  if (Array.isArray(prompt) && prompt.length === 1 && (typeof prompt[0] === 'string' || Array.isArray(prompt[0]))) prompt = prompt[0];
  if (typeof prompt === 'string') {
    if (!prompt) throw bad('prompt', 'prompt must not be empty');
    return { ...s, prompt };
  }
  if (Array.isArray(prompt) && prompt.length > 0 && prompt.every((t) => Number.isInteger(t) && (t as number) >= 0)) return { ...s, prompt: prompt as number[] };
  throw bad('prompt', 'prompt must be a non-empty string or a non-empty list of token ids (one prompt per request)');
}

export const id = (prefix: string) => `${prefix}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;

export type FinishReason = 'stop' | 'length';
