/**
 * Kernel benchmark: weight-times-activation (the `linear` contract) for f16, Q4_K, Q8_0 and Q6_K weights at the decoder shapes of
 * Llama-3.2-1B and Llama-3.1-8B, for M = 1 (decode: GB/s as a fraction of the streaming-read bandwidth measured by the
 * same harness) and M >= 16 (prefill: TFLOP/s). Each case times the contract's choice for this device; with `--sweep`
 * the decode GEMV (gemv-subgroup.wgsl) is also timed over its tunables and the registry GEMV variants it replaces; with
 * `--gemm-sweep` the subgroup-matrix prefill GEMM over its staging tunables (sgmatK, sgmatPad, sgmatPrefetch, sgmatWg).
 * GPU time per call: the repetitions back to back in one compute pass between two timestamps (as a decode step runs
 * them), and the median of the calls timed alone (one pass each); the weights rotate over copies that together exceed
 * the L2 cache, so M = 1 reads come from memory. Dawn's timestamp quantization is off.
 * Writes a JSON receipt (rewritten after every weight case, `complete` false until the run ends). Usage: node --import tsx bench/kernels.ts [--out FILE] [--formats float16,q4_k,q8_0,q6_k]
 * [--m 1,16,128,512,2048] [--shapes 2048x8192,...] [--sweep] [--gemm-sweep] [--ort] [--attention [--attention-ctx 1024,8192,32768] [--attention-prefill 512,2048] [--split-tunables JSON] [--attention-passes] [--attention-kv-heads 8]] [--mlp [--mlp-shape 4096x14336] [--mlp-points JSON] [--mlp-seq JSON] [--mlp-chains JSON [--mlp-link]] [--mlp-att-len 144]] [--reps 20] [--bw-bytes N] [--rotate-bytes N] [--linear-tunables JSON]
 */
import { writeFileSync } from 'node:fs';
import { ContractError } from '../src/contracts/index.ts';
import { readBuffer, USAGE } from '../src/gpu/buffers.ts';
import { createDevice, describeAdapter, type TesseraDevice } from '../src/gpu/device.ts';
import { Recorder, type Dispatch } from '../src/gpu/recorder.ts';
import { ChainLinkError, linkCalls } from '../src/program/chain.ts';
import { uniformBytes } from '../src/contracts/plan.ts';
import { planOp, recordPlan } from '../src/selftest/launch.ts';
import type { Plan } from '../src/contracts/plan.ts';
import { describeReadBandwidth, measureReadBandwidthDetail } from './bandwidth.ts';
import { receiptHeader } from './commit.ts';
import { fillWeights, heatGpu, spanMsPerCall } from './gpu-bench.ts';
import { loadOrt, timeMatMulNBits } from './ort-matmulnbits.ts';
import { gpuWait } from '../src/gpu/wait.ts';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : def;
}

/** [N, K] = output features x input features (a Linear weight [N, K]). */
const SHAPES: [number, number][] = [
  [2048, 8192],
  [8192, 2048],
  [4096, 14336],
  [14336, 4096],
  [128256, 2048],
  [128256, 4096],
];

const BYTES: Record<string, (n: number, k: number) => number> = {
  float16: (n, k) => n * k * 2,
  q4_k: (n, k) => (n * k * 144) / 256,
  q8_0: (n, k) => (n * k * 34) / 32,
  q6_k: (n, k) => (n * k * 210) / 256,
};

/**
 * Rotation target: the weight copies of one case together exceed the H200's 50 MB L2 several times over.
 * (--rotate-bytes 1: one copy, so a case that fits the L2 is timed from it: what a weight read ahead into the L2 would take)
 */
const ROTATE_BYTES = Number(arg('rotate-bytes', String(256 << 20)));
if (!(ROTATE_BYTES >= 1)) throw new Error(`--rotate-bytes: expected a byte count of at least 1, got ${arg('rotate-bytes', '')}`);

interface Timing {
  /** GPU ms per call, the calls back to back in one compute pass (as a decode step runs them). */
  inPassMs: number;
  /** Median GPU ms of one call timed alone (its own pass: includes the launch ramp and drain). */
  medianMs: number;
  minMs: number;
  reps: number;
  /** Median GPU ms of each pass of the plan, the calls timed alone (where the time of a multi-pass plan goes). */
  passMedianMs: number[];
}

/**
 * Time `plan` (weights rotating over `ws`). Every timed submit is queued right behind an untimed one that keeps the
 * GPU busy for ~100 ms, so the clocks are up (an idle H200 runs its first milliseconds of work far slower).
 */
async function timePlan(dev: TesseraDevice, plan: Plan, x: GPUBuffer, ws: GPUBuffer[], y: GPUBuffer, reps: number): Promise<Timing> {
  return timeBuffers(dev, plan, (i) => ({ x, w: ws[i % ws.length]!, y }), reps);
}

/** timePlan for any contract: call i binds buffers(i). */
async function timeBuffers(dev: TesseraDevice, plan: Plan, buffers: (i: number) => Record<string, GPUBuffer>, reps: number): Promise<Timing> {
  const record = async (rec: Recorder, n: number) => {
    for (let i = 0; i < n; i++) await recordPlan(rec, dev, plan, buffers(i));
  };
  let estimate = 0.01;
  // a plan whose intermediates exceed 1 MiB (a dequantized scratch copy) allocates them per call: few calls per submit
  const bigScratch = plan.intermediates.reduce((a, m) => a + m.bytes, 0) > 2 ** 20;
  const heat = async (ms = dev.caps.adapterInfo.architecture === 'swiftshader' ? 0 : 100) => {
    if (ms <= 0) return; // a CPU adapter has no clocks to raise
    // a plan with intermediates allocates them per call: keep the count small when they are large (a dequantized
    // scratch copy); small ones (the int8 activations of q4k_gemv_q8a) allow enough calls to raise the clocks (the H200
    // run at e90e0b7 timed q4k_gemv_q8a at 14336x4096 after 32 heating calls at 0.0736 ms in a pass, and the same
    // kernel in the sweep after it at 0.0168-0.02 ms: probably idle clocks; to be confirmed by the next run)
    const cap = bigScratch ? 32 : 8000;
    await heatGpu(dev, record, Math.max(1, Math.min(cap, Math.ceil(ms / estimate))));
  };
  let passMedians: number[] = []; // per pass, from the last `alone`
  const alone = async (n: number) => {
    await heat();
    const rec = new Recorder(dev);
    await record(rec, n);
    const times = await rec.submit();
    // per call: sum of the plan's passes
    const per = plan.passes.length;
    const calls: number[] = [];
    for (let i = 0; i < times.length; i += per) calls.push(times.slice(i, i + per).reduce((a, t) => a + t.ms, 0));
    const passes = plan.passes.map((_, p) => times.filter((_, i) => i % per === p).map((t) => t.ms).sort((a, b) => a - b));
    passMedians = passes.map((ts) => ts[ts.length >> 1]!);
    return calls.sort((a, b) => a - b);
  };
  const warm = await alone(2);
  estimate = Math.max(1e-3, warm[0]!);
  const n = Math.max(3, Math.min(reps, Math.floor(400 / estimate), Math.floor(2000 / plan.passes.length), bigScratch ? 32 : Infinity));
  const calls = await alone(n);
  await heat();
  return { inPassMs: await spanMsPerCall(dev, record, n), medianMs: calls[calls.length >> 1]!, minMs: calls[0]!, reps: n, passMedianMs: passMedians };
}

/**
 * Wall ms of one call as a client sees it (upload x, run, read y back), median: the measure ORT's run is timed by. One
 * round trip per call, as a runtime's hot path takes it: the plan and the copy of y into a reused staging buffer in
 * one unchecked submit, then the map (uncaptured errors are checked once at the end).
 */
async function wallPlan(dev: TesseraDevice, plan: Plan, x: GPUBuffer, w: GPUBuffer, y: GPUBuffer, host: Float32Array<ArrayBuffer>, M: number, N: number, reps: number): Promise<number> {
  const times: number[] = [];
  const bytes = M * N * 4;
  const staging = dev.device.createBuffer({ size: bytes, usage: USAGE.MAP_READ | USAGE.COPY_DST, label: 'wall:y' });
  const errorsBefore = dev.errors.length;
  let check = 0;
  for (let i = 0; i < reps + 3; i++) {
    const t0 = performance.now();
    dev.device.queue.writeBuffer(x, 0, host);
    const rec = new Recorder(dev, { timestamps: false });
    await recordPlan(rec, dev, plan, { x, w, y });
    rec.copy(y, 0, staging, 0, bytes);
    rec.submitUnchecked();
    await gpuWait(staging.mapAsync(0x0001 /* GPUMapMode.READ */));
    check += new Float32Array(staging.getMappedRange(), 0, 1)[0]!;
    staging.unmap();
    if (i >= 3) times.push(performance.now() - t0);
  }
  staging.destroy();
  if (dev.errors.length > errorsBefore || !Number.isFinite(check)) throw new Error(`wall timing of ${plan.variant}: ${dev.errors.slice(errorsBefore).join('; ') || 'a non-finite output'}`);
  times.sort((a, b) => a - b);
  return times[times.length >> 1]!;
}

interface SweepPoint {
  variant: string;
  tunables?: Record<string, number | string>;
  inPassMs: number;
  medianMs: number;
  fractionOfReadBandwidth: number;
}

/**
 * gemm-sgmat staging configurations timed by --gemm-sweep, each spelled out in full ({} = the contract's default for the
 * shape; the first is the default before 084ce54).
 */
const GEMM_SWEEP: Record<string, number | string>[] = [
  { sgmatWg: 256, sgmatK: 32, sgmatPad: 0, sgmatPrefetch: 'off' },
  {},
  { sgmatWg: 256, sgmatK: 32, sgmatPad: 8, sgmatPrefetch: 'on' },
  { sgmatWg: 256, sgmatK: 64, sgmatPad: 8, sgmatPrefetch: 'on' },
  { sgmatWg: 256, sgmatK: 64, sgmatPad: 8, sgmatPrefetch: 'off' },
  { sgmatWg: 128, sgmatK: 32, sgmatPad: 8, sgmatPrefetch: 'on' },
  { sgmatWg: 128, sgmatK: 32, sgmatPad: 0, sgmatPrefetch: 'on' },
  { sgmatWg: 128, sgmatK: 64, sgmatPad: 8, sgmatPrefetch: 'on' },
  { sgmatTile: 64, sgmatWg: 128, sgmatK: 32, sgmatPad: 8, sgmatPrefetch: 'on' },
];

function sweepConfigs(): Record<string, number>[] {
  const out: Record<string, number>[] = [];
  const shapes: [number, number][] = [
    [1, 32],
    [2, 64],
    [8, 256],
    [8, 128],
  ];
  for (const [items, wg] of shapes) {
    for (const cols of [1, 2, 4]) for (const unroll of [1, 2]) out.push({ gemvItems: items, gemvWorkgroup: wg, gemvCols: cols, gemvUnroll: unroll });
  }
  return out;
}

/**
 * The fused int8 GEMV's points: every work split (gemvRunSums and gemvPipeline on, their defaults), the same with
 * them off at two splits, and deeper unrolls (more weight loads in flight a lane) at the default split.
 */
function fusedSweepConfigs(): Record<string, number | string>[] {
  const extra = [
    ...[
      { gemvItems: 8, gemvWorkgroup: 256, gemvCols: 2, gemvUnroll: 2 },
      { gemvItems: 1, gemvWorkgroup: 32, gemvCols: 4, gemvUnroll: 1 },
    ].flatMap((t) => [{ ...t, gemvRunSums: 'off' }, { ...t, gemvPipeline: 'off' }, { ...t, gemvRunSums: 'off', gemvPipeline: 'off' }]),
    ...[4, 8].flatMap((gemvUnroll) => [1, 2, 4].map((gemvCols) => ({ gemvItems: 8, gemvWorkgroup: 256, gemvCols, gemvUnroll }))),
    { gemvItems: 16, gemvWorkgroup: 256, gemvCols: 2, gemvUnroll: 4 },
    { gemvItems: 4, gemvWorkgroup: 128, gemvCols: 2, gemvUnroll: 4 },
  ];
  return [...sweepConfigs(), ...extra];
}

/**
 * Attention at Llama-3.1-8B's head shapes (32 query heads, 8 KV heads, head dim 128, f16 cache): decode of one token
 * at 1k, 8k and 32k keys (KV bytes read per call as a fraction of the read bandwidth; the caches rotate over copies past
 * the L2), the default and the split-KV variant's tunables; prefill attention of 512 and 2048 tokens (TFLOP/s of the causal half).
 */
async function attentionCases(dev: TesseraDevice, bw: number, reps: number) {
  // --attention-kv-heads N: N KV heads (default 8) with 4 query heads each, e.g. 1 to read each part's keys as one
  // contiguous run of the cache (a layout probe at the same bytes: 1 KV head at 8x the keys)
  const Hkv = Number(arg('attention-kv-heads', '8'));
  if (!Number.isInteger(Hkv) || Hkv < 1) throw new Error(`--attention-kv-heads: expected a positive integer, got ${arg('attention-kv-heads', '8')}`);
  const H = 4 * Hkv;
  const D = 128;
  const f16 = dev.caps.features.has('shader-f16') ? 'float16' : 'float32';
  const eb = f16 === 'float16' ? 2 : 4;
  const out: unknown[] = [];
  const u32 = dev.device.createBuffer({ size: 16, usage: USAGE.STORAGE | USAGE.COPY_DST });
  const planFor = (T: number, ctx: number, tunables: Record<string, string | number>) => {
    const cap = Math.max(ctx, 256);
    const shapes = { q: [T, H, D], k: [cap, Hkv, D], v: [cap, Hkv, D], kvLen: [1], pageTable: [1] };
    return planOp(dev, 'attention', { shapes, dtypes: { k: f16, v: f16, kvLen: 'uint32', pageTable: 'uint32' }, attributes: { start_pos: ctx - T, kv_len: ctx }, tunables });
  };
  // only: time that pass of the plan alone, back to back in a pass (the others not run; an intermediate it reads holds
  // whatever its buffer held)
  const run = async (T: number, ctx: number, tunables: Record<string, string | number>, only?: number) => {
    const cap = Math.max(ctx, 256);
    const whole = planFor(T, ctx, tunables);
    const plan = only === undefined ? whole : { ...whole, passes: [whole.passes[only]!] };
    const mk = (bytes: number) => dev.device.createBuffer({ size: Math.ceil(bytes / 4) * 4, usage: USAGE.STORAGE | USAGE.COPY_DST });
    const q = mk(T * H * D * 4);
    // K/V copies rotated over the calls as a model's layers are (each layer its own cache): together past the L2
    const copies = Math.max(1, Math.min(16, Math.ceil(ROTATE_BYTES / (2 * cap * Hkv * D * eb))));
    const ks = Array.from({ length: copies }, () => mk(cap * Hkv * D * eb));
    const vs = Array.from({ length: copies }, () => mk(cap * Hkv * D * eb));
    const o = mk(T * H * D * 4);
    const t = await timeBuffers(dev, plan, (i) => ({ q, k: ks[i % copies]!, v: vs[i % copies]!, kvLen: u32, pageTable: u32, out: o }), reps);
    for (const b of [q, ...ks, ...vs, o]) b.destroy();
    return { plan, t };
  };
  for (const ctx of arg('attention-ctx', '1024,8192,32768').split(',').map(Number)) {
    // the default (split on GPUs), then the loads an invocation issues at a tile's start (tunable splitLoads, default
    // 8: tiles of 64 keys here), the split's workgroup target (splitWorkgroups, default 256) and its combine pass's
    // reduction (splitCombine, default serial)
    // (--split-tunables '[{...}, ...]' instead: an A/B list, e.g. alternated)
    const split = process.argv.includes('--split-tunables')
      ? (JSON.parse(arg('split-tunables', '[]')) as Record<string, string | number>[])
      : [{}, { splitLoads: 4 }, { splitWorkgroups: 128 }, { splitWorkgroups: 512 }, { splitWorkgroups: 512, splitCombine: 'tree' }, { splitWorkgroups: 1024 }, { splitWorkgroups: 2048 }, { splitCombine: 'tree' }];
    for (const tunables of split.map((t, i) => (i === 0 ? t : { splitDecode: 'on', ...t })) as Record<string, string | number>[]) {
      const { plan, t } = await run(1, ctx, tunables);
      const bytes = 2 * ctx * Hkv * D * eb;
      // passMedianMs: each pass timed alone (partial, combine), so the split of the time shows
      const passMedianMs = t.passMedianMs.map((m) => +m.toFixed(5));
      const e = { kind: 'decode', context: ctx, variant: plan.variant, tunables, dispatch: plan.passes.map((p) => p.dispatch), inPassMs: +t.inPassMs.toFixed(5), passMedianMs, kvBytes: bytes, fractionOfReadBandwidth: +(bytes / (t.inPassMs / 1000) / bw).toFixed(3) };
      out.push(e);
      console.log(`attention decode ${ctx} keys: ${plan.variant} ${JSON.stringify(tunables)} ${t.inPassMs.toFixed(4)} ms, KV read at ${(e.fractionOfReadBandwidth * 100).toFixed(1)}% of the read bandwidth; passes alone ${passMedianMs.join(' + ')} ms`);
    }
    // --attention-passes: each pass of the default plan back to back on its own, so the split of the in-pass time shows
    // (the passMedianMs above each carry a pass's own fixed cost)
    if (process.argv.includes('--attention-passes')) {
      for (let round = 0; round < 2; round++) {
        const plan = planFor(1, ctx, {});
        for (let i = 0; i < plan.passes.length; i++) {
          const r = await run(1, ctx, {}, i);
          const e = { kind: 'decode-pass', context: ctx, variant: r.plan.variant, pass: plan.passes[i]!.id, dispatch: plan.passes[i]!.dispatch, inPassMs: +r.t.inPassMs.toFixed(5) };
          out.push(e);
          console.log(`attention decode ${ctx} keys: ${e.variant} pass ${e.pass} ${JSON.stringify(e.dispatch)} alone back to back: ${r.t.inPassMs.toFixed(4)} ms`);
        }
      }
    }
  }
  for (const T of arg('attention-prefill', '512,2048').split(',').filter(Boolean).map(Number)) {
    for (const tunables of [{}, { prefillSgmatRows: 128 }, { prefillSgmat: 'off' }] as Record<string, string | number>[]) {
      const { plan, t } = await run(T, T, tunables);
      const flops = 2 * 2 * H * D * ((T * (T + 1)) / 2);
      out.push({ kind: 'prefill', tokens: T, variant: plan.variant, tunables, inPassMs: +t.inPassMs.toFixed(4), tflops: +(flops / (t.inPassMs / 1000) / 1e12).toFixed(2) });
      console.log(`attention prefill ${T} tokens: ${plan.variant} ${JSON.stringify(tunables)} ${t.inPassMs.toFixed(3)} ms, ${(flops / (t.inPassMs / 1000) / 1e12).toFixed(2)} TFLOP/s`);
    }
  }
  u32.destroy();
  return out;
}

/**
 * --mlp: one token's MLP at Llama-3.1-8B's shapes (hidden 4096, intermediate 14336, Q4_K), the two ways a fused decoder
 * layer runs it: linear_fused twice (gate|up with the rmsnorm prologue, f32 gate|up row stored; down_proj with the glu
 * prologue, every workgroup reading that row and rounding act(gate) * up to int8 itself), and linear_glu_q8 then
 * linear_q8 (the gate|up GEMV writes act(gate) * up as int8 once; the down GEMV reads it). Each op is timed back to
 * back in a pass (weights rotating over copies past the L2); the defaults alternated twice, then work splits of the
 * two new ops.
 */
async function mlpCases(dev: TesseraDevice, bw: number, reps: number) {
  const [H, I] = arg('mlp-shape', '4096x14336').split('x').map(Number) as [number, number];
  const mk = (bytes: number) => dev.device.createBuffer({ size: Math.ceil(bytes / 4) * 4, usage: USAGE.STORAGE | USAGE.COPY_DST | USAGE.COPY_SRC });
  const weights = (N: number, K: number) => {
    const bytes = BYTES.q4_k!(N, K);
    return Array.from({ length: Math.max(1, Math.min(16, Math.ceil(ROTATE_BYTES / bytes))) }, () => {
      const b = mk(bytes);
      fillWeights(dev, b, 'q4_k');
      return b;
    });
  };
  const gu = weights(2 * I, H);
  const down = weights(H, I);
  const oProj = weights(H, H);
  // (--mlp-points '{"glu": [{...}], "q8": [{...}], "o": [...], "qkv": [...], "head": [...], "gu": [...], "guPlain": [...]}': these points instead of the
  // sweeps below)
  type Points = Record<string, string | number>[];
  const given = process.argv.includes('--mlp-points') ? (JSON.parse(arg('mlp-points', '{}')) as { glu?: Points; q8?: Points; o?: Points; qkv?: Points; head?: Points; gu?: Points; guPlain?: Points }) : undefined;
  // the qkv and head points only: the q|k|v GEMV with rope and the cache write (32 query heads, 8 KV heads of 128, an
  // f16 cache of 4096 positions) and the LM head with the final norm (vocabulary 128256)
  const [nH, nKV, D, P, V] = [32, 8, 128, 4096, 128256];
  const qkvW = given?.qkv?.length || process.argv.includes('--mlp-chains') ? weights((nH + 2 * nKV) * D, H) : [];
  const headW = given?.head?.length ? weights(V, H) : [];
  const vec = (n: number, f: (i: number) => number) => {
    const b = mk(n * 4);
    dev.device.queue.writeBuffer(b, 0, new Float32Array(n).map((_, i) => f(i)));
    return b;
  };
  const x = vec(H, (i) => Math.sin(i) * 0.5);
  const gamma = vec(H, () => 1);
  const guRow = vec(2 * I, (i) => Math.cos(i) * 0.5);
  const y = vec(H, () => 0);
  const qa = vec(I / 4, (i) => i * 1e-3);
  const da = vec(I / 32, () => 0.01);
  const rs = vec(I / 16, () => 0);
  const q8 = { qa: [1, I / 4], da: [1, I / 32], rs: [1, I / 16] };
  const cos = vec(P * (D / 2), (i) => Math.cos(i * 1e-3));
  const sin = vec(P * (D / 2), (i) => Math.sin(i * 1e-3));
  const cache = () => mk(P * nKV * D * 2);
  const [kCache, vCache] = qkvW.length ? [cache(), cache()] : [y, y];
  const q = vec(nH * D, () => 0);
  const logits = headW.length ? vec(V, () => 0) : y;
  // the norm handoff (o_proj / down writing h * the next norm's weight as int8 runs of 16, gate|up / q|k|v reading
  // them): one token's hidden row of int8 values (any bits), run scales 0.01, run sums 0, sums of squares 1
  const hq = vec(H / 4, (i) => Math.sin(i + 0.5));
  const hm = vec((3 * H) / 16, (i) => (i < H / 16 ? 0.01 : i < H / 8 ? 0 : 1));
  const handoffOut = { ng: [H], nq: [1, H / 4], nm: [1, (3 * H) / 16] };
  // act(gate) * up in runs of 16 (gate|up on the handoff to down, tunable gluRuns): scales 0.01, sums 0
  const iq = vec(I / 4, (i) => Math.cos(i + 0.5));
  const im = vec((3 * I) / 16, (i) => (i < I / 16 ? 0.01 : 0));
  // decode attention over the first 256 positions of the f16 cache at kv_len ATT_LEN (--mlp-att-len, 144 by default:
  // bench/decode.ts's 16-token prompt 128 tokens on), alone or with o_proj and its handoff (attention_oproj)
  const attLen = Number(arg('mlp-att-len', '144'));
  const att = vec(nH * D, () => 0);
  const u32One = vec(1, () => 0);
  const oprojSync = vec(64, () => 0);
  const attShapes = { q: [1, nH, D], k: [256, nKV, D], v: [256, nKV, D] };
  const ops = {
    'attention decode (f16 cache of 256, kv_len --mlp-att-len)': {
      plan: (t: Record<string, string | number>) =>
        planOp(dev, 'attention', { shapes: { ...attShapes, kvLen: [1], pageTable: [1], out: [1, nH, D] }, dtypes: { k: 'float16', v: 'float16' }, attributes: { start_pos: attLen - 1, kv_len: attLen }, tunables: t }),
      buffers: () => ({ q, k: kCache, v: vCache, kvLen: u32One, pageTable: u32One, out: att }),
      bytes: 2 * attLen * nKV * D * 2,
    },
    'attention_oproj (f16 cache of 256, kv_len --mlp-att-len; o_proj with the handoff out)': {
      plan: (t: Record<string, string | number>) =>
        planOp(dev, 'attention_oproj', {
          shapes: { ...attShapes, w: [H, nH * D], y: [1, H], ...handoffOut, sync: [64] },
          dtypes: { k: 'float16', v: 'float16', w: 'q4_k', nq: 'uint32', sync: 'uint32' },
          attributes: { kv_len: attLen },
          tunables: { attnOproj: 'on', ...t },
        }),
      buffers: (i: number) => ({ q, k: kCache, v: vCache, w: oProj[i % oProj.length]!, y, ng: gamma, nq: hq, nm: hm, sync: oprojSync }),
      bytes: BYTES.q4_k!(H, H) + 2 * attLen * nKV * D * 2,
    },
    'linear_rope_kv q|k|v (rmsnorm, rope, f16 cache)': {
      plan: (t: Record<string, string | number>) =>
        planOp(dev, 'linear_rope_kv', {
          shapes: { x: [1, H], w: [(nH + 2 * nKV) * D, H], gamma: [H], cos: [P, D / 2], sin: [P, D / 2], kCache: [P, nKV, D], vCache: [P, nKV, D], q: [1, nH, D] },
          dtypes: { w: 'q4_k', kCache: 'float16', vCache: 'float16' },
          attributes: { start_pos: 100 },
          tunables: t,
        }),
      buffers: (i: number) => ({ x, w: qkvW[i % qkvW.length]!, gamma, cos, sin, kCache, vCache, q }),
      bytes: BYTES.q4_k!((nH + 2 * nKV) * D, H),
    },
    'linear_fused head (rmsnorm)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_fused', { shapes: { x: [1, H], w: [V, H], gamma: [H], y: [1, V] }, dtypes: { w: 'q4_k' }, attributes: { prologue: 'rmsnorm' }, tunables: t }),
      buffers: (i: number) => ({ x, w: headW[i % headW.length]!, gamma, y: logits }),
      bytes: BYTES.q4_k!(V, H),
    },
    'linear_fused gate|up (rmsnorm)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_fused', { shapes: { x: [1, H], w: [2 * I, H], gamma: [H], y: [1, 2 * I] }, dtypes: { w: 'q4_k' }, attributes: { prologue: 'rmsnorm' }, tunables: t }),
      buffers: (i: number) => ({ x, w: gu[i % gu.length]!, gamma, y: guRow }),
      bytes: BYTES.q4_k!(2 * I, H),
    },
    'linear_fused gate|up (no norm: the activations rounded in the prologue)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_fused', { shapes: { x: [1, H], w: [2 * I, H], y: [1, 2 * I] }, dtypes: { w: 'q4_k' }, attributes: { prologue: 'none' }, tunables: t }),
      buffers: (i: number) => ({ x, w: gu[i % gu.length]!, y: guRow }),
      bytes: BYTES.q4_k!(2 * I, H),
    },
    'linear_fused down (glu, accumulate)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_fused', { shapes: { x: [1, 2 * I], w: [H, I], y: [1, H] }, dtypes: { w: 'q4_k' }, attributes: { prologue: 'glu', accumulate: 1 }, tunables: t }),
      buffers: (i: number) => ({ x: guRow, w: down[i % down.length]!, y }),
      bytes: BYTES.q4_k!(H, I),
    },
    'linear_glu_q8 gate|up': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_glu_q8', { shapes: { x: [1, H], w: [2 * I, H], gamma: [H], ...q8 }, dtypes: { w: 'q4_k', qa: 'uint32' }, tunables: { mlpQ8: 'on', ...t } }),
      buffers: (i: number) => ({ x, w: gu[i % gu.length]!, gamma, qa, da, rs }),
      bytes: BYTES.q4_k!(2 * I, H),
    },
    'linear_fused o_proj (accumulate)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_fused', { shapes: { x: [1, H], w: [H, H], y: [1, H] }, dtypes: { w: 'q4_k' }, attributes: { prologue: 'none', accumulate: 1 }, tunables: t }),
      buffers: (i: number) => ({ x, w: oProj[i % oProj.length]!, y }),
      bytes: BYTES.q4_k!(H, H),
    },
    'linear_q8 down (accumulate)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_q8', { shapes: { ...q8, w: [H, I], y: [1, H] }, dtypes: { w: 'q4_k', qa: 'uint32' }, attributes: { accumulate: 1 }, tunables: t }),
      buffers: (i: number) => ({ qa, da, rs, w: down[i % down.length]!, y }),
      bytes: BYTES.q4_k!(H, I),
    },
    'linear_fused o_proj (accumulate, handoff out)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_fused', { shapes: { x: [1, H], w: [H, H], y: [1, H], ...handoffOut }, dtypes: { w: 'q4_k', nq: 'uint32' }, attributes: { prologue: 'none', accumulate: 1 }, tunables: t }),
      buffers: (i: number) => ({ x, w: oProj[i % oProj.length]!, y, ng: gamma, nq: hq, nm: hm }),
      bytes: BYTES.q4_k!(H, H),
    },
    'linear_glu_q8 gate|up (handoff in)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_glu_q8', { shapes: { xq: [1, H / 4], xm: [1, (3 * H) / 16], w: [2 * I, H], ...q8 }, dtypes: { w: 'q4_k', qa: 'uint32', xq: 'uint32' }, tunables: { mlpQ8: 'on', ...t } }),
      buffers: (i: number) => ({ xq: hq, xm: hm, w: gu[i % gu.length]!, qa, da, rs }),
      bytes: BYTES.q4_k!(2 * I, H),
    },
    'linear_q8 down (accumulate, handoff out)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_q8', { shapes: { ...q8, w: [H, I], y: [1, H], ...handoffOut }, dtypes: { w: 'q4_k', qa: 'uint32', nq: 'uint32' }, attributes: { accumulate: 1 }, tunables: t }),
      buffers: (i: number) => ({ qa, da, rs, w: down[i % down.length]!, y, ng: gamma, nq: hq, nm: hm }),
      bytes: BYTES.q4_k!(H, I),
    },
    'linear_glu_q8 gate|up (handoff in, runs of 16 out)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_glu_q8', { shapes: { xq: [1, H / 4], xm: [1, (3 * H) / 16], w: [2 * I, H], nq: [1, I / 4], nm: [1, (3 * I) / 16] }, dtypes: { w: 'q4_k', xq: 'uint32', nq: 'uint32' }, tunables: { mlpQ8: 'on', gluRuns: 'on', ...t } }),
      buffers: (i: number) => ({ xq: hq, xm: hm, w: gu[i % gu.length]!, nq: iq, nm: im }),
      bytes: BYTES.q4_k!(2 * I, H),
    },
    'linear_q8 down (accumulate, runs of 16 in)': {
      plan: (t: Record<string, string | number>) => planOp(dev, 'linear_q8', { shapes: { xq: [1, I / 4], xm: [1, (3 * I) / 16], w: [H, I], y: [1, H] }, dtypes: { w: 'q4_k', xq: 'uint32' }, attributes: { accumulate: 1 }, tunables: t }),
      buffers: (i: number) => ({ xq: iq, xm: im, w: down[i % down.length]!, y }),
      bytes: BYTES.q4_k!(H, I),
    },
    'linear_rope_kv q|k|v (handoff in, rope, f16 cache)': {
      plan: (t: Record<string, string | number>) =>
        planOp(dev, 'linear_rope_kv', {
          shapes: { xq: [1, H / 4], xm: [1, (3 * H) / 16], w: [(nH + 2 * nKV) * D, H], cos: [P, D / 2], sin: [P, D / 2], kCache: [P, nKV, D], vCache: [P, nKV, D], q: [1, nH, D] },
          dtypes: { w: 'q4_k', xq: 'uint32', kCache: 'float16', vCache: 'float16' },
          attributes: { start_pos: 100 },
          tunables: { normHandoff: 'on', ...t }, // (off in the decoder by default)
        }),
      buffers: (i: number) => ({ xq: hq, xm: hm, w: qkvW[i % qkvW.length]!, cos, sin, kCache, vCache, q }),
      bytes: BYTES.q4_k!((nH + 2 * nKV) * D, H),
    },
  };
  type Name = keyof typeof ops;
  const out: Record<string, unknown>[] = [];
  const cpu = { cpuMapping: 'off' }; // the int8 GEMVs on any adapter (a CPU adapter's defaults take the f32 GEMVs)
  const time = async (name: Name, tunables: Record<string, string | number>) => {
    const op = ops[name];
    let plan: Plan;
    try {
      plan = op.plan({ ...cpu, ...tunables });
    } catch (e) {
      if (!(e instanceof ContractError)) throw e;
      out.push({ op: name, tunables, skipped: e.message.split('\n')[0] });
      console.log(`mlp ${name} ${JSON.stringify(tunables)}: refused: ${e.message.split('\n')[0]}`);
      return NaN;
    }
    const t = await timeBuffers(dev, plan, op.buffers, reps);
    const e = { op: name, variant: plan.variant, tunables, inPassMs: +t.inPassMs.toFixed(5), fractionOfReadBandwidth: +(op.bytes / (t.inPassMs / 1000) / bw).toFixed(3) };
    out.push(e);
    console.log(`mlp ${name} ${plan.variant} ${JSON.stringify(tunables)}: ${t.inPassMs.toFixed(5)} ms (${(e.fractionOfReadBandwidth * 100).toFixed(1)}% of read)`);
    return t.inPassMs;
  };
  // the defaults rounds: the MLP both ways, in the order their sums below read them
  const names: Name[] = ['linear_fused gate|up (rmsnorm)', 'linear_fused down (glu, accumulate)', 'linear_glu_q8 gate|up', 'linear_q8 down (accumulate)'];
  for (let round = 1; round <= 2; round++) {
    const ms: number[] = [];
    for (const n of names) ms.push(await time(n, {}));
    console.log(`mlp defaults, round ${round}: linear_fused x2 ${(1000 * (ms[0]! + ms[1]!)).toFixed(1)} us, linear_glu_q8 + linear_q8 ${(1000 * (ms[2]! + ms[3]!)).toFixed(1)} us`);
  }
  // --mlp-seq '[{...}, ...]': linear_glu_q8 at each of these tunables then linear_q8 (defaults), the pair back to back
  // in one pass as a decoder layer runs them (the ops above are each timed against themselves)
  if (process.argv.includes('--mlp-seq')) {
    for (const t of JSON.parse(arg('mlp-seq', '[]')) as Record<string, string | number>[]) {
      const pair = [ops['linear_glu_q8 gate|up'], ops['linear_q8 down (accumulate)']] as const;
      const plans = [pair[0].plan({ ...cpu, ...t }), pair[1].plan(cpu)];
      const record = async (rec: Recorder, k: number) => {
        for (let i = 0; i < k; i++) for (let j = 0; j < 2; j++) await recordPlan(rec, dev, plans[j]!, pair[j]!.buffers(i));
      };
      await heatGpu(dev, record, 200);
      const ms = await spanMsPerCall(dev, record, Math.max(3, reps));
      const e = { op: 'linear_glu_q8 then linear_q8', variant: `${plans[0]!.variant} + ${plans[1]!.variant}`, tunables: t, inPassMs: +ms.toFixed(5) };
      out.push(e);
      console.log(`mlp seq ${e.variant} ${JSON.stringify(t)}: ${(1000 * e.inPassMs).toFixed(2)} us a pair`);
    }
  }
  // --mlp-chains '{"name": ["qkv", "o", "glu", "down"], ...}': each chain's ops back to back in one pass, k times (weights
  // rotating), against the sum of each op timed alone: what running between the others costs an op (short names:
  // qkv, o, glu, down for the rmsnorm-prologue decode layer; qkvH, oN, gluH, downN for the norm handoff's; gluR, downR
  // for act(gate) * up in runs of 16; att for decode attention on a short cache, aop for attention_oproj, which
  // replaces att + oN: '{"apart": ["att", "oN"], "fused": ["aop"]}'). An op may
  // be ["gluH", {"handoffRowBlock": 128}]: its tunables (TESSERA_TUNABLES does not reach these plans)
  if (process.argv.includes('--mlp-chains')) {
    const short: Record<string, Name> = {
      qkv: 'linear_rope_kv q|k|v (rmsnorm, rope, f16 cache)',
      o: 'linear_fused o_proj (accumulate)',
      glu: 'linear_glu_q8 gate|up',
      down: 'linear_q8 down (accumulate)',
      qkvH: 'linear_rope_kv q|k|v (handoff in, rope, f16 cache)',
      oN: 'linear_fused o_proj (accumulate, handoff out)',
      gluH: 'linear_glu_q8 gate|up (handoff in)',
      downN: 'linear_q8 down (accumulate, handoff out)',
      gluR: 'linear_glu_q8 gate|up (handoff in, runs of 16 out)',
      downR: 'linear_q8 down (accumulate, runs of 16 in)',
      att: 'attention decode (f16 cache of 256, kv_len --mlp-att-len)',
      aop: 'attention_oproj (f16 cache of 256, kv_len --mlp-att-len; o_proj with the handoff out)',
    };
    const chains = JSON.parse(arg('mlp-chains', '{}')) as Record<string, (string | [string, Record<string, string | number>])[]>;
    const sync = mk(64);
    const uniforms: GPUBuffer[] = [];
    const outputs = [y, hq, hm, iq, im, q, kCache, vCache];
    const snapshot = async () => Promise.all(outputs.map(async (b) => new Uint32Array(await readBuffer(dev.device, b))));
    const restore = (s: Uint32Array<ArrayBuffer>[]) => outputs.forEach((b, j) => dev.device.queue.writeBuffer(b, 0, s[j]!));
    type Link = { plan: Plan; op: { buffers: (i: number) => Record<string, GPUBuffer> } };
    const linkedChain = async (label: string, chain: Link[], record: (rec: Recorder, k: number) => Promise<void>, round: number) => {
      const dispatchAt = async (i: number) =>
        (
          await linkCalls(
            dev,
            chain.map((c) => ({
              plan: c.plan,
              tensors: Object.fromEntries(Object.entries(c.op.buffers(i)).map(([k, buffer]) => [k, { buffer }])),
              uniform: (_pass, b) => {
                const data = uniformBytes(c.plan, b);
                const u = dev.device.createBuffer({ size: Math.max(16, data.byteLength), usage: USAGE.UNIFORM | USAGE.COPY_DST });
                dev.device.queue.writeBuffer(u, 0, data);
                uniforms.push(u);
                return { buffer: u, offset: 0, size: data.byteLength };
              },
            })),
            sync,
            `chain ${label}`,
          )
        ).dispatch;
      const n = Math.max(3, reps);
      const ds: Dispatch[] = [];
      for (let i = 0; i < n; i++) ds.push(await dispatchAt(i));
      // outputs: the chain's ops one after another, then linked, from the same buffers
      const before = await snapshot();
      const plain = new Recorder(dev, { timestamps: false });
      await record(plain, 1);
      await plain.submit({ wait: true });
      const want = await snapshot();
      restore(before);
      const one = new Recorder(dev, { timestamps: false });
      one.dispatch(ds[0]!);
      await one.submit({ wait: true });
      const got = await snapshot();
      const differ = want.reduce((acc, w, j) => acc + w.reduce((a, v, x) => a + (v !== got[j]![x] ? 1 : 0), 0), 0);
      const linkedRecord = async (rec: Recorder, k: number) => {
        for (let i = 0; i < k; i++) rec.dispatch(ds[i % n]!);
      };
      await heatGpu(dev, linkedRecord, 100);
      const ms = await spanMsPerCall(dev, linkedRecord, n);
      const e = { op: `chain ${label} linked`, variant: chain.map((c) => c.plan.variant).join(' + '), round, inPassMs: +ms.toFixed(5), wordsDifferingFromChain: differ };
      console.log(`mlp chain ${label} linked into one dispatch, round ${round}: ${(1000 * ms).toFixed(2)} us a chain; outputs ${differ ? `differ from the chain's in ${differ} words` : "identical to the chain's"}`);
      return e;
    };
    for (let round = 1; round <= 2; round++) {
      for (const [label, names] of Object.entries(chains)) {
        const chain = names.map((entry) => {
          const [k, tunables] = typeof entry === 'string' ? [entry, {}] : entry;
          const name = short[k];
          if (!name) throw new Error(`--mlp-chains: unknown op ${k} (one of ${Object.keys(short).join(', ')})`);
          return { name, tunables, op: ops[name], plan: ops[name].plan({ ...cpu, ...tunables }) };
        });
        const record = async (rec: Recorder, k: number) => {
          for (let i = 0; i < k; i++) for (const c of chain) await recordPlan(rec, dev, c.plan, c.op.buffers(i));
        };
        await heatGpu(dev, record, 100);
        const ms = await spanMsPerCall(dev, record, Math.max(3, reps));
        const alone: number[] = [];
        for (const c of chain) alone.push(await time(c.name, c.tunables));
        const e = { op: `chain ${label}`, variant: chain.map((c) => c.plan.variant).join(' + '), round, inPassMs: +ms.toFixed(5), aloneSumMs: +alone.reduce((a, b) => a + b, 0).toFixed(5), aloneMs: alone.map((v) => +v.toFixed(5)) };
        out.push(e);
        console.log(`mlp chain ${label} (${e.variant}), round ${round}: ${(1000 * e.inPassMs).toFixed(2)} us a chain, ops alone ${alone.map((v) => (1000 * v).toFixed(2)).join(' + ')} = ${(1000 * e.aloneSumMs).toFixed(2)} us`);
        // --mlp-link: the same ops linked into one dispatch (src/program/chain.ts), its outputs against the chain's
        if (process.argv.includes('--mlp-link')) {
          try {
            out.push(await linkedChain(label, chain, record, round));
          } catch (err) {
            if (!(err instanceof ChainLinkError)) throw err;
            out.push({ op: `chain ${label} linked`, round, skipped: err.message });
            console.log(`mlp chain ${label}: not linked: ${err.message}`);
          }
        }
      }
    }
    for (const u of uniforms) u.destroy();
    sync.destroy();
  }
  // (unroll 1 by default since 578f8a0: the points around it)
  for (const t of given?.o ?? []) await time('linear_fused o_proj (accumulate)', t);
  for (const t of given?.qkv ?? []) await time('linear_rope_kv q|k|v (rmsnorm, rope, f16 cache)', t);
  for (const t of given?.head ?? []) await time('linear_fused head (rmsnorm)', t);
  // gu / guPlain: the gate|up GEMV with f32 outputs, with the norm prologue and without it (what the norm costs)
  for (const t of given?.gu ?? []) await time('linear_fused gate|up (rmsnorm)', t);
  for (const t of given?.guPlain ?? []) await time('linear_fused gate|up (no norm: the activations rounded in the prologue)', t);
  const gluPoints: Record<string, string | number>[] = given?.glu ?? [{ gemvCols: 4 }, { gemvItems: 64 }, { gemvCols: 4, gemvItems: 16 }, { gemvWorkgroup: 512, gemvItems: 32 }, { gemvCols: 4, gemvItems: 32 }, { gemvUnroll: 2 }, { gemvWorkgroup: 128 }, { gemvWorkgroup: 512, gemvItems: 64 }, { gemvRunSums: 'off' }, { gemvPipeline: 'off' }];
  for (const t of gluPoints) await time('linear_glu_q8 gate|up', t);
  const q8Points: Record<string, string | number>[] = given?.q8 ?? [...sweepConfigs(), { gemvRunSums: 'off' }, { gemvPipeline: 'off' }, { gemvUnroll: 4 }, { gemvItems: 4, gemvWorkgroup: 128, gemvUnroll: 4 }, { gemvItems: 16 }];
  for (const t of q8Points) await time('linear_q8 down (accumulate)', t);
  // the splits that led, alternated with the default twice (neighbouring points drift by a few percent)
  if (!given) {
    for (let round = 0; round < 2; round++) for (const t of [{}, { gemvCols: 2 }, { gemvItems: 1, gemvWorkgroup: 32 }, { gemvRunSums: 'off' }] as Record<string, string | number>[]) await time('linear_q8 down (accumulate)', t);
    for (let round = 0; round < 2; round++) for (const t of [{}, { gemvUnroll: 2 }, { gemvItems: 64 }] as Record<string, string | number>[]) await time('linear_glu_q8 gate|up', t);
  }
  for (const b of new Set([...gu, ...down, ...oProj, ...qkvW, ...headW, x, gamma, guRow, y, qa, da, rs, cos, sin, kCache, vCache, q, logits, hq, hm, iq, im, att, u32One, oprojSync])) b.destroy();
  return out;
}


async function main() {
  const out = arg('out', 'kernels.json');
  const formats = arg('formats', 'float16,q4_k,q8_0,q6_k').split(',').filter(Boolean); // --formats '' with --attention: attention only
  for (const f of formats) if (!BYTES[f]) throw new Error(`--formats: unknown weight format ${f} (known: ${Object.keys(BYTES).join(', ')})`);
  const ms = arg('m', '1,16,128,512,2048').split(',').map(Number);
  const shapes = process.argv.includes('--shapes') ? arg('shapes', '').split(',').map((s) => s.split('x').map(Number) as [number, number]) : SHAPES;
  const reps = Number(arg('reps', '20'));
  // --linear-tunables JSON: tunables for every linear plan of the weight cases and their int8 rows points (linear_fused),
  // e.g. '{"q6Wide":"on"}' (both contracts must declare each one)
  const linearTunables = JSON.parse(arg('linear-tunables', '{}')) as Record<string, number | string>;
  if (typeof linearTunables !== 'object' || linearTunables === null || Array.isArray(linearTunables)) throw new Error(`--linear-tunables: expected a JSON object, got ${arg('linear-tunables', '')}`);
  const sweep = process.argv.includes('--sweep');
  const gemmSweep = process.argv.includes('--gemm-sweep');
  // --ort: ONNX Runtime's WebGPU MatMulNBits (4-bit, block 32) at the Q4_K shapes, wall time per call on both sides
  const ort = process.argv.includes('--ort') ? await loadOrt() : undefined;
  const dev = await createDevice({ timestamps: true });
  if (!dev.timestamps) throw new Error('this benchmark needs timestamp-query');
  const readBandwidth = await measureReadBandwidthDetail(dev, Number(arg('bw-bytes', String(dev.caps.adapterInfo?.architecture === 'swiftshader' ? 2 ** 26 : 2 ** 30))));
  const bw = readBandwidth.bytesPerSecond;
  console.log(`${describeAdapter(dev.caps)}: ${describeReadBandwidth(readBandwidth)}`);
  const results: unknown[] = [];
  // the receipt is written after every weight case too (complete: false until the end), so a run cut short by a time
  // limit still leaves the cases it finished
  const save = (attention: unknown[], mlp: unknown[], complete: boolean) => {
    const receipt = {
      ...receiptHeader('kernels', dev),
      readBandwidthBytesPerSecond: Math.round(bw),
      readBandwidth,
      linearTunables,
      method: 'inPassMs: GPU time of the repetitions back to back in one compute pass / repetitions (fractions and TFLOP/s use it); aloneMedianMs: median of each call timed in its own pass; weights rotate over copies totalling >= 256 MB; bytes = weights + x + y',
      complete,
      results,
      attention,
      mlp,
    };
    writeFileSync(out, JSON.stringify(receipt, null, 2) + '\n');
  };
  for (const fmt of formats) {
    if (fmt === 'float16' && !dev.caps.features.has('shader-f16')) console.log('(float16 weights are read as u32 pairs: no shader-f16 needed)');
    for (const [N, K] of shapes) {
      const wBytes = BYTES[fmt]!(N, K);
      const copies = Math.max(1, Math.min(16, Math.ceil(ROTATE_BYTES / wBytes)));
      const ws = Array.from({ length: copies }, (_, i) => {
        const b = dev.device.createBuffer({ size: Math.ceil(wBytes / 4) * 4, usage: USAGE.STORAGE | USAGE.COPY_DST, label: `w${i}` });
        fillWeights(dev, b, fmt);
        return b;
      });
      for (const M of ms) {
        const x = dev.device.createBuffer({ size: M * K * 4, usage: USAGE.STORAGE | USAGE.COPY_DST, label: 'x' });
        dev.device.queue.writeBuffer(x, 0, new Float32Array(M * K).map((_, i) => Math.sin(i) * 0.5));
        const yBytes = M * N * 4;
        if (yBytes > dev.caps.limits.maxStorageBufferBindingSize!) {
          results.push({ format: fmt, N, K, M, skipped: `output ${yBytes} bytes exceeds maxStorageBufferBindingSize` });
          x.destroy();
          continue;
        }
        const y = dev.device.createBuffer({ size: yBytes, usage: USAGE.STORAGE | USAGE.COPY_SRC, label: 'y' });
        const req = (extra: { variant?: string; tunables?: Record<string, number | string> } = {}) => planOp(dev, 'linear', { shapes: { x: [M, K], w: [N, K] }, dtypes: { w: fmt }, ...extra, tunables: { ...linearTunables, ...extra.tunables } });
        let plan: Plan;
        try {
          plan = req();
        } catch (e) {
          if (!(e instanceof ContractError)) throw e;
          results.push({ format: fmt, N, K, M, skipped: e.message.split('\n')[0] });
          x.destroy();
          y.destroy();
          continue;
        }
        // touch every weight copy once (fresh buffers are slow on their first use)
        const touch = new Recorder(dev, { timestamps: false });
        for (const w of ws) await recordPlan(touch, dev, plan, { x, w, y });
        await touch.submit({ wait: true });
        const t = await timePlan(dev, plan, x, ws, y, reps);
        const bytes = wBytes + M * K * 4 + M * N * 4;
        const entry: Record<string, unknown> = {
          format: fmt,
          N,
          K,
          M,
          variant: plan.variant,
          kernels: plan.passes.map((p) => p.kernel ?? p.shader),
          inPassMs: +t.inPassMs.toFixed(5),
          aloneMedianMs: +t.medianMs.toFixed(5),
          aloneMinMs: +t.minMs.toFixed(5),
          reps: t.reps,
          weightBytes: wBytes,
          gbPerSecond: +(bytes / t.inPassMs / 1e6).toFixed(1),
          fractionOfReadBandwidth: +(bytes / (t.inPassMs / 1000) / bw).toFixed(3),
          tflops: +((2 * M * N * K) / (t.inPassMs / 1000) / 1e12).toFixed(2),
        };
        if (fmt === 'q4_k' && M <= 8 && plan.variant !== 'q4k_gemv_q8a') {
          // the int8-activation GEMV (tunable gemvInt8), timed in the same run; bytes as for the default
          try {
            const p = req({ tunables: { gemvInt8: 'on' } });
            if (p.variant !== plan.variant) {
              const tt = await timePlan(dev, p, x, ws, y, reps);
              entry.gemvInt8 = { variant: p.variant, inPassMs: +tt.inPassMs.toFixed(5), fractionOfReadBandwidth: +((wBytes + M * K * 4 + M * N * 4) / (tt.inPassMs / 1000) / bw).toFixed(3) };
              console.log(`  gemvInt8: ${p.variant} ${tt.inPassMs.toFixed(4)} ms`);
            }
          } catch (e) {
            if (!(e instanceof ContractError)) throw e;
          }
        }
        // the int8-activation rows-mode GEMV (linear_fused, prologue none: the activations rounded in every workgroup;
        // Q8_0 / Q6_K behind tunable gemvQ80Int8 / gemvQ6KInt8, Q4_K at an explicit row block where N > 8192) at a
        // few row blocks, timed in the same run; bytes as for the default
        const rowsTunables: Record<string, Record<string, string>> = { q8_0: { gemvQ80Int8: 'on' }, q6_k: { gemvQ6KInt8: 'on' }, q4_k: {} };
        const rowsInt8 = rowsTunables[fmt];
        if (rowsInt8 && M <= 8) {
          const points: Record<string, unknown>[] = [];
          for (const t of [fmt === 'q4_k' ? { gemvRowBlock: 16 } : {}, { gemvRowBlock: 8 }, { gemvRowBlock: 32 }, { gemvRowBlock: 16, gemvTeams: 2 }] as Record<string, number>[]) {
            try {
              const p = planOp(dev, 'linear_fused', { shapes: { x: [M, K], w: [N, K], y: [M, N] }, dtypes: { w: fmt }, attributes: { prologue: 'none' }, tunables: { ...rowsInt8, ...linearTunables, ...t } });
              if (!p.variant.endsWith('_rows')) continue; // refused here (a CPU adapter, no subgroups): another variant
              const tt = await timePlan(dev, p, x, ws, y, reps);
              const frac = +(bytes / (tt.inPassMs / 1000) / bw).toFixed(3);
              points.push({ variant: p.variant, tunables: t, inPassMs: +tt.inPassMs.toFixed(5), fractionOfReadBandwidth: frac });
              console.log(`  ${fmt} int8 rows ${p.variant} ${JSON.stringify(t)}: ${tt.inPassMs.toFixed(4)} ms (${(100 * frac).toFixed(1)}% of read)`);
            } catch (e) {
              if (!(e instanceof ContractError)) throw e;
            }
          }
          entry.int8Rows = points;
        }
        if (M >= 16 && !plan.variant.endsWith('_sgmat')) {
          // the subgroup-matrix prefill GEMM (tunable prefillSgmat), timed in the same run where the device has it
          const tiles: Record<string, unknown>[] = [];
          for (const sgmatTile of [64, 128]) {
            try {
              const p = req({ tunables: { prefillSgmat: 'on', sgmatTile } });
              if (p.variant === plan.variant) continue;
              const tt = await timePlan(dev, p, x, ws, y, reps);
              const tflops = +((2 * M * N * K) / (tt.inPassMs / 1000) / 1e12).toFixed(2);
              tiles.push({ variant: p.variant, sgmatTile, inPassMs: +tt.inPassMs.toFixed(5), tflops });
              console.log(`  prefillSgmat tile ${sgmatTile}: ${p.variant} ${tt.inPassMs.toFixed(4)} ms, ${tflops} TFLOP/s`);
            } catch (e) {
              if (!(e instanceof ContractError)) throw e;
            }
          }
          if (tiles.length) entry.prefillSgmat = tiles;
        }
        if (ort && fmt === 'q4_k') {
          const host = new Float32Array(M * K).map((_, i) => Math.sin(i) * 0.5);
          const ours = await wallPlan(dev, plan, x, ws[0]!, y, host, M, N, Math.min(reps, 20));
          try {
            const peer = await timeMatMulNBits(ort, M, N, K, Math.min(reps, 20));
            entry.wallMs = +ours.toFixed(4);
            entry.ortMatMulNBits = { ...peer, wallMsMedian: +peer.wallMsMedian.toFixed(4), oursOverOrt: +(ours / peer.wallMsMedian).toFixed(3) };
            console.log(`  wall per call: ours ${ours.toFixed(3)} ms, ORT ${peer.ep} MatMulNBits ${peer.wallMsMedian.toFixed(3)} ms (ours / ORT ${(ours / peer.wallMsMedian).toFixed(2)})`);
          } catch (e) {
            entry.ortMatMulNBits = { error: (e as Error).message.split('\n')[0] };
          }
        }
        if (gemmSweep && plan.variant.endsWith('_sgmat')) {
          // the subgroup-matrix GEMM over its staging tunables, in the same run (fastest first)
          const points: { tunables: Record<string, number | string>; inPassMs: number; tflops: number }[] = [];
          for (const tunables of GEMM_SWEEP) {
            let p: Plan;
            try {
              p = req({ variant: plan.variant, tunables: { prefillSgmat: 'on', ...tunables } });
            } catch (e) {
              if (!(e instanceof ContractError)) throw e;
              continue;
            }
            const tt = await timePlan(dev, p, x, ws, y, reps);
            points.push({ tunables, inPassMs: +tt.inPassMs.toFixed(5), tflops: +((2 * M * N * K) / (tt.inPassMs / 1000) / 1e12).toFixed(2) });
          }
          points.sort((a, b) => a.inPassMs - b.inPassMs);
          entry.gemmSweep = points;
          for (const q of points) console.log(`  gemm sweep ${JSON.stringify(q.tunables)}: ${q.inPassMs.toFixed(4)} ms, ${q.tflops} TFLOP/s`);
        }
        if (sweep && M === 1) {
          const points: SweepPoint[] = [];
          const frac = (ms: number) => +(bytes / (ms / 1000) / bw).toFixed(3);
          const old = { q4_k: 'q4k_gemv', q8_0: 'q8_0_dequant', q6_k: 'q6k_dequant', float16: 'f16_gemv' }[fmt]!;
          try {
            const p = req({ variant: old });
            const tt = await timePlan(dev, p, x, ws, y, reps);
            points.push({ variant: old, inPassMs: +tt.inPassMs.toFixed(5), medianMs: +tt.medianMs.toFixed(5), fractionOfReadBandwidth: frac(tt.inPassMs) });
          } catch (e) {
            if (!(e instanceof ContractError)) throw e;
          }
          const sg = { q4_k: 'q4k_gemv_sg', q8_0: 'q8_0_gemv_sg', q6_k: 'q6k_gemv_sg', float16: 'f16_gemv_sg' }[fmt]!;
          // Q4_K: the int8 GEMV with its quant pass and the fused one (activations rounded in each workgroup; its
          // gemvRunSums and gemvPipeline tunables at two work splits)
          const q8a = fmt === 'q4_k' ? [...sweepConfigs().map((t) => ['q4k_gemv_q8a', { ...t, gemvInt8: 'on', gemvFuseQuant: 'off' }] as const), ...fusedSweepConfigs().map((t) => ['q4k_gemv_q8a_fused', { ...t, gemvInt8: 'on' }] as const)] : [];
          for (const [variant, tunables] of [...sweepConfigs().map((t) => [sg, t] as const), ...q8a]) {
            const p = req({ variant, tunables: { ...tunables, cpuMapping: 'off' } });
            const tt = await timePlan(dev, p, x, ws, y, reps);
            points.push({ variant, tunables, inPassMs: +tt.inPassMs.toFixed(5), medianMs: +tt.medianMs.toFixed(5), fractionOfReadBandwidth: frac(tt.inPassMs) });
          }
          points.sort((a, b) => a.inPassMs - b.inPassMs);
          entry.sweep = points;
          // the best point of each variant, so the console alone keeps the comparison
          for (const v of new Set(points.map((q) => q.variant))) console.log(`  sweep best ${v}: ${JSON.stringify(points.find((q) => q.variant === v))}`);
        }
        results.push(entry);
        save([], [], false);
        console.log(`${fmt} N=${N} K=${K} M=${M}: ${plan.variant} ${t.inPassMs.toFixed(4)} ms in a pass (${t.medianMs.toFixed(4)} alone), ${entry.gbPerSecond} GB/s (${((entry.fractionOfReadBandwidth as number) * 100).toFixed(1)}% of read), ${entry.tflops} TFLOP/s`);
        x.destroy();
        y.destroy();
      }
      for (const b of ws) b.destroy();
    }
  }
  const attention = process.argv.includes('--attention') ? await attentionCases(dev, bw, reps) : [];
  const mlp = process.argv.includes('--mlp') ? await mlpCases(dev, bw, reps) : [];
  save(attention, mlp, true);
  console.log(`wrote ${out}`);
  dev.destroy();
}

await main();
