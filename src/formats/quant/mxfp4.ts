/**
 * MXFP4 (OCP Microscaling, FP4 E2M1 elements with an E8M0 scale per block of 32).
 *
 * Element: 4 bits, sign (bit 3) + E2M1 magnitude (bits 0-2) from the table 0, 0.5, 1, 1.5, 2, 3, 4, 6.
 * Scale: one byte e, value 2^(e - 127) (e = 0 is 2^-127; ggml and transformers both treat 255 as 2^128, not NaN).
 * x = E2M1[nibble] * 2^(e - 127), computed exactly in f32 (a power of two times a 2-bit mantissa).
 *
 * Two byte layouts hold the same numbers:
 * - transformers / gpt-oss (`*_blocks` [..., G, 16] uint8 + `*_scales` [..., G] uint8): within a block, byte j
 *   holds element 2j in its low nibble and element 2j+1 in its high nibble. Rows are the leading dims.
 * - GGUF (ggml type MXFP4 = 39): 17-byte blocks, the e8m0 byte then 16 bytes qs; byte j holds element j in its
 *   low nibble and element j+16 in its high nibble (the Q4_0 order).
 *
 * Quantization (both layouts) follows ggml's quantize_row_mxfp4_ref: e = floor(log2 amax) - 2 + 127, so the largest
 * magnitude lands in [4, 8) and saturates at 6; each element takes the nearest table value at that scale, ties to
 * the lower code (the first of equal errors, as ggml's loop does: +0 over -0.5, 0.5 over 1 ...).
 */

export const MXFP4_BLOCK_SIZE = 32;
/** GGUF block bytes: 1 scale + 16 nibble bytes. */
export const MXFP4_TYPE_SIZE = 17;
/** Bytes of nibbles per block in either layout. */
export const MXFP4_BLOCK_BYTES = 16;

/** E2M1 values by 4-bit code (bit 3 = sign). */
export const E2M1_VALUES: readonly number[] = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/** 2^(e - 127) for an e8m0 byte (as f32; e = 255 gives 2^128 = Infinity in f32). */
export function e8m0ToF32(e: number): number {
  return Math.fround(2 ** ((e & 0xff) - 127));
}

/** The e8m0 byte ggml picks for a block whose largest magnitude is `amax` (0 for an all-zero block). */
export function mxfp4ScaleFor(amax: number): number {
  if (!(amax > 0)) return 0;
  // log2f in f32: a value just under a power of two that rounds to it in f32 takes that power, as in C.
  const e = Math.floor(Math.fround(Math.log2(amax))) - 2 + 127;
  return Math.max(0, Math.min(254, e));
}

/** The 4-bit code nearest to x at scale d (ties to the lower code, as ggml's best_index_mxfp4). */
export function mxfp4Code(x: number, d: number): number {
  let best = 0;
  let bestErr = Math.abs(x);
  for (let i = 1; i < 16; i++) {
    const err = Math.abs(Math.fround(E2M1_VALUES[i]! * d) - x);
    if (err < bestErr) {
      best = i;
      bestErr = err;
    }
  }
  return best;
}

function checkBlocks(name: string, n: number): number {
  if (!Number.isInteger(n) || n < 0 || n % MXFP4_BLOCK_SIZE !== 0) {
    throw new RangeError(`${name}: element count ${n} is not a multiple of the block size ${MXFP4_BLOCK_SIZE}`);
  }
  return n / MXFP4_BLOCK_SIZE;
}

/** The scale and the 32 codes of one block, in element order. */
function encodeBlock(x: Float32Array, o: number, codes: Uint8Array): number {
  let amax = 0;
  for (let j = 0; j < MXFP4_BLOCK_SIZE; j++) amax = Math.max(amax, Math.abs(x[o + j]!));
  const e = mxfp4ScaleFor(amax);
  const d = e8m0ToF32(e);
  for (let j = 0; j < MXFP4_BLOCK_SIZE; j++) codes[j] = mxfp4Code(x[o + j]!, d);
  return e;
}

// ---------- GGUF layout (ggml type MXFP4) ----------

export function dequantizeMXFP4(bytes: Uint8Array, nElements: number): Float32Array {
  const nb = checkBlocks('MXFP4', nElements);
  if (bytes.byteLength < nb * MXFP4_TYPE_SIZE) {
    throw new RangeError(`MXFP4: ${nElements} elements need ${nb * MXFP4_TYPE_SIZE} bytes (${nb} blocks of ${MXFP4_TYPE_SIZE}), got ${bytes.byteLength}`);
  }
  const out = new Float32Array(nElements);
  for (let i = 0; i < nb; i++) {
    const o = i * MXFP4_TYPE_SIZE;
    const d = e8m0ToF32(bytes[o]!);
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 1 + j]!;
      out[i * 32 + j] = E2M1_VALUES[q & 15]! * d;
      out[i * 32 + j + 16] = E2M1_VALUES[q >> 4]! * d;
    }
  }
  return out;
}

export function quantizeMXFP4(values: Float32Array): Uint8Array {
  const nb = checkBlocks('MXFP4', values.length);
  const out = new Uint8Array(nb * MXFP4_TYPE_SIZE);
  const codes = new Uint8Array(32);
  for (let i = 0; i < nb; i++) {
    const o = i * MXFP4_TYPE_SIZE;
    out[o] = encodeBlock(values, i * 32, codes);
    for (let j = 0; j < 16; j++) out[o + 1 + j] = codes[j]! | (codes[j + 16]! << 4);
  }
  return out;
}

// ---------- transformers / gpt-oss layout (`*_blocks` + `*_scales`) ----------

export interface Mxfp4Hf {
  /** [..., G, 16] nibble bytes, element 2j in the low nibble of byte j. */
  blocks: Uint8Array;
  /** [..., G] e8m0 bytes. */
  scales: Uint8Array;
}

/**
 * Dequantize `*_blocks` / `*_scales` to f32 in the same row order: [..., G*32] (transformers' convert_moe_packed_tensors
 * before its final transpose(1, 2), which the caller applies if it wants the [E, in, out] parameter layout).
 */
export function dequantizeMxfp4Hf(blocks: Uint8Array, scales: Uint8Array): Float32Array {
  const nb = scales.length;
  if (blocks.length !== nb * MXFP4_BLOCK_BYTES) {
    throw new RangeError(`MXFP4 blocks: ${blocks.length} bytes do not match ${nb} scales (expected ${nb * MXFP4_BLOCK_BYTES} = scales x 16)`);
  }
  const out = new Float32Array(nb * MXFP4_BLOCK_SIZE);
  for (let i = 0; i < nb; i++) {
    const d = e8m0ToF32(scales[i]!);
    const o = i * 16;
    for (let j = 0; j < 16; j++) {
      const q = blocks[o + j]!;
      out[i * 32 + 2 * j] = E2M1_VALUES[q & 15]! * d;
      out[i * 32 + 2 * j + 1] = E2M1_VALUES[q >> 4]! * d;
    }
  }
  return out;
}

/** Quantize rows of f32 (length a multiple of 32; blocks run along the last dim) to the transformers layout. */
export function quantizeMxfp4Hf(values: Float32Array): Mxfp4Hf {
  const nb = checkBlocks('MXFP4', values.length);
  const blocks = new Uint8Array(nb * 16);
  const scales = new Uint8Array(nb);
  const codes = new Uint8Array(32);
  for (let i = 0; i < nb; i++) {
    scales[i] = encodeBlock(values, i * 32, codes);
    for (let j = 0; j < 16; j++) blocks[i * 16 + j] = codes[2 * j]! | (codes[2 * j + 1]! << 4);
  }
  return { blocks, scales };
}

/** The transformers layout as GGUF MXFP4 blocks (same numbers, nibbles reordered; no rounding). */
export function mxfp4HfToGguf(blocks: Uint8Array, scales: Uint8Array): Uint8Array {
  const nb = scales.length;
  if (blocks.length !== nb * 16) throw new RangeError(`MXFP4 blocks: ${blocks.length} bytes do not match ${nb} scales`);
  const out = new Uint8Array(nb * MXFP4_TYPE_SIZE);
  const codes = new Uint8Array(32);
  for (let i = 0; i < nb; i++) {
    for (let j = 0; j < 16; j++) {
      const q = blocks[i * 16 + j]!;
      codes[2 * j] = q & 15;
      codes[2 * j + 1] = q >> 4;
    }
    const o = i * MXFP4_TYPE_SIZE;
    out[o] = scales[i]!;
    for (let j = 0; j < 16; j++) out[o + 1 + j] = codes[j]! | (codes[j + 16]! << 4);
  }
  return out;
}

/** GGUF MXFP4 blocks in the transformers layout (inverse of mxfp4HfToGguf). */
export function mxfp4GgufToHf(bytes: Uint8Array, nElements: number): Mxfp4Hf {
  const nb = checkBlocks('MXFP4', nElements);
  if (bytes.byteLength < nb * MXFP4_TYPE_SIZE) throw new RangeError(`MXFP4: ${nElements} elements need ${nb * MXFP4_TYPE_SIZE} bytes, got ${bytes.byteLength}`);
  const blocks = new Uint8Array(nb * 16);
  const scales = new Uint8Array(nb);
  const codes = new Uint8Array(32);
  for (let i = 0; i < nb; i++) {
    const o = i * MXFP4_TYPE_SIZE;
    scales[i] = bytes[o]!;
    for (let j = 0; j < 16; j++) {
      const q = bytes[o + 1 + j]!;
      codes[j] = q & 15;
      codes[j + 16] = q >> 4;
    }
    for (let j = 0; j < 16; j++) blocks[i * 16 + j] = codes[2 * j]! | (codes[2 * j + 1]! << 4);
  }
  return { blocks, scales };
}
