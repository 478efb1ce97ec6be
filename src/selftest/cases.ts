/**
 * Op-test cases and dispatch sizes. OP_CASES is keyed by operation (a missing operation is a type error); each case
 * gives the registry's uniform values, a seeded input generator (buffers by binding name) and a name. DISPATCH is
 * keyed by variant id and stays simple expressions of the uniform values and the registry's workgroup size, so the
 * formulas can move into kernel contracts unchanged.
 */
import type { HostTensors, ReferenceOp, UniformNumbers } from '../reference/ops.ts';
import { ropeLinearTables, type RopeUniforms } from '../reference/rope.ts';
import type { KernelVariant } from '../registry/types.ts';
import { ATTENTION_CASES, ATTENTION_DISPATCH } from './cases-attention.ts';
import { coversMatmulQuant, MATMUL_QUANT_CASES, MATMUL_QUANT_DISPATCH } from './cases-matmul-quant.ts';
import { BIAS_ADD_CASES, CAST_CASES, DEQUANT_CASES, GATHER_F16_CASES, GELU_CASES, RMSNORM_QK_CASES, SCALE_CASES, SMALL_DISPATCH, withExtraCases } from './cases-small.ts';
import { REP_PENALTY_CASES, REP_PENALTY_DISPATCH } from './cases-rep-penalty.ts';
import type { Rng } from './rng.ts';
import { gatherUniforms } from './gather-uniforms.ts';

export type Dispatch3 = [number, number, number];

export interface OpCase {
  /** Unique within its operation; seeds the RNG (`op/name`). */
  name: string;
  /** Every uniform field of the registry layout except `_`-padding. */
  uniforms: UniformNumbers;
  /** Contents of every bound buffer the kernel reads (by binding name). Pure outputs are sized from the reference. */
  inputs(rng: Rng): HostTensors;
  /** Restrict the case to some variants (default: all variants the op's cases cover). */
  only?: (v: KernelVariant) => boolean;
  /**
   * Too slow for SwiftShader (about 1 ms per 256-invocation workgroup with barriers): run only when the harness is
   * asked for heavy cases (selftest does so on real GPUs).
   */
  heavy?: boolean;
}

export interface OpCases {
  /** Bindings the operation writes; they are compared with the reference. Other writable bindings must stay as given. */
  written: readonly string[];
  /** Why these cases do not apply to a variant (its dtypes, a different binding set), or undefined when they do. */
  notCovered(v: KernelVariant): string | undefined;
  cases: OpCase[];
}

const MAX_WG = 65535; // maxComputeWorkgroupsPerDimension's guaranteed minimum (WebGPU default limit)
const cdiv = (a: number, b: number) => Math.ceil(a / b);
/** Grid-stride kernels: enough workgroups for one element per invocation, capped per dimension. */
const grid = (n: number, v: KernelVariant): Dispatch3 => [Math.min(cdiv(n, v.workgroup[0]), MAX_WG), 1, 1];
/** One workgroup per row, rows = x + y * num_workgroups.x. */
const rows = (n: number): Dispatch3 => [Math.min(n, MAX_WG), cdiv(n, MAX_WG), 1];
const ropePairs = (u: UniformNumbers) => u.seq_len! * u.num_heads! * Math.floor(u.rotary_dim! / 2);

export type DispatchFn = (u: UniformNumbers, v: KernelVariant) => Dispatch3;

/** Dispatch size of every variant the harness can run (the formulas documented in each WGSL header). */
export const DISPATCH: Record<string, DispatchFn> = {
  // 64x64 output tile per 16x16 workgroup (4x4 per invocation): matmul_f32.wgsl
  // M <= 4: GEMV mapping (64 columns per workgroup with this dispatch; test/kernels-matmul-gemv.test.ts also runs 8 per workgroup)
  'matmul.f32': (u) => [cdiv(u.N!, 64), cdiv(u.M!, 64), 1],
  'gather.default': (u, v) => grid(u.num_tokens! * u.hidden_size!, v),
  'residual.default': (u, v) => grid(u.size!, v),
  'rmsnorm.default': (u) => rows(u.num_tokens!),
  'rmsnorm.small': (u) => rows(u.num_tokens!),
  'rmsnorm.residual': (u) => rows(u.num_tokens!),
  'rmsnorm.subgroup': (u) => rows(u.num_tokens!),
  'rmsnorm.small_subgroup': (u) => rows(u.num_tokens!),
  'softmax.default': (u) => rows(u.outer_size!),
  'softmax.small': (u, v) => grid(u.outer_size!, v),
  'silu.default': (u, v) => grid(u.size!, v),
  'rope.default': (u, v) => grid(ropePairs(u), v),
  'rope.compute_freqs': (u, v) => grid(ropePairs(u), v),
  'rope.qk': (u, v) => grid(ropePairs(u), v),
  'rope.ntk': (u, v) => grid(ropePairs(u), v),
  ...ATTENTION_DISPATCH,
  ...MATMUL_QUANT_DISPATCH,
  ...SMALL_DISPATCH,
  ...REP_PENALTY_DISPATCH,
};

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

// ---------------------------------------------------------------------------------------------------------------
function matmulCase(M: number, N: number, K: number, alpha = 1): OpCase {
  return {
    name: `M${M} N${N} K${K}${alpha !== 1 ? ` a${alpha}` : ''}`,
    uniforms: { M, N, K, alpha },
    inputs: (r) => ({ A: r.floats(M * K), B: r.floats(N * K) }),
  };
}

interface GatherOpts {
  transpose?: number;
  index_offset?: number;
  input_hidden_size?: number;
  hidden_offset?: number;
  /** Token ids to replace with vocab_size + k (out of range: must read as 0). */
  outOfRange?: number;
}
function gatherCase(tokens: number, hidden: number, vocab: number, o: GatherOpts = {}): OpCase {
  const { u, width } = gatherUniforms(tokens, hidden, vocab, o);
  const extras = Object.entries(o).filter(([k]) => k !== 'outOfRange').map(([k, v]) => `${k}=${v}`);
  return {
    name: `T${tokens} H${hidden} V${vocab}${extras.length ? ' ' + extras.join(' ') : ''}${o.outOfRange ? ' oob-ids' : ''}`,
    uniforms: u,
    inputs: (r) => {
      const ids = r.ints(u.index_offset + tokens, vocab);
      for (let k = 0; k < (o.outOfRange ?? 0); k++) ids[u.index_offset + r.int(tokens)] = vocab + k;
      return { indices: ids, embeddings: r.floats(vocab * width) };
    },
  };
}

function residualCase(size: number, scale = 1): OpCase {
  return {
    name: `n${size}${scale !== 1 ? ` s${scale}` : ''}`,
    uniforms: { size, scale },
    inputs: (r) => ({ input: r.floats(size), residual: r.floats(size) }),
  };
}

interface RmsOpts {
  eps?: number;
  has_residual?: number;
  token_stride?: number;
  output_scale?: number;
}
function rmsnormCase(hidden: number, tokens: number, o: RmsOpts = {}): OpCase {
  const u = {
    hidden_size: hidden,
    num_tokens: tokens,
    eps: o.eps ?? 1e-5,
    has_residual: o.has_residual ?? 0,
    token_stride: o.token_stride ?? 0,
    output_scale: o.output_scale ?? 1,
  };
  const stride = u.token_stride || hidden;
  const extras = Object.entries(o).map(([k, v]) => `${k}=${v}`);
  return {
    name: `H${hidden} T${tokens}${extras.length ? ' ' + extras.join(' ') : ''}`,
    uniforms: u,
    inputs: (r) => ({
      input: r.normals(tokens === 0 ? 0 : (tokens - 1) * stride + hidden, 2),
      weight: r.floats(hidden, 0.5, 1.5),
      residual: u.has_residual ? r.normals(tokens * hidden) : new Float32Array(1),
    }),
  };
}

function softmaxCase(inner: number, outer: number, temperature = 1, mask?: 'some' | 'row'): OpCase {
  return {
    name: `n${inner} rows${outer}${temperature !== 1 ? ` T${temperature}` : ''}${mask ? ` mask-${mask}` : ''}`,
    uniforms: { inner_size: inner, outer_size: outer, temperature },
    inputs: (r) => {
      const x = r.normals(inner * outer, 4);
      if (mask === 'some') for (let i = 0; i < x.length; i++) if (r.next() < 0.3) x[i] = -Infinity;
      if (mask === 'row') x.fill(-Infinity, 0, inner); // row 0 fully masked
      return { input: x };
    },
  };
}

function siluCase(rowsN: number, D: number, fused: boolean): OpCase {
  const size = rowsN * D;
  return {
    name: `${fused ? 'fused' : 'separate'} rows${rowsN} D${D}`,
    uniforms: { size, rowsplit_dim: fused ? D : 0 },
    inputs: (r) =>
      fused ? { input: r.normals(2 * size, 4), gate: new Float32Array(1) } : { input: r.normals(size, 4), gate: r.normals(size, 4) },
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
  const extras = Object.entries(o).map(([k, v]) => `${k}=${v}`);
  return {
    name: `S${seq} heads${heads} D${headDim}${extras.length ? ' ' + extras.join(' ') : ''}`,
    uniforms: { ...u },
    // The buffer always holds 2 * num_heads heads per token (rope_qk's layout): the other entry points must leave
    // the second half untouched. Tables hold HF default/linear angles for positions 0 .. start_pos + seq_len - 1.
    inputs: (r) => {
      const { cos, sin } = ropeLinearTables(u, u.start_pos + seq);
      return { input: r.floats(seq * 2 * heads * headDim), freqs_cos: cos, freqs_sin: sin };
    },
  };
}

export const OP_CASES: Record<ReferenceOp, OpCases> = {
  // + Q4_K and f16-weight variants: src/selftest/cases-matmul-quant.ts
  matmul: withExtraCases({
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
  }, coversMatmulQuant, MATMUL_QUANT_CASES),
  // + gather.f16: src/selftest/cases-small.ts
  gather: withExtraCases({
    written: ['output'],
    notCovered: f32Only(['uniforms', 'indices', 'embeddings', 'output']),
    cases: [
      gatherCase(1, 1, 5),
      gatherCase(3, 127, 50, { outOfRange: 1 }),
      gatherCase(7, 257, 1000, { index_offset: 2 }),
      gatherCase(64, 4096, 40),
      gatherCase(5, 100, 77, { transpose: 1 }),
      gatherCase(9, 255, 31, { input_hidden_size: 300, hidden_offset: 45 }),
      gatherCase(2000, 64, 500),
    ],
  }, (v) => v.id === 'gather.f16', GATHER_F16_CASES),
  residual: {
    written: ['output'],
    notCovered: f32Only(['uniforms', 'input', 'residual', 'output']),
    cases: [
      residualCase(1),
      residualCase(3, 0.5),
      residualCase(127),
      residualCase(257, -2),
      residualCase(1000),
      residualCase(4096 * 7 + 1, 0.25),
      // more than 65535 workgroups of 256: the capped dispatch must grid-stride over the rest
      residualCase(MAX_WG * 256 + 1001),
    ],
  },
  rmsnorm: {
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
  },
  softmax: {
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
  },
  silu: {
    written: ['output'],
    notCovered: f32Only(['uniforms', 'input', 'output', 'gate']),
    cases: [
      siluCase(1, 1, false),
      siluCase(1, 3, true),
      siluCase(1, 127, false),
      siluCase(3, 257, true),
      siluCase(5, 1000, false),
      siluCase(4, 2752, true),
      siluCase(300, 64, true),
    ],
  },
  rope: {
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
  },
  attention: ATTENTION_CASES,
  scale: SCALE_CASES,
  bias_add: BIAS_ADD_CASES,
  gelu: GELU_CASES,
  rmsnorm_qk: RMSNORM_QK_CASES,
  cast: CAST_CASES,
  dequant: DEQUANT_CASES,
  rep_penalty: REP_PENALTY_CASES,
};
