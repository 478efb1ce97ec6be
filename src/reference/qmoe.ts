/**
 * CPU reference of com.microsoft.QMoE (quantised mixture of experts) with the semantics of ONNX Runtime's CPU
 * kernel (onnxruntime/contrib_ops/cpu/moe/moe_quantization_cpu.cc, moe_utils.cc, moe_helper.h, moe_base_cpu.h).
 * Float math is done in f64; the result is rounded to f32 once at the end.
 *
 * Semantics (per token):
 *  1. Routing: the k largest router logits are selected (ties: the higher expert index wins, as with ORT's
 *     std::partial_sort over (logit, index) pairs with std::greater). The mixing weights are a softmax over those
 *     k logits only. `normalize_routing_weights` has no effect here (ORT reads it only with `router_weights`).
 *     With the optional `router_weights` input (ORT input 14), the k weights are instead gathered from it at the
 *     selected experts, divided by their sum when normalize_routing_weights = 1 (sum 0 → weights 0).
 *     Routes whose f32 weight is not > 1e-8 are skipped.
 *  2. FC1: W1[e] is [fc1Rows, hidden] (one row per output feature), stored [E, fc1Rows, hidden / pack] with
 *     4-bit values low nibble first; dequantised symmetrically as (q - 8) * s (4-bit) or (q - 128) * s (8-bit),
 *     s per row ([E, rows] or [E, rows, 1]) or per block of `block_size` columns ([E, rows, ceil(cols / block)]);
 *     each tensor's layout is read from its own scale shape (see qmoeOrtScaleShapeIssue for ORT's extra check).
 *     h = W1[e] · x (+ fc1_bias[e]).
 *  3. Activation: ReLU; or SwiGLU with interleaved pairs (swiglu_fusion = 1): gate = h[2i], linear = h[2i+1],
 *     gate = min(gate, limit), linear = clamp(linear, -limit, limit) (limit = swiglu_limit, +inf when absent),
 *     a[i] = gate · sigmoid(alpha · gate) · (linear + beta).
 *  4. FC2: y = W2[e] · a (+ fc2_bias[e]), W2[e] is [hidden, inter]; output[token] += weight · y.
 */

export type QmoeActivation = 'relu' | 'swiglu';

export interface QmoeAttrs {
  k: number;
  activation_type: QmoeActivation;
  expert_weight_bits: 4 | 8;
  /** 0 or absent: one scale per row; otherwise scales per block of this many input columns. */
  block_size?: number;
  /** Must be 1 for 'swiglu' (interleaved gate/linear), 0 for 'relu'. Defaults accordingly. */
  swiglu_fusion?: number;
  activation_alpha?: number;
  activation_beta?: number;
  /** Absent: no clamping. */
  swiglu_limit?: number;
  normalize_routing_weights?: number;
}

export interface QmoeShapes {
  input: readonly number[];
  router: readonly number[];
  fc1: readonly number[];
  fc1Scales: readonly number[];
  fc2: readonly number[];
  fc2Scales: readonly number[];
}

export interface QmoeReferenceArgs {
  input: Float32Array;
  /** Router logits, [tokens, E] (ONNX input `router_probs`). */
  router: Float32Array;
  fc1: Uint8Array;
  fc1Scales: Float32Array;
  fc2: Uint8Array;
  fc2Scales: Float32Array;
  /** [E, fc1Rows] */
  fc1Bias?: Float32Array;
  /** [E, hidden] */
  fc2Bias?: Float32Array;
  /** Optional aggregation weights [tokens, E] (ORT input 14, `router_weights`). */
  routerWeights?: Float32Array;
  shapes: QmoeShapes;
  attrs: QmoeAttrs;
}

export interface QmoeReferenceResult {
  /** Same shape as the input. */
  output: Float32Array;
  shape: number[];
  /** [tokens, k] selected experts, best first. */
  routeExpert: Int32Array;
  /** [tokens, k] mixing weights (f32, as ORT stores them). */
  routeWeight: Float32Array;
}

export interface QmoeDims {
  tokens: number;
  hidden: number;
  experts: number;
  inter: number;
  fc1Rows: number;
  fusion: number;
  bits: 4 | 8;
  pack: number;
  midpoint: number;
  blockSize: number;
  /** Scale blocks per row (1: per-row scales). */
  fc1Blocks: number;
  fc2Blocks: number;
  /** Block size used to dequantise each tensor (0: per-row). */
  fc1BlockSize: number;
  fc2BlockSize: number;
  k: number;
}

function fail(msg: string): never {
  throw new Error(`QMoE reference: ${msg}`);
}

function fmt(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

function expectShape(name: string, shape: readonly number[], want: readonly number[]): void {
  if (shape.length !== want.length || shape.some((d, i) => d !== want[i])) {
    fail(`${name} has shape ${fmt(shape)}, expected ${fmt(want)}`);
  }
}

function expectLength(name: string, data: ArrayLike<unknown>, shape: readonly number[]): void {
  const n = shape.reduce((a, b) => a * b, 1);
  if (data.length !== n) fail(`${name} has ${data.length} elements, its shape ${fmt(shape)} needs ${n}`);
}

/**
 * Validates shapes and attributes and returns the derived sizes. Follows ORT's CPU kernel, except that each scale
 * tensor's layout is read from its own shape (ORT's input check is stricter: qmoeOrtScaleShapeIssue) and that a
 * negative swiglu_limit is rejected (ORT 1.30 aborts the process on it: std::clamp with hi < lo).
 */
export function qmoeDims(shapes: QmoeShapes, attrs: QmoeAttrs): QmoeDims {
  const bits = attrs.expert_weight_bits;
  if (bits !== 4 && bits !== 8) fail(`attribute expert_weight_bits must be 4 or 8, got ${String(bits)}`);
  const act = attrs.activation_type;
  if (act !== 'relu' && act !== 'swiglu') fail(`attribute activation_type must be 'relu' or 'swiglu', got '${String(act)}'`);
  const fusionAttr = attrs.swiglu_fusion ?? (act === 'swiglu' ? 1 : 0);
  if (act === 'swiglu' && fusionAttr !== 1) fail(`activation_type 'swiglu' needs swiglu_fusion = 1 (interleaved), got ${fusionAttr}`);
  if (act === 'relu' && fusionAttr !== 0) fail(`swiglu_fusion must be 0 with activation_type 'relu', got ${fusionAttr}`);
  if (attrs.swiglu_limit !== undefined && !(attrs.swiglu_limit >= 0)) {
    fail(`attribute swiglu_limit must be >= 0, got ${attrs.swiglu_limit}`);
  }
  const blockSize = attrs.block_size ?? 0;
  if (!Number.isInteger(blockSize) || blockSize < 0) fail(`attribute block_size must be a non-negative integer, got ${blockSize}`);
  if (blockSize > 0 && (blockSize < 16 || (blockSize & (blockSize - 1)) !== 0)) {
    fail(`attribute block_size must be a power of 2 and >= 16, got ${blockSize}`);
  }
  const { input, router, fc1, fc2 } = shapes;
  if (input.length !== 2 && input.length !== 3) fail(`input must be rank 2 or 3, got ${fmt(input)}`);
  if (router.length !== 2) fail(`router_probs must be rank 2, got ${fmt(router)}`);
  if (fc1.length !== 3) fail(`fc1_experts_weights must be rank 3, got ${fmt(fc1)}`);
  if (fc2.length !== 3) fail(`fc2_experts_weights must be rank 3, got ${fmt(fc2)}`);
  const hidden = input[input.length - 1]!;
  const tokens = input.length === 2 ? input[0]! : input[0]! * input[1]!;
  const experts = router[1]!;
  const pack = bits === 4 ? 2 : 1;
  const fusion = act === 'swiglu' ? 2 : 1;
  if (hidden <= 0) fail(`hidden size must be positive, got input ${fmt(input)}`);
  const inter = (fc2[1]! * fc2[2]! * pack) / hidden;
  if (!Number.isInteger(inter) || inter <= 0) fail(`cannot derive inter size from fc2_experts_weights ${fmt(fc2)} and hidden ${hidden}`);
  const fc1Rows = fusion * inter;
  expectShape('router_probs', router, [tokens, experts]);
  expectShape('fc1_experts_weights', fc1, [experts, fc1Rows, Math.ceil(hidden / pack)]);
  expectShape('fc2_experts_weights', fc2, [experts, hidden, Math.ceil(inter / pack)]);
  if (fc1[2]! * pack !== hidden) fail(`fc1_experts_weights ${fmt(fc1)}: hidden ${hidden} is not ${pack} × dim 2`);
  if (fc2[2]! * pack !== inter) fail(`fc2_experts_weights ${fmt(fc2)}: inter ${inter} is not ${pack} × dim 2`);
  const fc1Blocks = scaleBlocks('fc1_scales', shapes.fc1Scales, experts, fc1Rows, hidden, blockSize);
  const fc2Blocks = scaleBlocks('fc2_scales', shapes.fc2Scales, experts, hidden, inter, blockSize);
  const k = attrs.k;
  if (!Number.isInteger(k) || k < 1 || k > experts) fail(`attribute k must be in [1, ${experts}], got ${k}`);
  return {
    tokens, hidden, experts, inter, fc1Rows, fusion, bits, pack, midpoint: bits === 4 ? 8 : 128, blockSize,
    fc1Blocks, fc2Blocks, fc1BlockSize: fc1Blocks > 1 ? blockSize : 0, fc2BlockSize: fc2Blocks > 1 ? blockSize : 0, k,
  };
}

/**
 * Scale layout of one weight tensor ([E, rows, cols]): [E, rows] or [E, rows, 1] is one scale per row; with
 * block_size > 0, [E, rows, ceil(cols / block_size)] is one scale per block. As in ORT's compute path, a tensor is
 * block-wise exactly when its scales are rank 3 with more than one block. Returns the number of blocks per row.
 */
function scaleBlocks(name: string, shape: readonly number[], experts: number, rows: number, cols: number, blockSize: number): number {
  const blocks = blockSize > 0 ? Math.ceil(cols / blockSize) : 1;
  const ok =
    (shape.length === 2 && shape[0] === experts && shape[1] === rows) ||
    (shape.length === 3 && shape[0] === experts && shape[1] === rows && (shape[2] === 1 || shape[2] === blocks));
  if (!ok) {
    const want = blocks > 1 ? `[${experts}, ${rows}, ${blocks}] (block_size ${blockSize})` : `[${experts}, ${rows}] or [${experts}, ${rows}, 1]`;
    fail(`${name} has shape ${fmt(shape)}, expected ${want}${blocks > 1 ? ` or per-row [${experts}, ${rows}]` : ''}`);
  }
  return shape.length === 3 ? shape[2]! : 1;
}

/**
 * ORT 1.30's input check (moe_helper.h CheckInputs) is stricter than its compute path: the mode is taken from
 * fc1_scales (block-wise iff block_size > 0 and fc1_scales is [E, rows, n] with n > 1) and fc2_scales must then
 * follow the same mode. Returns why ORT would reject the scale shapes, or null when it accepts them. Shapes that
 * ORT rejects here are still well defined for the reference (each tensor by its own layout), e.g. hidden ==
 * block_size with inter > block_size, which the kernel contract allows.
 */
export function qmoeOrtScaleShapeIssue(shapes: QmoeShapes, attrs: QmoeAttrs): string | null {
  const d = qmoeDims(shapes, attrs);
  const fc1BlockMode = d.blockSize > 0 && shapes.fc1Scales.length === 3 && shapes.fc1Scales[2]! > 1;
  const s2 = shapes.fc2Scales;
  if (fc1BlockMode) {
    const want = Math.ceil(d.inter / d.blockSize);
    if (s2.length !== 3 || s2[2] !== want) return `fc2_scales must be [${d.experts}, ${d.hidden}, ${want}] when fc1_scales is block-wise`;
  } else if (s2.length === 3 && s2[2] !== 1) {
    return `fc2_scales must be [${d.experts}, ${d.hidden}] or [${d.experts}, ${d.hidden}, 1] when fc1_scales has one scale per row`;
  }
  return null;
}

/** Dequantises one expert's [rows, cols] weight matrix (symmetric, no zero points). */
export function dequantizeExpert(
  packed: Uint8Array,
  scales: Float32Array,
  expert: number,
  rows: number,
  cols: number,
  bits: 4 | 8,
  blockSize: number,
): Float64Array {
  const pack = bits === 4 ? 2 : 1;
  const packedCols = Math.ceil(cols / pack);
  const blocks = blockSize > 0 ? Math.ceil(cols / blockSize) : 1;
  const mid = bits === 4 ? 8 : 128;
  const out = new Float64Array(rows * cols);
  const wBase = expert * rows * packedCols;
  const sBase = expert * rows * blocks;
  for (let r = 0; r < rows; r++) {
    const rowW = wBase + r * packedCols;
    for (let c = 0; c < cols; c++) {
      const s = scales[sBase + r * blocks + (blockSize > 0 ? Math.floor(c / blockSize) : 0)]!;
      let q: number;
      if (bits === 4) {
        const b = packed[rowW + (c >> 1)]!;
        q = c & 1 ? b >> 4 : b & 0x0f;
      } else {
        q = packed[rowW + c]!;
      }
      out[r * cols + c] = s * (q - mid);
    }
  }
  return out;
}

/** Top-k expert selection and mixing weights for one token, as ORT's CPU kernel computes them. */
export function qmoeRoute(
  logits: ArrayLike<number>,
  k: number,
  opts: { routerWeights?: ArrayLike<number>; normalize?: boolean } = {},
): { experts: number[]; weights: number[] } {
  const n = logits.length;
  const idx = Array.from({ length: n }, (_, i) => i);
  // Descending by logit; equal logits: higher index first (std::greater on (value, index) pairs).
  idx.sort((a, b) => {
    const la = logits[a]!;
    const lb = logits[b]!;
    if (la !== lb) return lb > la ? 1 : -1;
    return b - a;
  });
  const experts = idx.slice(0, k);
  let weights: number[];
  if (opts.routerWeights) {
    const rw = opts.routerWeights;
    const g = experts.map((e) => Math.fround(rw[e]!));
    if (opts.normalize) {
      const sum = g.reduce((a, b) => a + b, 0);
      weights = g.map((v) => (sum === 0 ? 0 : v / sum));
    } else {
      weights = g;
    }
  } else {
    const max = logits[experts[0]!]!;
    const ex = experts.map((e) => Math.exp(logits[e]! - max));
    const sum = ex.reduce((a, b) => a + b, 0);
    weights = ex.map((v) => (sum === 0 ? 0 : v / sum));
  }
  return { experts, weights };
}

export function qmoeReference(args: QmoeReferenceArgs): QmoeReferenceResult {
  const { attrs, shapes } = args;
  const d = qmoeDims(shapes, attrs);
  expectLength('input', args.input, shapes.input);
  expectLength('router_probs', args.router, shapes.router);
  expectLength('fc1_experts_weights', args.fc1, shapes.fc1);
  expectLength('fc1_scales', args.fc1Scales, shapes.fc1Scales);
  expectLength('fc2_experts_weights', args.fc2, shapes.fc2);
  expectLength('fc2_scales', args.fc2Scales, shapes.fc2Scales);
  if (args.fc1Bias) expectLength('fc1_experts_bias', args.fc1Bias, [d.experts, d.fc1Rows]);
  if (args.fc2Bias) expectLength('fc2_experts_bias', args.fc2Bias, [d.experts, d.hidden]);
  if (args.routerWeights) expectLength('router_weights', args.routerWeights, [d.tokens, d.experts]);

  const alpha = attrs.activation_alpha ?? 1;
  const beta = attrs.activation_beta ?? 0;
  const limit = attrs.swiglu_limit ?? Infinity;
  const normalize = (attrs.normalize_routing_weights ?? 0) === 1;
  const { tokens, hidden, experts, inter, fc1Rows, k } = d;

  const w1Cache = new Map<number, Float64Array>();
  const w2Cache = new Map<number, Float64Array>();
  const w1 = (e: number): Float64Array => {
    let m = w1Cache.get(e);
    if (!m) w1Cache.set(e, (m = dequantizeExpert(args.fc1, args.fc1Scales, e, fc1Rows, hidden, d.bits, d.fc1BlockSize)));
    return m;
  };
  const w2 = (e: number): Float64Array => {
    let m = w2Cache.get(e);
    if (!m) w2Cache.set(e, (m = dequantizeExpert(args.fc2, args.fc2Scales, e, hidden, inter, d.bits, d.fc2BlockSize)));
    return m;
  };

  const output = new Float32Array(tokens * hidden);
  const routeExpert = new Int32Array(tokens * k);
  const routeWeight = new Float32Array(tokens * k);
  const acc = new Float64Array(hidden);
  const h = new Float64Array(fc1Rows);
  const a = new Float64Array(inter);

  for (let t = 0; t < tokens; t++) {
    const logits = args.router.subarray(t * experts, (t + 1) * experts);
    const rw = args.routerWeights ? args.routerWeights.subarray(t * experts, (t + 1) * experts) : undefined;
    const route = qmoeRoute(logits, k, { ...(rw ? { routerWeights: rw } : {}), normalize });
    acc.fill(0);
    const xo = t * hidden;
    for (let j = 0; j < k; j++) {
      const e = route.experts[j]!;
      const weight = route.weights[j]!;
      routeExpert[t * k + j] = e;
      routeWeight[t * k + j] = weight;
      if (!(Math.fround(weight) > 1e-8)) continue; // ORT skips (near-)zero-weight routes

      const W1 = w1(e);
      for (let r = 0; r < fc1Rows; r++) {
        let s = 0;
        const wo = r * hidden;
        for (let c = 0; c < hidden; c++) s += W1[wo + c]! * args.input[xo + c]!;
        h[r] = s + (args.fc1Bias ? args.fc1Bias[e * fc1Rows + r]! : 0);
      }
      if (attrs.activation_type === 'swiglu') {
        for (let i = 0; i < inter; i++) {
          const gate = Math.min(h[2 * i]!, limit);
          const lin = Math.min(Math.max(h[2 * i + 1]!, -limit), limit);
          a[i] = (gate / (1 + Math.exp(-alpha * gate))) * (lin + beta);
        }
      } else {
        for (let i = 0; i < inter; i++) a[i] = Math.max(0, h[i]!);
      }
      const W2 = w2(e);
      for (let r = 0; r < hidden; r++) {
        let s = 0;
        const wo = r * inter;
        for (let c = 0; c < inter; c++) s += W2[wo + c]! * a[c]!;
        acc[r] = acc[r]! + weight * (s + (args.fc2Bias ? args.fc2Bias[e * hidden + r]! : 0));
      }
    }
    for (let r = 0; r < hidden; r++) output[xo + r] = acc[r]!;
  }
  return { output, shape: [...shapes.input], routeExpert, routeWeight };
}
