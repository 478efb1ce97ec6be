/**
 * Q8_0: blocks of 32 elements, 34 bytes: f16 scale d, then 32 int8 quants q. x = d * q.
 */

import { blockCount, readF16, writeF16 } from './common.ts';

export const Q8_0_BLOCK_SIZE = 32;
export const Q8_0_TYPE_SIZE = 34;

export function dequantizeQ8_0(bytes: Uint8Array, nElements: number): Float32Array {
  const nb = blockCount('Q8_0', Q8_0_BLOCK_SIZE, Q8_0_TYPE_SIZE, bytes.byteLength, nElements);
  const out = new Float32Array(nElements);
  for (let i = 0; i < nb; i++) {
    const o = i * Q8_0_TYPE_SIZE;
    const d = readF16(bytes, o);
    for (let j = 0; j < 32; j++) {
      const q = (bytes[o + 2 + j]! << 24) >> 24; // sign-extend int8
      out[i * 32 + j] = d * q;
    }
  }
  return out;
}

/**
 * Quantize like ggml's quantize_row_q8_0_ref (d = amax / 127), except that the quants are computed
 * against the f16-rounded d that is stored, so every element is within d/2 of its input.
 */
export function quantizeQ8_0(values: Float32Array): Uint8Array {
  const nb = blockCount('Q8_0', Q8_0_BLOCK_SIZE, Q8_0_TYPE_SIZE, Infinity, values.length);
  const out = new Uint8Array(nb * Q8_0_TYPE_SIZE);
  for (let i = 0; i < nb; i++) {
    const x = values.subarray(i * 32, i * 32 + 32);
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[j]!));
    const o = i * Q8_0_TYPE_SIZE;
    const d = writeF16(out, o, amax / 127);
    const id = d ? 1 / d : 0;
    for (let j = 0; j < 32; j++) {
      const v = x[j]! * id;
      // roundf: half away from zero
      const q = Math.max(-127, Math.min(127, Math.sign(v) * Math.floor(Math.abs(v) + 0.5)));
      out[o + 2 + j] = q & 0xff;
    }
  }
  return out;
}

/**
 * Q8_0 rows repacked in planes for the int8 rows GEMV (gemv-q8a.wgsl.jinja, weightLayout "planes"; the dtype
 * q8_0_planes): each row of K values keeps its K / 32 * 34 bytes, its blocks' 32 int8 quants first (K bytes), then their
 * f16 scales (K / 16 bytes). The same bytes a row as the GGUF layout, so rows still concatenate and slice as rows; a
 * kernel reads a block as 2 vec4<u32> of quants (16-byte aligned where K is a multiple of 256) and its scale from the
 * row's tail, none shifted.
 */
export function q8_0ToPlanes(bytes: Uint8Array, rows: number, K: number): Uint8Array {
  const nb = blockCount('Q8_0', Q8_0_BLOCK_SIZE, Q8_0_TYPE_SIZE, bytes.byteLength, rows * K);
  if (K % Q8_0_BLOCK_SIZE !== 0) throw new RangeError(`Q8_0 planes: rows of ${K} values are not whole blocks of 32`);
  const out = new Uint8Array(nb * Q8_0_TYPE_SIZE);
  const bpr = K / 32;
  for (let r = 0; r < rows; r++) {
    const row = r * bpr * Q8_0_TYPE_SIZE;
    for (let b = 0; b < bpr; b++) {
      const o = row + b * Q8_0_TYPE_SIZE;
      out.set(bytes.subarray(o + 2, o + 34), row + 32 * b);
      out[row + K + 2 * b] = bytes[o]!;
      out[row + K + 2 * b + 1] = bytes[o + 1]!;
    }
  }
  return out;
}
