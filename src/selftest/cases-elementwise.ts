/**
 * Op-test cases of `relu`, `clamp`, `transpose`, `bf16_to_f32`, `bf16_to_f16`, `split_qkv`, `split_qg` and `rope_qk`
 * (registered in cases.ts), with f16 twins for the ops that have f16 kernels (src/selftest/cases-f16.ts: the same
 * shapes and seeded values rounded to f16); plus the helpers cases.ts uses to give the norm / rope / scale / bias_add
 * / softmax cases to their f16 and subgroup kernels. References: src/reference/tensor-ops.ts.
 */
import type { KernelVariant } from '../registry/types.ts';
import { ropeLinearTables, type RopeUniforms } from '../reference/rope.ts';
import type { OpCase, OpCases, Shapes } from './cases.ts';
import { withF16Twins } from './cases-f16.ts';

const isF16 = (v: KernelVariant) => v.requires.includes('shader-f16');
/** The WebGPU default of maxComputeWorkgroupsPerDimension: sizes past 65535 * 256 exercise the grid-stride loops. */
const MAX_WG = 65535;

/** An operation's cases with `tunables` added (e.g. one that turns on the kernels it tests). */
export function withTunables(base: OpCases, tunables: Readonly<Record<string, number | string | boolean>>): OpCases {
  return { ...base, cases: base.cases.map((c) => ({ ...c, tunables: { ...c.tunables, ...tunables } })) };
}

/** f16 twins (on the shader-f16 variants) of the cases of an operation whose f32 cases cover its other variants. */
export function f16Twins(base: OpCases, names: readonly string[], twinIf?: (c: OpCase) => boolean): OpCases {
  return withF16Twins(base, isF16, names, twinIf);
}

/** Cases whose plain contract takes them (no column offsets, rows as wide as the bias): bias_add.contract.json. */
export const contiguousBiasAdd = (c: OpCase) => {
  const s = c.shapes as Shapes;
  return s.data![1] === s.bias![0];
};

const all = (cases: OpCase[], contracts: string[], written: string[]): OpCases => ({ contracts, written, notCovered: () => undefined, cases });

// ---------------------------------------------------------------------------------------------------------------
function unaryCase(size: number, amp = 4): OpCase {
  return { name: `n${size}`, shapes: { x: [size] }, inputs: (r) => ({ x: r.normals(size, amp) }) };
}

export const RELU_CASES = f16Twins(all([unaryCase(1), unaryCase(3), unaryCase(255), unaryCase(257), unaryCase(4097), unaryCase(MAX_WG * 256 + 1001)], ['relu'], ['output']), ['x']);

function clampCase(size: number, min: number, max: number): OpCase {
  return { name: `n${size} [${min}, ${max}]`, shapes: { x: [size] }, attributes: { min, max }, inputs: (r) => ({ x: r.normals(size, 4) }) };
}

export const CLAMP_CASES = all([clampCase(1, -1, 1), clampCase(7, 0, 0), clampCase(257, -0.5, 2), clampCase(1000, -3, -1), clampCase(70001, -1, 1)], ['clamp'], ['data']);

function transposeCase(rows: number, cols: number): OpCase {
  return { name: `${rows}x${cols}`, shapes: { x: [rows, cols] }, inputs: (r) => ({ x: r.floats(rows * cols) }) };
}

export const TRANSPOSE_CASES = all([transposeCase(1, 1), transposeCase(1, 300), transposeCase(300, 1), transposeCase(17, 33), transposeCase(256, 257), transposeCase(1000, 70)], ['transpose'], ['output']);

/** n bf16 values packed two per word: specials first (+0, -0, 1, -2, the smallest normal, 65504 and 1e6 (clamped by the f16 kernel)), then values in [-8, 8). */
function bf16Words(r: import('./rng.ts').Rng, n: number): Uint32Array {
  const specials = [0, 0x8000, 0x3f80, 0xc000, 0x0080, 0x477f, 0x4974];
  const w = new Uint32Array(Math.ceil(n / 2));
  const f = new Float32Array(1);
  const b = new Uint32Array(f.buffer);
  for (let i = 0; i < n; i++) {
    f[0] = r.uniform(-8, 8);
    const h = i < specials.length ? specials[i]! : b[0]! >>> 16;
    w[i >> 1]! |= h << (16 * (i & 1));
  }
  return w;
}

function bf16Case(size: number): OpCase {
  return { name: `n${size}`, shapes: { x: [size] }, dtypes: { x: 'bfloat16' }, inputs: (r) => ({ x: bf16Words(r, size) }) };
}

const BF16_SIZES = [1, 2, 7, 255, 1001, 4096];
export const BF16_TO_F32_CASES = all(BF16_SIZES.map(bf16Case), ['bf16_to_f32'], ['output']);
/** bf16_to_f16 writes f16: the harness compares it with the f16 tolerance (the specials exceed the f16 range: clamped). */
export const BF16_TO_F16_CASES = all(BF16_SIZES.map(bf16Case), ['bf16_to_f16'], ['output']);

function splitQkvCase(tokens: number, q: number, k: number, v: number): OpCase {
  return {
    name: `T${tokens} q${q} k${k} v${v}`,
    shapes: { qkv: [tokens, q + k + v] },
    attributes: { q_size: q, k_size: k },
    inputs: (r) => ({ qkv: r.floats(tokens * (q + k + v)) }),
  };
}

export const SPLIT_QKV_CASES = f16Twins(
  all([splitQkvCase(1, 1, 1, 1), splitQkvCase(1, 2048, 512, 512), splitQkvCase(3, 96, 32, 32), splitQkvCase(7, 100, 27, 3), splitQkvCase(130, 64, 64, 64)], ['split_qkv'], ['Q', 'K', 'V']),
  ['qkv'],
);

function splitQgCase(tokens: number, heads: number, D: number): OpCase {
  return { name: `T${tokens} heads${heads} D${D}`, shapes: { qg: [tokens, heads, 2 * D] }, inputs: (r) => ({ qg: r.floats(tokens * heads * 2 * D) }) };
}

export const SPLIT_QG_CASES = f16Twins(all([splitQgCase(1, 1, 1), splitQgCase(1, 16, 256), splitQgCase(5, 3, 7), splitQgCase(33, 8, 128)], ['split_qg'], ['Q', 'G']), ['qg']);

type RopeQkOpts = { start_pos?: number; interleaved?: number; pair_span_dim?: number; rotary_dim?: number; rope_base?: number };
/** Q [seq, qHeads, D] and K [seq, kvHeads, D] with HF default-rope tables for positions 0 .. start_pos + seq - 1. */
function ropeQkCase(seq: number, qHeads: number, kvHeads: number, D: number, o: RopeQkOpts = {}): OpCase {
  const rotary = o.rotary_dim ?? D;
  const start = o.start_pos ?? 0;
  const positions = start + seq;
  const half = rotary / 2;
  const u: RopeUniforms = { seq_len: seq, num_heads: qHeads, head_dim: D, start_pos: start, rope_base: o.rope_base ?? 10000, rope_scale: 1, rotary_dim: rotary, interleaved: o.interleaved ?? 0, pair_span_dim: o.pair_span_dim ?? 0 };
  const { rotary_dim: _r, rope_base: _b, ...attributes } = o;
  const e = Object.entries(o).map(([k, v]) => ` ${k}=${v}`).join('');
  return {
    name: `S${seq} q${qHeads} kv${kvHeads} D${D}${e}`,
    shapes: { q: [seq, qHeads, D], k: [seq, kvHeads, D], cos: [positions, half], sin: [positions, half] },
    attributes,
    inputs: (r) => {
      const { cos, sin } = ropeLinearTables(u, positions);
      return { q: r.floats(seq * qHeads * D), k: r.floats(seq * kvHeads * D), cos, sin };
    },
  };
}

export const ROPE_QK_CASES = f16Twins(
  all(
    [
      ropeQkCase(1, 1, 1, 2),
      ropeQkCase(1, 16, 8, 128, { start_pos: 37 }),
      ropeQkCase(7, 4, 1, 64, { interleaved: 1, start_pos: 5 }),
      ropeQkCase(5, 6, 2, 80, { rotary_dim: 32 }),
      ropeQkCase(3, 4, 4, 64, { rotary_dim: 16, pair_span_dim: 64 }),
      ropeQkCase(40, 8, 2, 32, { start_pos: 160, rope_base: 1e6 }),
    ],
    ['rope_qk'],
    ['q_input', 'k_input'],
  ),
  ['q', 'k'],
);
