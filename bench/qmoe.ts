/**
 * Benchmark: com.microsoft.QMoE on Tessera (spec/qmoe.v2.contract.json) vs ONNX Runtime's WebGPU execution provider
 * (onnxruntime-node), same model, same GPU, one run. Writes a JSON receipt (machine, adapter, commit, workload, every
 * figure, ratio ours / ORT per case) to --out.
 *
 *   node --import tsx bench/qmoe.ts --out receipt.json            gpt-oss-20b experts (E 32, k 4, H = I = 2880,
 *                                                                 4-bit, block 32, SwiGLU) at 1, 16, 128, 1024 tokens,
 *                                                                 plus a ReLU per-row case
 *   node --import tsx bench/qmoe.ts --small --out receipt.json    small shapes (SwiftShader / CI smoke run)
 *   options: --iters N (timed iterations per case, default: as many as fit in ~1 s, 5..200), --cases a,b (names),
 *            --tunables '{"workgroupSize":128}', --no-ort, --ort-ep webgpu|cpu, --seed N,
 *            --upload write|mapped (how an iteration feeds the input and router logits: queue.writeBuffer, the
 *            default, or memcpy into persistent mapped MAP_WRITE staging buffers copied on the GPU in the same submit),
 *            --dtype float32|float16 (the activations, router logits and output on both sides; the scales stay float32.
 *            float16 compares the same precision: Tessera's f16 subgroup-matrix variant where the device has it)
 *
 * Timing. Tessera: weights are uploaded once; one iteration = write the input and router logits, record every pass
 * of the plan plus the output copy into ONE submit, map the output (the same work as ORT's session.run with the
 * weights as initializers: feeds in, output out). Figures: wall time per iteration (median of N after 3 warm-up
 * iterations), pipelined time (N submits back to back, no readback, divided by N), and GPU time (sum of per-dispatch
 * timestamps, when the adapter has timestamp-query). ORT: wall time of session.run (median of N after warm-up).
 * If ORT's WebGPU EP cannot run a case (its QMoE implements SwiGLU only), ORT's CPU EP is timed instead and the
 * receipt says so. Outputs are compared (max |a - b| / max |b|): ours vs the timed ORT provider, and ours and ORT
 * WebGPU vs ORT's CPU EP (the oracle; every --small case, <= 128 tokens otherwise), and vs the CPU reference (--small).
 * Weights are generated on the fly from a seed (never stored).
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import type { Plan } from '../src/contracts/index.ts';
import { loadContract } from '../src/node/contracts.ts';
import { planFor, recordContract, type GpuTensorRef, type HostTensor } from '../src/contracts/run.ts';
import { STORAGE_USAGE, uploadBuffer, USAGE, writeBuffer } from '../src/gpu/buffers.ts';
import { createDevice, describeAdapter, type TesseraDevice } from '../src/gpu/device.ts';
import { Recorder } from '../src/gpu/recorder.ts';
import { gpuWait } from '../src/gpu/wait.ts';
import { f16BytesToF32, f32ToF16Bytes } from '../src/formats/index.ts';
import { buildQmoeModel } from '../src/onnx/qmoe.ts';
import { qmoeRoute, type QmoeAttrs } from '../src/reference/qmoe.ts';
import { qmoeReferenceFromTensors, seededRandom, type QmoeTensors } from '../src/reference/qmoe-cases.ts';
import { measureReadBandwidth } from './bandwidth.ts';
import { receiptCommitState } from './commit.ts';
import { loadOrt } from './ort-matmulnbits.ts';

// ---------------------------------------------------------------------------------------------------------------
// Options

interface Options {
  out?: string;
  small: boolean;
  iters?: number;
  cases?: string[];
  tunables: Record<string, number | boolean>;
  ort: boolean;
  ortEp: 'webgpu' | 'cpu';
  seed: number;
  upload: 'write' | 'mapped';
  dtype: 'float32' | 'float16';
}
function parseArgs(argv: string[]): Options {
  const o: Options = { small: false, tunables: {}, ort: true, ortEp: 'webgpu', seed: 1234, upload: 'write', dtype: 'float32' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--out') o.out = val();
    else if (a === '--small') o.small = true;
    else if (a === '--iters') o.iters = Number(val());
    else if (a === '--cases') o.cases = val().split(',');
    else if (a === '--tunables') o.tunables = JSON.parse(val()) as Record<string, number | boolean>;
    else if (a === '--no-ort') o.ort = false;
    else if (a === '--ort-ep') o.ortEp = val() as 'webgpu' | 'cpu';
    else if (a === '--seed') o.seed = Number(val());
    else if (a === '--upload') {
      const v = val();
      if (v !== 'write' && v !== 'mapped') throw new Error(`--upload takes write or mapped, not ${v}`);
      o.upload = v;
    } else if (a === '--dtype') {
      const v = val();
      if (v !== 'float32' && v !== 'float16') throw new Error(`--dtype takes float32 or float16, not ${v}`);
      o.dtype = v;
    } else if (a === '--help' || a === '-h') {
      console.log(
        'usage: node --import tsx bench/qmoe.ts [--small] [--out FILE] [--iters N] [--cases a,b] [--tunables JSON] [--no-ort] [--ort-ep webgpu|cpu] [--seed N] [--upload write|mapped] [--dtype float32|float16]',
      );
      process.exit(0);
    } else throw new Error(`unknown option ${a} (see --help)`);
  }
  return o;
}

// ---------------------------------------------------------------------------------------------------------------
// Workload

interface Workload {
  name: string;
  E: number;
  k: number;
  hidden: number;
  inter: number;
  bits: 4 | 8;
  block: number;
  activation: 'relu' | 'swiglu';
  tokens: number;
  /** swiglu_limit / alpha / beta (gpt-oss: 7, 1.702, 1). */
  limit?: number;
  alpha?: number;
  beta?: number;
}

function workloads(small: boolean): Workload[] {
  const swiglu = { activation: 'swiglu' as const, limit: 7, alpha: 1.702, beta: 1 };
  if (small) {
    const base = { E: 8, k: 2, hidden: 128, inter: 128, bits: 4 as const, block: 32, ...swiglu };
    return [
      ...[1, 4, 16, 64].map((tokens) => ({ ...base, name: `small-swiglu-blk32-t${tokens}`, tokens })),
      { E: 8, k: 2, hidden: 128, inter: 128, bits: 4, block: 0, activation: 'relu', name: 'small-relu-row-t1', tokens: 1 },
    ];
  }
  const gptoss = { E: 32, k: 4, hidden: 2880, inter: 2880, bits: 4 as const, block: 32, ...swiglu };
  return [
    ...[1, 16, 128, 1024].map((tokens) => ({ ...gptoss, name: `gptoss20b-experts-t${tokens}`, tokens })),
    { E: 32, k: 4, hidden: 2880, inter: 2880, bits: 4, block: 0, activation: 'relu', name: 'relu-row-4bit-e32k4-h2880-t1', tokens: 1 },
  ];
}

const attrsOf = (w: Workload): QmoeAttrs => ({
  k: w.k,
  activation_type: w.activation,
  expert_weight_bits: w.bits,
  swiglu_fusion: w.activation === 'swiglu' ? 1 : 0,
  normalize_routing_weights: 0,
  ...(w.block > 0 ? { block_size: w.block } : {}),
  ...(w.activation === 'swiglu' ? { activation_alpha: w.alpha ?? 1, activation_beta: w.beta ?? 0, ...(w.limit !== undefined ? { swiglu_limit: w.limit } : {}) } : {}),
});

/** Weights for a workload's expert shapes (not the token count): quantised bytes 4 at a time, scales as in makeQmoeInputs. */
function makeWeights(w: Workload, seed: number): Omit<QmoeTensors, 'inputT' | 'routerT'> {
  const rand = seededRandom(seed);
  const fusion = w.activation === 'swiglu' ? 2 : 1;
  const rows1 = fusion * w.inter;
  const pack = w.bits === 4 ? 2 : 1;
  const qStd = (w.bits === 4 ? 16 : 256) / Math.sqrt(12);
  const bytes = (n: number) => {
    const u = new Uint32Array(Math.ceil(n / 4));
    for (let i = 0; i < u.length; i++) u[i] = Math.floor(rand() * 4294967296);
    return new Uint8Array(u.buffer, 0, n);
  };
  const scales = (rows: number, cols: number, targetStd: number) => {
    const blocks = w.block > 0 ? cols / w.block : 1;
    const base = targetStd / (Math.sqrt(cols) * qStd);
    const out = new Float32Array(w.E * rows * blocks);
    for (let i = 0; i < out.length; i++) out[i] = base * (0.5 + rand());
    return out;
  };
  return {
    fc1T: { dtype: 'uint8', shape: [w.E, rows1, w.hidden / pack], data: bytes((w.E * rows1 * w.hidden) / pack) },
    fc1ScalesT: { dtype: 'float32', shape: w.block > 0 ? [w.E, rows1, w.hidden / w.block] : [w.E, rows1], data: scales(rows1, w.hidden, 2) },
    fc2T: { dtype: 'uint8', shape: [w.E, w.hidden, w.inter / pack], data: bytes((w.E * w.hidden * w.inter) / pack) },
    fc2ScalesT: { dtype: 'float32', shape: w.block > 0 ? [w.E, w.hidden, w.inter / w.block] : [w.E, w.hidden], data: scales(w.hidden, w.inter, 1) },
  };
}

function makeActivations(w: Workload, seed: number): Activations {
  const rand = seededRandom(seed);
  const randn = () => Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-12))) * Math.cos(2 * Math.PI * rand());
  return {
    inputT: { dtype: 'float32', shape: [w.tokens, w.hidden], data: Float32Array.from({ length: w.tokens * w.hidden }, randn) },
    routerT: { dtype: 'float32', shape: [w.tokens, w.E], data: Float32Array.from({ length: w.tokens * w.E }, () => 2 * randn()) },
  };
}

type Activations = Pick<QmoeTensors, 'inputT' | 'routerT'>;

/** The activations as --dtype asks: float16 ones carry their f16 bits (Uint16Array), typed as the f32 ones for the
 * helpers that only pass them through (buildQmoeModel, the uploads, planFor). */
function toDtype(act: Activations, dtype: Options['dtype']): Activations {
  if (dtype === 'float32') return act;
  const half = (t: { shape: number[]; data: Float32Array }) => ({ dtype: 'float16', shape: t.shape, data: new Uint16Array(f32ToF16Bytes(t.data).buffer) });
  return { inputT: half(act.inputT), routerT: half(act.routerT) } as unknown as Activations;
}

/** The router logits as f32 (decoded from f16 bits when --dtype float16). */
function routerF32(act: Activations): Float32Array {
  const d = act.routerT.data as Float32Array | Uint16Array;
  return d instanceof Uint16Array ? f16BytesToF32(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)) : d;
}

// ---------------------------------------------------------------------------------------------------------------
// Timing helpers

interface Stats {
  n: number;
  medianMs: number;
  meanMs: number;
  minMs: number;
  p90Ms: number;
  samplesMs: number[];
}
function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * (s.length - 1) + 0.5))]!;
  const r = (x: number) => Math.round(x * 1e4) / 1e4;
  return { n: s.length, medianMs: r(at(0.5)), meanMs: r(s.reduce((a, b) => a + b, 0) / s.length), minMs: r(s[0]!), p90Ms: r(at(0.9)), samplesMs: samples.map(r) };
}
/** Runs `fn` 3 times (warm-up), then until `iters` runs or ~1 s (at least 5, at most 200). */
async function timeLoop(fn: () => Promise<void>, iters?: number): Promise<Stats> {
  for (let i = 0; i < 3; i++) await fn();
  const samples: number[] = [];
  const start = performance.now();
  for (;;) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
    if (iters !== undefined ? samples.length >= iters : (samples.length >= 5 && performance.now() - start > 1000) || samples.length >= 200) break;
  }
  return stats(samples);
}

function maxRelDiff(a: Float32Array, b: Float32Array): number {
  let scale = 0;
  let err = 0;
  for (let i = 0; i < b.length; i++) {
    scale = Math.max(scale, Math.abs(b[i]!));
    const d = Math.abs(a[i]! - b[i]!);
    err = Number.isNaN(d) ? Infinity : Math.max(err, d);
  }
  return scale > 0 ? err / scale : err;
}

// ---------------------------------------------------------------------------------------------------------------
// Tessera

const V2 = loadContract(new URL('../spec/qmoe.v2.contract.json', import.meta.url).pathname);

class TesseraCase {
  private tensors: Record<string, GpuTensorRef> = {};
  private owned: GPUBuffer[] = [];
  private staging: GPUBuffer;
  /** --upload mapped: a MAP_WRITE staging buffer per fed tensor, mapped between iterations */
  private feeds?: { key: 'inputT' | 'routerT'; buf: GPUBuffer }[];
  readonly plan: Plan;
  readonly outBytes: number;
  /** float16 activations and output (decoded to f32 when read) */
  private readonly f16: boolean;

  constructor(
    private readonly dev: TesseraDevice,
    weights: Record<string, GPUBuffer>,
    private readonly act: Pick<QmoeTensors, 'inputT' | 'routerT'>,
    host: Record<string, HostTensor>,
    attrs: QmoeAttrs,
    tunables: Record<string, number | boolean>,
    upload: Options['upload'] = 'write',
  ) {
    this.plan = planFor(dev, V2, { inputs: host, attributes: { ...attrs }, tunables });
    this.f16 = act.inputT.dtype === ('float16' as string);
    for (const [k, b] of Object.entries(weights)) this.tensors[k] = { buffer: b };
    for (const k of ['inputT', 'routerT'] as const) {
      const b = uploadBuffer(dev.device, act[k].data, `bench.${k}`);
      this.owned.push(b);
      this.tensors[k] = { buffer: b };
    }
    this.outBytes = act.inputT.data.byteLength;
    const out = dev.device.createBuffer({ size: Math.max(16, this.outBytes), usage: STORAGE_USAGE, label: 'bench.outputT' });
    this.owned.push(out);
    this.tensors.outputT = { buffer: out };
    this.staging = dev.device.createBuffer({ size: Math.max(16, this.outBytes), usage: USAGE.MAP_READ | USAGE.COPY_DST, label: 'bench.staging' });
    this.owned.push(this.staging);
    if (upload === 'mapped') {
      this.feeds = (['inputT', 'routerT'] as const).map((key) => {
        const size = Math.ceil(act[key].data.byteLength / 4) * 4;
        const buf = dev.device.createBuffer({ size, usage: USAGE.MAP_WRITE | USAGE.COPY_SRC, mappedAtCreation: true, label: `bench.feed.${key}` });
        this.owned.push(buf);
        return { key, buf };
      });
    }
  }

  /**
   * One end-to-end iteration: feeds in, one submit (all passes + the output copy), output mapped: one round trip, as a
   * runtime's hot path takes it (no timestamps, no validation scope: `checkErrors` reads the device's uncaptured errors).
   */
  async iteration(read = false): Promise<Float32Array | undefined> {
    const { dev } = this;
    const rec = new Recorder(dev, { timestamps: false });
    if (this.feeds) {
      for (const { key, buf } of this.feeds) {
        const data = this.act[key].data;
        new Uint8Array(buf.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
        buf.unmap();
        rec.copy(buf, 0, this.tensors[key]!.buffer, 0, buf.size);
      }
    } else {
      writeBuffer(dev.device, this.tensors.inputT!.buffer, this.act.inputT.data);
      writeBuffer(dev.device, this.tensors.routerT!.buffer, this.act.routerT.data);
    }
    await recordContract(rec, dev, this.plan, this.tensors);
    rec.copy(this.tensors.outputT!.buffer, 0, this.staging, 0, this.outBytes);
    rec.submitUnchecked();
    await gpuWait(this.staging.mapAsync(0x0001));
    const out = read ? (this.f16 ? f16BytesToF32(new Uint8Array(this.staging.getMappedRange().slice(0))) : new Float32Array(this.staging.getMappedRange().slice(0))) : undefined;
    this.staging.unmap();
    // the feeds' copies are done with the submit: map them for the next iteration (counted in this one)
    if (this.feeds) await Promise.all(this.feeds.map(({ buf }) => gpuWait(buf.mapAsync(0x0002))));
    return out;
  }

  /** N submits back to back (no readback, no timestamps), then wait: GPU throughput per iteration, in ms. */
  async pipelined(n: number): Promise<number> {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const rec = new Recorder(this.dev, { timestamps: false });
      await recordContract(rec, this.dev, this.plan, this.tensors);
      rec.submitUnchecked();
    }
    await gpuWait(this.dev.device.queue.onSubmittedWorkDone());
    return (performance.now() - t0) / n;
  }

  /** Throws the device's uncaptured errors raised since `since` (the unchecked submits above report nothing). */
  checkErrors(since: number): void {
    if (this.dev.errors.length > since) throw new Error(`${this.plan.variant}: ${this.dev.errors.slice(since).join('; ')}`);
  }

  /** Per-dispatch GPU times of one iteration (timestamp-query). */
  async kernelTimes(): Promise<{ label: string; ms: number }[]> {
    const rec = new Recorder(this.dev);
    await recordContract(rec, this.dev, this.plan, this.tensors);
    return rec.submit();
  }

  destroy(): void {
    for (const b of this.owned) b.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// ONNX Runtime

type Ort = typeof import('onnxruntime-node');

interface OrtSession {
  ep: string;
  run(): Promise<Float32Array>;
  release(): Promise<void>;
}
async function ortSession(ort: Ort, ep: 'webgpu' | 'cpu', tensors: QmoeTensors, attrs: QmoeAttrs): Promise<OrtSession> {
  const { model, feeds } = buildQmoeModel(tensors, attrs, { initializers: ['fc1T', 'fc1ScalesT', 'fc1BiasT', 'fc2T', 'fc2ScalesT', 'fc2BiasT'] });
  const session = await ort.InferenceSession.create(model, { executionProviders: [ep], graphOptimizationLevel: 'disabled', logSeverityLevel: 3 });
  const TensorCtor = ort.Tensor as unknown as new (type: string, data: unknown, dims: readonly number[]) => InstanceType<Ort['Tensor']>;
  const f: Record<string, InstanceType<Ort['Tensor']>> = {};
  for (const [k, v] of Object.entries(feeds)) f[k] = new TensorCtor(v.dtype, v.data, v.shape);
  return {
    ep,
    async run() {
      const out = await session.run(f);
      const data = out.output!.data as Float32Array | Uint16Array;
      return data instanceof Uint16Array ? f16BytesToF32(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)) : (data as Float32Array);
    },
    release: () => session.release(),
  };
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const dev = await createDevice({ timestamps: false });
  const adapter = describeAdapter(dev.caps);
  console.log(`adapter: ${adapter}`);
  const hasTimestamps = dev.caps.features.has('timestamp-query');
  const ort = opts.ort ? await loadOrt() : undefined;
  const list = workloads(opts.small).filter((w) => !opts.cases || opts.cases.includes(w.name));
  if (!list.length) throw new Error(`no case matches --cases ${opts.cases?.join(',')}`);

  // The ceiling from the same harness: streaming-read bandwidth (bench/bandwidth.ts, GPU timestamps).
  let readGBs: number | null = null;
  if (hasTimestamps) {
    dev.timestamps = true;
    for (const bytes of opts.small ? [64 << 20] : [1 << 30, 256 << 20]) {
      try {
        readGBs = Math.round((await measureReadBandwidth(dev, bytes)) / 1e7) / 100;
        break;
      } catch (e) {
        console.log(`streaming-read measurement over ${bytes >> 20} MiB failed (${(e as Error).message.split('\n')[0]})`);
      }
    }
    dev.timestamps = false;
    console.log(`streaming read: ${readGBs} GB/s`);
  }

  const results: unknown[] = [];
  const weightCache = new Map<string, { host: Omit<QmoeTensors, 'inputT' | 'routerT'>; gpu: Record<string, GPUBuffer> }>();
  for (const w of list) {
    const attrs = attrsOf(w);
    const wkey = JSON.stringify({ E: w.E, h: w.hidden, i: w.inter, b: w.bits, blk: w.block, a: w.activation });
    let weights = weightCache.get(wkey);
    if (!weights) {
      for (const old of weightCache.values()) for (const b of Object.values(old.gpu)) b.destroy();
      weightCache.clear();
      const t0 = performance.now();
      const host = makeWeights(w, opts.seed);
      const gpu: Record<string, GPUBuffer> = {};
      for (const [k, t] of Object.entries(host)) gpu[k] = uploadBuffer(dev.device, t.data, `bench.${k}`);
      weights = { host, gpu };
      weightCache.set(wkey, weights);
      console.log(`  weights for ${w.name}: ${(Object.values(host).reduce((a, t) => a + t.data.byteLength, 0) / 2 ** 20).toFixed(1)} MiB in ${(performance.now() - t0).toFixed(0)} ms`);
    }
    const act = toDtype(makeActivations(w, opts.seed + w.tokens), opts.dtype);
    const tensors: QmoeTensors = { ...act, ...weights.host } as QmoeTensors;
    const host: Record<string, HostTensor> = { ...tensors };
    const tun = { ...opts.tunables };
    const tc = new TesseraCase(dev, weights.gpu, act, host, attrs, tun, opts.upload);
    const plan = tc.plan;
    console.log(`${w.name}: variant ${plan.variant}, ${plan.passes.length} passes`);

    // Tessera figures.
    const errorsBefore = dev.errors.length;
    const ours = (await tc.iteration(true))!;
    const wall = await timeLoop(async () => void (await tc.iteration()), opts.iters);
    const pipelinedN = Math.max(5, Math.min(200, wall.n));
    await tc.pipelined(2);
    const pipelinedMs = await tc.pipelined(pipelinedN);
    tc.checkErrors(errorsBefore);
    let gpu: { medianMs: number; kernels: { label: string; ms: number }[] } | null = null;
    if (hasTimestamps) {
      dev.timestamps = true;
      const sums: number[] = [];
      let kernels: { label: string; ms: number }[] = [];
      for (let i = 0; i < 7; i++) {
        kernels = await tc.kernelTimes();
        if (i >= 2) sums.push(kernels.reduce((a, k) => a + k.ms, 0));
      }
      dev.timestamps = false;
      gpu = { medianMs: stats(sums).medianMs, kernels: kernels.map((k) => ({ label: k.label, ms: Math.round(k.ms * 1e4) / 1e4 })) };
    }

    // Routing facts for bandwidth figures.
    const experts = new Set<number>();
    let routes = 0;
    for (let t = 0; t < w.tokens; t++) {
      const r = qmoeRoute(routerF32(act).subarray(t * w.E, (t + 1) * w.E), w.k);
      r.experts.forEach((e) => experts.add(e));
      routes += w.k;
    }
    const pack = w.bits === 4 ? 2 : 1;
    const fusion = w.activation === 'swiglu' ? 2 : 1;
    const blocks1 = w.block > 0 ? w.hidden / w.block : 1;
    const blocks2 = w.block > 0 ? w.inter / w.block : 1;
    const bytesPerExpert = (fusion * w.inter * w.hidden) / pack + fusion * w.inter * blocks1 * 4 + (w.hidden * w.inter) / pack + w.hidden * blocks2 * 4;
    const distinctBytes = experts.size * bytesPerExpert;

    // ORT: the timed provider, and ORT's CPU EP as the oracle (every --small case; <= 128 tokens otherwise).
    let ortFig: Record<string, unknown> | null = null;
    let ratio: Record<string, number> | null = null;
    const agreement: Record<string, number> = {};
    if (ort) {
      let sess: OrtSession | undefined;
      let epError: string | undefined;
      try {
        sess = await ortSession(ort, opts.ortEp, tensors, attrs);
        await sess.run();
      } catch (e) {
        epError = (e as Error).message.split('\n')[0];
        await sess?.release().catch(() => undefined);
        sess = undefined;
        if (opts.ortEp !== 'cpu') {
          console.log(`  ORT ${opts.ortEp} EP cannot run ${w.name} (${epError}); timing ORT's CPU EP instead`);
          sess = await ortSession(ort, 'cpu', tensors, attrs);
        }
      }
      let theirs: Float32Array | undefined;
      if (sess) {
        theirs = await sess.run();
        const t = await timeLoop(async () => void (await sess!.run()), opts.iters);
        await sess.release();
        ortFig = {
          provider: `onnxruntime-node ${sess.ep}${epError ? ` (instead of the ${opts.ortEp} EP, which failed: ${epError})` : ''}`,
          ep: sess.ep,
          wall: t,
        };
        ratio = { wallOursOverOrt: Math.round((wall.medianMs / t.medianMs) * 1e4) / 1e4 };
        agreement[`oursVsOrt${sess.ep === 'cpu' ? 'Cpu' : 'Webgpu'}`] = maxRelDiff(ours, theirs);
      }
      if (sess?.ep !== 'cpu' && (opts.small || w.tokens <= 128)) {
        try {
          const cpu = await ortSession(ort, 'cpu', tensors, attrs);
          const oracle = await cpu.run();
          await cpu.release();
          agreement.oursVsOrtCpu = maxRelDiff(ours, oracle);
          if (theirs) agreement.ortWebgpuVsOrtCpu = maxRelDiff(theirs, oracle);
        } catch (e) {
          console.log(`  ORT's CPU EP (the oracle) cannot run ${w.name}: ${(e as Error).message.split('\n')[0]}`);
        }
      }
    }
    if (opts.small && opts.dtype === 'float32') agreement.oursVsReference = maxRelDiff(ours, qmoeReferenceFromTensors(tensors, attrs).output);

    const res = {
      case: w.name,
      workload: { ...w, attrs },
      variant: plan.variant,
      passes: plan.passes.map((p) => ({ path: p.path, shader: p.shader, dispatch: p.dispatch })),
      tunables: plan.tunables,
      routing: { routes, distinctExperts: experts.size, bytesPerExpert, distinctExpertBytes: distinctBytes },
      tessera: {
        wall,
        pipelinedMs: Math.round(pipelinedMs * 1e4) / 1e4,
        gpu,
        // Lower bound on bytes read (each distinct routed expert's weights and scales once) per GPU-time second, and
        // its share of the streaming-read bandwidth measured above.
        effectiveGBs: gpu ? Math.round((distinctBytes / (gpu.medianMs * 1e6)) * 100) / 100 : null,
        fractionOfReadBandwidth: gpu && readGBs ? Math.round((distinctBytes / (gpu.medianMs * 1e6) / readGBs) * 1e4) / 1e4 : null,
      },
      ort: ortFig,
      ratio,
      agreement,
    };
    results.push(res);
    console.log(
      `  tessera wall ${wall.medianMs.toFixed(3)} ms, pipelined ${pipelinedMs.toFixed(3)} ms${gpu ? `, gpu ${gpu.medianMs.toFixed(3)} ms` : ''}` +
        (ortFig ? `; ORT ${String(ortFig.ep)} ${(ortFig.wall as Stats).medianMs.toFixed(3)} ms; ours/ORT ${ratio!.wallOursOverOrt}` : '') +
        `; agreement ${JSON.stringify(agreement)}`,
    );
    tc.destroy();
  }

  const receipt = {
    benchmark: 'com.microsoft.QMoE: Tessera (spec/qmoe.v2.contract.json) vs onnxruntime-node',
    date: new Date().toISOString(),
    machine: { hostname: os.hostname(), platform: `${os.platform()} ${os.release()}`, cpu: os.cpus()[0]?.model ?? 'unknown', cpus: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version },
    adapter: { description: adapter, info: dev.caps.adapterInfo, features: [...dev.caps.features].sort() },
    ...receiptCommitState(),
    ortVersion: ort ? ((ort as unknown as { env?: { versions?: { common?: string } } }).env?.versions?.common ?? 'unknown') : null,
    options: opts,
    method:
      'streamingReadGBs: bench/bandwidth.ts (full read of a 1 GiB buffer, 256 MiB if that fails, 64 MiB with --small; GPU timestamps, best of 5). wall: median ms per iteration after 3 warm-up iterations (ours: input + router upload (options.upload write: queue.writeBuffer; mapped: memcpy into mapped staging buffers, copied to the GPU in the same submit, re-mapped before the iteration ends), one unchecked submit without timestamps holding every pass and the output copy, output mapped: one round trip; ORT: session.run with weights as initializers). pipelined: N submits back to back then onSubmittedWorkDone, / N. gpu: sum of per-dispatch timestamps (median of 5). ratio: ours wall / ORT wall (< 1: Tessera faster).',
    streamingReadGBs: readGBs,
    results,
  };
  if (opts.out) {
    writeFileSync(opts.out, `${JSON.stringify(receipt, null, 1)}\n`);
    console.log(`receipt: ${opts.out}`);
  }
  dev.destroy();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
