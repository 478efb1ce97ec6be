/**
 * CPU references of the matmul variants with quantized or half-precision weights (f64 accumulation, one f32
 * rounding at the end). Convention of every `matmul` variant: C[m, n] = alpha * sum_k A[m, k] * W[n, k], with A
 * [M, K] and C [M, N] row-major f32 and W stored row by row ([N, K], the HF Linear layout).
 * Parameter objects use the registry's uniform field names (`matmul` base uniforms: M, N, K, alpha).
 */
import { f16Table32 } from '../formats/f16.ts';
import { dequantizeQ4_K, Q4_K_BLOCK_SIZE, Q4_K_TYPE_SIZE } from '../formats/quant/index.ts';

export interface MatmulUniforms {
  M: number;
  N: number;
  K: number;
  alpha: number;
}

function check(name: string, a: Float32Array, u: MatmulUniforms): void {
  if (a.length < u.M * u.K) throw new RangeError(`${name}: A has ${a.length} elements, needs M*K = ${u.M * u.K}`);
}

/** C = alpha * A · W^T with W given as f32 [N, K]. */
export function matmulF32Reference(a: Float32Array, w: Float32Array, u: MatmulUniforms): Float32Array {
  const { M, N, K, alpha } = u;
  check('matmul', a, u);
  if (w.length < N * K) throw new RangeError(`matmul: W has ${w.length} elements, needs N*K = ${N * K}`);
  const c = new Float32Array(M * N);
  for (let m = 0; m < M; m++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      const ao = m * K;
      const wo = n * K;
      for (let k = 0; k < K; k++) s += a[ao + k]! * w[wo + k]!;
      c[m * N + n] = alpha * s;
    }
  }
  return c;
}

/**
 * Q4_K weights (ggml block_q4_K, 144 bytes per 256 weights, row n = K / 256 consecutive blocks): dequantized with
 * the exact codec, then multiplied in f64. K must be a multiple of 256.
 */
export function matmulQ4KReference(a: Float32Array, w: Uint8Array, u: MatmulUniforms): Float32Array {
  if (u.K % Q4_K_BLOCK_SIZE !== 0) throw new RangeError(`matmul.q4k: K = ${u.K} is not a multiple of ${Q4_K_BLOCK_SIZE}`);
  const need = (u.N * u.K / Q4_K_BLOCK_SIZE) * Q4_K_TYPE_SIZE;
  if (w.byteLength < need) throw new RangeError(`matmul.q4k: W has ${w.byteLength} bytes, needs ${need}`);
  return matmulF32Reference(a, dequantizeQ4_K(w, u.N * u.K), u);
}

/** f16 weights (raw IEEE binary16 bits, [N, K] row-major, no padding between rows). */
export function matmulF16WReference(a: Float32Array, w: Uint16Array, u: MatmulUniforms): Float32Array {
  if (w.length < u.N * u.K) throw new RangeError(`matmul.f16w: W has ${w.length} elements, needs N*K = ${u.N * u.K}`);
  const t = f16Table32();
  const wf = new Float32Array(u.N * u.K);
  for (let i = 0; i < wf.length; i++) wf[i] = t[w[i]!]!;
  return matmulF32Reference(a, wf, u);
}

export type MatmulWeightFormat = 'f32' | 'q4k' | 'f16';

/**
 * The weight format of a `matmul` B buffer as the op-test harness passes it: Float32Array = f32 [N, K]; Uint32Array
 * = packed words, Q4_K when it holds exactly N*K/256 blocks of 144 bytes (K % 256 == 0), f16 when it holds
 * ceil(N*K/2) words. The two packed sizes never coincide for N*K > 0.
 */
export function matmulWeightFormat(B: Float32Array | Uint32Array, u: MatmulUniforms): MatmulWeightFormat {
  if (B instanceof Float32Array) return 'f32';
  const elems = u.N * u.K;
  if (u.K % Q4_K_BLOCK_SIZE === 0 && B.length * 4 === (elems / Q4_K_BLOCK_SIZE) * Q4_K_TYPE_SIZE) return 'q4k';
  if (B.length === Math.ceil(elems / 2)) return 'f16';
  throw new RangeError(
    `matmul: B holds ${B.length} u32 words, which is neither Q4_K (${(elems / Q4_K_BLOCK_SIZE) * (Q4_K_TYPE_SIZE / 4)} words) nor f16 (${Math.ceil(elems / 2)}) for N=${u.N}, K=${u.K}`,
  );
}

/** C = alpha * A · W^T for any weight format the matmul variants read (see matmulWeightFormat). */
export function matmulAnyReference(a: Float32Array, B: Float32Array | Uint32Array, u: MatmulUniforms): Float32Array {
  switch (matmulWeightFormat(B, u)) {
    case 'f32':
      return matmulF32Reference(a, B as Float32Array, u);
    case 'q4k':
      return matmulQ4KReference(a, new Uint8Array(B.buffer, B.byteOffset, B.byteLength), u);
    case 'f16': {
      const bits = new Uint16Array(u.N * u.K);
      for (let i = 0; i < bits.length; i++) bits[i] = (B[i >> 1]! >>> (16 * (i & 1))) & 0xffff;
      return matmulF16WReference(a, bits, u);
    }
  }
}
