import { describe, expect, it } from 'vitest';
import {
  bf16BytesToF32,
  bf16ToF32,
  f16BytesToF32,
  f16ToF32,
  f32FromBits,
  f32ToBf16,
  f32ToBf16Bytes,
  f32ToF16,
  f32ToF16Bytes,
} from '../src/formats/f16.ts';

describe('f32 -> f16', () => {
  it('encodes exactly representable values', () => {
    expect(f32ToF16(1)).toBe(0x3c00);
    expect(f32ToF16(-2)).toBe(0xc000);
    expect(f32ToF16(0.5)).toBe(0x3800);
    expect(f32ToF16(65504)).toBe(0x7bff); // largest finite
    expect(f32ToF16(2 ** -14)).toBe(0x0400); // smallest normal
    expect(f32ToF16(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(f32ToF16(1023 * 2 ** -24)).toBe(0x03ff); // largest subnormal
    expect(f32ToF16(0)).toBe(0x0000);
    expect(f32ToF16(-0)).toBe(0x8000);
  });

  it('rounds to nearest, ties to even', () => {
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // tie between 0x3c00 and 0x3c01 -> even
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie between 0x3c01 and 0x3c02 -> even
    expect(f32ToF16(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01); // just above the tie
    expect(f32ToF16(0.1)).toBe(0x2e66);
    expect(f32ToF16(65519)).toBe(0x7bff); // below the overflow tie
    expect(f32ToF16(65520)).toBe(0x7c00); // tie with 65536 -> "even" is Inf
  });

  it('rounds in the subnormal range, including into the smallest normal', () => {
    expect(f32ToF16(2 ** -25)).toBe(0x0000); // half the smallest subnormal: tie -> even (0)
    expect(f32ToF16(2 ** -25 * (1 + 2 ** -20))).toBe(0x0001);
    expect(f32ToF16(3 * 2 ** -25)).toBe(0x0002); // 1.5 ulp -> 2
    expect(f32ToF16(1023.5 * 2 ** -24)).toBe(0x0400); // tie -> 1024 = smallest normal
    expect(f32ToF16(-(2 ** -26))).toBe(0x8000);
  });

  it('handles infinities and NaN', () => {
    expect(f32ToF16(Infinity)).toBe(0x7c00);
    expect(f32ToF16(-Infinity)).toBe(0xfc00);
    expect(f32ToF16(1e10)).toBe(0x7c00);
    const nan = f32ToF16(NaN);
    expect(nan & 0x7c00).toBe(0x7c00);
    expect(nan & 0x3ff).not.toBe(0);
    // a NaN payload that lives only in the low f32 bits must not become Inf
    expect(f32ToF16(f32FromBits(0x7f800001)) & 0x3ff).not.toBe(0);
  });

  it('round-trips every f16 value', () => {
    const bad: number[] = [];
    for (let h = 0; h < 65536; h++) {
      const f = f16ToF32(h);
      const isNanBits = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
      if (Number.isNaN(f) ? !isNanBits : f32ToF16(f) !== h) bad.push(h);
    }
    expect(bad).toEqual([]);
  });

  it('decodes f16 values', () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0x0001)).toBe(2 ** -24);
    expect(f16ToF32(0xfbff)).toBe(-65504);
    expect(f16ToF32(0x7c00)).toBe(Infinity);
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
  });
});

describe('bf16', () => {
  it('converts f32 -> bf16 with round to nearest even', () => {
    expect(f32ToBf16(1)).toBe(0x3f80);
    expect(f32ToBf16(f32FromBits(0x3f808000))).toBe(0x3f80); // tie, even stays
    expect(f32ToBf16(f32FromBits(0x3f818000))).toBe(0x3f82); // tie, odd rounds up
    expect(f32ToBf16(f32FromBits(0x3f808001))).toBe(0x3f81); // above tie
    expect(f32ToBf16(f32FromBits(0x7f7fffff))).toBe(0x7f80); // max f32 overflows to Inf
    expect(f32ToBf16(-Infinity)).toBe(0xff80);
    expect(Number.isNaN(bf16ToF32(f32ToBf16(NaN)))).toBe(true);
    expect(Number.isNaN(bf16ToF32(f32ToBf16(f32FromBits(0x7f800001))))).toBe(true);
  });

  it('round-trips every non-NaN bf16 value', () => {
    const bad: number[] = [];
    for (let b = 0; b < 65536; b++) {
      const f = bf16ToF32(b);
      if (!Number.isNaN(f) && f32ToBf16(f) !== b) bad.push(b);
    }
    expect(bad).toEqual([]);
  });

  it('converts byte arrays (little-endian)', () => {
    const values = [1, -2.5, 0.1, 3e4];
    const h = f32ToF16Bytes(values);
    expect([h[0], h[1]]).toEqual([0x00, 0x3c]);
    expect(Array.from(f16BytesToF32(h))).toEqual([1, -2.5, f16ToF32(0x2e66), 30000]);
    const b = f32ToBf16Bytes(values);
    expect([b[0], b[1]]).toEqual([0x80, 0x3f]);
    expect(Array.from(bf16BytesToF32(b))).toEqual(values.map((v) => bf16ToF32(f32ToBf16(v))));
  });
});
