/**
 * The contract requests a model makes, without a GPU: the decoder and the generation session build their steps
 * (src/models/decoder.ts, src/runtime/session.ts) on a planning device, a TesseraDevice whose capabilities come from
 * a device profile and whose GPU objects are inert stubs (nothing is computed or allocated), and every op call of
 * those steps becomes a request (op, tensor dtypes and shapes, static attributes) as Program.compile would resolve
 * it. So the requests follow the code: a new op call, a fused path or a weight format shows up here by itself.
 * Used by `tessera kernels reach` (src/cli/kernels.ts) to evaluate the contracts over devices x models x shapes.
 */
import { dynamicNames } from '../contracts/plan.ts';
import { ContractError, ContractInputError, ContractPlanError } from '../contracts/errors.ts';
import type { AttributeValue } from '../contracts/types.ts';
import { BufferPool } from '../gpu/buffers.ts';
import type { DeviceCaps } from '../gpu/caps.ts';
import type { TesseraDevice } from '../gpu/device.ts';
import type { DecoderConfig } from '../models/config.ts';
import { Decoder, type KvCache } from '../models/decoder.ts';
import { isExpertMatrix } from '../models/moe-weights.ts';
import { weightSpecs, type GpuWeights } from '../models/weights.ts';
import { opAccepts, tensorBytes, type Tensor, type TensorSpec } from '../ops/runner.ts';
import { isDyn, type StepBuilder } from '../program/step.ts';
import { DecodeSession, type SamplingSettings } from './session.ts';

/** How the linear weights are stored: the `--quant` modes, and a GGUF Q4_K_M file read in place. */
export type ReachQuant = 'f32' | 'f16' | 'q4k' | 'q8_0' | 'gguf-q4_k_m';
export const REACH_QUANTS: readonly ReachQuant[] = ['f32', 'f16', 'q4k', 'q8_0', 'gguf-q4_k_m'];

/** One step a session runs: a prompt of `tokens` tokens (prefill) or one generated token (decode), in a KV cache of `context` positions. */
export interface StepShape {
  kind: 'prefill' | 'decode';
  tokens: number;
  context: number;
}

export const stepLabel = (s: StepShape): string => `${s.kind === 'decode' ? 'decode' : `prefill T=${s.tokens}`} ctx=${s.context >= 1024 && s.context % 1024 === 0 ? `${s.context / 1024}k` : s.context}`;

/** The shapes the reach evaluation covers: prompts of 1, 16, 512 and 4096 tokens and decode, in 1k and 32k caches. */
export function defaultStepShapes(tokens: readonly number[] = [1, 16, 512, 4096], contexts: readonly number[] = [1024, 32768]): StepShape[] {
  const out: StepShape[] = [];
  for (const context of contexts) {
    for (const t of tokens) if (t <= context) out.push({ kind: 'prefill', tokens: t, context });
    out.push({ kind: 'decode', tokens: 1, context });
  }
  return out;
}

/** Sampling settings whose steps differ: greedy, and top-k / top-p sampling with a repetition penalty. */
export const REACH_SAMPLING: readonly SamplingSettings[] = [
  { temperature: 0, topK: 0, topP: 1, repetitionPenalty: 1 },
  { temperature: 0.8, topK: 40, topP: 0.9, repetitionPenalty: 1.1 },
];

/** A contract request: what Program.compile resolves for one op call (dynamic attributes left out). */
export interface OpRequest {
  op: string;
  tensors: Record<string, TensorSpec>;
  attributes: Record<string, AttributeValue>;
}

export const requestKey = (r: OpRequest): string =>
  `${r.op}|${Object.entries(r.tensors).map(([k, t]) => `${k}:${t.dtype}:${t.shape.join('x')}`).join('|')}|${Object.entries(r.attributes).map(([k, v]) => `${k}=${v}`).join('|')}`;

/** Raised when a model cannot be built for a device (e.g. `--quant f16` without shader-f16); the reach report lists it. */
export class PlanningError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlanningError';
  }
}

function stubBuffer(size: number, usage: number, label = ''): GPUBuffer {
  let mapped: ArrayBuffer | undefined;
  return {
    size,
    usage,
    label,
    mapState: 'unmapped',
    getMappedRange: () => (mapped ??= new ArrayBuffer(size)),
    unmap: () => {
      mapped = undefined;
    },
    destroy: () => {},
    mapAsync: async () => {},
  } as unknown as GPUBuffer;
}

/**
 * A device that plans only: `caps` from a profile; buffers, encoders and queue submits are stubs that hold no memory
 * and compute nothing. Good for building a model's steps and resolving their contracts, never for running them.
 */
export function planningDevice(caps: DeviceCaps): TesseraDevice {
  const encoder = {
    copyBufferToBuffer: () => {},
    beginComputePass: () => ({ setPipeline: () => {}, setBindGroup: () => {}, dispatchWorkgroups: () => {}, end: () => {} }),
    finish: () => ({}),
  };
  const device = {
    limits: caps.limits,
    features: caps.features,
    label: 'tessera.planning',
    createBuffer: (d: GPUBufferDescriptor) => stubBuffer(d.size, d.usage, d.label),
    createCommandEncoder: () => encoder,
    queue: { writeBuffer: () => {}, submit: () => {}, onSubmittedWorkDone: async () => {} },
    destroy: () => {},
  } as unknown as GPUDevice;
  const none = new Proxy({}, { get: () => { throw new Error('a planning device (src/runtime/op-requests.ts) compiles no pipelines and binds nothing'); } });
  return {
    device,
    caps,
    buffers: new BufferPool(device),
    pipelines: none as TesseraDevice['pipelines'],
    bindGroups: none as TesseraDevice['bindGroups'],
    timestamps: false,
    errors: [],
    destroy: () => {},
  };
}

/**
 * The dtype each weight would be stored as by uploadWeights (src/models/weights.ts) for this quant mode on this
 * device, as stub tensors. The rule is the loader's: a block format only where the linear contract reads it at that
 * width, else f16 with shader-f16 and f32 without; embeddings f16 where the device has shader-f16 (except f32 mode);
 * norms, biases and routers f32; the experts of sparse layers stacked as moe-weights.ts uploads them (f32, or gpt-oss's
 * MXFP4 blocks and scales as stored). `gguf-q4_k_m` stands for a llama.cpp Q4_K_M file read in place: Q6_K for
 * v_proj, down_proj and the LM head, Q4_K for the other linears.
 */
export function plannedWeights(dev: TesseraDevice, cfg: DecoderConfig, quant: ReachQuant): GpuWeights {
  const f16 = dev.caps.features.has('shader-f16');
  if (quant === 'f16' && !f16) throw new PlanningError('--quant f16 needs shader-f16, which this device lacks');
  const tensors = new Map<string, Tensor>();
  const storage: Record<string, number> = {};
  const add = (name: string, dtype: string, shape: number[]) => tensors.set(name, { dtype, shape, buffer: stubBuffer(tensorBytes({ dtype, shape }), 0, name) });
  for (const s of weightSpecs(cfg)) {
    if (s.optional || (cfg.moe && isExpertMatrix(s.name))) continue;
    const K = s.shape[s.shape.length - 1]!;
    const reads = (dtype: string) => opAccepts(dev, 'linear', { x: { dtype: 'float32', shape: [1, K] }, w: { dtype, shape: s.shape } });
    const float = f16 ? 'float16' : 'float32';
    let dtype = 'float32';
    if (s.kind === 'linear') {
      if (quant === 'f32') dtype = 'float32';
      else if (quant === 'f16') dtype = 'float16';
      else if (quant === 'q4k') dtype = reads('q4_k') ? 'q4_k' : float;
      else if (quant === 'q8_0') dtype = reads('q8_0') ? 'q8_0' : float;
      else {
        const native = /(v_proj|down_proj)\.weight$|^lm_head\.weight$/.test(s.name) ? 'q6_k' : 'q4_k';
        dtype = reads(native) ? native : float;
      }
      storage[dtype] = (storage[dtype] ?? 0) + 1;
    } else if (s.kind === 'embedding') dtype = f16 && quant !== 'f32' ? 'float16' : 'float32';
    add(s.name, dtype, s.shape);
  }
  const m = cfg.moe;
  for (let l = 0; m && l < cfg.numLayers; l++) {
    if (!m.sparse[l]) continue;
    const [E, H, I] = [m.numExperts, cfg.hiddenSize, m.expertIntermediateSize];
    const x = `model.layers.${l}.mlp.experts.`;
    if (m.kind === 'gpt_oss' && m.expertFormat === 'mxfp4') {
      // released gpt-oss folders and GGUFs keep MXFP4 experts: uploaded as stored, whatever the weight format
      add(x + 'w_up', 'uint8', [E, 2 * I, H / 32, 16]);
      add(x + 'w_up_scales', 'uint8', [E, 2 * I, H / 32]);
      add(x + 'w_down', 'uint8', [E, H, I / 32, 16]);
      add(x + 'w_down_scales', 'uint8', [E, H, I / 32]);
      continue;
    }
    // float experts quantized for q8_0 / q4k where the rows fit the blocks (moe-weights.ts quantRows); a Q4_K_M GGUF
    // keeps Q4_K gate/up rows in place and dequantizes its Q6_K down projections (ggufExperts)
    const rows = (K: number, down: boolean): string => {
      if (quant === 'q8_0' && K % 32 === 0) return 'q8_0';
      if ((quant === 'q4k' || (quant === 'gguf-q4_k_m' && !down)) && K % 256 === 0) return 'q4_k';
      return 'float32';
    };
    add(x + 'w_up', rows(H, false), [E, 2 * I, H]);
    add(x + 'w_down', rows(I, true), [E, H, I]);
  }
  return {
    mode: quant === 'gguf-q4_k_m' ? 'file' : quant,
    tensors,
    storage,
    bytes: 0,
    notes: [],
    get: (name) => {
      const t = tensors.get(name);
      if (!t) throw new PlanningError(`no weight ${name}`);
      return t;
    },
    destroy: () => {},
  };
}

/** The private step builders of DecodeSession: the steps a generation records (see session.ts). */
interface SessionSteps {
  kv: KvCache;
  /** The cache prefix a second decode program runs on while the sequence fits (Decoder.decodePrefix). */
  prefix?: KvCache;
  prefillStep(B: number): { step: StepBuilder };
  decodeStep(kv: KvCache): { step: StepBuilder };
}

/** The requests of one step of a built decoder (each distinct request once, with how many calls make it). */
export function stepRequests(dec: Decoder, shape: StepShape, sampling: SamplingSettings): { request: OpRequest; calls: number }[] {
  const session = new DecodeSession(dec, sampling, shape.context) as unknown as SessionSteps;
  // a decode shape: the whole cache's step, and the prefix's where the session has one
  const steps = shape.kind === 'decode' ? [session.kv, ...(session.prefix ? [session.prefix] : [])].map((kv) => session.decodeStep(kv).step) : [session.prefillStep(shape.tokens).step];
  const out = new Map<string, { request: OpRequest; calls: number }>();
  for (const c of steps.flatMap((s) => s.calls)) {
    const dyn = dynamicNames(dec.ops.contract(c.op));
    const attributes: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(c.attrs)) if (!dyn.has(k) && !isDyn(v)) attributes[k] = v as AttributeValue;
    const tensors: Record<string, TensorSpec> = {};
    for (const [k, t] of Object.entries(c.tensors)) tensors[k] = { dtype: t.dtype, shape: [...t.shape] };
    const request = { op: c.op, tensors, attributes };
    const key = requestKey(request);
    const e = out.get(key);
    if (e) e.calls++;
    else out.set(key, { request, calls: 1 });
  }
  return [...out.values()];
}

/**
 * A decoder of `cfg` with `quant` weights on a planning device, able to hold `maxContext` positions (the model's
 * own max_position_embeddings is raised to it when smaller: kernel choice depends on shapes, not on that limit).
 */
export function planningDecoder(caps: DeviceCaps, cfg: DecoderConfig, quant: ReachQuant, maxContext: number): Decoder {
  const dev = planningDevice(caps);
  const c = { ...cfg, maxPositions: Math.max(cfg.maxPositions, maxContext) };
  try {
    return new Decoder(dev, c, plannedWeights(dev, c, quant), { maxPositions: maxContext });
  } catch (e) {
    if (e instanceof ContractError || e instanceof ContractInputError || e instanceof ContractPlanError) throw new PlanningError(e.message);
    throw e;
  }
}

/**
 * QMoE requests of a mixture-of-experts config for `tokens` tokens (com.microsoft.QMoE as an ONNX export of the
 * model's experts would call it): 4-bit experts in blocks of 32 along the input, SwiGLU fused (gpt-oss: its clamped
 * SwiGLU, alpha 1.702, limit 7, up + 1; Qwen3-MoE: SiLU gate, alpha 1, beta 0), k = experts per token.
 */
export function qmoeRequest(cfg: DecoderConfig, tokens: number, dtype: 'float32' | 'float16'): OpRequest | undefined {
  const m = cfg.moe;
  if (!m) return undefined;
  const H = cfg.hiddenSize;
  const I = m.expertIntermediateSize;
  const E = m.numExperts;
  const block = 32;
  const gptOss = m.kind === 'gpt_oss';
  const spec = (shape: number[], dt: string = dtype) => ({ dtype: dt, shape });
  return {
    op: 'QMoE',
    tensors: {
      inputT: spec([tokens, H]),
      routerT: spec([tokens, E]),
      fc1T: spec([E, 2 * I, H / 2], 'uint8'),
      fc1ScalesT: spec([E, 2 * I, H / block], 'float32'),
      fc2T: spec([E, H, I / 2], 'uint8'),
      fc2ScalesT: spec([E, H, I / block], 'float32'),
    },
    attributes: {
      k: m.topK,
      activation_type: 'swiglu',
      swiglu_fusion: 1,
      expert_weight_bits: 4,
      block_size: block,
      normalize_routing_weights: m.normTopkProb ? 1 : 0,
      activation_alpha: gptOss ? m.swigluAlpha : 1,
      activation_beta: gptOss ? 1 : 0,
      ...(gptOss ? { swiglu_limit: m.swigluLimit } : {}),
    },
  };
}
