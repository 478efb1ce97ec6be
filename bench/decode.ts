/**
 * Decode benchmark: tokens/s of the decoder on this GPU, for a synthetic Llama-shaped model with random weights
 * (q4k / q4k_m / q8_0 / f16 / f32; nothing downloaded) and for the shipped model, compared with the streaming-read bandwidth the
 * same harness measures: efficiency = tok/s x weight bytes read per token / read bandwidth.
 * Writes a JSON receipt. Usage: node --import tsx bench/decode.ts [--out FILE] [--tokens N] [--presets a,b] [--quant q4k,q4k_m,q8_0,f16,f32]
 * [--q6k-layers mix|all|none] (q4k_m: which layers keep v_proj and down_proj in Q6_K; default llama.cpp's mix) [--prefill 512,2048] (prompt lengths whose prefill is timed; default on GPUs with shader-f16) [--context N] (the prompt the timed
 * decode follows: 16 tokens by default, so attention reads 16 .. 16 + tokens keys) [--marginal] (each kernel's cost in the
 * compiled step: the step timed with that kernel's dispatches left out; see marginalCosts) [--probe-glu JSON] (instead of the decode runs: see probeGlu)
 */
import { existsSync, writeFileSync } from 'node:fs';
import { createDevice, describeAdapter, type TesseraDevice } from '../src/gpu/device.ts';
import { decoderConfigFromHF, type DecoderConfig } from '../src/models/config.ts';
import { Decoder } from '../src/models/decoder.ts';
import { loadModel } from '../src/models/load.ts';
import type { GpuWeights } from '../src/models/weights.ts';
import { RANDOM_QUANTS, randomWeights, type RandomQuant } from '../src/models/random-weights.ts';
import { resolveGenerationOptions } from '../src/runtime/options.ts';
import { decodeTokens, type LoopTiming } from '../src/runtime/decode-loop.ts';
import type { DecodeSession, StepPath } from '../src/runtime/session.ts';
import { kernelTotals, Recorder, type Step } from '../src/gpu/recorder.ts';
import { queueIdle } from '../src/gpu/wait.ts';
import { describeReadBandwidth, measureReadBandwidthDetail } from './bandwidth.ts';
import { PRESETS } from './presets.ts';
import { receiptHeader } from './commit.ts';
import { readConfig } from '../src/config.ts';
import { planOp, recordPlan } from '../src/selftest/launch.ts';
import { storageBuffer, uploadBuffer } from '../src/gpu/buffers.ts';
import { fillWeights, heatGpu, spanMsPerCall } from './gpu-bench.ts';


function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : def;
}

/**
 * Weight bytes one decode step reads: every linear weight, one embedding row, norms (fused views counted once); of a
 * MoE layer's stacked experts only the top-k a token is routed to (k / E of each expert tensor).
 */
function bytesPerToken(w: GpuWeights, cfg: DecoderConfig): number {
  let b = 0;
  const seen = new Set<GPUBuffer>();
  for (const [name, t] of w.tensors) {
    if (seen.has(t.buffer)) continue;
    seen.add(t.buffer);
    if (name === 'model.embed_tokens.weight') b += t.buffer.size / cfg.vocabSize;
    else if (cfg.moe && /\.mlp\.experts\./.test(name)) b += (t.buffer.size * cfg.moe.topK) / cfg.moe.numExperts;
    else b += t.buffer.size;
  }
  if (cfg.tieWordEmbeddings) b += w.get('model.embed_tokens.weight').buffer.size;
  return b;
}

/** NaN for no values (a prompt-only run has no decode steps) */
const median = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]! : NaN);

/** The generation token loop as generation runs it: median and worst time between token readbacks. */
async function loopSteps(dec: Decoder, promptIds: number[], tokens: number, path: StepPath, pipelined = true) {
  const o = resolveGenerationOptions({ maxTokens: tokens + 1, temperature: 0, seed: 1, ignoreEos: true }, { eosTokenIds: [] });
  const times: number[] = [];
  const t0 = performance.now();
  let lastId = 0;
  let session: DecodeSession | undefined;
  const timing: LoopTiming = { submitMs: [], sleepMs: [], waitMs: [] };
  for await (const { id, at } of decodeTokens(dec, promptIds, o, { pipelined, path, timing, onSession: (s) => (session = s) })) {
    times.push(at);
    lastId = id;
  }
  const steps = times.slice(1).map((t, i) => t - times[i]!);
  const sorted = [...steps].sort((a, b) => a - b);
  // with B steps a submit the tokens of a submit are read back together (intervals of ~0 and ~B steps): the step
  // time is the median over windows of B intervals (each one submit's period, whatever its phase), over B
  const B = pipelined ? readConfig().decodeBatch : 1;
  const windows = steps.slice(B - 1).map((_, i) => (times[i + B]! - times[i]!) / B);
  return {
    prefillMs: times[0]! - t0,
    medianStepMs: median(windows),
    // the whole loop's rate: every stall included
    meanStepMs: (times.at(-1)! - times[0]!) / Math.max(1, steps.length),
    p99StepMs: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!,
    worstStepMs: sorted.at(-1)!,
    tokensPerSecond: 1000 / median(windows),
    // the host's part of a token's interval (medians over the decode steps: step 0 is the prompt)
    hostMs: { submit: +median(timing.submitMs.slice(1)).toFixed(4), sleep: +median(timing.sleepMs.slice(1)).toFixed(4), wait: +median(timing.waitMs.slice(1)).toFixed(4) },
    lastId,
    session: session!,
  };
}

/**
 * Host cost of one decode step on a warm session, each step measured with the GPU idle (no queue back-pressure):
 * record (per-op: resolve + pack + bind every op; program: write the step variables and append the frozen list) and
 * submit (encode into one command buffer + queue.submit). GPU ms per step: `n` steps submitted back to back, one wait.
 */
async function hostCost(dev: TesseraDevice, session: DecodeSession, promptLength: number, path: StepPath, n = 64) {
  const record: number[] = [];
  const submit: number[] = [];
  let dispatches = 0;
  let passes = 0;
  for (let i = 0; i < n; i++) {
    await queueIdle(dev);
    const rec = new Recorder(dev, { timestamps: false });
    const a = performance.now();
    await session.recordDecode(rec, promptLength, 1 + (i % 16), 1, path);
    const b = performance.now();
    dispatches = rec.dispatchCount;
    passes = rec.passCount;
    rec.submitUnchecked();
    const c = performance.now();
    record.push(b - a);
    submit.push(c - b);
  }
  await queueIdle(dev);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const rec = new Recorder(dev, { timestamps: false });
    await session.recordDecode(rec, promptLength, 1 + (i % 16), 1, path);
    rec.submitUnchecked();
  }
  await queueIdle(dev);
  const backToBack = (performance.now() - t0) / n;
  const rec = median(record);
  const sub = median(submit);
  return { recordMsPerStep: rec, submitMsPerStep: sub, hostUsPerDispatch: ((rec + sub) * 1000) / dispatches, worstHostMsPerStep: Math.max(...record.map((r, i) => r + submit[i]!)), dispatchesPerStep: dispatches, computePassesPerStep: passes, backToBackMsPerStep: backToBack };
}

/** Per-kernel GPU time of one decode step (one pass per dispatch, timestamps). */
async function kernelProfile(dev: TesseraDevice, session: DecodeSession, promptLength: number) {
  if (!dev.timestamps) return {};
  const rec = new Recorder(dev);
  await session.recordDecode(rec, promptLength, 1, 1, 'program');
  return Object.fromEntries([...kernelTotals(await rec.submit())].map(([k, v]) => [k, +v.ms.toFixed(4)]));
}

/**
 * What each kernel of the decode step costs where it runs (`--marginal`): the GPU span of the compiled step (`reps`
 * steps back to back in one pass) with every dispatch of one label left out, against the whole step, alternated over
 * `rounds` rounds (medians). A kernel's marginal cost is its own time in the chain plus the wait at its boundary, less
 * whatever of it overlapped its neighbours. The step's outputs are wrong without the left-out kernel (its consumers
 * read stale buffers); only the times mean anything.
 */
async function marginalCosts(dev: TesseraDevice, session: DecodeSession, promptLength: number, reps = 16, rounds = 7) {
  if (!dev.timestamps) return undefined;
  const program = await session.recordDecode(new Recorder(dev, { timestamps: false }), promptLength, 1, 1, 'program');
  if (!program) return undefined;
  const steps = program.steps;
  const labels = [...new Set(steps.flatMap((s) => (s.kind === 'dispatch' ? [s.d.label] : [])))];
  const spanMs = async (keep: readonly Step[]) => {
    const rec = new Recorder(dev, { timestamps: 'span' });
    for (let i = 0; i < reps; i++) rec.append({ steps: keep });
    const [t] = await rec.submit();
    return t!.ms / reps;
  };
  const whole: number[] = [];
  const without = new Map<string, number[]>(labels.map((l) => [l, []]));
  for (let r = 0; r < rounds; r++) {
    whole.push(await spanMs(steps));
    for (const l of labels) without.get(l)!.push(await spanMs(steps.filter((s) => s.kind !== 'dispatch' || s.d.label !== l)));
  }
  const stepMs = median(whole);
  const kernels = labels.map((l) => {
    const ms = median(without.get(l)!);
    return { label: l, dispatches: steps.filter((s) => s.kind === 'dispatch' && s.d.label === l).length, withoutMs: +ms.toFixed(4), marginalMs: +(stepMs - ms).toFixed(4) };
  });
  console.log(`  marginal (step ${stepMs.toFixed(3)} ms): ` + kernels.map((k) => `${k.label} x${k.dispatches} ${(k.marginalMs * 1000).toFixed(0)} us (${((k.marginalMs * 1000) / k.dispatches).toFixed(2)} us each)`).join('; '));
  return { reps, rounds, stepMs: +stepMs.toFixed(4), stepMsRounds: whole.map((x) => +x.toFixed(4)), kernels };
}

async function decodeRun(dev: TesseraDevice, dec: Decoder, prompt: number, tokens: number) {
  const promptIds = Array.from({ length: prompt }, (_, i) => (i * 7 + 3) % dec.cfg.vocabSize);
  // The generation token loop, compiled programs and the per-op path, in the same run.
  const perOp = await loopSteps(dec, promptIds, Math.min(tokens, 48), 'per-op');
  // once untimed first, right before: the GPU's clocks rise under load (the H200's SM clock idles at 345 MHz and
  // runs at 1980 MHz under load; a 1B loop of 128 tokens lasts 0.1-0.2 s, and timed without this it took ~2 ms a
  // token in some runs and ~1 ms in others, likely the clock it started at)
  await loopSteps(dec, promptIds, tokens, 'program');
  const prog = await loopSteps(dec, promptIds, tokens, 'program');
  const sequential = await loopSteps(dec, promptIds, Math.min(tokens, 48), 'program', false);
  // the program of the first timed step (a session runs a second one on a prefix of its cache while the sequence fits)
  const decodeProgram = prog.session.programs().find((p) => p.label === prog.session.decodeLabel(prompt))!;
  const hostProgram = await hostCost(dev, prog.session, prompt, 'program');
  const hostPerOp = await hostCost(dev, prog.session, prompt, 'per-op', 16);
  return {
    prefillTokens: prompt,
    prefillMs: prog.prefillMs,
    decodeTokens: tokens,
    decodeTokensPerSecond: prog.tokensPerSecond,
    medianStepMs: prog.medianStepMs,
    meanStepMs: prog.meanStepMs,
    p99StepMs: prog.p99StepMs,
    worstStepMs: prog.worstStepMs,
    sequentialTokensPerSecond: sequential.tokensPerSecond,
    loopHostMs: prog.hostMs,
    sequentialLoopHostMs: sequential.hostMs,
    headPicks: prog.session.headPicks,
    program: { ...hostProgram, gpuMsPerStep: hostProgram.backToBackMsPerStep, label: decodeProgram.label, stats: decodeProgram.stats, distinctPipelines: distinctPipelines(decodeProgram.steps) },
    perOp: { tokensPerSecond: perOp.tokensPerSecond, medianStepMs: perOp.medianStepMs, worstStepMs: perOp.worstStepMs, ...hostPerOp },
    sameTokensAsPerOp: perOp.lastId === (await loopSteps(dec, promptIds, Math.min(tokens, 48), 'program')).lastId,
    gpuMsPerKernel: await kernelProfile(dev, prog.session, prompt),
    ...(process.argv.includes('--marginal') ? { marginal: await marginalCosts(dev, prog.session, prompt) } : {}),
  };
}

/** Distinct pipeline objects among a program's dispatches (each layer's kernels should share theirs). */
function distinctPipelines(steps: readonly Step[]): number {
  return new Set(steps.flatMap((s) => (s.kind === 'dispatch' ? [s.d.pipeline] : []))).size;
}

function summary(name: string, r: Awaited<ReturnType<typeof decodeRun>>): string {
  const p = r.program;
  const o = r.perOp;
  return (
    `${name}: ${r.decodeTokensPerSecond.toFixed(1)} tok/s (median step ${r.medianStepMs.toFixed(2)} ms, mean ${r.meanStepMs.toFixed(2)}, worst ${r.worstStepMs.toFixed(2)} ms; per-op path ${o.tokensPerSecond.toFixed(1)} tok/s); ` +
    `loop: submit ${r.loopHostMs.submit.toFixed(3)} + sleep ${r.loopHostMs.sleep.toFixed(3)} + wait ${r.loopHostMs.wait.toFixed(3)} ms a token (sequential ${r.sequentialTokensPerSecond.toFixed(1)} tok/s); ` +
    `program: record ${p.recordMsPerStep.toFixed(3)} ms + submit ${p.submitMsPerStep.toFixed(3)} ms per step, ${p.hostUsPerDispatch.toFixed(2)} us/dispatch, ${p.dispatchesPerStep} dispatches (${p.distinctPipelines} pipelines) in ${p.computePassesPerStep} pass(es), GPU ${p.gpuMsPerStep.toFixed(2)} ms/step; ` +
    `per-op: record ${o.recordMsPerStep.toFixed(2)} ms + submit ${o.submitMsPerStep.toFixed(2)} ms, ${o.hostUsPerDispatch.toFixed(1)} us/dispatch, ${o.computePassesPerStep} passes`
  );
}

/**
 * Prefill throughput: a prompt of T tokens (one compiled prefill program per bucket; T a power of two is its own
 * bucket) to its first sampled token, best of 3 after a compiling run.
 */
async function prefillRuns(dev: TesseraDevice, dec: Decoder, lengths: readonly number[]) {
  const out: { tokens: number; ms: number; tokensPerSecond: number; gpuMsPerKernel?: Record<string, number>; gpuMsTotal?: number }[] = [];
  for (const T of lengths) {
    const ids = Array.from({ length: T }, (_, i) => (i * 7 + 3) % dec.cfg.vocabSize);
    let best = Infinity;
    let session: DecodeSession | undefined;
    for (let i = 0; i < 4; i++) {
      const r = await loopSteps(dec, ids, 0, 'program');
      if (i > 0) best = Math.min(best, r.prefillMs);
      session = r.session;
    }
    const entry: (typeof out)[number] = { tokens: T, ms: best, tokensPerSecond: (T / best) * 1000 };
    if (dev.timestamps && session) {
      // one more prefill with a timestamped pass per dispatch: GPU time per kernel (the largest 12) and in all
      const rec = new Recorder(dev);
      await session.recordPrefill(rec, ids, 1, 'program');
      const totals = [...kernelTotals(await rec.submit())].sort((a, b) => b[1].ms - a[1].ms);
      entry.gpuMsTotal = +totals.reduce((a, [, v]) => a + v.ms, 0).toFixed(3);
      entry.gpuMsPerKernel = Object.fromEntries(totals.slice(0, 12).map(([k, v]) => [k, +v.ms.toFixed(3)]));
    }
    out.push(entry);
    console.log(`  prefill ${T} tokens: ${best.toFixed(2)} ms, ${((T / best) * 1000).toFixed(0)} tok/s` + (entry.gpuMsPerKernel ? `; GPU ${entry.gpuMsTotal} ms timestamped: ${JSON.stringify(entry.gpuMsPerKernel)}` : ''));
  }
  return out;
}

/**
 * --probe-glu '[{tunables}, ...]': linear_glu_q8 (the MLP's gate|up GEMV) timed on its own, calls back to back in one
 * pass, at each tunable set on three kinds of weights: the model's own gate|up buffers (rotating over the layers, as a
 * step reads them), one fresh buffer per layer with the model's bytes copied in, and fresh buffers of synthetic Q4_K
 * blocks (fillWeights: d = dmin ~ 2^-10); then on the model's weights followed by the layer's down_proj
 * (linear_q8 at its defaults). A kernel slower on the first than on the others points at the weights; the pair slower
 * than the two alone, at its neighbours in a step.
 */
async function probeGlu(dev: TesseraDevice, cfg: DecoderConfig, w: GpuWeights, points: Record<string, string | number>[]) {
  const H = cfg.hiddenSize;
  const I = cfg.intermediateSize;
  const L = cfg.numLayers;
  const mk = (bytes: number) => storageBuffer(dev, bytes, 'probe-glu');
  const own = Array.from({ length: L }, (_, l) => w.get(`model.layers.${l}.mlp.gate_up_proj.weight`).buffer);
  const size = own[0]!.size;
  const copied = own.map((b) => {
    const c = mk(size);
    const enc = dev.device.createCommandEncoder();
    enc.copyBufferToBuffer(b, 0, c, 0, size);
    dev.device.queue.submit([enc.finish()]);
    return c;
  });
  const synthetic = own.map(() => {
    const c = mk(size);
    fillWeights(dev, c, 'q4_k');
    return c;
  });
  const x = uploadBuffer(dev.device, new Float32Array(H).map((_, i) => Math.sin(i) * 0.5), 'probe-glu x');
  const gamma = w.get('model.layers.0.post_attention_layernorm.weight').buffer;
  const qa = mk(I);
  const da = mk(I / 8);
  const rs = mk(I / 4);
  const down = Array.from({ length: L }, (_, l) => w.get(`model.layers.${l}.mlp.down_proj.weight`).buffer);
  const downPlan = planOp(dev, 'linear_q8', { shapes: { qa: [1, I / 4], da: [1, I / 32], rs: [1, I / 16], w: [H, I], y: [1, H] }, dtypes: { w: 'q4_k', qa: 'uint32' }, attributes: { accumulate: 1 }, tunables: points[0]?.cpuMapping ? { cpuMapping: points[0].cpuMapping } : {} });
  const n = 4 * L;
  await queueIdle(dev); // the copies and uploads above done before anything is timed
  for (const round of [0, 1, 2]) {
    for (const t of points) {
      const plan = planOp(dev, 'linear_glu_q8', { shapes: { x: [1, H], w: [2 * I, H], gamma: [H], qa: [1, I / 4], da: [1, I / 32], rs: [1, I / 16] }, dtypes: { w: 'q4_k', qa: 'uint32' }, attributes: { activation: cfg.activation }, tunables: { mlpQ8: 'on', ...t } });
      const line: string[] = [];
      // per call: the GEMV alone on each kind of weights, then on the model's weights followed by its layer's down_proj
      // (linear_q8 reading the int8 activations it wrote, as the step runs them)
      const kinds = [['model', own], ['copied', copied], ['synthetic', synthetic], ['model + down', own]] as const;
      for (const [name, ws] of kinds) {
        const withDown = name === 'model + down';
        const record = async (rec: Recorder, k: number) => {
          for (let i = 0; i < k; i++) {
            await recordPlan(rec, dev, plan, { x, w: ws[i % L]!, gamma, qa, da, rs });
            // down_proj adds into x, the GEMV's input row, as a layer adds into the residual stream the next one reads
            if (withDown) await recordPlan(rec, dev, downPlan, { qa, da, rs, w: down[i % L]!, y: x });
          }
        };
        await heatGpu(dev, record, 4 * n);
        line.push(`${name} ${(1000 * (await spanMsPerCall(dev, record, n))).toFixed(2)} us`);
      }
      console.log(`probe-glu round ${round} ${plan.variant} ${JSON.stringify(t)}: ${line.join(', ')}`);
    }
  }
  for (const b of [...copied, ...synthetic, x, qa, da, rs]) b.destroy();
}

const dev = await createDevice({ timestamps: true });
const out = arg('out', 'bench-decode.json');
const tokens = Number(arg('tokens', '256'));
const presets = arg('presets', dev.caps.features.has('shader-f16') ? 'llama-1.1b,llama-1b-128k' : 'tiny').split(',').filter(Boolean); // '' : the shipped model only
for (const p of presets) if (!PRESETS[p]) throw new Error(`--presets: unknown preset ${p} (known: ${Object.keys(PRESETS).join(', ')})`);
const quants = arg('quant', dev.caps.features.has('shader-f16') ? 'q4k,f16' : 'f32').split(',') as RandomQuant[];
for (const q of quants) if (!RANDOM_QUANTS.includes(q)) throw new Error(`--quant: unknown weight format ${q} (known: q4k, q4k_m (Q4_K with llama.cpp's Q4_K_M share of Q6_K), q8_0, f16, f32)`);
const q6kLayers = arg('q6k-layers', 'mix') as 'mix' | 'all' | 'none';
if (!['mix', 'all', 'none'].includes(q6kLayers)) throw new Error(`--q6k-layers: mix, all or none (the q4k_m layers whose v_proj and down_proj are Q6_K), not ${q6kLayers}`);
const context = Number(arg('context', '16'));
if (!Number.isInteger(context) || context < 1) throw new Error(`--context: a prompt length of at least 1 token, not ${arg('context', '')}`);
const prefillLengths = arg('prefill', dev.caps.features.has('shader-f16') ? '512,2048' : '').split(',').filter(Boolean).map(Number);
const readBandwidth = await measureReadBandwidthDetail(dev, Number(arg('bw-bytes', String(dev.caps.features.has('shader-f16') ? 2 ** 30 : 2 ** 26))));
const bandwidth = readBandwidth.bytesPerSecond;
console.log(`${describeAdapter(dev.caps)} (Dawn: ${(dev.dawnArgs ?? []).join(' ')}): ${describeReadBandwidth(readBandwidth)}`);
const results: unknown[] = [];
for (const p of presets) {
  const preset = decoderConfigFromHF(PRESETS[p]!, `preset ${p}`);
  // the cache holds the prompt, the timed tokens and the prefill runs; a preset's max_position_embeddings (the rope
  // tables' length) is raised to that where it is shorter: these are shapes with random weights, not a checkpoint
  const positions = Math.max(512, 2 * Math.max(0, ...prefillLengths), context + tokens + 64);
  const cfg = positions > preset.maxPositions ? { ...preset, maxPositions: positions } : preset;
  for (const q of quants) {
    const t0 = performance.now();
    // the embedding table in f32 where the device has no shader-f16 (its f16 gather needs it)
    const w = randomWeights(dev, cfg, q, { f32Embedding: !dev.caps.features.has('shader-f16'), q6kLayers });
    console.log(`${p} ${q}: ${(w.bytes / 2 ** 30).toFixed(1)} GiB of random weights in ${((performance.now() - t0) / 1e3).toFixed(1)} s (${Object.entries(w.storage).map(([k, v]) => `${v} ${k}`).join(', ')})`);
    // (the decoder concatenates q|k|v and gate|up at load: the probe reads its gate_up_proj)
    const dec = new Decoder(dev, cfg, w, { maxPositions: positions });
    if (process.argv.includes('--probe-glu')) {
      // the probe instead of the decode run
      await probeGlu(dev, cfg, w, JSON.parse(arg('probe-glu', '[{}]')) as Record<string, string | number>[]);
      w.destroy();
      continue;
    }
    const r = { ...(await decodeRun(dev, dec, context, tokens)), prefill: await prefillRuns(dev, dec, prefillLengths) };
    const bpt = bytesPerToken(w, cfg);
    const eff = (r.decodeTokensPerSecond * bpt) / bandwidth;
    console.log(summary(`${p} ${q}`, r) + `, ${(bpt / 2 ** 20).toFixed(0)} MiB/token, ${(eff * 100).toFixed(1)}% of read bandwidth`);
    const st = r.program.stats;
    if (st.linkedDispatchesSaved || st.linkRefused.length) console.log(`  linked runs: ${st.linkedDispatchesSaved} dispatches saved${st.linkRefused.length ? `; ${st.linkRefused.length} refused, first: ${st.linkRefused[0]}` : ''}`);
    results.push({ model: p, quant: q, storage: w.storage, decoder: decoderPaths(dec), bytesPerToken: bpt, ...r, fractionOfReadBandwidth: eff });
    w.destroy();
  }
}
if (!existsSync('models/default/model.safetensors')) console.log('models/default: no model.safetensors here (moved aside to fit a device call?), not measured');
else {
  const m = await loadModel(dev, 'models/default', { quant: 'f32' });
  const r = await decodeRun(dev, m.decoder, 5, tokens);
  const bpt = bytesPerToken(m.weights, m.config);
  console.log(summary('models/default f32', r));
  results.push({ model: 'models/default', quant: 'f32', storage: m.weights.storage, decoder: decoderPaths(m.decoder), bytesPerToken: bpt, ...r, fractionOfReadBandwidth: (r.decodeTokensPerSecond * bpt) / bandwidth });
  m.destroy();
}
/** Which of the decoder's single-token paths a model took (layers or GEMVs a step), for the receipt. */
function decoderPaths(d: Decoder) {
  return {
    fusedGemvLayers: d.fusedGemvLayers,
    ropeFusedLayers: d.ropeFusedLayers,
    splitQkvLayers: d.splitQkvLayers,
    ropeSplitLayers: d.ropeSplitLayers,
    q8MlpLayers: d.q8MlpLayers,
    q8AttentionLayers: d.q8AttentionLayers,
    normHandoffGemvs: d.normHandoffGemvs,
    gluRunsLayers: d.gluRunsLayers,
    prefetchLayers: d.prefetchLayers,
    chainMlpLayers: d.chainMlpLayers,
    chainAttnLayers: d.chainAttnLayers,
    chainQkvLayers: d.chainQkvLayers,
    attnOprojLayers: d.attnOprojLayers,
  };
}
const receipt = {
  ...receiptHeader('decode', dev),
  readBandwidthBytesPerSecond: bandwidth,
  readBandwidth,
  decodeDepth: readConfig().decodeDepth,
  decodeBatch: readConfig().decodeBatch,
  ...(quants.includes('q4k_m') ? { q6kLayers } : {}),
  tunables: readConfig().tunables,
  method:
    'decodeTokensPerSecond, medianStepMs, worstStepMs: the generation token loop (src/runtime/decode-loop.ts) with compiled programs: decodeBatch steps a submit (each forward + LM head + GPU greedy sampling), the next decodeDepth steps queued before token t is read back; time between token readbacks over `decodeTokens` tokens (with decodeBatch B > 1: over windows of B readbacks, divided by B; meanStepMs: the whole loop\'s time over its steps, stalls included), timed right after one untimed run of the same loop (GPU clocks up). ' +
    'program.recordMsPerStep: host time to write the step variables and append the frozen dispatch list; submitMsPerStep: encode into one command buffer + queue.submit (medians of 64 steps, each started with the GPU idle); hostUsPerDispatch = (record + submit) / dispatches; gpuMsPerStep: 64 decode steps submitted back to back, wall time to completion / 64 (the GPU bound when the host is faster). ' +
    'loopHostMs (sequentialLoopHostMs: the loop without steps queued ahead): medians over the decode steps of the loop\'s host time a token: submit (record + submit of a step), sleep (blocking, before a readback), wait (for the readback after it). ' +
    'perOp: the same step recorded op by op through the contracts every step (the previous path), same run. bytes/token = linear weights + LM head + one embedding row; efficiency = tok/s x bytes/token / streaming-read bandwidth measured by bench/bandwidth.ts in the same run (readBandwidth: the fastest of its read patterns, heated, back to back in one pass; legacy: the measure before 2026-12-02)',
  results,
};
writeFileSync(out, JSON.stringify(receipt, null, 2));
console.log(`receipt: ${out}`);
process.exit(0);
