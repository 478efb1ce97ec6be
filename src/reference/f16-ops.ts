/**
 * CPU references of the operations that read or write f16 data packed two per u32 word (element e = low half of
 * word e/2 when e is even, high half when odd: the little-endian byte layout of an f16 array): `cast`,
 * `kv_cache_write`, `gather.f16`, and the Q8_0 row-wise `dequant` variants. f16 results are IEEE bits (Uint16Array),
 * rounded to nearest even and saturated to +-65504 as the kernels do (src/kernels/cast_f32_to_f16.wgsl).
 */
import { f16Table32, f32ToF16 } from '../formats/f16.ts';
import { readF16 } from '../formats/quant/common.ts';
import { gatherRef, type GatherUniforms } from './gather.ts';

const F16_MAX = 65504;

/** f32 value -> f16 bits as the kernels convert: saturate to +-65504, then round to nearest even. */
export function toF16Saturating(x: number): number {
  return f32ToF16(Math.max(-F16_MAX, Math.min(F16_MAX, Math.fround(x))));
}

/** f16 bits -> u32 words (two per word; an odd count leaves the last high half 0). */
export function packF16Words(bits: ArrayLike<number>): Uint32Array {
  const w = new Uint32Array(Math.ceil(bits.length / 2));
  for (let i = 0; i < bits.length; i++) w[i >> 1]! |= (bits[i]! & 0xffff) << (16 * (i & 1));
  return w;
}

/** u32 words -> the first n f16 bit patterns. */
export function unpackF16Words(words: ArrayLike<number>, n: number): Uint16Array {
  const b = new Uint16Array(n);
  for (let i = 0; i < n; i++) b[i] = (words[i >> 1]! >>> (16 * (i & 1))) & 0xffff;
  return b;
}

/** u32 words -> the first n f16 values as f32. */
export function f16WordsToF32(words: ArrayLike<number>, n: number): Float32Array {
  const t = f16Table32();
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = t[(words[i >> 1]! >>> (16 * (i & 1))) & 0xffff]!;
  return out;
}

/** cast.f16_to_f32: input words (f16 [size]) -> f32 [size] (exact). */
export function castF16ToF32Ref(input: ArrayLike<number>, u: { size: number }): Float32Array {
  return f16WordsToF32(input, u.size);
}

/** cast.f32_to_f16: f32 [size] -> f16 bits [size]. */
export function castF32ToF16Ref(input: ArrayLike<number>, u: { size: number }): Uint16Array {
  const out = new Uint16Array(u.size);
  for (let i = 0; i < u.size; i++) out[i] = toF16Saturating(input[i]!);
  return out;
}

export interface KvCacheWriteUniforms {
  src_offset: number;
  dst_offset: number;
  count: number;
}

/** kv_cache_write.f32_to_f16: cache bits with elements dst_offset .. dst_offset+count-1 replaced (one cache). */
export function kvCacheWriteRef(input: ArrayLike<number>, cacheBits: ArrayLike<number>, u: KvCacheWriteUniforms): Uint16Array {
  const out = Uint16Array.from(cacheBits);
  for (let i = 0; i < u.count; i++) out[u.dst_offset + i] = toF16Saturating(input[u.src_offset + i]!);
  return out;
}

/** gather.f16: gather.wgsl's semantics over an f16 table given as packed words. */
export function gatherF16Ref(indices: ArrayLike<number>, tableWords: ArrayLike<number>, u: GatherUniforms): Float64Array {
  const tab = f16WordsToF32(tableWords, tableWords.length * 2);
  return gatherRef(indices, tab, u);
}

export const Q8_0_BLOCK_BYTES = 34;

export interface DequantRowwiseUniforms {
  num_blocks: number;
  blocks_per_row: number;
  K: number;
  rows: number;
}

/**
 * dequant.f32_rowwise: Q8_0 blocks (f16 d + 32 int8, 34 bytes, packed back to back), row r = blocks_per_row blocks,
 * output f32 [rows, K] with output[r*K + c] = d * q of weight c % 32 of block r*blocks_per_row + c/32.
 */
export function dequantQ8_0RowwiseRef(bytes: Uint8Array, u: DequantRowwiseUniforms): Float32Array {
  const out = new Float32Array(u.rows * u.K);
  for (let r = 0; r < u.rows; r++) {
    for (let c = 0; c < u.K; c++) {
      const o = (r * u.blocks_per_row + (c >> 5)) * Q8_0_BLOCK_BYTES;
      if (o + Q8_0_BLOCK_BYTES > bytes.byteLength) throw new RangeError(`dequant rowwise: block at byte ${o} is past the ${bytes.byteLength}-byte buffer`);
      const q = (bytes[o + 2 + (c & 31)]! << 24) >> 24;
      out[r * u.K + c] = readF16(bytes, o) * q;
    }
  }
  return out;
}

/** dequant.f16_rowwise: the same values as f16 bits. */
export function dequantQ8_0RowwiseF16Ref(bytes: Uint8Array, u: DequantRowwiseUniforms): Uint16Array {
  const f = dequantQ8_0RowwiseRef(bytes, u);
  const out = new Uint16Array(f.length);
  for (let i = 0; i < f.length; i++) out[i] = toF16Saturating(f[i]!);
  return out;
}
