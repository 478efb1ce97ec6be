/**
 * Op-test cases of the `matmul` variants with Q4_K or f16 weights (registered in cases.ts next to the f32 cases):
 * shapes with 1 .. 1000 columns, 1 .. 130 rows, K from 1 to 9216 (Q4_K: multiples of 256, including 11 and 17 blocks
 * and more than one 16-block staging chunk; f16: odd K, K % 8 != 0). B is passed packed in u32 words (Q4_K blocks
 * with random nibbles, scales and mins; f16 bit patterns); src/reference/matmul-quant.ts tells the formats apart by
 * size. Semantics: each kernel's WGSL header; dispatch: the variants of linear.contract.json that run each kernel.
 */
import { f32ToF16 } from '../formats/f16.ts';
import { Q4_K_TYPE_SIZE } from '../formats/quant/index.ts';
import type { KernelVariant } from '../registry/types.ts';
import type { OpCase } from './cases.ts';
import type { Rng } from './rng.ts';

const Q4_KERNELS = [
  'matmul.q4_fused_gemv',
  'matmul.q4_fused_multicol',
  'matmul.q4_fused_batched',
  'matmul.q4_fused_batched_multicol_shared',
  'matmul.q4_fused_widetile',
  'matmul.q4_fused_metal_simd16',
];
const F16W_KERNELS = ['matmul.f16w_f32a', 'matmul.f16w_f32a_tiled', 'matmul.gemv', 'matmul.gemv_subgroup', 'matmul.gemv_subgroup_vec4', 'matmul.gemv_subgroup_multicol'];
/**
 * Kernels with f16 output (linear_f16.contract.json) and the dtype of their activations: f16 (packed two per u32 word
 * in the cases) or f32. Weights: f16 for the matmul.f16* / gemv* ones, Q4_K for the q4_fused_* ones.
 */
const F16OUT_KERNELS: Readonly<Record<string, 'float16' | 'float32'>> = {
  'matmul.f16': 'float16',
  'matmul.f16_vec4': 'float16',
  'matmul.f16_tiled': 'float16',
  'matmul.gemv_f16a': 'float16',
  'matmul.gemv_subgroup_f16a': 'float16',
  'matmul.gemv_subgroup_vec4_f16a': 'float16',
  'matmul.gemv_subgroup_multicol_f16a': 'float16',
  'matmul.q4_fused_multicol_f16': 'float32',
  'matmul.q4_fused_multicol_f16a': 'float16',
  'matmul.q4_fused_batched_f16': 'float32',
  'matmul.q4_fused_batched_f16a': 'float16',
  'matmul.q4_fused_widetile_f16a': 'float16',
  'matmul.q4_fused_widetile_f16': 'float32',
};
const isQ4 = (v: KernelVariant) => v.weightDtype === 'q4k' && Q4_KERNELS.includes(v.id);
const isF16W = (v: KernelVariant) => v.weightDtype === 'f16' && F16W_KERNELS.includes(v.id);
const isF16Out = (v: KernelVariant) => v.id in F16OUT_KERNELS;
const isGemv = (v: KernelVariant) => /gemv|multicol|simd16/.test(v.name);

/** Whether these cases cover a matmul variant. */
export const coversMatmulQuant = (v: KernelVariant): boolean => isQ4(v) || isF16W(v) || isF16Out(v);

/**
 * Random Q4_K blocks: random nibbles and 6-bit scale/min bytes (every bit of the packing is exercised), d and dmin
 * positive f16 in [0.0005, 0.002) so that weights are O(1).
 */
export function randomQ4KBlocks(r: Rng, blocks: number): Uint8Array {
  const b = new Uint8Array(blocks * Q4_K_TYPE_SIZE);
  for (let i = 0; i < b.length; i++) b[i] = r.int(256);
  for (let i = 0; i < blocks; i++) {
    const o = i * Q4_K_TYPE_SIZE;
    const d = f32ToF16(r.uniform(0.0005, 0.002));
    const dmin = f32ToF16(r.uniform(0.0005, 0.002));
    b[o] = d & 0xff;
    b[o + 1] = d >> 8;
    b[o + 2] = dmin & 0xff;
    b[o + 3] = dmin >> 8;
  }
  return b;
}

/** n random f16 values in [-1, 1) packed two per u32 word. */
export function randomF16Words(r: Rng, n: number): Uint32Array {
  const w = new Uint32Array(Math.ceil(n / 2));
  for (let i = 0; i < n; i++) w[i >> 1]! |= f32ToF16(r.uniform()) << (16 * (i & 1));
  return w;
}

function q4Case(M: number, N: number, K: number, o: { alpha?: number; gemvRows?: boolean } = {}): OpCase {
  const alpha = o.alpha ?? 1;
  return {
    name: `q4k M${M} N${N} K${K}${alpha !== 1 ? ` a${alpha}` : ''}`,
    shapes: { x: [M, K], w: [N, K] },
    dtypes: { w: 'q4_k' },
    attributes: { alpha },
    inputs: (r) => {
      const w = randomQ4KBlocks(r, (N * K) / 256);
      return { x: r.floats(M * K), w: new Uint32Array(w.buffer) };
    },
    // GEMV kernels read the weights once per row: many-row cases only where o.gemvRows says so (time on SwiftShader)
    only: (v) => isQ4(v) && (M <= 3 || o.gemvRows === true || !isGemv(v)),
  };
}

function f16wCase(M: number, N: number, K: number, o: { alpha?: number; gemvRows?: boolean } = {}): OpCase {
  const alpha = o.alpha ?? 1;
  return {
    name: `f16w M${M} N${N} K${K}${alpha !== 1 ? ` a${alpha}` : ''}`,
    shapes: { x: [M, K], w: [N, K] },
    dtypes: { w: 'float16' },
    attributes: { alpha },
    inputs: (r) => ({ x: r.floats(M * K), w: randomF16Words(r, N * K) }),
    only: (v) => isF16W(v) && (M <= 3 || o.gemvRows === true || !isGemv(v)),
  };
}

/**
 * f16 output (linear_f16.contract.json): x f16 (packed in words) or f32, weights f16 or Q4_K; the kernels whose
 * activation and weight dtypes match run it.
 */
function f16OutCase(M: number, N: number, K: number, x: 'float16' | 'float32', w: 'float16' | 'q4_k', o: { alpha?: number } = {}): OpCase {
  const alpha = o.alpha ?? 1;
  return {
    name: `f16out x${x === 'float16' ? 'f16' : 'f32'} w${w === 'q4_k' ? 'q4k' : 'f16'} M${M} N${N} K${K}${alpha !== 1 ? ` a${alpha}` : ''}`,
    shapes: { x: [M, K], w: [N, K] },
    dtypes: { x, w },
    attributes: { alpha },
    contracts: ['linear_f16'],
    inputs: (r) => {
      const wv = w === 'q4_k' ? new Uint32Array(randomQ4KBlocks(r, (N * K) / 256).buffer) : randomF16Words(r, N * K);
      return { x: x === 'float16' ? randomF16Words(r, M * K) : r.floats(M * K), w: wv };
    },
    only: (v) => F16OUT_KERNELS[v.id] === x && (v.weightDtype === 'q4k') === (w === 'q4_k') && (M <= 3 || !isGemv(v)),
  };
}

export const MATMUL_QUANT_CASES: OpCase[] = [
  q4Case(1, 1, 256),
  q4Case(1, 7, 512, { alpha: -0.5 }),
  q4Case(1, 33, 2816),
  q4Case(1, 1000, 256, { alpha: 0.125 }),
  q4Case(1, 40, 4352), // 17 blocks: three staging chunks in q4_fused_multicol (8 + 8 + 1)
  q4Case(1, 5, 9216),
  q4Case(3, 7, 2816),
  q4Case(3, 300, 512),
  q4Case(64, 70, 1280),
  q4Case(17, 65, 1024, { alpha: 2 }),
  q4Case(5, 9, 256),
  f16wCase(1, 1, 1),
  f16wCase(1, 7, 33),
  f16wCase(1, 33, 256),
  f16wCase(1, 300, 1000),
  f16wCase(1, 65, 130, { alpha: 0.5 }),
  f16wCase(1, 1000, 64),
  f16wCase(3, 9, 77, { alpha: -2 }),
  f16wCase(2, 3, 0),
  f16wCase(17, 70, 129, { gemvRows: true }),
  f16wCase(64, 100, 64),
  f16wCase(130, 33, 257),
  f16OutCase(1, 1, 1, 'float16', 'float16'),
  f16OutCase(1, 300, 1000, 'float16', 'float16', { alpha: 0.5 }),
  f16OutCase(1, 33, 256, 'float16', 'float16'),
  f16OutCase(3, 9, 77, 'float16', 'float16', { alpha: -2 }),
  f16OutCase(17, 70, 129, 'float16', 'float16'),
  f16OutCase(130, 33, 257, 'float16', 'float16'),
  f16OutCase(1, 33, 2816, 'float16', 'q4_k'),
  f16OutCase(1, 40, 4352, 'float32', 'q4_k', { alpha: 0.125 }),
  f16OutCase(3, 7, 512, 'float16', 'q4_k'),
  f16OutCase(3, 300, 512, 'float32', 'q4_k'),
  f16OutCase(17, 65, 1024, 'float16', 'q4_k', { alpha: 2 }),
  f16OutCase(64, 300, 512, 'float32', 'q4_k'),
  f16OutCase(9, 257, 256, 'float16', 'q4_k'),
];
