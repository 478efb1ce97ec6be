/**
 * Op-test cases of small operations (registered in cases.ts): `scale`, `bias_add`, `gelu`, `rmsnorm_qk`, `cast`
 * (f16 -> f32), `dequant` (Q8_0 row-wise -> f32) and `gather.f16`. Kernels that write f16 (cast.f32_to_f16,
 * kv_cache_write.f32_to_f16, dequant.f16_rowwise) are compared bit by bit in test/kernels-small-f16.test.ts instead:
 * the harness compares f32 outputs. References: src/reference/elementwise.ts and f16-ops.ts.
 */
import { f32ToF16 } from '../formats/f16.ts';
import { quantizeQ8_0 } from '../formats/quant/index.ts';
import type { KernelVariant } from '../registry/types.ts';
import type { DispatchFn, OpCase, OpCases } from './cases.ts';
import type { Rng } from './rng.ts';
import { gatherUniforms } from './gather-uniforms.ts';

const MAX_WG = 65535;
const cdiv = (a: number, b: number) => Math.ceil(a / b);
const grid = (n: number, v: KernelVariant): [number, number, number] => [Math.min(cdiv(n, v.workgroup[0]), MAX_WG), 1, 1];

/** As documented in each kernel's header. */
export const SMALL_DISPATCH: Record<string, DispatchFn> = {
  'scale.default': (u, v) => grid(u.size!, v),
  'scale.inplace': (u, v) => grid(u.size!, v),
  'bias_add.default': (u, v) => grid(u.num_tokens! * u.dim!, v),
  'gelu.gelu': (u, v) => grid(u.size!, v),
  'rmsnorm_qk.default': (u) => {
    const n = u.q_rows! + u.k_rows!;
    return [Math.min(n, MAX_WG), cdiv(n, MAX_WG), 1];
  },
  'cast.f16_to_f32': (u, v) => grid(cdiv(u.size!, 2), v),
  'cast.f32_to_f16': (u, v) => grid(cdiv(u.size!, 2), v),
  'kv_cache_write.f32_to_f16': (u, v) => grid(Math.floor(u.count! / 2) + 1, v),
  'dequant.f32_rowwise': (u, v) => grid(u.rows! * u.K!, v),
  'dequant.f16_rowwise': (u, v) => grid(cdiv(u.rows! * u.K!, 2), v),
  'gather.f16': (u, v) => grid(u.num_tokens! * u.hidden_size!, v),
};

/** Cases of an operation that apply to exactly the listed variants (others: `reason`). */
function only(ids: string[], reason: string, written: string[], cases: OpCase[]): OpCases {
  const set = new Set(ids);
  return { written, notCovered: (v) => (set.has(v.id) ? undefined : reason), cases };
}

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
function scaleCase(size: number, scale: number): OpCase {
  return {
    name: `n${size} s${scale}`,
    uniforms: { size, scale },
    // `output` holds the in-place variant's input (scale.default overwrites it).
    inputs: (r) => ({ input: r.floats(size, -3, 3), output: r.floats(size, -3, 3) }),
  };
}

function biasAddCase(tokens: number, dim: number, o: { data_offset?: number; bias_offset?: number; token_stride?: number } = {}): OpCase {
  const u = { num_tokens: tokens, dim, data_offset: o.data_offset ?? 0, bias_offset: o.bias_offset ?? 0, token_stride: o.token_stride ?? 0 };
  const S = u.token_stride || dim;
  const extras = Object.entries(o).map(([k, v]) => `${k}=${v}`);
  return {
    name: `T${tokens} D${dim}${extras.length ? ' ' + extras.join(' ') : ''}`,
    uniforms: u,
    inputs: (r) => ({ data: r.floats(tokens === 0 ? 0 : (tokens - 1) * S + u.data_offset + dim), bias: r.floats(u.bias_offset + dim) }),
  };
}

function geluCase(rows: number, D: number, fused: boolean, amp = 4): OpCase {
  const size = rows * D;
  return {
    name: `${fused ? 'fused' : 'separate'} rows${rows} D${D}${amp !== 4 ? ` amp${amp}` : ''}`,
    uniforms: { size, rowsplit_dim: fused ? D : 0 },
    inputs: (r) => (fused ? { input: r.normals(2 * size, amp), gate: new Float32Array(1) } : { input: r.normals(size, amp), gate: r.normals(size, amp) }),
  };
}

function rmsnormQkCase(qRows: number, kRows: number, D: number, rowStride = 0, eps = 1e-6): OpCase {
  const S = rowStride || D;
  const rowsLen = (n: number) => (n === 0 ? 1 : (n - 1) * S + D);
  return {
    name: `q${qRows} k${kRows} D${D}${rowStride ? ` stride${rowStride}` : ''}`,
    uniforms: { q_rows: qRows, k_rows: kRows, head_dim: D, row_stride: rowStride, eps },
    inputs: (r) => ({
      q_input: r.normals(rowsLen(qRows), 3),
      q_weight: r.floats(D, 0.5, 1.5),
      k_input: r.normals(rowsLen(kRows), 3),
      k_weight: r.floats(D, 0.5, 1.5),
    }),
  };
}

function castCase(size: number): OpCase {
  return { name: `f16->f32 n${size}`, uniforms: { size }, inputs: (r) => ({ input: words(randomF16Bits(r, size)) }) };
}

/** Q8_0 rows quantized from random values; when K % 32 != 0 the tail of each row's last block is padding to skip. */
function dequantCase(rows: number, K: number): OpCase {
  const bpr = cdiv(K, 32);
  return {
    name: `q8_0 rows${rows} K${K}`,
    uniforms: { num_blocks: rows * bpr, blocks_per_row: bpr, K, rows },
    inputs: (r) => {
      const bytes = quantizeQ8_0(r.normals(rows * bpr * 32, 2));
      const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
      padded.set(bytes);
      return { quantized: new Uint32Array(padded.buffer) };
    },
  };
}

function gatherF16Case(tokens: number, hidden: number, vocab: number, o: { transpose?: number; index_offset?: number; input_hidden_size?: number; hidden_offset?: number; oob?: boolean } = {}): OpCase {
  const { u, width } = gatherUniforms(tokens, hidden, vocab, o);
  const extras = Object.entries(o).map(([k, v]) => `${k}=${v}`);
  return {
    name: `f16 T${tokens} H${hidden} V${vocab}${extras.length ? ' ' + extras.join(' ') : ''}`,
    uniforms: u,
    inputs: (r) => {
      const ids = r.ints(u.index_offset + tokens, vocab);
      if (o.oob) ids[u.index_offset + r.int(tokens)] = vocab + 3;
      return { indices: ids, embeddings: words(randomF16Bits(r, vocab * width)) };
    },
    only: (v) => v.id === 'gather.f16',
  };
}

export const SCALE_CASES = only(['scale.default', 'scale.inplace'], 'f16 twin: no f16 cases', ['output'], [
  scaleCase(1, 2),
  scaleCase(3, -0.5),
  scaleCase(255, 0.125),
  scaleCase(257, 3),
  scaleCase(1000, 1),
  scaleCase(65536 + 7, -1.5),
]);

export const BIAS_ADD_CASES = only(['bias_add.default'], 'f16 twin: no f16 cases', ['data'], [
  biasAddCase(1, 1),
  biasAddCase(3, 127),
  biasAddCase(5, 257, { token_stride: 300, data_offset: 20, bias_offset: 7 }),
  biasAddCase(64, 896),
  biasAddCase(2, 1000, { token_stride: 3072, data_offset: 1024, bias_offset: 1024 }),
  biasAddCase(300, 64),
]);

export const GELU_CASES = only(['gelu.gelu'], 'f16 twin: no f16 cases', ['output'], [
  geluCase(1, 1, false),
  geluCase(1, 3, true),
  geluCase(1, 127, false),
  geluCase(3, 257, true),
  geluCase(5, 1000, false),
  geluCase(4, 2752, true),
  geluCase(2, 300, false, 40), // |x| up to ~150: the tails (x, -0) without NaN
]);

export const RMSNORM_QK_CASES = only(['rmsnorm_qk.default'], 'f16 twin: no f16 cases', ['q_output', 'k_output'], [
  rmsnormQkCase(1, 1, 1),
  rmsnormQkCase(8, 2, 128),
  rmsnormQkCase(16, 8, 64),
  rmsnormQkCase(3, 3, 256),
  rmsnormQkCase(5, 0, 80),
  rmsnormQkCase(0, 4, 96),
  rmsnormQkCase(2, 3, 300),
  rmsnormQkCase(4, 4, 128, 384),
]);

export const CAST_CASES = only(['cast.f16_to_f32'], 'writes f16: compared bit by bit in test/kernels-small-f16.test.ts', ['output'], [
  castCase(1),
  castCase(2),
  castCase(3),
  castCase(255),
  castCase(257),
  castCase(1001),
  castCase(4097),
]);

export const DEQUANT_CASES = only(['dequant.f32_rowwise'], 'not a Q8_0 row-wise f32 kernel (no cases)', ['output'], [
  dequantCase(1, 32),
  dequantCase(3, 64),
  dequantCase(7, 1000),
  dequantCase(5, 4096),
  dequantCase(33, 96),
  dequantCase(2, 31),
]);

export const GATHER_F16_CASES: OpCase[] = [
  gatherF16Case(1, 1, 5),
  gatherF16Case(3, 127, 50, { oob: true }),
  gatherF16Case(7, 257, 1000, { index_offset: 2 }),
  gatherF16Case(5, 100, 77, { transpose: 1 }),
  gatherF16Case(9, 255, 31, { input_hidden_size: 301, hidden_offset: 45 }),
  gatherF16Case(64, 1024, 40),
];

/**
 * An operation's cases plus cases for extra variants: the original cases keep to the variants they covered, the
 * extra ones run only on the variants `covers` accepts.
 */
export function withExtraCases(base: OpCases, covers: (v: KernelVariant) => boolean, extra: OpCase[]): OpCases {
  return {
    written: base.written,
    notCovered: (v) => (covers(v) ? undefined : base.notCovered(v)),
    cases: [
      ...base.cases.map((c) => ({ ...c, only: (v: KernelVariant) => !covers(v) && (c.only ? c.only(v) : true) })),
      ...extra.map((c) => ({ ...c, only: (v: KernelVariant) => covers(v) && (c.only ? c.only(v) : true) })),
    ],
  };
}
