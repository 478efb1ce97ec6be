/**
 * Op-test cases of small operations (registered in cases.ts): `gather` (f32 and f16 tables), gated activations
 * (`silu`, `gelu`), `scale`, `bias_add`, `rmsnorm_qk`, `cast` (f16 -> f32), `dequant` (Q8_0 row-wise -> f32). Kernels
 * that write f16 (cast.f32_to_f16, kv_cache_write.f32_to_f16, dequant.f16_rowwise) are compared bit by bit in
 * test/kernels-small-f16.test.ts instead: the harness compares f32 outputs. References: src/reference/elementwise.ts
 * and f16-ops.ts.
 */
import { f32ToF16 } from '../formats/f16.ts';
import { quantizeQ8_0 } from '../formats/quant/index.ts';
import type { KernelVariant } from '../registry/types.ts';
import type { OpCase, OpCases } from './cases.ts';
import type { Rng } from './rng.ts';

/** Cases of an operation that apply to exactly the listed variants (others: `reason`). */
function only(ids: string[], reason: string, contracts: string[], written: string[], cases: OpCase[]): OpCases {
  const set = new Set(ids);
  return { contracts, written, notCovered: (v) => (set.has(v.id) ? undefined : reason), cases };
}

const extras = (o: object) => {
  const e = Object.entries(o).map(([k, v]) => `${k}=${v}`);
  return e.length ? ` ${e.join(' ')}` : '';
};

/**
 * n random f16 bit patterns of values in [-4, 4), the first ones special (+0, -0, 1, -2, the smallest normal, the
 * largest subnormal). Magnitudes stay small so the harness's error bound (relative to max |want|) stays tight.
 */
export function randomF16Bits(r: Rng, n: number): Uint16Array {
  const specials = [0, 0x8000, 0x3c00, 0xc000, 0x0400, 0x03ff];
  const b = new Uint16Array(n);
  for (let i = 0; i < n; i++) b[i] = i < specials.length ? specials[i]! : f32ToF16(r.uniform(-4, 4));
  return b;
}

function words(bits: Uint16Array): Uint32Array {
  const w = new Uint32Array(Math.ceil(bits.length / 2));
  for (let i = 0; i < bits.length; i++) w[i >> 1]! |= bits[i]! << (16 * (i & 1));
  return w;
}

// ---------------------------------------------------------------------------------------------------------------
export interface GatherOpts {
  transpose?: number;
  index_offset?: number;
  /** width of the table's rows when wider than the gathered columns */
  input_hidden_size?: number;
  hidden_offset?: number;
  /** Token ids to replace with vocab_size + k (out of range: must read as 0). */
  outOfRange?: number;
  /** dtype of the output (default float32; float16 runs the f16-output kernels) */
  out?: 'float32' | 'float16';
}

/**
 * Rows of an f32 or f16 table. Plain lookups run through the model's embed contract; index offsets, transposed
 * tables and column slices through the general gather contract.
 */
export function gatherCase(table: 'float32' | 'float16', tokens: number, hidden: number, vocab: number, o: GatherOpts = {}): OpCase {
  const width = o.input_hidden_size || hidden;
  const indexOffset = o.index_offset ?? 0;
  const transpose = o.transpose ?? 0;
  const { outOfRange, out, ...layout } = o;
  const f16Out = out === 'float16';
  const attributes = {
    ...(indexOffset ? { index_offset: indexOffset } : {}),
    ...(transpose ? { transpose } : {}),
    ...(o.hidden_offset ? { hidden_offset: o.hidden_offset } : {}),
    ...(width !== hidden ? { hidden_size: hidden } : {}),
  };
  const f16 = table === 'float16';
  return {
    name: `${f16 ? 'f16 ' : ''}${f16Out ? 'out-f16 ' : ''}T${tokens} H${hidden} V${vocab}${extras(layout)}${outOfRange ? (f16 ? ' oob=true' : ' oob-ids') : ''}`,
    contracts: Object.keys(attributes).length ? ['gather'] : ['embed', 'gather'],
    shapes: { ids: [indexOffset + tokens], table: transpose ? [width, vocab] : [vocab, width] },
    dtypes: { table, ...(f16Out ? { out: 'float16' } : {}) },
    attributes,
    inputs: (r) => {
      const ids = r.ints(indexOffset + tokens, vocab);
      if (f16) {
        if (outOfRange) ids[indexOffset + r.int(tokens)] = vocab + 3;
      } else for (let k = 0; k < (outOfRange ?? 0); k++) ids[indexOffset + r.int(tokens)] = vocab + k;
      return { ids, table: f16 ? words(randomF16Bits(r, vocab * width)) : r.floats(vocab * width) };
    },
  };
}

/**
 * A gated activation (SwiGLU / GeGLU): fused rows [gate | up] of width D (glu_fused.contract.json), or separate gate
 * and up tensors (glu.contract.json, the model's).
 */
export function gluCase(activation: 'silu' | 'gelu_tanh', rowsN: number, D: number, fused: boolean, amp = 4): OpCase {
  const size = rowsN * D;
  const name = `${fused ? 'fused' : 'separate'} rows${rowsN} D${D}${amp !== 4 ? ` amp${amp}` : ''}`;
  if (fused) return { name, contracts: ['glu_fused'], shapes: { x: [rowsN, 2 * D] }, attributes: { activation }, inputs: (r) => ({ x: r.normals(2 * size, amp) }) };
  return {
    name,
    contracts: ['glu'],
    shapes: { gate: [size], up: [size] },
    attributes: { activation },
    inputs: (r) => {
      const up = r.normals(size, amp);
      return { up, gate: r.normals(size, amp) };
    },
  };
}

function scaleCase(size: number, scale: number): OpCase {
  return { name: `n${size} s${scale}`, shapes: { x: [size] }, attributes: { scale }, inputs: (r) => ({ x: r.floats(size, -3, 3) }) };
}

/** Rows of data [tokens, token_stride]; the bias (and the columns it adds to) may start at an offset. */
function biasAddCase(tokens: number, dim: number, o: { data_offset?: number; bias_offset?: number; token_stride?: number } = {}): OpCase {
  const stride = o.token_stride ?? dim;
  const biasOffset = o.bias_offset ?? 0;
  return {
    name: `T${tokens} D${dim}${extras(o)}`,
    shapes: { data: [tokens, stride], bias: [biasOffset + dim] },
    attributes: { ...(o.data_offset ? { data_offset: o.data_offset } : {}), ...(biasOffset ? { bias_offset: biasOffset } : {}) },
    inputs: (r) => ({ data: r.floats(tokens * stride), bias: r.floats(biasOffset + dim) }),
  };
}

function rmsnormQkCase(qRows: number, kRows: number, D: number, rowStride = 0, eps = 1e-6): OpCase {
  const S = rowStride || D;
  return {
    name: `q${qRows} k${kRows} D${D}${rowStride ? ` stride${rowStride}` : ''}`,
    shapes: { q: [qRows, S], k: [kRows, S], qWeight: [D], kWeight: [D] },
    attributes: { eps },
    inputs: (r) => ({
      q: r.normals(Math.max(1, qRows * S), 3),
      qWeight: r.floats(D, 0.5, 1.5),
      k: r.normals(Math.max(1, kRows * S), 3),
      kWeight: r.floats(D, 0.5, 1.5),
    }),
  };
}

function castCase(size: number): OpCase {
  return { name: `f16->f32 n${size}`, shapes: { x: [size] }, inputs: (r) => ({ x: words(randomF16Bits(r, size)) }) };
}

/** Q8_0 rows quantized from random values; when K % 32 != 0 the tail of each row's last block is padding to skip. */
function dequantCase(rows: number, K: number): OpCase {
  const bpr = Math.ceil(K / 32);
  return {
    name: `q8_0 rows${rows} K${K}`,
    shapes: { q: [rows, K] },
    inputs: (r) => {
      const bytes = quantizeQ8_0(r.normals(rows * bpr * 32, 2));
      const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
      padded.set(bytes);
      return { q: new Uint32Array(padded.buffer) };
    },
  };
}

export const SCALE_CASES = only(['scale.default', 'scale.inplace'], 'f16 twin: no f16 cases', ['scale', 'scale_inplace'], ['output'], [
  scaleCase(1, 2),
  scaleCase(3, -0.5),
  scaleCase(255, 0.125),
  scaleCase(257, 3),
  scaleCase(1000, 1),
  scaleCase(65536 + 7, -1.5),
]);

export const BIAS_ADD_CASES = only(['bias_add.default'], 'f16 twin: no f16 cases', ['bias_add', 'bias_add_rows'], ['data'], [
  biasAddCase(1, 1),
  biasAddCase(3, 127),
  biasAddCase(5, 257, { token_stride: 300, data_offset: 20, bias_offset: 7 }),
  biasAddCase(64, 896),
  biasAddCase(2, 1000, { token_stride: 3072, data_offset: 1024, bias_offset: 1024 }),
  biasAddCase(300, 64),
]);

export const GELU_CASES = only(['gelu.gelu'], 'f16 twin: no f16 cases', ['glu', 'glu_fused'], ['output'], [
  gluCase('gelu_tanh', 1, 1, false),
  gluCase('gelu_tanh', 1, 3, true),
  gluCase('gelu_tanh', 1, 127, false),
  gluCase('gelu_tanh', 3, 257, true),
  gluCase('gelu_tanh', 5, 1000, false),
  gluCase('gelu_tanh', 4, 2752, true),
  gluCase('gelu_tanh', 2, 300, false, 40), // |x| up to ~150: the tails (x, -0) without NaN
]);

export const RMSNORM_QK_CASES = only(['rmsnorm_qk.default'], 'f16 twin: no f16 cases', ['rmsnorm_qk'], ['q_output', 'k_output'], [
  rmsnormQkCase(1, 1, 1),
  rmsnormQkCase(8, 2, 128),
  rmsnormQkCase(16, 8, 64),
  rmsnormQkCase(3, 3, 256),
  rmsnormQkCase(5, 0, 80),
  rmsnormQkCase(0, 4, 96),
  rmsnormQkCase(2, 3, 300),
  rmsnormQkCase(4, 4, 128, 384),
]);

export const CAST_CASES = only(['cast.f16_to_f32'], 'writes f16: compared bit by bit in test/kernels-small-f16.test.ts', ['cast_to_f32'], ['output'], [
  castCase(1),
  castCase(2),
  castCase(3),
  castCase(255),
  castCase(257),
  castCase(1001),
  castCase(4097),
]);

export const DEQUANT_CASES = only(['dequant.f32_rowwise'], 'not a Q8_0 row-wise f32 kernel (no cases)', ['dequant_q8_0'], ['output'], [
  dequantCase(1, 32),
  dequantCase(3, 64),
  dequantCase(7, 1000),
  dequantCase(5, 4096),
  dequantCase(33, 96),
  dequantCase(2, 31),
]);


/**
 * An operation's cases plus cases for extra variants: the original cases keep to the variants they covered, the
 * extra ones run only on the variants `covers` accepts.
 */
export function withExtraCases(base: OpCases, covers: (v: KernelVariant) => boolean, extra: OpCase[]): OpCases {
  return {
    contracts: base.contracts,
    written: base.written,
    notCovered: (v) => (covers(v) ? undefined : base.notCovered(v)),
    cases: [
      ...base.cases.map((c) => ({ ...c, only: (v: KernelVariant) => !covers(v) && (c.only ? c.only(v) : true) })),
      ...extra.map((c) => ({ ...c, only: (v: KernelVariant) => covers(v) && (c.only ? c.only(v) : true) })),
    ],
  };
}
