/**
 * Op-test cases. OP_CASES is keyed by registry operation (a missing operation is a type error). A case gives what a
 * model would hand an op contract: tensor shapes (by contract tensor name), dtypes, attributes, and a seeded
 * generator of the input contents; the op contracts it may run through are listed most specific first (the
 * model's contract, then the kernel's general form in src/ops/contracts/). Uniform values and dispatch sizes come
 * from the contract variant that runs each registry kernel; the CPU reference reads the plan's uniform values.
 */
import type { AttributeValue } from '../contracts/index.ts';
import type { HostTensors, ReferenceOp } from '../reference/ops.ts';
import { ropeLinearTables, type RopeUniforms } from '../reference/rope.ts';
import type { KernelVariant } from '../registry/types.ts';
import { ATTENTION_CASES } from './cases-attention.ts';
import { FUSED_FFN_CASES } from './cases-fused-ffn.ts';
import { coversMatmulQuant, MATMUL_QUANT_CASES } from './cases-matmul-quant.ts';
import { GATHER_CASES } from './cases-gather.ts';
import { BIAS_ADD_CASES, CAST_CASES, DEQUANT_CASES, GELU_CASES, gluCase, RMSNORM_QK_CASES, SCALE_CASES, withExtraCases } from './cases-small.ts';
import { REP_PENALTY_CASES } from './cases-rep-penalty.ts';
import { RESIDUAL_CASES, withF16Twins } from './cases-f16.ts';
import { BF16_TO_F16_CASES, BF16_TO_F32_CASES, CLAMP_CASES, contiguousBiasAdd, f16Twins, RELU_CASES, ROPE_QK_CASES, SPLIT_QG_CASES, SPLIT_QKV_CASES, TRANSPOSE_CASES, withTunables } from './cases-elementwise.ts';
import { GATHER_SPLIT4_CASES, GATHER_SPLIT8_CASES, MOE_OFFSETS_CASES, SCATTER_ADD_CASES, TOPK_CASES, LM_HEAD_ARGMAX_CASES, MOE_GATHER_CASES } from './cases-moe-routing.ts';

const isF16 = (v: KernelVariant) => v.requires.includes('shader-f16');
/** gated-activation cases with separate gate and up (glu.contract.json, which has the f16 kernels) */
const separateGlu = (c: OpCase) => c.contracts?.[0] === 'glu';

export type Shapes = Readonly<Record<string, readonly number[]>>;

export interface OpCase {
  /** Unique within its operation; seeds the RNG (`op/name`). */
  name: string;
  /** Shapes of the contract inputs; a function where the layout depends on the kernel (rope.qk's fused Q+K heads). */
  shapes: Shapes | ((v: KernelVariant) => Shapes);
  /** Dtypes of inputs whose type constraint allows several. */
  dtypes?: Readonly<Record<string, string>>;
  attributes?: Readonly<Record<string, AttributeValue>>;
  /** Contract tunables of this case (e.g. one that turns on the kernel it tests); HarnessOptions.tunables win. */
  tunables?: Readonly<Record<string, number | string | boolean>>;
  /** Op contracts this case may run through, tried in order (default: the operation's). */
  contracts?: readonly string[];
  /** Contents of every contract input (by contract name); a buffer may be longer than its shape (its tail must stay). */
  inputs(rng: import('./rng.ts').Rng): HostTensors;
  /** Restrict the case to some variants (default: all variants the op's cases cover). */
  only?: (v: KernelVariant) => boolean;
  /**
   * Too slow for SwiftShader (about 1 ms per 256-invocation workgroup with barriers): run only when the harness is
   * asked for heavy cases (selftest does so on real GPUs).
   */
  heavy?: boolean;
}

export interface OpCases {
  /** Op contracts whose variants run this operation's kernels, most specific first (src/ops/contracts/<name>.contract.json). */
  contracts: readonly string[];
  /** Registry bindings the operation writes; compared with the reference. Other writable bindings must stay as given. */
  written: readonly string[];
  /** Why these cases do not apply to a variant (its dtypes, a different binding set), or undefined when they do. */
  notCovered(v: KernelVariant): string | undefined;
  cases: OpCase[];
}

export const shapesOf = (c: OpCase, v: KernelVariant): Shapes => (typeof c.shapes === 'function' ? c.shapes(v) : c.shapes);

/** The WebGPU default of maxComputeWorkgroupsPerDimension: sizes just past it exercise grid-stride and 2D row loops. */
const MAX_WG = 65535;
const QUANT = /q4|q6|q8|int4|w4a16|litert/i;

/** The f32 cases apply to variants whose dtypes are all f32 and whose bindings are the operation's base bindings. */
function f32Only(baseBindings: readonly string[]): (v: KernelVariant) => string | undefined {
  return (v) => {
    const dtypes = [v.inputDtype, v.weightDtype, v.outputDtype].filter((d): d is string => !!d && d !== 'f32');
    if (dtypes.length) return `no ${[...new Set(dtypes)].join('/')} cases yet (cases are f32)`;
    if (v.requires.includes('shader-f16')) return 'f16 kernel: no f16 cases yet (cases are f32)';
    if (QUANT.test(v.name)) return 'quantized kernel: no quantized cases yet';
    const names = v.bindings.map((b) => b.name);
    if (names.length !== baseBindings.length || names.some((n, i) => n !== baseBindings[i])) {
      return `bindings (${names.join(', ')}) differ from the cases' (${baseBindings.join(', ')})`;
    }
    return undefined;
  };
}

const extras = (o: object) => {
  const e = Object.entries(o).map(([k, v]) => `${k}=${v}`);
  return e.length ? ` ${e.join(' ')}` : '';
};

// ---------------------------------------------------------------------------------------------------------------
function matmulCase(M: number, N: number, K: number, alpha = 1): OpCase {
  return {
    name: `M${M} N${N} K${K}${alpha !== 1 ? ` a${alpha}` : ''}`,
    shapes: { x: [M, K], w: [N, K] },
    dtypes: { w: 'float32' },
    attributes: { alpha },
    inputs: (r) => ({ x: r.floats(M * K), w: r.floats(N * K) }),
  };
}


interface RmsOpts {
  eps?: number;
  /** the kernel's has_residual: 1 adds the residual before the norm, 2 after it (the contracts' residual: before, after) */
  has_residual?: 0 | 1 | 2;
  /** floats between row starts of x (default: hidden) */
  token_stride?: number;
  output_scale?: number;
}
function rmsnormCase(hidden: number, tokens: number, o: RmsOpts = {}): OpCase {
  const hasResidual = o.has_residual ?? 0;
  const stride = o.token_stride ?? hidden;
  return {
    name: `H${hidden} T${tokens}${extras(o)}`,
    shapes: { x: [tokens, stride], weight: [hidden], residual: hasResidual ? [tokens, hidden] : [1] },
    attributes: { eps: o.eps ?? 1e-5, residual: (['none', 'before', 'after'] as const)[hasResidual]!, output_scale: o.output_scale ?? 1 },
    inputs: (r) => ({
      x: r.normals(tokens * stride, 2),
      weight: r.floats(hidden, 0.5, 1.5),
      residual: hasResidual ? r.normals(tokens * hidden) : new Float32Array(1),
    }),
  };
}

function layernormCase(hidden: number, tokens: number, eps = 1e-12, offset = 0): OpCase {
  return {
    name: `H${hidden} T${tokens}${eps !== 1e-12 ? ` eps${eps}` : ''}${offset ? ` offset${offset}` : ''}`,
    shapes: { x: [tokens, hidden], weight: [hidden], bias: [hidden] },
    attributes: { eps },
    inputs: (r) => {
      const x = r.normals(tokens * hidden, 2);
      // a common offset per row: the two-pass variance must not lose it to cancellation
      if (offset) for (let i = 0; i < x.length; i++) x[i]! += offset;
      return { x, weight: r.floats(hidden, 0.5, 1.5), bias: r.floats(hidden) };
    },
  };
}

function softmaxCase(inner: number, outer: number, temperature = 1, mask?: 'some' | 'row'): OpCase {
  return {
    name: `n${inner} rows${outer}${temperature !== 1 ? ` T${temperature}` : ''}${mask ? ` mask-${mask}` : ''}`,
    shapes: { x: [outer, inner] },
    attributes: { temperature },
    inputs: (r) => {
      const x = r.normals(inner * outer, 4);
      if (mask === 'some') for (let i = 0; i < x.length; i++) if (r.next() < 0.3) x[i] = -Infinity;
      if (mask === 'row') x.fill(-Infinity, 0, inner); // row 0 fully masked
      return { x };
    },
  };
}

type RopeOpts = Partial<Pick<RopeUniforms, 'start_pos' | 'rope_base' | 'rope_scale' | 'interleaved' | 'pair_span_dim' | 'rotary_dim'>>;
function ropeCase(seq: number, heads: number, headDim: number, o: RopeOpts = {}): OpCase {
  const u: RopeUniforms = {
    seq_len: seq,
    num_heads: heads,
    head_dim: headDim,
    start_pos: o.start_pos ?? 0,
    rope_base: o.rope_base ?? 10000,
    rope_scale: o.rope_scale ?? 1,
    rotary_dim: o.rotary_dim ?? headDim,
    interleaved: o.interleaved ?? 0,
    pair_span_dim: o.pair_span_dim ?? 0,
  };
  const positions = u.start_pos + seq;
  const half = Math.floor(u.rotary_dim / 2);
  // rotary_dim is the tables' width; the other options are contract attributes (given only when set, so the cases
  // the model's rope contract can express run through it).
  const { rotary_dim: _r, ...attributes } = o;
  return {
    name: `S${seq} heads${heads} D${headDim}${extras(o)}`,
    // rope.qk (and rope.qk_f16) rotates a fused [tokens, 2 * heads, head_dim] buffer (Q heads then K heads); the others see
    // [tokens, heads, head_dim] at the start of the same buffer and must leave the rest untouched.
    shapes: (v) => ({ x: [seq, v.entryPoint === 'rope_qk' ? 2 * heads : heads, headDim], cos: [positions, half], sin: [positions, half] }),
    attributes,
    contracts: ['rope', 'rope_kernel'],
    // Tables hold HF default/linear angles for positions 0 .. start_pos + seq_len - 1.
    inputs: (r) => {
      const { cos, sin } = ropeLinearTables(u, positions);
      return { x: r.floats(seq * 2 * heads * headDim), cos, sin };
    },
  };
}

export const OP_CASES: Record<ReferenceOp, OpCases> = {
  // + Q4_K and f16-weight variants: src/selftest/cases-matmul-quant.ts
  matmul: withExtraCases(
    {
      contracts: ['linear'],
      written: ['C'],
      notCovered: f32Only(['uniforms', 'A', 'B', 'C']),
      cases: [
        matmulCase(1, 1, 1),
        matmulCase(1, 257, 127),
        matmulCase(1, 1000, 4096, 0.125),
        matmulCase(3, 63, 65, 0.5),
        matmulCase(4, 129, 300),
        matmulCase(5, 129, 300),
        matmulCase(64, 64, 64),
        matmulCase(17, 300, 1000),
        matmulCase(130, 70, 33, -2),
        matmulCase(200, 96, 257),
        matmulCase(2, 3, 0),
      ],
    },
    coversMatmulQuant,
    MATMUL_QUANT_CASES,
  ),
  // every gather variant (f32/f16 tables and outputs, vec4): src/selftest/cases-gather.ts
  gather: GATHER_CASES,
  // f32, vec4, f16 and vec4 f16: src/selftest/cases-f16.ts
  residual: RESIDUAL_CASES,
  rmsnorm: f16Twins({
    contracts: ['rmsnorm', 'rmsnorm_rows'],
    written: ['output'],
    notCovered: f32Only(['uniforms', 'input', 'weight', 'output', 'residual']),
    cases: [
      rmsnormCase(1, 1),
      rmsnormCase(3, 5, { has_residual: 1 }),
      rmsnormCase(127, 3, { has_residual: 2 }),
      rmsnormCase(257, 2, { token_stride: 300 }),
      rmsnormCase(1000, 4, { eps: 1e-6, output_scale: 0.5 }),
      rmsnormCase(4096, 3, { has_residual: 1 }),
      rmsnormCase(5000, 2, { has_residual: 2 }),
      rmsnormCase(512, 200, { has_residual: 2 }),
      // more rows than one dispatch dimension holds: 2D row index (on CPU, tests cover it with a small x cap)
      { ...rmsnormCase(8, MAX_WG + 4465), heavy: true },
    ],
  }, ['x', 'residual']),
  layernorm: f16Twins({
    contracts: ['layernorm'],
    written: ['output'],
    notCovered: f32Only(['uniforms', 'input', 'weight', 'bias', 'output']),
    cases: [
      layernormCase(1, 1),
      layernormCase(3, 5),
      layernormCase(127, 3, 1e-5),
      layernormCase(257, 2),
      layernormCase(768, 9, 1e-12, 100),
      layernormCase(1024, 4, 1e-5),
      layernormCase(4096, 3),
      { ...layernormCase(8, MAX_WG + 4465), heavy: true },
    ],
  }, ['x']),
  softmax: withTunables({
    contracts: ['softmax'],
    written: ['output'],
    notCovered: f32Only(['uniforms', 'input', 'output']),
    cases: [
      softmaxCase(1, 1),
      softmaxCase(3, 4),
      softmaxCase(127, 3, 0.7),
      softmaxCase(257, 2, 1, 'some'),
      softmaxCase(10, 3, 1, 'row'),
      softmaxCase(1000, 5, 2),
      softmaxCase(1025, 2, 0.5),
      softmaxCase(32000, 2),
      { ...softmaxCase(8, MAX_WG + 4465), heavy: true },
    ],
  }, { subgroup: true }),
  // + silu.default_f16: the separate-gate cases in f16 (src/selftest/cases-f16.ts)
  silu: withF16Twins({
    contracts: ['glu', 'glu_fused'],
    written: ['output'],
    notCovered: f32Only(['uniforms', 'input', 'output', 'gate']),
    cases: [
      gluCase('silu', 1, 1, false),
      gluCase('silu', 1, 3, true),
      gluCase('silu', 1, 127, false),
      gluCase('silu', 3, 257, true),
      gluCase('silu', 5, 1000, false),
      gluCase('silu', 4, 2752, true),
      gluCase('silu', 300, 64, true),
    ],
  }, isF16, ['gate', 'up'], separateGlu),
  rope: f16Twins({
    contracts: ['rope', 'rope_kernel'],
    written: ['input'],
    notCovered: f32Only(['uniforms', 'input', 'freqs_cos', 'freqs_sin']),
    cases: [
      ropeCase(1, 1, 2),
      ropeCase(1, 8, 64, { start_pos: 37 }),
      ropeCase(7, 3, 128, { interleaved: 1, start_pos: 5 }),
      ropeCase(5, 2, 80, { rotary_dim: 32 }),
      ropeCase(3, 4, 64, { rotary_dim: 16, pair_span_dim: 64 }),
      ropeCase(2, 1, 6, { interleaved: 1, rope_scale: 4 }),
      ropeCase(40, 4, 32, { start_pos: 160, rope_base: 1e6, rope_scale: 2 }),
      // Positions near 1000: in-kernel f32 angles (pos * inv_freq, as HF computes them in f32) are ~5e-5 off the
      // exact angle there, beyond the f32 tolerance; the table variant gets host tables computed in f64.
      { ...ropeCase(100, 4, 32, { start_pos: 900, rope_base: 1e6, rope_scale: 2 }), only: (v) => v.entryPoint === 'main' },
      ropeCase(3, 2, 96, { start_pos: 11, rope_base: 500000, rope_scale: 8, rotary_dim: 64 }),
    ],
  }, ['x']),
  attention: ATTENTION_CASES,
  scale: f16Twins(SCALE_CASES, ['x']),
  bias_add: f16Twins(BIAS_ADD_CASES, ['data', 'bias'], contiguousBiasAdd),
  gelu: withF16Twins(GELU_CASES, isF16, ['gate', 'up'], separateGlu),
  rmsnorm_qk: f16Twins(RMSNORM_QK_CASES, ['q', 'k']),
  cast: CAST_CASES,
  dequant: DEQUANT_CASES,
  rep_penalty: REP_PENALTY_CASES,
  fused_ffn: FUSED_FFN_CASES,
  // relu, clamp, transpose, bf16 widening, split_qkv / split_qg and rope_qk (+ f16 twins): src/selftest/cases-elementwise.ts
  relu: RELU_CASES,
  clamp: CLAMP_CASES,
  transpose: TRANSPOSE_CASES,
  bf16_to_f32: BF16_TO_F32_CASES,
  bf16_to_f16: BF16_TO_F16_CASES,
  split_qkv: SPLIT_QKV_CASES,
  split_qg: SPLIT_QG_CASES,
  rope_qk: ROPE_QK_CASES,
  // MoE combine / routing offsets and row-split embedding lookups: src/selftest/cases-moe-routing.ts
  scatter_add: SCATTER_ADD_CASES,
  moe_offsets: MOE_OFFSETS_CASES,
  gather_split4: GATHER_SPLIT4_CASES,
  gather_split8: GATHER_SPLIT8_CASES,
  topk: TOPK_CASES,
  lm_head_argmax: LM_HEAD_ARGMAX_CASES,
  moe_gather: MOE_GATHER_CASES,
};
