/**
 * `tessera serve`'s app over real HTTP on an ephemeral port, driven by the official `openai` client, with the shipped
 * model: models, chat (plain and streamed, with usage), completions, stop strings, seeds, logprobs, every error
 * status with its OpenAI error type, concurrent streams matching their solo output, a disconnect freeing the
 * engine, metrics moving, and draining.
 */
import { serve, type ServerType } from '@hono/node-server';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { loadModel, type LoadedModel } from '../src/models/load.ts';
import { Engine } from '../src/runtime/engine.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { createServerApp, type ServerApp } from '../src/server/app.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
let model: LoadedModel;
let engine: Engine;

interface Running {
  url: string;
  server: ServerType;
  s: ServerApp;
  client: OpenAI;
}

async function start(opts: Parameters<typeof createServerApp>[1] = {}): Promise<Running> {
  const s = createServerApp(engine, { log: () => {}, ...opts });
  const { server, port } = await new Promise<{ server: ServerType; port: number }>((resolve) => {
    const server = serve({ fetch: s.app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => resolve({ server, port: info.port }));
  });
  const url = `http://127.0.0.1:${port}`;
  return { url, server, s, client: new OpenAI({ baseURL: `${url}/v1`, apiKey: opts.apiKey ?? 'unused', maxRetries: 0 }) };
}

const stop = (r: Running) => new Promise<void>((res) => r.server.close(() => res()));

let srv: Running;
beforeAll(async () => {
  dev = await testDevice();
  model = await loadModel(dev, 'models/default', { quant: 'f32' });
  engine = new Engine(model, 'default');
  srv = await start({ maxQueue: 8 });
});
afterAll(async () => {
  await stop(srv);
  model.destroy();
});

const user = (content: string) => [{ role: 'user' as const, content }];

async function streamText(client: OpenAI, content: string, extra: Record<string, unknown> = {}) {
  const s = await client.chat.completions.create({ model: 'default', messages: user(content), stream: true, ...extra } as OpenAI.ChatCompletionCreateParamsStreaming);
  let text = '';
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const ch of s) {
    text += ch.choices[0]?.delta.content ?? '';
    finish = ch.choices[0]?.finish_reason ?? finish;
    if (ch.usage) usage = ch.usage;
  }
  return { text, finish, usage };
}

describe('tessera serve (OpenAI API)', () => {
  it('lists the model', async () => {
    const list = await srv.client.models.list();
    expect(list.data.map((m) => m.id)).toEqual(['default']);
  });

  it('chat without streaming: the greedy text of the chat template, usage and finish reason', async () => {
    const r = await srv.client.chat.completions.create({ model: 'default', messages: user('In the beginning'), max_tokens: 10, temperature: 0 });
    const promptIds = engine.encodeChat(user('In the beginning'));
    // the reference: greedy argmax chain from full-sequence logits
    const ids = [...promptIds];
    for (let i = 0; i < 10; i++) ids.push((await computeLogits(model, ids)).argmax.at(-1)!);
    expect(r.choices[0]!.message.content).toBe(engine.tokenizer.decode(ids.slice(promptIds.length)));
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage).toEqual({ prompt_tokens: promptIds.length, completion_tokens: 10, total_tokens: promptIds.length + 10 });
    expect(r.object).toBe('chat.completion');
  });

  it('chat streaming gives the same text, then usage when asked', async () => {
    const plain = await srv.client.chat.completions.create({ model: 'default', messages: user('And God said'), max_tokens: 8, temperature: 0 });
    const s = await streamText(srv.client, 'And God said', { max_tokens: 8, temperature: 0, stream_options: { include_usage: true } });
    expect(s.text).toBe(plain.choices[0]!.message.content);
    expect(s.finish).toBe('length');
    expect(s.usage?.completion_tokens).toBe(8);
  });

  it('completions with a text prompt and with token ids', async () => {
    const a = await srv.client.completions.create({ model: 'default', prompt: 'And it came to pass', max_tokens: 6, temperature: 0 });
    const ids = engine.encodeText('And it came to pass');
    const b = await srv.client.completions.create({ model: 'default', prompt: ids, max_tokens: 6, temperature: 0 });
    expect(a.choices[0]!.text.length).toBeGreaterThan(0);
    expect(b.choices[0]!.text).toBe(a.choices[0]!.text);
    expect(a.usage?.prompt_tokens).toBe(ids.length);
  });

  it('stops at a stop string (not emitted) with finish reason stop', async () => {
    const free = await srv.client.completions.create({ model: 'default', prompt: 'And God said', max_tokens: 16, temperature: 0 });
    const text = free.choices[0]!.text;
    const word = text.trim().split(/\s+/)[2]!;
    const cut = await srv.client.completions.create({ model: 'default', prompt: 'And God said', max_tokens: 16, temperature: 0, stop: [word] });
    expect(cut.choices[0]!.finish_reason).toBe('stop');
    expect(cut.choices[0]!.text).toBe(text.slice(0, text.indexOf(word)));
  });

  it('the same seed gives the same text; another seed may not', async () => {
    const run = (seed: number) => srv.client.chat.completions.create({ model: 'default', messages: user('Blessed are'), max_tokens: 16, temperature: 1, seed }).then((r) => r.choices[0]!.message.content);
    const a = await run(11);
    expect(await run(11)).toBe(a);
    const others = await Promise.all([run(12), run(13), run(14)]);
    expect(others.some((t) => t !== a)).toBe(true);
  });

  it('logprobs: the chosen token and the top 3, from the model distribution', async () => {
    const r = await srv.client.chat.completions.create({ model: 'default', messages: user('In the beginning'), max_tokens: 3, temperature: 0, logprobs: true, top_logprobs: 3 });
    const lp = r.choices[0]!.logprobs!.content!;
    expect(lp).toHaveLength(3);
    for (const t of lp) {
      expect(t.top_logprobs).toHaveLength(3);
      // greedy: the chosen token is the most likely one
      expect(t.logprob).toBeCloseTo(t.top_logprobs[0]!.logprob, 6);
      expect(t.logprob).toBeLessThanOrEqual(0);
      expect(t.top_logprobs[1]!.logprob).toBeLessThanOrEqual(t.top_logprobs[0]!.logprob);
    }
    expect(lp.map((t) => t.token).join('')).toBe(r.choices[0]!.message.content);
  });

  it('four concurrent streams each get the text they get alone', async () => {
    const prompts = ['In the beginning', 'And God said', 'Blessed are the', 'The Lord is my'];
    const alone: string[] = [];
    for (const p of prompts) alone.push((await streamText(srv.client, p, { max_tokens: 12, temperature: 0 })).text);
    const together = await Promise.all(prompts.map((p) => streamText(srv.client, p, { max_tokens: 12, temperature: 0 })));
    expect(together.map((t) => t.text)).toEqual(alone);
  });

  it('a client that disconnects mid-stream frees the engine at once', async () => {
    const ac = new AbortController();
    const res = await fetch(`${srv.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default', messages: user('In the beginning'), max_tokens: 400, temperature: 0, stream: true }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    ac.abort();
    const t0 = performance.now();
    // the next request runs as soon as the aborted one's step in flight ends, not after 400 tokens
    const r = await srv.client.chat.completions.create({ model: 'default', messages: user('Amen'), max_tokens: 2, temperature: 0 });
    expect(r.choices[0]!.message.content).toBeTruthy();
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(srv.s.scheduler.running + srv.s.scheduler.depth).toBe(0);
  });

  it('a client that gives up on a non-streaming request frees the engine too', async () => {
    const ac = new AbortController();
    const pending = fetch(`${srv.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default', prompt: 'In the beginning', max_tokens: 400, temperature: 0 }),
      signal: ac.signal,
    }).catch(() => 'aborted');
    await new Promise((r) => setTimeout(r, 300));
    ac.abort();
    expect(await pending).toBe('aborted');
    const t0 = performance.now();
    const r = await srv.client.completions.create({ model: 'default', prompt: 'Amen', max_tokens: 2, temperature: 0 });
    expect(r.choices[0]!.text).toBeTruthy();
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it('Engine.run serves a list of sequences, each as it runs alone', async () => {
    const seqs = ['In the beginning', 'Blessed are'].map((t) => ({ promptIds: engine.encodeText(t), options: { maxTokens: 6, temperature: 0 } }));
    const events: [number, number][] = [];
    const results = await engine.run(seqs, (i, e) => events.push([i, e.token]));
    for (let i = 0; i < seqs.length; i++) {
      const alone = await engine.run([seqs[i]!], () => {});
      expect(results[i]!.ids).toEqual(alone[0]!.ids);
      expect(events.filter(([j, t]) => j === i && t >= 0).map(([, t]) => t)).toEqual(results[i]!.ids);
    }
  });

  it('errors: status, OpenAI error type and the parameter', async () => {
    const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const r = await fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as { error: { type: string; param: string | null; message: string; code: string | null } } };
    };
    const ok = { model: 'default', messages: user('hi') };
    const cases: [unknown, number, string | null][] = [
      ['{"model": ', 400, 'body'],
      [{ ...ok, temperature: 'hot' }, 400, 'temperature'],
      [{ ...ok, model: 'gpt-4' }, 400, 'model'],
      [{ ...ok, messages: 'hi' }, 400, 'messages'],
      [{ ...ok, n: 2 }, 400, 'n'],
      [{ ...ok, presence_penalty: 0.5 }, 400, 'presence_penalty'],
      [{ ...ok, top_logprobs: 2 }, 400, 'top_logprobs'],
      [{ ...ok, stop: 7 }, 400, 'stop'],
      [{ ...ok, bogus: 1 }, 400, 'bogus'],
      [{ ...ok, messages: user('word '.repeat(600)) }, 400, 'messages'],
      [{ ...ok, max_tokens: 100000 }, 400, 'max_tokens'],
    ];
    for (const [body, status, param] of cases) {
      const r = await post('/v1/chat/completions', body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(r.body.error.type).toBe('invalid_request_error');
      expect(r.body.error.param).toBe(param);
      expect(r.body.error.message).not.toMatch(/\n\s+at /); // no stack
    }
    const notFound = await fetch(`${srv.url}/v1/nothing`);
    expect(notFound.status).toBe(404);
  });

  it('API key (401), body limit (413), full queue (429 with Retry-After) and draining (503)', async () => {
    const s2 = await start({ apiKey: 'sekret', maxBodyBytes: 200, maxQueue: 0 });
    try {
      const call = (key: string | null, body: unknown) =>
        fetch(`${s2.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: JSON.stringify(body) });
      expect((await call(null, { model: 'default', messages: user('hi') })).status).toBe(401);
      const wrong = await call('nope', { model: 'default', messages: user('hi') });
      expect(wrong.status).toBe(401);
      expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
      const big = await call('sekret', { model: 'default', messages: user('x'.repeat(500)) });
      expect(big.status).toBe(413);
      // one running, no queue: a second request is refused with 429
      const first = call('sekret', { model: 'default', messages: user('In the beginning'), max_tokens: 60, temperature: 0, stream: true });
      const firstRes = await first;
      const second = await call('sekret', { model: 'default', messages: user('hi'), max_tokens: 1 });
      expect(second.status).toBe(429);
      expect(second.headers.get('retry-after')).toBe('1');
      expect(((await second.json()) as { error: { type: string } }).error.type).toBe('rate_limit_error');
      // draining: new requests get 503, the running one completes
      const drained = s2.s.scheduler.drain();
      const third = await call('sekret', { model: 'default', messages: user('hi'), max_tokens: 1 });
      expect(third.status).toBe(503);
      const text = await firstRes.text();
      expect(text.trim().endsWith('data: [DONE]')).toBe(true);
      await drained;
    } finally {
      await stop(s2);
    }
  });

  it('/health and /metrics (counters move)', async () => {
    const health = (await (await fetch(`${srv.url}/health`)).json()) as { status: string };
    expect(health.status).toBe('ok');
    const read = async () => {
      const t = await (await fetch(`${srv.url}/metrics`)).text();
      const v = (name: string) => Number(t.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1] ?? NaN);
      return { t, completion: v('tessera_completion_tokens_total'), ttft: v('tessera_time_to_first_token_seconds_count') };
    };
    const before = await read();
    await srv.client.completions.create({ model: 'default', prompt: 'Amen', max_tokens: 3, temperature: 0 });
    const after = await read();
    expect(after.completion).toBe(before.completion + 3);
    expect(after.ttft).toBe(before.ttft + 1);
    expect(after.t).toMatch(/tessera_requests_total\{endpoint="\/v1\/completions",status="200"\} \d+/);
    expect(after.t).toMatch(/tessera_queue_depth 0/);
  });
});
