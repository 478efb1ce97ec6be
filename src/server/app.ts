/**
 * The OpenAI-compatible HTTP app (hono): /v1/models, /v1/chat/completions, /v1/completions (streaming over SSE or
 * one JSON), /health and /metrics, over the shared Engine; for an encoder, /v1/embeddings and /v1/rerank instead
 * (embeddings.ts). Requests are validated in one step (openai.ts), queued
 * FIFO (scheduler.ts) and cancelled when the client goes away; errors are OpenAI-shaped and never carry a stack.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { streamSSE } from 'hono/streaming';
import type { Engine, TokenLogprob } from '../runtime/engine.ts';
import type { GenerationResult } from '../runtime/generate.ts';
import { Metrics } from './metrics.ts';
import { ApiError, id, parseChatRequest, parseCompletionRequest, type FinishReason, type SamplingRequest } from './openai.ts';
import { Scheduler } from './scheduler.ts';
import { registerEmbeddingRoutes, type EmbeddingServed } from './embeddings.ts';

export interface ServerOptions {
  apiKey?: string;
  maxQueue?: number;
  maxBodyBytes?: number;
  /** Where unexpected errors are reported (their stack stays on the server). */
  log?: (msg: string) => void;
}

export interface ServerApp {
  app: Hono;
  scheduler: Scheduler;
  metrics: Metrics;
}

type Result = GenerationResult & { aborted: boolean };

const finish = (r: Result): FinishReason => (r.finishReason === 'eos' || r.finishReason === 'stop' || r.aborted ? 'stop' : 'length');
const utf8 = (s: string) => [...new TextEncoder().encode(s)];

/** The app for a decoder (an Engine: completions and chat) or an encoder (embeddings and rerank). */
export function createServerApp(served: Engine | EmbeddingServed, opts: ServerOptions = {}): ServerApp {
  const name = served.name;
  const app = new Hono();
  const scheduler = new Scheduler(opts.maxQueue ?? 16);
  const metrics = new Metrics();
  const log = opts.log ?? ((m: string) => process.stderr.write(m + '\n'));
  const created = Math.floor(Date.now() / 1000);

  app.onError((err, c) => {
    if (err instanceof ApiError) return c.json(err.body(), err.status as 400, err.headers);
    log(`internal error on ${c.req.method} ${c.req.path}: ${(err as Error).stack ?? err}`);
    return c.json(new ApiError(500, 'The server had an error while processing the request', 'server_error').body(), 500);
  });
  app.notFound((c) => c.json(new ApiError(404, `Unknown path ${c.req.method} ${c.req.path}`, 'invalid_request_error', null, 'unknown_url').body(), 404));

  app.use('*', async (c, next) => {
    await next();
    metrics.request(c.req.routePath === '*' ? 'other' : c.req.routePath, c.res.status);
  });
  if (opts.apiKey) {
    const want = `Bearer ${opts.apiKey}`;
    app.use('/v1/*', async (c, next) => {
      if (c.req.header('authorization') !== want) throw new ApiError(401, 'Incorrect or missing API key: send "Authorization: Bearer <key>" with the key the server was started with', 'invalid_request_error', null, 'invalid_api_key');
      await next();
    });
  }
  const limit = opts.maxBodyBytes ?? 1 << 20;
  app.use(
    '/v1/*',
    bodyLimit({
      maxSize: limit,
      onError: () => {
        throw new ApiError(413, `The request body is larger than ${limit} bytes (--max-body)`, 'invalid_request_error', null, 'request_too_large');
      },
    }),
  );

  app.get('/health', (c) => c.json({ status: 'ok', model: name, queue_depth: scheduler.depth, running: scheduler.running }));
  app.get('/metrics', (c) => c.text(metrics.render({ queueDepth: scheduler.depth, running: scheduler.running }), 200, { 'Content-Type': 'text/plain; version=0.0.4' }));
  app.get('/v1/models', (c) => c.json({ object: 'list', data: [{ id: name, object: 'model', created, owned_by: 'tessera' }] }));

  async function json(c: Context): Promise<unknown> {
    const text = await c.req.text();
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new ApiError(400, `The request body is not valid JSON: ${(e as Error).message}`, 'invalid_request_error', 'body', 'invalid_json');
    }
  }

  if ('kind' in served) {
    registerEmbeddingRoutes(app, served, scheduler, json);
    return { app, scheduler, metrics };
  }
  const engine = served;

  /** Prompt ids checked against the context; the completion budget. */
  function budget(promptIds: number[], req: SamplingRequest): number {
    const ctx = engine.contextLength;
    const room = ctx - promptIds.length;
    if (room < 1) throw new ApiError(400, `This model's maximum context length is ${ctx} tokens; the prompt has ${promptIds.length}. Shorten the prompt.`, 'invalid_request_error', 'messages', 'context_length_exceeded');
    if (req.maxTokens !== undefined && req.maxTokens > room) {
      throw new ApiError(400, `This model's maximum context length is ${ctx} tokens; the prompt has ${promptIds.length} and max_tokens asks for ${req.maxTokens}. Lower max_tokens to at most ${room}.`, 'invalid_request_error', 'max_tokens', 'context_length_exceeded');
    }
    return req.maxTokens ?? room;
  }

  /**
   * Run one request: queue, generate (streaming events to `onToken` unless logprobs are asked for, which need the
   * whole completion first), release the engine. `signal` aborts a queued or running request.
   */
  async function run(promptIds: number[], req: SamplingRequest, signal: AbortSignal, onToken?: (text: string) => Promise<void> | void, acquired?: () => void) {
    const maxTokens = budget(promptIds, req);
    const t0 = performance.now();
    // a caller that acquired the engine itself (a stream) releases it after its last write
    const release = acquired ? () => {} : await scheduler.acquire(signal);
    try {
      const it = engine.stream({
        promptIds,
        signal,
        options: { maxTokens, temperature: req.temperature, topP: req.topP, topK: req.topK, stop: req.stop, repetitionPenalty: req.repetitionPenalty, ...(req.seed !== undefined ? { seed: req.seed } : {}) },
      });
      let last = 0;
      // the text each generated token completes (a tail flushed at the end joins the last token's)
      const pieces: string[] = [];
      let r = await it.next();
      while (!r.done) {
        const now = performance.now();
        if (r.value.token >= 0) {
          if (last === 0) metrics.ttft.observe((now - t0) / 1000);
          else metrics.itl.observe((now - last) / 1000);
          last = now;
          pieces.push(r.value.text);
        } else if (pieces.length) pieces[pieces.length - 1] += r.value.text;
        else pieces.push(r.value.text);
        // a chunk per token (its text may be empty: half of a multi-byte character, or a model without a tokenizer)
        if (onToken && req.logprobs === undefined && (r.value.text || r.value.token >= 0)) await onToken(r.value.text);
        r = await it.next();
      }
      const result = r.value;
      metrics.promptTokens += promptIds.length;
      metrics.completionTokens += result.ids.length;
      const logprobs = req.logprobs !== undefined && !result.aborted ? await engine.logprobs(promptIds, result.ids, req.logprobs) : undefined;
      return { result, pieces, logprobs };
    } finally {
      release();
    }
  }

  /** Aborted when the client goes away (queued or generating, streaming or not): the engine is freed at once. */
  const clientGone = (c: Context) => {
    const ac = new AbortController();
    const sig = c.req.raw.signal;
    if (sig.aborted) ac.abort();
    else sig.addEventListener('abort', () => ac.abort(), { once: true });
    return ac;
  };

  /** A stream that fails after it started: the error object as the last event (no stack reaches the client). */
  const streamError = (ac: AbortController) => async (err: Error, stream: { writeSSE: (m: { data: string }) => Promise<void> }) => {
    ac.abort();
    const e = err instanceof ApiError ? err : new ApiError(500, 'The server had an error while processing the request', 'server_error');
    if (!(err instanceof ApiError)) log(`internal error in a stream: ${err.stack ?? err}`);
    await stream.writeSSE({ data: JSON.stringify(e.body()) });
  };

  const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

  function chatLogprobs(lps: TokenLogprob[]) {
    const entry = (tid: number, logprob: number) => {
      const token = engine.tokenText(tid);
      return { token, logprob, bytes: utf8(token) };
    };
    return { content: lps.map((t) => ({ ...entry(t.id, t.logprob), top_logprobs: t.top.map((x) => entry(x.id, x.logprob)) })) };
  }

  function completionLogprobs(lps: TokenLogprob[]) {
    const tokens = lps.map((t) => engine.tokenText(t.id));
    const offsets: number[] = [];
    let o = 0;
    for (const t of tokens) {
      offsets.push(o);
      o += t.length;
    }
    return { tokens, token_logprobs: lps.map((t) => t.logprob), top_logprobs: lps.map((t) => Object.fromEntries(t.top.map((x) => [engine.tokenText(x.id), x.logprob]))), text_offset: offsets };
  }

  app.post('/v1/chat/completions', async (c) => {
    const req = parseChatRequest(await json(c), engine.name);
    if (!engine.model.tokenizer) throw new ApiError(400, `The model has no tokenizer (${engine.model.tokenizerFile} is missing): send token ids to /v1/completions`, 'invalid_request_error', 'messages', 'no_tokenizer');
    const promptIds = engine.encodeChat(req.messages);
    const rid = id('chatcmpl');
    const now = Math.floor(Date.now() / 1000);
    const base = { id: rid, created: now, model: engine.name };
    if (!req.stream) {
      const ac = clientGone(c);
      const { result, logprobs } = await run(promptIds, req, ac.signal);
      return c.json({
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: result.text }, logprobs: logprobs ? chatLogprobs(logprobs) : null, finish_reason: finish(result) }],
        usage: usage(promptIds.length, result.ids.length),
      });
    }
    budget(promptIds, req); // a 400 before the stream starts
    const ac = clientGone(c);
    // the queue slot is taken before the response starts, so a full queue is a 429, not an empty stream
    const release = await scheduler.acquire(ac.signal);
    const chunk = (delta: Record<string, unknown>, finishReason: FinishReason | null, lp: unknown = null) => ({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: lp, finish_reason: finishReason }] });
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => ac.abort());
      try {
        await stream.writeSSE({ data: JSON.stringify(chunk({ role: 'assistant', content: '' }, null)) });
        const { result, pieces, logprobs } = await run(promptIds, req, ac.signal, (text) => stream.writeSSE({ data: JSON.stringify(chunk({ content: text }, null)) }), release);
        if (ac.signal.aborted) return;
        if (logprobs) {
          // logprobs come from one forward over the finished completion: one chunk per token, then the finish chunk
          const lp = chatLogprobs(logprobs);
          for (let i = 0; i < lp.content.length; i++) await stream.writeSSE({ data: JSON.stringify(chunk({ content: pieces[i] ?? '' }, null, { content: [lp.content[i]] })) });
        }
        await stream.writeSSE({ data: JSON.stringify(chunk({}, finish(result))) });
        if (req.includeUsage) await stream.writeSSE({ data: JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage: usage(promptIds.length, result.ids.length) }) });
        await stream.writeSSE({ data: '[DONE]' });
      } finally {
        release();
      }
    }, streamError(ac));
  });

  app.post('/v1/completions', async (c) => {
    const req = parseCompletionRequest(await json(c), engine.name);
    if (typeof req.prompt === 'string' && !engine.model.tokenizer) {
      throw new ApiError(400, `The model has no tokenizer (${engine.model.tokenizerFile} is missing): send the prompt as token ids`, 'invalid_request_error', 'prompt', 'no_tokenizer');
    }
    if (req.logprobs !== undefined && !engine.model.tokenizer) throw new ApiError(400, 'logprobs name tokens by their text: this model has no tokenizer', 'invalid_request_error', 'logprobs', 'no_tokenizer');
    const promptIds = typeof req.prompt === 'string' ? engine.encodeText(req.prompt) : req.prompt;
    const vocab = engine.model.config.vocabSize;
    const badId = promptIds.find((t) => t >= vocab);
    if (badId !== undefined) throw new ApiError(400, `prompt token id ${badId} is out of range: the vocabulary has ${vocab} tokens`, 'invalid_request_error', 'prompt');
    const rid = id('cmpl');
    const base = { id: rid, object: 'text_completion', created: Math.floor(Date.now() / 1000), model: engine.name };
    const choice = (text: string, finishReason: FinishReason | null, lp: unknown = null) => ({ ...base, choices: [{ index: 0, text, logprobs: lp, finish_reason: finishReason }] });
    if (!req.stream) {
      const ac = clientGone(c);
      const { result, logprobs } = await run(promptIds, req, ac.signal);
      return c.json({ ...choice(result.text, finish(result), logprobs ? completionLogprobs(logprobs) : null), usage: usage(promptIds.length, result.ids.length) });
    }
    budget(promptIds, req);
    const ac = clientGone(c);
    const release = await scheduler.acquire(ac.signal);
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => ac.abort());
      try {
        const { result, pieces, logprobs } = await run(promptIds, req, ac.signal, (text) => stream.writeSSE({ data: JSON.stringify(choice(text, null)) }), release);
        if (ac.signal.aborted) return;
        if (logprobs) {
          const lp = completionLogprobs(logprobs);
          for (let i = 0; i < lp.tokens.length; i++) {
            await stream.writeSSE({ data: JSON.stringify(choice(pieces[i] ?? '', null, { tokens: [lp.tokens[i]], token_logprobs: [lp.token_logprobs[i]], top_logprobs: [lp.top_logprobs[i]], text_offset: [lp.text_offset[i]] })) });
          }
        }
        await stream.writeSSE({ data: JSON.stringify(choice('', finish(result))) });
        if (req.includeUsage) await stream.writeSSE({ data: JSON.stringify({ ...base, choices: [], usage: usage(promptIds.length, result.ids.length) }) });
        await stream.writeSSE({ data: '[DONE]' });
      } finally {
        release();
      }
    }, streamError(ac));
  });

  return { app, scheduler, metrics };
}
