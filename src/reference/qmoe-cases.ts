/**
 * Shared QMoE test cases (data only) and a seeded generator of valid quantised inputs for them, keyed by the
 * kernel contract's input names (spec/qmoe.contract.json). Used by the ORT oracle test and reusable by GPU tests.
 */
import { qmoeReference, type QmoeAttrs, type QmoeReferenceResult } from './qmoe.ts';

export interface QmoeCase {
  readonly name: string;
  /** Number of experts. */
  readonly E: number;
  readonly k: number;
  readonly hidden: number;
  readonly inter: number;
  readonly bits: 4 | 8;
  /** 0: per-row scales [E, rows]; otherwise block-wise scales [E, rows, cols / block]. */
  readonly block: number;
  readonly activation: 'relu' | 'swiglu';
  /** swiglu_limit; null: attribute absent (no clamp). Ignored for relu. */
  readonly limit: number | null;
  readonly tokens: number;
  /** Whether fc1_experts_bias and fc2_experts_bias are given. */
  readonly biases: boolean;
  /** activation_alpha / activation_beta (SwiGLU); defaults 1 and 0 (ORT's defaults) when absent. */
  readonly alpha?: number;
  readonly beta?: number;
  readonly normalize?: 0 | 1;
  /** When set, the input is rank 3: [batch, tokens / batch, hidden]. */
  readonly batch?: number;
}

export const QMOE_CASES: readonly QmoeCase[] = [
  { name: 'k1-b4-row-relu-t1', E: 4, k: 1, hidden: 64, inter: 32, bits: 4, block: 0, activation: 'relu', limit: null, tokens: 1, biases: false },
  { name: 'k2-b8-row-relu-t64-bias', E: 4, k: 2, hidden: 64, inter: 64, bits: 8, block: 0, activation: 'relu', limit: null, tokens: 64, biases: true },
  { name: 'k2-b4-blk16-swiglu-t1', E: 4, k: 2, hidden: 64, inter: 32, bits: 4, block: 16, activation: 'swiglu', limit: null, tokens: 1, biases: false },
  { name: 'k4-b4-blk32-swiglu-limit-t64-bias', E: 8, k: 4, hidden: 128, inter: 64, bits: 4, block: 32, activation: 'swiglu', limit: 2.5, tokens: 64, biases: true },
  { name: 'k4-b8-blk64-relu-t80', E: 8, k: 4, hidden: 128, inter: 64, bits: 8, block: 64, activation: 'relu', limit: null, tokens: 80, biases: false },
  { name: 'k1-b8-blk16-swiglu-limit-t64', E: 6, k: 1, hidden: 64, inter: 48, bits: 8, block: 16, activation: 'swiglu', limit: 2, tokens: 64, biases: false },
  { name: 'k2-b4-blk64-relu-t1-bias', E: 4, k: 2, hidden: 128, inter: 64, bits: 4, block: 64, activation: 'relu', limit: null, tokens: 1, biases: true },
  { name: 'k4-b4-row-swiglu-limit-t1-bias', E: 8, k: 4, hidden: 64, inter: 32, bits: 4, block: 0, activation: 'swiglu', limit: 3, tokens: 1, biases: true },
  { name: 'k2-b8-row-swiglu-t64', E: 4, k: 2, hidden: 64, inter: 64, bits: 8, block: 0, activation: 'swiglu', limit: null, tokens: 64, biases: false },
  { name: 'k1-b4-blk32-relu-t64-bias-rank3', E: 4, k: 1, hidden: 96, inter: 64, bits: 4, block: 32, activation: 'relu', limit: null, tokens: 64, biases: true, batch: 2 },
  { name: 'k2-b8-blk32-swiglu-limit-t96-bias-norm', E: 8, k: 2, hidden: 64, inter: 32, bits: 8, block: 32, activation: 'swiglu', limit: 2.5, tokens: 96, biases: true, normalize: 1 },
  { name: 'k4-b4-blk16-relu-t72-odd', E: 6, k: 4, hidden: 48, inter: 80, bits: 4, block: 16, activation: 'relu', limit: null, tokens: 72, biases: false },
  { name: 'k4of4-b8-row-relu-t1', E: 4, k: 4, hidden: 32, inter: 16, bits: 8, block: 0, activation: 'relu', limit: null, tokens: 1, biases: false },
  { name: 'k2-b4-blk64-swiglu-gptoss-t64-bias', E: 8, k: 2, hidden: 128, inter: 64, bits: 4, block: 64, activation: 'swiglu', limit: 7, tokens: 64, biases: true, alpha: 1.702, beta: 1 },
];

export type QmoeTensorName = 'inputT' | 'routerT' | 'fc1T' | 'fc1ScalesT' | 'fc1BiasT' | 'fc2T' | 'fc2ScalesT' | 'fc2BiasT';

/**
 * Contract input name → ONNX input name and position in the QMoE node (ORT's schema: 0 input, 1 router_probs,
 * 2 fc1_experts_weights, 3 fc1_scales, 4 fc1_experts_bias, 5 fc2_experts_weights, 6 fc2_scales,
 * 7 fc2_experts_bias; 8-10 fc3_*, 11-13 fc*_zero_points, 14 router_weights are not used here).
 * fc1BiasT / fc2BiasT are not in the contract (it has no bias inputs); the names are this module's.
 */
export const QMOE_ONNX_INPUTS: readonly { readonly key: QmoeTensorName; readonly onnx: string; readonly index: number }[] = [
  { key: 'inputT', onnx: 'input', index: 0 },
  { key: 'routerT', onnx: 'router_probs', index: 1 },
  { key: 'fc1T', onnx: 'fc1_experts_weights', index: 2 },
  { key: 'fc1ScalesT', onnx: 'fc1_scales', index: 3 },
  { key: 'fc1BiasT', onnx: 'fc1_experts_bias', index: 4 },
  { key: 'fc2T', onnx: 'fc2_experts_weights', index: 5 },
  { key: 'fc2ScalesT', onnx: 'fc2_scales', index: 6 },
  { key: 'fc2BiasT', onnx: 'fc2_experts_bias', index: 7 },
];

export type QmoeTensor =
  | { dtype: 'float32'; shape: number[]; data: Float32Array }
  | { dtype: 'uint8'; shape: number[]; data: Uint8Array };

export type QmoeTensors = {
  inputT: { dtype: 'float32'; shape: number[]; data: Float32Array };
  routerT: { dtype: 'float32'; shape: number[]; data: Float32Array };
  fc1T: { dtype: 'uint8'; shape: number[]; data: Uint8Array };
  fc1ScalesT: { dtype: 'float32'; shape: number[]; data: Float32Array };
  fc2T: { dtype: 'uint8'; shape: number[]; data: Uint8Array };
  fc2ScalesT: { dtype: 'float32'; shape: number[]; data: Float32Array };
  fc1BiasT?: { dtype: 'float32'; shape: number[]; data: Float32Array };
  fc2BiasT?: { dtype: 'float32'; shape: number[]; data: Float32Array };
};

export interface QmoeInputs {
  tensors: QmoeTensors;
  /** ONNX attributes of the node (only ones ORT's QMoE schema knows; unset optional ones are absent). */
  attrs: QmoeAttrs;
}

/** mulberry32: small, fast, deterministic. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(rand: () => number): () => number {
  return () => {
    const u = Math.max(rand(), 1e-12);
    const v = rand();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
}

/** The node attributes for a case. */
export function qmoeCaseAttrs(c: QmoeCase): QmoeAttrs {
  const attrs: QmoeAttrs = {
    k: c.k,
    activation_type: c.activation,
    expert_weight_bits: c.bits,
    swiglu_fusion: c.activation === 'swiglu' ? 1 : 0,
    normalize_routing_weights: c.normalize ?? 0,
  };
  if (c.block > 0) attrs.block_size = c.block;
  if (c.activation === 'swiglu') {
    attrs.activation_alpha = c.alpha ?? 1;
    attrs.activation_beta = c.beta ?? 0;
    if (c.limit !== null) attrs.swiglu_limit = c.limit;
  }
  return attrs;
}

/**
 * Random but valid QMoE inputs for `c`: activations ~ N(0, 1), router logits ~ N(0, 2²), full-range quantised
 * weights, positive scales sized so FC1 pre-activations have a standard deviation of about 2 (so a SwiGLU limit
 * of 2-3 clamps a good share of values), biases ~ N(0, 0.5²). Deterministic in `seed`.
 */
export function makeQmoeInputs(c: QmoeCase, seed: number): QmoeInputs {
  const { E, hidden, inter, bits, block, tokens } = c;
  if (block > 0 && (hidden % block !== 0 || inter % block !== 0)) {
    throw new Error(`QMoE case ${c.name}: block ${block} must divide hidden ${hidden} and inter ${inter}`);
  }
  if (bits === 4 && (hidden % 2 !== 0 || inter % 2 !== 0)) throw new Error(`QMoE case ${c.name}: 4-bit needs even hidden/inter`);
  if (c.batch !== undefined && tokens % c.batch !== 0) throw new Error(`QMoE case ${c.name}: batch ${c.batch} must divide tokens ${tokens}`);
  const rand = seededRandom(seed);
  const randn = gaussian(rand);
  const fusion = c.activation === 'swiglu' ? 2 : 1;
  const fc1Rows = fusion * inter;
  const pack = bits === 4 ? 2 : 1;
  const levels = bits === 4 ? 16 : 256;
  const qStd = levels / Math.sqrt(12);

  const f32 = (n: number, gen: () => number): Float32Array => Float32Array.from({ length: n }, gen);
  const quant = (rows: number, cols: number): Uint8Array => {
    const out = new Uint8Array(E * rows * (cols / pack));
    for (let i = 0; i < out.length; i++) {
      out[i] = bits === 4 ? Math.floor(rand() * 16) | (Math.floor(rand() * 16) << 4) : Math.floor(rand() * 256);
    }
    return out;
  };
  const scales = (rows: number, cols: number, targetStd: number, inStd: number): Float32Array => {
    const blocks = block > 0 ? cols / block : 1;
    const base = targetStd / (Math.sqrt(cols) * qStd * inStd);
    return f32(E * rows * blocks, () => base * (0.5 + rand()));
  };

  const inputShape = c.batch !== undefined ? [c.batch, tokens / c.batch, hidden] : [tokens, hidden];
  const tensors: QmoeTensors = {
    inputT: { dtype: 'float32', shape: inputShape, data: f32(tokens * hidden, randn) },
    routerT: { dtype: 'float32', shape: [tokens, E], data: f32(tokens * E, () => 2 * randn()) },
    fc1T: { dtype: 'uint8', shape: [E, fc1Rows, hidden / pack], data: quant(fc1Rows, hidden) },
    fc1ScalesT: {
      dtype: 'float32',
      shape: block > 0 ? [E, fc1Rows, hidden / block] : [E, fc1Rows],
      data: scales(fc1Rows, hidden, 2, 1),
    },
    fc2T: { dtype: 'uint8', shape: [E, hidden, inter / pack], data: quant(hidden, inter) },
    fc2ScalesT: {
      dtype: 'float32',
      shape: block > 0 ? [E, hidden, inter / block] : [E, hidden],
      data: scales(hidden, inter, 1, 1),
    },
  };
  if (c.biases) {
    tensors.fc1BiasT = { dtype: 'float32', shape: [E, fc1Rows], data: f32(E * fc1Rows, () => 0.5 * randn()) };
    tensors.fc2BiasT = { dtype: 'float32', shape: [E, hidden], data: f32(E * hidden, () => 0.5 * randn()) };
  }
  return { tensors, attrs: qmoeCaseAttrs(c) };
}

/** Runs the CPU reference on makeQmoeInputs-style tensors. */
export function qmoeReferenceFromTensors(tensors: QmoeTensors, attrs: QmoeAttrs): QmoeReferenceResult {
  return qmoeReference({
    input: tensors.inputT.data,
    router: tensors.routerT.data,
    fc1: tensors.fc1T.data,
    fc1Scales: tensors.fc1ScalesT.data,
    fc2: tensors.fc2T.data,
    fc2Scales: tensors.fc2ScalesT.data,
    ...(tensors.fc1BiasT ? { fc1Bias: tensors.fc1BiasT.data } : {}),
    ...(tensors.fc2BiasT ? { fc2Bias: tensors.fc2BiasT.data } : {}),
    shapes: {
      input: tensors.inputT.shape,
      router: tensors.routerT.shape,
      fc1: tensors.fc1T.shape,
      fc1Scales: tensors.fc1ScalesT.shape,
      fc2: tensors.fc2T.shape,
      fc2Scales: tensors.fc2ScalesT.shape,
    },
    attrs,
  });
}
