/**
 * Half-precision conversions: IEEE-754 binary16 (f16) and bfloat16 (bf16) to and from f32.
 *
 * f32 -> f16 and f32 -> bf16 round to nearest, ties to even; values too large for f16 become ±Inf,
 * values too small become (signed) subnormals or ±0; NaN stays NaN (quiet). Inputs are treated as
 * f32 values (a JS number is first rounded to f32, as when it comes from a Float32Array).
 */

const f32Buf = new Float32Array(1);
const u32Buf = new Uint32Array(f32Buf.buffer);

/** The raw bits of `x` rounded to f32. */
export function f32Bits(x: number): number {
  f32Buf[0] = x;
  return u32Buf[0]!;
}

/** The f32 value with raw bits `bits`. */
export function f32FromBits(bits: number): number {
  u32Buf[0] = bits >>> 0;
  return f32Buf[0]!;
}

/** f32 -> f16 bits, round to nearest even. */
export function f32ToF16(x: number): number {
  const bits = f32Bits(x);
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;

  if (exp === 0xff) {
    // Inf or NaN. Keep the top payload bits and force a quiet NaN so a payload never becomes Inf.
    return mant === 0 ? sign | 0x7c00 : sign | 0x7e00 | (mant >>> 13);
  }
  const e = exp - 127 + 15; // f16 biased exponent
  if (e >= 31) return sign | 0x7c00; // overflow
  if (e <= 0) {
    // f16 subnormal (or zero). Value = (0x800000 | mant) * 2^(exp - 150); in units of 2^-24.
    if (e < -10) return sign; // below half the smallest subnormal: rounds to zero
    const m = mant | 0x800000;
    const shift = 14 - e; // 14..24
    let h = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) === 1)) h += 1; // may carry into the smallest normal
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h += 1; // carry may reach Inf: correct
  return sign | h;
}

/** f16 bits -> f32 value (exact). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

let f16Table: Float32Array | undefined;

/** Lookup table of all 65536 f16 values as f32 (built on first use, 256 KiB). */
export function f16Table32(): Float32Array {
  if (!f16Table) {
    f16Table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) f16Table[i] = f16ToF32(i);
  }
  return f16Table;
}

/** bf16 bits -> f32 value (exact). */
export function bf16ToF32(b: number): number {
  return f32FromBits((b & 0xffff) << 16);
}

/** f32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN. */
export function f32ToBf16(x: number): number {
  const bits = f32Bits(x);
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) {
    return ((bits >>> 16) & 0x8000) | 0x7fc0;
  }
  const rounded = bits + 0x7fff + ((bits >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

/** Decode little-endian f16 bytes to a Float32Array. */
export function f16BytesToF32(bytes: Uint8Array): Float32Array {
  const n = bytes.byteLength >>> 1;
  const out = new Float32Array(n);
  const table = f16Table32();
  for (let i = 0; i < n; i++) out[i] = table[bytes[2 * i]! | (bytes[2 * i + 1]! << 8)]!;
  return out;
}

/** Decode little-endian bf16 bytes to a Float32Array. */
export function bf16BytesToF32(bytes: Uint8Array): Float32Array {
  const n = bytes.byteLength >>> 1;
  const out = new Float32Array(n);
  const outBits = new Uint32Array(out.buffer);
  for (let i = 0; i < n; i++) outBits[i] = ((bytes[2 * i]! | (bytes[2 * i + 1]! << 8)) << 16) >>> 0;
  return out;
}

/** Encode f32 values as little-endian f16 bytes (RNE). */
export function f32ToF16Bytes(values: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(values.length * 2);
  for (let i = 0; i < values.length; i++) {
    const h = f32ToF16(values[i]!);
    out[2 * i] = h & 0xff;
    out[2 * i + 1] = h >>> 8;
  }
  return out;
}

/** Encode f32 values as little-endian bf16 bytes (RNE). */
export function f32ToBf16Bytes(values: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(values.length * 2);
  for (let i = 0; i < values.length; i++) {
    const b = f32ToBf16(values[i]!);
    out[2 * i] = b & 0xff;
    out[2 * i + 1] = b >>> 8;
  }
  return out;
}

/** Little-endian f32 bytes -> Float32Array (copies; works for any byte alignment). */
export function f32BytesToF32(bytes: Uint8Array): Float32Array {
  const out = new Float32Array(bytes.byteLength >>> 2);
  new Uint8Array(out.buffer).set(bytes.subarray(0, out.length * 4));
  return out;
}
