/**
 * Server benchmark: N concurrent clients streaming /v1/completions from `tessera serve`'s app (in this process, real
 * HTTP on loopback). Per concurrency level: requests/s, time to first token p50/p99, generated tokens/s over all
 * clients, and the same request's decode tok/s alone. Prompts are token ids, so a random-weight preset (no tokenizer)
 * serves as well as a checkpoint. Writes a JSON receipt.
 * Usage: node --import tsx bench/serve.ts [--model PATH | --preset llama-1b-128k --quant q4k] [--clients 1,4,8]
 * [--requests 4] [--prompt 64] [--max-tokens 64] [--out FILE]
 */
import { serve } from '@hono/node-server';
import { writeFileSync } from 'node:fs';
import { createDevice, describeAdapter } from '../src/gpu/device.ts';
import { decoderConfigFromHF } from '../src/models/config.ts';
import { loadModel, type LoadedModel } from '../src/models/load.ts';
import { randomModel } from '../src/models/random-weights.ts';
import { Engine } from '../src/runtime/engine.ts';
import { createServerApp } from '../src/server/app.ts';
import { PRESETS } from './presets.ts';
import { receiptHeader } from './commit.ts';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : def;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

async function main() {
  const dev = await createDevice();
  const preset = arg('preset', '');
  const quant = arg('quant', 'q4k') as 'q4k' | 'f16' | 'f32';
  let model: LoadedModel;
  let name: string;
  if (preset) {
    const cfg = decoderConfigFromHF(PRESETS[preset]!, `preset ${preset}`);
    model = randomModel(dev, cfg, quant, { decoder: { maxPositions: 1024 }, label: `preset ${preset}` });
    name = `${preset}-${quant}`;
  } else {
    model = await loadModel(dev, arg('model', 'models/default'), {});
    name = 'model';
  }
  const engine = new Engine(model, name);
  const { app } = createServerApp(engine, { maxQueue: 1024 });
  const { server, port } = await new Promise<{ server: ReturnType<typeof serve>; port: number }>((resolve) => {
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => resolve({ server, port: info.port }));
  });
  const url = `http://127.0.0.1:${port}/v1/completions`;
  const promptLen = Number(arg('prompt', '64'));
  const maxTokens = Number(arg('max-tokens', '64'));
  const perClient = Number(arg('requests', '4'));
  const vocab = model.config.vocabSize;

  /** One streamed request: time to the first chunk with a token, tokens generated (from usage), total time. */
  async function request(k: number) {
    const prompt = Array.from({ length: promptLen }, (_, i) => (i * 7 + k * 13 + 3) % vocab);
    const t0 = performance.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: name, prompt, max_tokens: maxTokens, temperature: 0.8, seed: k, stream: true, stream_options: { include_usage: true } }),
    });
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
    const reader = res.body!.getReader();
    let ttft = NaN;
    let tokens = 0;
    let buf = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      buf += new TextDecoder().decode(r.value);
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i).replace(/^data: /, '');
        buf = buf.slice(i + 2);
        if (ev === '[DONE]') continue;
        const j = JSON.parse(ev) as { choices: { finish_reason: string | null }[]; usage?: { completion_tokens: number } };
        // a token-id prompt on a model without a tokenizer streams no text: the first chunk after the prompt marks
        // the first token either way (the finish chunk at the latest)
        if (Number.isNaN(ttft) && (j.choices.length || j.usage)) ttft = performance.now() - t0;
        if (j.usage) tokens = j.usage.completion_tokens;
      }
    }
    return { ttft, tokens, ms: performance.now() - t0 };
  }

  await request(0); // warm-up: compiles the programs
  const levels = arg('clients', '1,4,8').split(',').map(Number);
  const results = [];
  for (const clients of levels) {
    const t0 = performance.now();
    const all = await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        const out = [];
        for (let r = 0; r < perClient; r++) out.push(await request(c * 1000 + r + 1));
        return out;
      }),
    );
    const wall = (performance.now() - t0) / 1000;
    const flat = all.flat();
    const tokens = flat.reduce((a, r) => a + r.tokens, 0);
    const row = {
      clients,
      requests: flat.length,
      requestsPerSecond: flat.length / wall,
      ttftMsP50: pct(flat.map((r) => r.ttft), 50),
      ttftMsP99: pct(flat.map((r) => r.ttft), 99),
      generatedTokensPerSecond: tokens / wall,
      meanTokensPerRequest: tokens / flat.length,
    };
    results.push(row);
    console.log(JSON.stringify(row));
  }
  const receipt = {
    ...receiptHeader('serve', dev),
    model: name,
    workload: { promptTokens: promptLen, maxTokens, requestsPerClient: perClient, temperature: 0.8, endpoint: '/v1/completions (stream, token-id prompts)' },
    method: 'clients run their requests back to back; the server runs one request at a time (FIFO); TTFT = request start to the first chunk after the prompt',
    results,
  };
  writeFileSync(arg('out', 'serve.json'), JSON.stringify(receipt, null, 2) + '\n');
  server.close();
  model.destroy();
  dev.destroy();
  process.exit(0);
}

await main();
