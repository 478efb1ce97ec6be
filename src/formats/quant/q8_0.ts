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
 * row's tail, none shifted. K a multiple of 64 (rows start on a word).
 */
export function q8_0ToPlanes(bytes: Uint8Array, rows: number, K: number): Uint8Array {
  const nb = blockCount('Q8_0', Q8_0_BLOCK_SIZE, Q8_0_TYPE_SIZE, bytes.byteLength, rows * K);
  if (K % 64 !== 0) throw new RangeError(`Q8_0 planes: rows of ${K} values; they are repacked as u32 words, so K must be a multiple of 64`);
  const src = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice(0, nb * Q8_0_TYPE_SIZE);
  const w = new Uint32Array(src.buffer, src.byteOffset, (nb * Q8_0_TYPE_SIZE) / 4);
  const out = new Uint8Array(nb * Q8_0_TYPE_SIZE);
  const ow = new Uint32Array(out.buffer);
  const oh = new Uint16Array(out.buffer);
  const bpr = K / 32;
  const rw = (bpr * Q8_0_TYPE_SIZE) / 4; // words a row (a multiple of 17: rows start on a word)
  for (let r = 0; r < rows; r++) {
    const row = r * rw;
    const scales = 2 * row + K / 2; // the row's scales, in halves
    // blocks in pairs of 17 words: the even block's d is the low half of its first word and its quants start 2 bytes
    // into it; the odd block's d is the high half of word 8 and its quants are words 9 .. 16 (little-endian)
    for (let b = 0; b < bpr; b += 2) {
      const a = row + (17 * b) / 2;
      const q = row + 8 * b;
      for (let j = 0; j < 8; j++) ow[q + j] = (w[a + j]! >>> 16) | (w[a + j + 1]! << 16);
      for (let j = 0; j < 8; j++) ow[q + 8 + j] = w[a + 9 + j]!;
      oh[scales + b] = w[a]! & 0xffff;
      oh[scales + b + 1] = w[a + 8]! >>> 16;
    }
  }
  return out;
}
