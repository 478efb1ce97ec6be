/**
 * Normalized decoder config from an HF config.json. Model families are table entries (FAMILIES): a mapping from
 * their config fields and a few switches for the shared forward pass; no family copies another's code.
 */
import { ModelConfigError, UnsupportedArchitectureError } from './errors.ts';

export type Activation = 'silu' | 'gelu_tanh';

export interface RopeScaling {
  type: 'default' | 'linear' | 'llama3' | 'yarn';
  factor: number;
  lowFreqFactor?: number;
  highFreqFactor?: number;
  originalMaxPositionEmbeddings?: number;
  /** YaRN: ramp bounds in rotations (defaults 32 / 1), whether they are floored/ceiled (default true). */
  betaFast?: number;
  betaSlow?: number;
  truncate?: boolean;
  /** YaRN: cos/sin are multiplied by this (resolved: attention_factor, or from mscale/mscale_all_dim, or 0.1 ln(factor) + 1). */
  attentionFactor?: number;
}

/**
 * Mixture-of-experts feed-forward (gpt-oss, Qwen3-MoE). `sparse[l]` says whether layer l routes (else it has a dense
 * MLP of `intermediateSize`).
 */
export interface MoeConfig {
  kind: 'gpt_oss' | 'qwen3_moe';
  numExperts: number;
  topK: number;
  /** Width of one expert's hidden layer. */
  expertIntermediateSize: number;
  /**
   * 'topk_softmax': logits (+ bias) -> top-k -> softmax over the k selected (gpt-oss);
   * 'softmax_topk': softmax over all experts -> top-k, renormalized when normTopkProb (Qwen3-MoE).
   */
  routing: 'topk_softmax' | 'softmax_topk';
  normTopkProb: boolean;
  routerBias: boolean;
  /** Expert biases (gpt-oss gate_up_proj_bias, down_proj_bias). */
  expertBias: boolean;
  /** 'swiglu_clamped': gpt-oss (interleaved gate/up, clamp, gate * sigmoid(alpha gate), (up + 1)); 'silu': Qwen. */
  activation: 'swiglu_clamped' | 'silu';
  swigluAlpha: number;
  swigluLimit: number;
  /** How the checkpoint stores the expert matrices: plain floats, or MXFP4 blocks + e8m0 scales (quantization_config). */
  expertFormat: 'float' | 'mxfp4';
  sparse: boolean[];
}

export interface DecoderConfig {
  architecture: string;
  family: 'llama' | 'qwen2' | 'qwen3' | 'gemma3' | 'gpt_oss' | 'qwen3_moe';
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  vocabSize: number;
  maxPositions: number;
  rmsNormEps: number;
  ropeTheta: number;
  /** Gemma 3: sliding-window layers use their own base (rope_local_base_freq) and no scaling. */
  ropeLocalTheta?: number;
  ropeScaling: RopeScaling;
  tieWordEmbeddings: boolean;
  attentionBias: boolean;
  /** o_proj has a bias too (gpt-oss, with attention_bias). */
  oProjBias: boolean;
  /** gpt-oss: one learned logit per head (self_attn.sinks) joins each softmax and is dropped after it. */
  attnSinks: boolean;
  qkNorm: boolean;
  /** Gemma: norms are x * (1 + w) */
  normAddOne: boolean;
  /** Gemma: post-attention and post-feedforward norms as well as pre-norms. */
  sandwichNorm: boolean;
  activation: Activation;
  /** Multiply embeddings by this (Gemma: sqrt(hidden_size)). */
  embedScale: number;
  /** Softmax scale for attention scores. */
  attnScale: number;
  attnSoftcap: number;
  finalSoftcap: number;
  /** Per layer: 0 = full attention, else the sliding window size. */
  slidingWindow: number[];
  bosTokenId?: number;
  eosTokenIds: number[];
  /** Mixture-of-experts feed-forward; absent for dense models. */
  moe?: MoeConfig;
}

type Raw = Record<string, unknown>;

/**
 * Bounds on every config size that sizes an allocation (tensors, KV cache, RoPE tables, per-layer lists). They are
 * far above any released checkpoint and far below what would exhaust memory, so a typo (1e9 layers) fails at once.
 */
export const SIZE_LIMITS = {
  hidden_size: [1, 65536],
  num_hidden_layers: [1, 1024],
  num_attention_heads: [1, 1024],
  num_key_value_heads: [1, 1024],
  head_dim: [1, 2048],
  intermediate_size: [1, 1 << 20],
  vocab_size: [1, 1 << 22],
  max_position_embeddings: [1, 1 << 24],
  original_max_position_embeddings: [1, 1 << 24],
  sliding_window: [0, 1 << 24],
  sliding_window_pattern: [1, 1024],
  num_local_experts: [1, 4096],
  num_experts: [1, 4096],
  num_experts_per_tok: [1, 4096],
  moe_intermediate_size: [1, 1 << 20],
  decoder_sparse_step: [1, 1024],
} as const satisfies Record<string, readonly [number, number]>;

export type SizeField = keyof typeof SIZE_LIMITS;

/** An integer in [min, max] (a bigint from GGUF metadata too), or a ModelConfigError naming file, field, value and range. */
export function checkSize(file: string, field: string, v: unknown, [min, max]: readonly [number, number]): number {
  const n = typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    const shown = typeof v === 'bigint' ? v.toString() : JSON.stringify(v);
    throw new ModelConfigError(file, field, `must be an integer from ${min} to ${max}, got ${shown}`);
  }
  return n;
}

/** A positive finite number (epsilons, RoPE bases, scaling factors). */
export function checkPositive(file: string, field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new ModelConfigError(file, field, `must be a positive finite number, got ${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`);
  }
  return v;
}

function num(raw: Raw, file: string, key: string, fallback?: number): number {
  const v = raw[key];
  if (v === undefined || v === null) {
    if (fallback !== undefined) return fallback;
    throw new ModelConfigError(file, key, 'required field is missing');
  }
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ModelConfigError(file, key, `must be a number, got ${JSON.stringify(v)}`);
  return v;
}

function positive(raw: Raw, file: string, key: string, fallback?: number, prefix = ''): number {
  return checkPositive(file, prefix + key, num(raw, file, key, fallback));
}

function size(raw: Raw, file: string, key: SizeField, fallback?: number, prefix = ''): number {
  const v = raw[key];
  if (v === undefined || v === null) {
    if (fallback !== undefined) return checkSize(file, prefix + key, fallback, SIZE_LIMITS[key]);
    throw new ModelConfigError(file, prefix + key, 'required field is missing');
  }
  return checkSize(file, prefix + key, v, SIZE_LIMITS[key]);
}

function ids(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

function ropeScaling(raw: Raw, file: string): RopeScaling {
  const rs = raw.rope_scaling as Raw | null | undefined;
  if (!rs) return { type: 'default', factor: 1 };
  if (typeof rs !== 'object' || Array.isArray(rs)) throw new ModelConfigError(file, 'rope_scaling', `must be an object or null, got ${JSON.stringify(rs)}`);
  const type = String(rs.rope_type ?? rs.type ?? 'default');
  if (type === 'default') return { type: 'default', factor: 1 };
  const p = 'rope_scaling.';
  if (type === 'linear') return { type: 'linear', factor: positive(rs, file, 'factor', undefined, p) };
  if (type === 'llama3') {
    return {
      type: 'llama3',
      factor: positive(rs, file, 'factor', undefined, p),
      lowFreqFactor: positive(rs, file, 'low_freq_factor', undefined, p),
      highFreqFactor: positive(rs, file, 'high_freq_factor', undefined, p),
      originalMaxPositionEmbeddings: size(rs, file, 'original_max_position_embeddings', undefined, p),
    };
  }
  if (type === 'yarn') {
    const factor = positive(rs, file, 'factor', undefined, p);
    const orig = size(rs, file, 'original_max_position_embeddings', undefined, p);
    const opt = (key: string) => (rs[key] === undefined || rs[key] === null ? undefined : positive(rs, file, key, undefined, p));
    const mscale = opt('mscale');
    const mscaleAll = opt('mscale_all_dim');
    const getMscale = (sc: number, m = 1) => (sc <= 1 ? 1 : 0.1 * m * Math.log(sc) + 1);
    let attentionFactor = opt('attention_factor');
    if (attentionFactor === undefined) attentionFactor = mscale && mscaleAll ? getMscale(factor, mscale) / getMscale(factor, mscaleAll) : getMscale(factor);
    if (rs.truncate !== undefined && typeof rs.truncate !== 'boolean') throw new ModelConfigError(file, p + 'truncate', `must be true or false, got ${JSON.stringify(rs.truncate)}`);
    return {
      type: 'yarn',
      factor,
      originalMaxPositionEmbeddings: orig,
      // transformers: `beta_fast or 32` (a 0 falls back too)
      betaFast: opt('beta_fast') ?? 32,
      betaSlow: opt('beta_slow') ?? 1,
      truncate: rs.truncate !== false,
      attentionFactor,
    };
  }
  throw new ModelConfigError(file, 'rope_scaling.rope_type', `"${type}" is not supported (supported: default, linear, llama3, yarn)`);
}

function bool(raw: Raw, file: string, key: string, fallback: boolean): boolean {
  const v = raw[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw new ModelConfigError(file, key, `must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

/** layer_types (sliding_attention / full_attention per layer) -> per-layer window (0 = full). */
function layerWindows(raw: Raw, file: string, numLayers: number, window: number, fallback: (i: number) => string): number[] {
  let layerTypes = raw.layer_types as unknown;
  if (layerTypes === undefined || layerTypes === null) layerTypes = Array.from({ length: numLayers }, (_, i) => fallback(i));
  if (!Array.isArray(layerTypes)) throw new ModelConfigError(file, 'layer_types', `must be a list of "sliding_attention" / "full_attention", got ${JSON.stringify(layerTypes)}`);
  if (layerTypes.length !== numLayers) {
    throw new ModelConfigError(file, 'layer_types', `has ${layerTypes.length} entries but num_hidden_layers is ${numLayers}`);
  }
  const badType = layerTypes.findIndex((t) => t !== 'sliding_attention' && t !== 'full_attention');
  if (badType >= 0) {
    throw new ModelConfigError(file, `layer_types[${badType}]`, `${JSON.stringify(layerTypes[badType])} is not "sliding_attention" or "full_attention"`);
  }
  return layerTypes.map((t) => (t === 'sliding_attention' ? window : 0));
}

/** The experts' storage format from quantization_config (absent: plain floats; mxfp4: *_blocks + *_scales). */
function expertFormat(raw: Raw, file: string): MoeConfig['expertFormat'] {
  const q = raw.quantization_config as Raw | undefined | null;
  if (q === undefined || q === null) return 'float';
  if (typeof q !== 'object' || Array.isArray(q)) throw new ModelConfigError(file, 'quantization_config', `must be an object, got ${JSON.stringify(q)}`);
  const method = q.quant_method;
  if (method === 'mxfp4') return q.dequantize === true ? 'float' : 'mxfp4';
  throw new ModelConfigError(file, 'quantization_config.quant_method', `${JSON.stringify(method)} is not supported (supported: "mxfp4", or no quantization_config)`);
}

function moeCounts(raw: Raw, file: string, expertsKey: 'num_local_experts' | 'num_experts'): { numExperts: number; topK: number } {
  const numExperts = size(raw, file, expertsKey);
  const topK = size(raw, file, 'num_experts_per_tok');
  if (topK > numExperts) throw new ModelConfigError(file, 'num_experts_per_tok', `${topK} is more than ${expertsKey} ${numExperts}`);
  return { numExperts, topK };
}

interface Family {
  family: DecoderConfig['family'];
  build(raw: Raw, file: string, base: BaseFields): Partial<DecoderConfig>;
}

type BaseFields = Pick<DecoderConfig, 'hiddenSize' | 'numHeads' | 'headDim' | 'numLayers'>;

const FAMILIES: Record<string, Family> = {
  LlamaForCausalLM: {
    family: 'llama',
    build: (raw) => ({ attentionBias: Boolean(raw.attention_bias) }),
  },
  MistralForCausalLM: {
    family: 'llama',
    build: (raw, file, b) => ({ slidingWindow: Array(b.numLayers).fill(size(raw, file, 'sliding_window', 0)) }),
  },
  Qwen2ForCausalLM: {
    family: 'qwen2',
    build: () => ({ attentionBias: true }),
  },
  Qwen3ForCausalLM: {
    family: 'qwen3',
    build: (raw) => ({ qkNorm: true, attentionBias: Boolean(raw.attention_bias) }),
  },
  Gemma3ForCausalLM: {
    family: 'gemma3',
    build: (raw, file, b) => {
      const window = size(raw, file, 'sliding_window', 4096);
      const pattern = Array.isArray(raw.layer_types) ? 1 : size(raw, file, 'sliding_window_pattern', 6);
      const slidingWindow = layerWindows(raw, file, b.numLayers, window, (i) => ((i + 1) % pattern === 0 ? 'full_attention' : 'sliding_attention'));
      const qpas = positive(raw, file, 'query_pre_attn_scalar', b.headDim);
      const act = String(raw.hidden_activation ?? raw.hidden_act ?? 'gelu_pytorch_tanh');
      if (!/gelu/.test(act)) throw new ModelConfigError(file, 'hidden_activation', `"${act}" is not supported for Gemma 3 (gelu_pytorch_tanh)`);
      return {
        qkNorm: true,
        normAddOne: true,
        sandwichNorm: true,
        activation: 'gelu_tanh',
        embedScale: Math.sqrt(b.hiddenSize),
        attnScale: 1 / Math.sqrt(qpas),
        // transformers' Gemma 3 attention does not apply attn_logit_softcapping (checked against its outputs).
        attnSoftcap: 0,
        finalSoftcap: typeof raw.final_logit_softcapping === 'number' ? raw.final_logit_softcapping : 0,
        slidingWindow,
        ropeLocalTheta: positive(raw, file, 'rope_local_base_freq', 10000),
        attentionBias: Boolean(raw.attention_bias),
      };
    },
  },
  GptOssForCausalLM: {
    family: 'gpt_oss',
    build: (raw, file, b) => {
      const { numExperts, topK } = moeCounts(raw, file, 'num_local_experts');
      // sliding_window may be null (no sliding layers); layer_types default: even layers sliding, odd full
      const window = raw.sliding_window === null ? 0 : size(raw, file, 'sliding_window');
      const slidingWindow = layerWindows(raw, file, b.numLayers, window, (i) => ((i + 1) % 2 ? 'sliding_attention' : 'full_attention'));
      const badWindow = slidingWindow.findIndex((w, i) => w === 0 && (raw.layer_types as unknown[] | undefined)?.[i] === 'sliding_attention');
      if (badWindow >= 0) throw new ModelConfigError(file, 'sliding_window', `is null or 0 but layer_types[${badWindow}] is "sliding_attention"`);
      const attentionBias = bool(raw, file, 'attention_bias', true);
      return {
        attentionBias,
        oProjBias: attentionBias,
        attnSinks: true,
        slidingWindow,
        moe: {
          kind: 'gpt_oss',
          numExperts,
          topK,
          // gpt-oss: intermediate_size is the width of each expert (there is no dense MLP)
          expertIntermediateSize: size(raw, file, 'intermediate_size'),
          routing: 'topk_softmax',
          normTopkProb: false,
          routerBias: true,
          expertBias: true,
          activation: 'swiglu_clamped',
          swigluAlpha: positive(raw, file, 'swiglu_alpha', 1.702),
          swigluLimit: positive(raw, file, 'swiglu_limit', 7),
          expertFormat: expertFormat(raw, file),
          sparse: Array(b.numLayers).fill(true),
        },
      };
    },
  },
  Qwen3MoeForCausalLM: {
    family: 'qwen3_moe',
    build: (raw, file, b) => {
      const { numExperts, topK } = moeCounts(raw, file, 'num_experts');
      if (bool(raw, file, 'use_sliding_window', false)) {
        throw new ModelConfigError(file, 'use_sliding_window', 'true is not supported for Qwen3MoeForCausalLM (released checkpoints set false)');
      }
      const step = size(raw, file, 'decoder_sparse_step', 1);
      const only = raw.mlp_only_layers ?? [];
      if (!Array.isArray(only)) throw new ModelConfigError(file, 'mlp_only_layers', `must be a list of layer indices, got ${JSON.stringify(only)}`);
      const badOnly = only.findIndex((l) => typeof l !== 'number' || !Number.isInteger(l) || l < 0 || l >= b.numLayers);
      if (badOnly >= 0) throw new ModelConfigError(file, `mlp_only_layers[${badOnly}]`, `${JSON.stringify(only[badOnly])} is not a layer index from 0 to ${b.numLayers - 1}`);
      const dense = new Set(only as number[]);
      return {
        qkNorm: true,
        attentionBias: bool(raw, file, 'attention_bias', false),
        oProjBias: bool(raw, file, 'attention_bias', false),
        moe: {
          kind: 'qwen3_moe',
          numExperts,
          topK,
          expertIntermediateSize: size(raw, file, 'moe_intermediate_size'),
          routing: 'softmax_topk',
          normTopkProb: bool(raw, file, 'norm_topk_prob', false),
          routerBias: false,
          expertBias: false,
          activation: 'silu',
          swigluAlpha: 1,
          swigluLimit: 0,
          expertFormat: 'float',
          // transformers: MoE where the layer is not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0
          sparse: Array.from({ length: b.numLayers }, (_, l) => !dense.has(l) && (l + 1) % step === 0),
        },
      };
    },
  },
};

export const SUPPORTED_ARCHITECTURES = Object.keys(FAMILIES);

/**
 * transformers saves config.json as a diff against the config class defaults, so a field equal to its class
 * default may be absent. These are the defaults of the classes (the structural sizes stay required).
 */
const CLASS_DEFAULTS: Record<string, Raw> = {
  LlamaForCausalLM: { max_position_embeddings: 2048, rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: false, hidden_act: 'silu' },
  MistralForCausalLM: { max_position_embeddings: 131072, rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: false, num_key_value_heads: 8, hidden_act: 'silu' },
  Qwen2ForCausalLM: { max_position_embeddings: 32768, rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: false, num_key_value_heads: 32, hidden_act: 'silu' },
  Qwen3ForCausalLM: { max_position_embeddings: 32768, rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: false, num_key_value_heads: 32, head_dim: 128, hidden_act: 'silu' },
  Gemma3ForCausalLM: {
    max_position_embeddings: 131072,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    rope_local_base_freq: 10000,
    tie_word_embeddings: true,
    num_key_value_heads: 4,
    head_dim: 256,
    query_pre_attn_scalar: 256,
    sliding_window: 4096,
    hidden_activation: 'gelu_pytorch_tanh',
  },
  // GptOssConfig: rope_parameters default to YaRN (factor 32 over 4096 positions, beta 32/1, no truncation)
  GptOssForCausalLM: {
    max_position_embeddings: 131072,
    rms_norm_eps: 1e-5,
    rope_theta: 150000,
    rope_scaling: { rope_type: 'yarn', factor: 32, beta_fast: 32, beta_slow: 1, truncate: false, original_max_position_embeddings: 4096 },
    tie_word_embeddings: false,
    num_key_value_heads: 8,
    head_dim: 64,
    sliding_window: 128,
    num_experts_per_tok: 4,
    attention_bias: true,
    hidden_act: 'silu',
  },
  Qwen3MoeForCausalLM: {
    intermediate_size: 6144,
    max_position_embeddings: 32768,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    tie_word_embeddings: false,
    num_key_value_heads: 4,
    hidden_act: 'silu',
    decoder_sparse_step: 1,
    moe_intermediate_size: 768,
    num_experts_per_tok: 8,
    num_experts: 128,
    norm_topk_prob: false,
  },
};

/**
 * transformers 5 moved RoPE settings into `rope_parameters` ({rope_type, rope_theta, ...}; Gemma 3 keys them by
 * layer type). Fold them back into the flat fields this module reads.
 */
function flattenRopeParameters(raw: Raw): Raw {
  const rp = raw.rope_parameters as Raw | undefined;
  if (!rp || typeof rp !== 'object') return raw;
  const out: Raw = { ...raw };
  const full = (rp.full_attention ?? rp) as Raw;
  const local = rp.sliding_attention as Raw | undefined;
  if (typeof full.rope_theta === 'number') out.rope_theta = full.rope_theta;
  const type = full.rope_type ?? full.type;
  // an explicit default replaces a class default scaling (gpt-oss defaults to YaRN)
  out.rope_scaling = type && type !== 'default' ? full : null;
  if (local && typeof local.rope_theta === 'number') out.rope_local_base_freq = local.rope_theta;
  return out;
}

/** Normalize an HF config.json object (already parsed). `file` names it in errors. */
export function decoderConfigFromHF(given: Raw, file = 'config.json'): DecoderConfig {
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new ModelConfigError(file, '(file)', 'must hold a JSON object');
  const archs = given.architectures;
  if (!Array.isArray(archs) || typeof archs[0] !== 'string') {
    throw new ModelConfigError(file, 'architectures', 'required field is missing (expected e.g. ["LlamaForCausalLM"])');
  }
  const architecture = archs[0];
  const fam = Object.hasOwn(FAMILIES, architecture) ? FAMILIES[architecture] : undefined;
  if (!fam) throw new UnsupportedArchitectureError(file, architecture, SUPPORTED_ARCHITECTURES);
  const raw: Raw = { ...CLASS_DEFAULTS[architecture], ...flattenRopeParameters(given) };
  // Qwen3-MoE's expert count is `num_experts` in transformers 4 and the released configs, `num_local_experts` in
  // transformers 5's Qwen3MoeConfig: one field under two names (the class default fills neither if either is given)
  if (architecture === 'Qwen3MoeForCausalLM' && given.num_local_experts !== undefined) {
    if (given.num_experts !== undefined && given.num_experts !== given.num_local_experts) {
      throw new ModelConfigError(file, 'num_local_experts', `${JSON.stringify(given.num_local_experts)} disagrees with num_experts ${JSON.stringify(given.num_experts)} (the same field under two names)`);
    }
    raw.num_experts = given.num_local_experts;
  }
  // Every size is checked against SIZE_LIMITS before anything is allocated from it.
  const hiddenSize = size(raw, file, 'hidden_size');
  const numHeads = size(raw, file, 'num_attention_heads');
  const numLayers = size(raw, file, 'num_hidden_layers');
  if (raw.head_dim === undefined || raw.head_dim === null) {
    if (hiddenSize % numHeads !== 0) throw new ModelConfigError(file, 'head_dim', `missing, and cannot be derived: hidden_size ${hiddenSize} is not a multiple of num_attention_heads ${numHeads}`);
  }
  const headDim = size(raw, file, 'head_dim', hiddenSize / numHeads);
  const numKvHeads = size(raw, file, 'num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new ModelConfigError(file, 'num_key_value_heads', `${numKvHeads} must divide num_attention_heads ${numHeads}`);
  }
  const base: BaseFields = { hiddenSize, numHeads, headDim, numLayers };
  const cfg: DecoderConfig = {
    architecture,
    family: fam.family,
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    intermediateSize: size(raw, file, 'intermediate_size'),
    vocabSize: size(raw, file, 'vocab_size'),
    maxPositions: size(raw, file, 'max_position_embeddings', 4096),
    rmsNormEps: positive(raw, file, 'rms_norm_eps', 1e-6),
    ropeTheta: positive(raw, file, 'rope_theta', 10000),
    ropeScaling: ropeScaling(raw, file),
    tieWordEmbeddings: Boolean(raw.tie_word_embeddings ?? false),
    attentionBias: false,
    oProjBias: false,
    attnSinks: false,
    qkNorm: false,
    normAddOne: false,
    sandwichNorm: false,
    activation: 'silu',
    embedScale: 1,
    attnScale: 1 / Math.sqrt(headDim),
    attnSoftcap: 0,
    finalSoftcap: 0,
    slidingWindow: Array(numLayers).fill(0),
    bosTokenId: typeof raw.bos_token_id === 'number' ? raw.bos_token_id : undefined,
    eosTokenIds: ids(raw.eos_token_id),
    ...fam.build(raw, file, base),
  };
  const act = String(raw.hidden_act ?? (cfg.activation === 'silu' ? 'silu' : 'gelu_pytorch_tanh'));
  if (cfg.activation === 'silu' && act !== 'silu' && act !== 'swish') {
    throw new ModelConfigError(file, 'hidden_act', `"${act}" is not supported for ${architecture} (silu)`);
  }
  return cfg;
}
