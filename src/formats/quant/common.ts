/** Helpers shared by the block codecs. */

import { f16Table32, f32ToF16 } from '../f16.ts';

/** Round to nearest, ties to even (what ggml's nearest_int does with its f32 magic-number trick). */
export function nearestInt(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && (r & 1) !== 0 ? r - 1 : r;
}

/** Read a little-endian f16 at `offset` as f32. */
export function readF16(bytes: Uint8Array, offset: number): number {
  return f16Table32()[bytes[offset]! | (bytes[offset + 1]! << 8)]!;
}

/** Write `value` as a little-endian f16 at `offset`; returns the value actually stored (as f32). */
export function writeF16(bytes: Uint8Array, offset: number, value: number): number {
  const h = f32ToF16(value);
  bytes[offset] = h & 0xff;
  bytes[offset + 1] = h >>> 8;
  return f16Table32()[h]!;
}

/** Check a (bytes, nElements) pair for a block codec and return the block count. */
export function blockCount(
  name: string,
  blockSize: number,
  typeSize: number,
  byteLength: number,
  nElements: number,
): number {
  if (!Number.isInteger(nElements) || nElements < 0 || nElements % blockSize !== 0) {
    throw new RangeError(`${name}: element count ${nElements} is not a multiple of the block size ${blockSize}`);
  }
  const nb = nElements / blockSize;
  if (byteLength < nb * typeSize) {
    throw new RangeError(
      `${name}: ${nElements} elements need ${nb * typeSize} bytes (${nb} blocks of ${typeSize}), got ${byteLength}`,
    );
  }
  return nb;
}
