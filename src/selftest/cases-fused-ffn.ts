/**
 * Op-test cases of the `fused_ffn` variants (fused gate/up projection + gated activation) through
 * fused_ffn.contract.json: weights f32, f16 (packed two per u32 word) or Q4_K (random blocks), activations f32 or f16
 * (the _f16a kernels), silu and gelu_tanh, 1 .. 70 rows, intermediate sizes that are not multiples of any per-workgroup
 * output count, hidden sizes past one 256-value staging chunk. Reference: src/reference/fused-ffn.ts.
 */
import type { KernelVariant } from '../registry/types.ts';
import { randomF16Words, randomQ4KBlocks } from './cases-matmul-quant.ts';
import type { OpCase, OpCases } from './cases.ts';

type W = 'float32' | 'float16' | 'q4_k';
type X = 'float32' | 'float16';

/** The activation and weight dtypes each registry kernel reads (what fused_ffn.contract.json routes to it). */
const KERNEL_DTYPES: Readonly<Record<string, { x: X; w: W; decode?: boolean }>> = {
  'fused_ffn.default': { x: 'float32', w: 'float32' },
  'fused_ffn.multi': { x: 'float32', w: 'float32', decode: true },
  'fused_ffn.batched': { x: 'float32', w: 'float32' },
  'fused_ffn.f16': { x: 'float32', w: 'float16', decode: true },
  'fused_ffn.f16_batched': { x: 'float32', w: 'float16' },
  'fused_ffn.f16_native': { x: 'float32', w: 'float16', decode: true },
  'fused_ffn.f16_native_batched': { x: 'float32', w: 'float16' },
  'fused_ffn.q4k': { x: 'float32', w: 'q4_k', decode: true },
  'fused_ffn.q4k_batched': { x: 'float32', w: 'q4_k' },
  'fused_ffn.q4k_metal_simd16': { x: 'float32', w: 'q4_k', decode: true },
  'fused_ffn.q4k_f16a': { x: 'float16', w: 'q4_k', decode: true },
  'fused_ffn.q4k_batched_f16a': { x: 'float16', w: 'q4_k' },
};

interface FfnOpts {
  x?: X;
  activation?: 'silu' | 'gelu_tanh';
  alpha?: number;
}

function ffnCase(M: number, H: number, I: number, w: W, o: FfnOpts = {}): OpCase {
  const x = o.x ?? 'float32';
  const activation = o.activation ?? 'silu';
  const alpha = o.alpha ?? 1;
  const weights = (r: import('./rng.ts').Rng) =>
    w === 'q4_k' ? new Uint32Array(randomQ4KBlocks(r, (I * H) / 256).buffer) : w === 'float16' ? randomF16Words(r, I * H) : r.floats(I * H);
  return {
    name: `${w === 'q4_k' ? 'q4k' : w === 'float16' ? 'f16' : 'f32'}${x === 'float16' ? ' xf16' : ''} M${M} H${H} I${I} ${activation}${alpha !== 1 ? ` a${alpha}` : ''}`,
    shapes: { x: [M, H], gate: [I, H], up: [I, H] },
    dtypes: { x, gate: w, up: w },
    attributes: { activation, alpha },
    inputs: (r) => ({ x: x === 'float16' ? randomF16Words(r, M * H) : r.floats(M * H), gate: weights(r), up: weights(r) }),
    // decode kernels (one row per workgroup, weights read once per row) only on few rows (time on SwiftShader)
    only: (v) => {
      const d = KERNEL_DTYPES[v.id];
      return !!d && d.x === x && d.w === w && (M <= 8 || !d.decode);
    },
  };
}

export const FUSED_FFN_CASES: OpCases = {
  contracts: ['fused_ffn'],
  written: ['output'],
  notCovered: (v: KernelVariant) =>
    v.id in KERNEL_DTYPES ? undefined : `${v.id}: its meaning (a GeGLU-only tiled kernel with its own per-layer uniform) is not given by the registry's fused_ffn bindings; no cases`,
  cases: [
    ffnCase(1, 1, 1, 'float32'),
    ffnCase(1, 300, 9, 'float32', { activation: 'gelu_tanh' }),
    ffnCase(3, 64, 70, 'float32', { alpha: 0.5 }),
    ffnCase(9, 257, 13, 'float32'),
    ffnCase(1, 7, 5, 'float16'),
    ffnCase(2, 300, 33, 'float16', { activation: 'gelu_tanh' }),
    ffnCase(17, 130, 9, 'float16', { alpha: -2 }),
    ffnCase(1, 256, 1, 'q4_k'),
    ffnCase(1, 512, 37, 'q4_k', { activation: 'gelu_tanh' }),
    ffnCase(3, 1280, 20, 'q4_k', { alpha: 0.25 }),
    ffnCase(10, 512, 17, 'q4_k'),
    ffnCase(1, 512, 37, 'q4_k', { x: 'float16' }),
    ffnCase(6, 768, 9, 'q4_k', { x: 'float16', activation: 'gelu_tanh' }),
    ffnCase(11, 256, 12, 'q4_k', { x: 'float16' }),
  ],
};
