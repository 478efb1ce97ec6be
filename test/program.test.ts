/**
 * Compiled steps (src/program) against the per-op path: the same op calls, recorded once and replayed with step
 * variables versus resolved and recorded op by op every step, must give bit-identical logits and the same tokens;
 * after the first decode step no contract is resolved again. The single-token step run token by token over the KV
 * cache gives the prefill's logits at every position (to float rounding: other kernels).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { TesseraDevice } from '../src/gpu/device.ts';
import { loadModel, type LoadedModel } from '../src/models/load.ts';
import { planActivations } from '../src/program/liveness.ts';
import { decodeTokens, NonFiniteLogitsError, type DecodedToken } from '../src/runtime/decode-loop.ts';
import { writeBuffer } from '../src/gpu/buffers.ts';
import { computeLogits } from '../src/runtime/logits.ts';
import { resolveGenerationOptions, type GenerationOptions } from '../src/runtime/options.ts';
import { promptBucket, type DecodeSession } from '../src/runtime/session.ts';
import { maxRelErr } from './helpers/compare.ts';
import { testDevice } from './helpers/device.ts';

let dev: TesseraDevice;
beforeAll(async () => {
  dev = await testDevice();
});

async function tokens(model: LoadedModel, prompt: number[], o: GenerationOptions, path: 'program' | 'per-op', onSession?: (s: DecodeSession) => void): Promise<number[]> {
  const out: number[] = [];
  const opts = resolveGenerationOptions({ ignoreEos: true, ...o }, { eosTokenIds: [] });
  for await (const t of decodeTokens(model.decoder, prompt, opts, { path, ...(onSession ? { onSession } : {}) })) out.push(t.id);
  return out;
}

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

describe.each([
  ['the shipped model', 'models/default'],
  ['the llama HF fixture', 'test/fixtures/hf/llama'],
])('%s: compiled program vs per-op path', (_name, path) => {
  let model: LoadedModel;
  beforeAll(async () => {
    model = await loadModel(dev, path, { quant: 'f32' });
  });

  it('logits at every position are bit-identical', async () => {
    const ids = [1, 5, 9, 2, 7, 3, 11];
    const a = await computeLogits(model, ids, { path: 'program' });
    const b = await computeLogits(model, ids, { path: 'per-op' });
    expect(a.argmax).toEqual(b.argmax);
    expect(Array.from(bits(a.all))).toEqual(Array.from(bits(b.all)));
  });

  it('token by token (the single-token step over the cache) the logits are the prefill\'s at every position', async () => {
    const ids = [1, 5, 9, 2, 7, 3, 11];
    const a = await computeLogits(model, ids, { tokenByToken: true });
    const b = await computeLogits(model, ids);
    expect(a.argmax).toEqual(b.argmax);
    // other kernels (GEMV vs GEMM, decode vs prefill attention) sum in other orders: float rounding, ~1e-6 of the
    // largest logit; a key or value cached at the wrong position gives ~1
    const V = model.config.vocabSize;
    for (let t = 0; t < ids.length; t++) expect(maxRelErr(a.all.subarray(t * V, (t + 1) * V), b.all.subarray(t * V, (t + 1) * V)), `position ${t}`).toBeLessThan(1e-4);
  });

  it('greedy ids are identical, and the first one is the argmax of the full-sequence logits', async () => {
    const prompt = [1, 4, 8, 15, 16, 23, 42, 7, 9, 10, 11]; // 11 tokens: the prefill runs in the 16-token bucket
    expect(promptBucket(prompt.length, 256)).toBe(16);
    const a = await tokens(model, prompt, { maxTokens: 12, temperature: 0 }, 'program');
    const b = await tokens(model, prompt, { maxTokens: 12, temperature: 0 }, 'per-op');
    expect(a).toEqual(b);
    expect(a[0]).toBe((await computeLogits(model, prompt)).argmax.at(-1));
  });

  it('the same tokens with 0 to 4 steps queued ahead and 1 to 4 steps a submit (sampling too), and up to the context end', async () => {
    const prompt = [1, 4, 8, 15, 16];
    const run = async (depth: number, o: GenerationOptions, batch = 1, path: 'program' | 'per-op' = 'program') => {
      const out: number[] = [];
      const opts = resolveGenerationOptions({ ignoreEos: true, ...o }, { eosTokenIds: [] });
      const gen = decodeTokens(model.decoder, prompt, opts, depth === 0 ? { pipelined: false, path } : { depth, batch, path });
      for await (const t of gen) out.push(t.id);
      return out;
    };
    const greedy = await run(0, { maxTokens: 9, temperature: 0 });
    const sampled = await run(0, { maxTokens: 9, temperature: 0.8, seed: 7 });
    // the sampled run changes its seed every step, so a step that read another step's variables would differ
    expect(new Set(sampled).size).toBeGreaterThan(1);
    for (const [depth, batch] of [[1, 1], [2, 1], [4, 1], [1, 2], [2, 3], [2, 4]] as const) {
      const what = `depth ${depth}, batch ${batch}`;
      expect(await run(depth, { maxTokens: 9, temperature: 0 }, batch), what).toEqual(greedy);
      expect(await run(depth, { maxTokens: 9, temperature: 0.8, seed: 7 }, batch), what).toEqual(sampled);
      expect(await run(depth, { maxTokens: 1, temperature: 0 }, batch), what).toEqual(greedy.slice(0, 1));
    }
    expect(await run(2, { maxTokens: 9, temperature: 0.8, seed: 7 }, 3, 'per-op'), 'per-op, batch 3').toEqual(sampled);
    // a loop left early (EOS, a stop string) with steps still queued leaves the model usable
    for await (const _ of decodeTokens(model.decoder, prompt, resolveGenerationOptions({ ignoreEos: true, maxTokens: 9, temperature: 0 }, { eosTokenIds: [] }), { depth: 4 })) break;
    expect(await run(2, { maxTokens: 9, temperature: 0 })).toEqual(greedy);
  });
});

describe('compiled steps on the shipped model', () => {
  let model: LoadedModel;
  beforeAll(async () => {
    model = await loadModel(dev, 'models/default', { quant: 'f32' });
  });

  it('sampling with top-k, top-p and a repetition penalty matches the per-op path', async () => {
    const o = { maxTokens: 10, temperature: 0.9, topK: 20, topP: 0.9, repetitionPenalty: 1.3, seed: 7 };
    const a = await tokens(model, [1, 2, 3], o, 'program');
    const b = await tokens(model, [1, 2, 3], o, 'per-op');
    expect(a).toEqual(b);
    expect(new Set(a).size).toBeGreaterThan(1);
  });

  it('resolves no contract after the first decode step (32 more steps)', async () => {
    const ops = model.decoder.ops;
    let session: DecodeSession | undefined;
    const opts = resolveGenerationOptions({ maxTokens: 34, temperature: 0, ignoreEos: true }, { eosTokenIds: [] });
    let afterFirst = -1;
    let steps = 0;
    // A fresh sampling setting, so this generation compiles its own session's programs.
    for await (const _t of decodeTokens(model.decoder, [3, 1, 4, 1, 5], { ...opts, topP: 0.999 }, { onSession: (s) => (session = s) })) {
      steps++;
      // When token 0 is read, step 1 (the first decode step) has been recorded (the loop queues it first).
      if (steps === 1) afterFirst = ops.resolutions;
    }
    expect(steps).toBe(34);
    expect(afterFirst).toBeGreaterThan(0);
    expect(ops.resolutions).toBe(afterFirst);
    const programs = session!.programs();
    expect(programs.map((p) => p.label).sort()).toEqual(['decode', 'prefill.T5']);
    const decode = programs.find((p) => p.label === 'decode')!;
    expect(decode.stats.passes).toBe(1);
    expect(decode.stats.dispatches).toBeGreaterThan(4 * model.config.numLayers);
    console.log(`decode program: ${JSON.stringify(decode.stats)}`);
  });

  it('a second generation with the same settings and a prompt in the same bucket compiles nothing', async () => {
    const o = { maxTokens: 4, temperature: 0 };
    await tokens(model, [2, 7, 1, 8, 2, 8, 1, 8, 2], o, 'program'); // 9 tokens: bucket 16
    const before = model.decoder.ops.resolutions;
    const again = await tokens(model, [2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9], o, 'program'); // 13 tokens: bucket 16
    expect(again).toHaveLength(4);
    expect(model.decoder.ops.resolutions).toBe(before);
  });

  it('two sequences at once with the same settings each get their own session and their own tokens', async () => {
    const opts = resolveGenerationOptions({ maxTokens: 6, temperature: 0, ignoreEos: true }, { eosTokenIds: [] });
    const alone = [await tokens(model, [5, 6, 7], { maxTokens: 6, temperature: 0 }, 'program'), await tokens(model, [9, 1], { maxTokens: 6, temperature: 0 }, 'program')];
    const a = decodeTokens(model.decoder, [5, 6, 7], opts);
    const b = decodeTokens(model.decoder, [9, 1], opts);
    const got: number[][] = [[], []];
    for (let i = 0; i < 6; i++) {
      got[0]!.push(((await a.next()).value as DecodedToken).id);
      got[1]!.push(((await b.next()).value as DecodedToken).id);
    }
    await a.return('length');
    await b.return('length');
    expect(got).toEqual(alone);
  });

  it('maxTokens 0 runs the prompt and yields no token', async () => {
    expect(await tokens(model, [1, 2, 3], { maxTokens: 0 }, 'program')).toEqual([]);
  });
});

describe('non-finite logits', () => {
  it('are flagged on the GPU during generation and on the host by computeLogits, naming the model (models/default)', async () => {
    const model = await loadModel(dev, 'models/default', { quant: 'f32' });
    try {
      const norm = model.weights.get('model.norm.weight');
      writeBuffer(dev.device, norm.buffer, new Float32Array(norm.shape[0]!).fill(Number.NaN), norm.offset ?? 0);
      // greedy (the argmax pass counts), top-k sampling (SwiftShader: the serial top-k path counts; GPUs:
      // count_nonfinite) and top-k with a penalty (count_nonfinite before it, everywhere)
      for (const settings of [{ temperature: 0 }, { temperature: 0.8, topK: 40 }, { temperature: 0.8, topK: 40, repetitionPenalty: 1.2 }]) {
        const o = resolveGenerationOptions({ maxTokens: 4, ...settings }, { eosTokenIds: [] });
        const run = async () => {
          for await (const _t of decodeTokens(model.decoder, [1, 2, 3], o, { label: 'models/default' })) void _t;
        };
        await expect(run(), JSON.stringify(settings)).rejects.toThrow(NonFiniteLogitsError);
        await expect(run(), JSON.stringify(settings)).rejects.toThrow(/model models\/default: 2048 of 2048 logits are NaN or infinite at position 2/);
      }
      await expect(computeLogits(model, [1, 2, 3])).rejects.toThrow(/logits are NaN or infinite at position 0/);
    } finally {
      model.destroy();
    }
  });
});

describe('activation planning', () => {
  it('shares a buffer between activations whose lifetimes do not overlap, never between overlapping ones', () => {
    const acts = [
      { label: 'a', bytes: 400, first: 0, last: 1 },
      { label: 'b', bytes: 400, first: 1, last: 2 },
      { label: 'c', bytes: 200, first: 2, last: 3 },
      { label: 'd', bytes: 800, first: 3, last: 4 },
      { label: 'unused', bytes: 64, first: -1, last: -1 },
    ];
    const p = planActivations(acts);
    expect(p.slot[4]).toBe(-1);
    for (let i = 0; i < 4; i++) {
      for (let j = i + 1; j < 4; j++) {
        const overlap = acts[i]!.first <= acts[j]!.last && acts[j]!.first <= acts[i]!.last;
        if (overlap) expect(p.slot[i]).not.toBe(p.slot[j]);
      }
      expect(p.sizes[p.slot[i]!]!).toBeGreaterThanOrEqual(acts[i]!.bytes);
    }
    expect(p.slot[2]).toBe(p.slot[0]); // a is dead when c starts
    expect(p.sizes).toHaveLength(2);
  });
});
