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
