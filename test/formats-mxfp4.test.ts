/** MXFP4 codec: exact values in both byte layouts (transformers' *_blocks/*_scales and GGUF's 17-byte blocks). */
import { describe, expect, it } from 'vitest';
import {
  dequantize,
  dequantizeMXFP4,
  dequantizeMxfp4Hf,
  E2M1_VALUES,
  e8m0ToF32,
  GGML_TYPES,
  GgmlType,
  mxfp4Code,
  mxfp4GgufToHf,
  mxfp4HfToGguf,
  mxfp4ScaleFor,
  quantize,
  quantizeMXFP4,
  quantizeMxfp4Hf,
} from '../src/formats/quant/index.ts';

function gaussian(n: number, seed = 7): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  const next = () => (s = (s * 16807) % 2147483647) / 2147483647;
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
  return out;
}

describe('MXFP4 tables', () => {
  it('has the OCP E2M1 values by code and e8m0 = 2^(e-127)', () => {
    expect(E2M1_VALUES.slice(0, 8)).toEqual([0, 0.5, 1, 1.5, 2, 3, 4, 6]);
    expect(E2M1_VALUES.slice(8).map((v) => -v)).toEqual([0, 0.5, 1, 1.5, 2, 3, 4, 6]);
    expect(Object.is(E2M1_VALUES[8], -0)).toBe(true);
    expect(e8m0ToF32(127)).toBe(1);
    expect(e8m0ToF32(128)).toBe(2);
    expect(e8m0ToF32(120)).toBe(2 ** -7);
    expect(e8m0ToF32(0)).toBe(2 ** -127); // f32 subnormal, kept exact
    expect(e8m0ToF32(254)).toBe(2 ** 127);
    expect(e8m0ToF32(255)).toBe(Infinity); // 2^128 overflows f32, as ldexp in transformers
  });

  it('is ggml type 39 with 32-element blocks of 17 bytes and a codec', () => {
    const t = GGML_TYPES[GgmlType.MXFP4];
    expect([t.id, t.name, t.blockSize, t.typeSize, t.codec]).toEqual([39, 'MXFP4', 32, 17, true]);
  });

  it('picks the scale so the largest magnitude lands in [4, 8)', () => {
    expect(mxfp4ScaleFor(0)).toBe(0);
    expect(mxfp4ScaleFor(6)).toBe(127); // 6 = 1.5 * 2^2 -> e = 2 - 2 + 127
    expect(mxfp4ScaleFor(4)).toBe(127);
    expect(mxfp4ScaleFor(3.99)).toBe(126);
    expect(mxfp4ScaleFor(1)).toBe(125);
    expect(mxfp4ScaleFor(1e-45)).toBe(0); // clamped, not wrapped
  });

  it('rounds to the nearest code, ties to the lower code', () => {
    expect(mxfp4Code(0.24, 1)).toBe(0);
    expect(mxfp4Code(0.25, 1)).toBe(0); // tie 0 / 0.5
    expect(mxfp4Code(0.26, 1)).toBe(1);
    expect(mxfp4Code(2.5, 1)).toBe(4); // tie 2 / 3 -> code 4 (2)
    expect(mxfp4Code(5, 1)).toBe(6); // tie 4 / 6 -> code 6 (4)
    expect(mxfp4Code(100, 1)).toBe(7); // saturates at 6
    expect(mxfp4Code(-0.25, 1)).toBe(0); // +0 (code 0) before -0.5 and -0
    expect(mxfp4Code(-1.3, 1)).toBe(11); // -1.5
    expect(mxfp4Code(-7, 2)).toBe(13); // tie -6 (code 13) / -8 (code 14) at scale 2 -> the lower code
  });
});

describe('MXFP4 transformers layout (*_blocks, *_scales)', () => {
  it('decodes low nibble first with the block scale', () => {
    // one block, scale 2^(126-127) = 0.5; byte 0 = codes (1, 15) -> 0.5*0.5, -6*0.5; byte 15 = (7, 8)
    const blocks = new Uint8Array(16);
    blocks[0] = 0xf1;
    blocks[1] = 0x2a; // codes 10 (-1), 2 (1)
    blocks[15] = 0x87;
    const y = dequantizeMxfp4Hf(blocks, new Uint8Array([126]));
    expect(y.length).toBe(32);
    expect([y[0], y[1], y[2], y[3]]).toEqual([0.25, -3, -0.5, 0.5]);
    expect(y[30]).toBe(3);
    expect(Object.is(y[31], -0)).toBe(true);
    expect([...y.subarray(4, 30)].every((v) => v === 0)).toBe(true);
  });

  it('decodes several rows, one scale per 32 elements', () => {
    const blocks = new Uint8Array(32).fill(0x22); // every element code 2 (1.0)
    const y = dequantizeMxfp4Hf(blocks, new Uint8Array([127, 130]));
    expect([...new Set(y.subarray(0, 32))]).toEqual([1]);
    expect([...new Set(y.subarray(32))]).toEqual([8]);
  });

  it('round-trips every representable block exactly and quantizes within half a step', () => {
    const codes = Array.from({ length: 32 }, (_, i) => (i % 16 === 8 ? 0 : i % 16)); // -0 re-encodes as +0
    const blocks = new Uint8Array(16);
    for (let j = 0; j < 16; j++) blocks[j] = codes[2 * j]! | (codes[2 * j + 1]! << 4);
    for (const e of [100, 127, 140]) {
      const y = dequantizeMxfp4Hf(blocks, new Uint8Array([e]));
      const q = quantizeMxfp4Hf(y);
      expect(q.scales[0]).toBe(e);
      expect(dequantizeMxfp4Hf(q.blocks, q.scales)).toEqual(y);
    }
    const x = gaussian(32 * 64);
    const q = quantizeMxfp4Hf(x);
    const y = dequantizeMxfp4Hf(q.blocks, q.scales);
    for (let b = 0; b < 64; b++) {
      const d = e8m0ToF32(q.scales[b]!);
      for (let j = 0; j < 32; j++) {
        const v = x[b * 32 + j]!;
        // between table entries the error is at most half the gap (gap <= 2d); above 6d it saturates
        if (Math.abs(v) <= 6 * d) expect(Math.abs(y[b * 32 + j]! - v)).toBeLessThanOrEqual(d + 1e-12);
        else expect(Math.abs(y[b * 32 + j]!)).toBe(6 * d);
      }
    }
  });

  it('rejects blocks that do not match the scales', () => {
    expect(() => dequantizeMxfp4Hf(new Uint8Array(15), new Uint8Array(1))).toThrow(/16/);
    expect(() => quantizeMxfp4Hf(new Float32Array(33))).toThrow(/multiple of the block size 32/);
  });
});

describe('MXFP4 GGUF layout (ggml block_mxfp4)', () => {
  it('decodes element j from the low nibble and j+16 from the high nibble', () => {
    const b = new Uint8Array(17);
    b[0] = 128; // scale 2
    b[1] = 0x9f; // element 0: code 15 (-6) -> -12; element 16: code 9 (-0.5) -> -1
    b[16] = 0x73; // element 15: code 3 (1.5) -> 3; element 31: code 7 (6) -> 12
    const y = dequantizeMXFP4(b, 32);
    expect([y[0], y[16], y[15], y[31]]).toEqual([-12, -1, 3, 12]);
    expect(dequantize(GgmlType.MXFP4, b, 32)).toEqual(y);
  });

  it('matches ggml quantize_row_mxfp4_ref on a worked block', () => {
    // amax 5 -> e = floor(log2 5) - 2 + 127 = 127, d = 1
    const x = new Float32Array(32);
    x.set([5, -0.3, 0.75, 2.4, -4.9, 1.25]);
    x[16] = -0.26;
    x[31] = 3.5;
    const q = quantizeMXFP4(x);
    expect(q[0]).toBe(127);
    // 5 -> tie 4/6 -> code 6 (4); -0.26 -> -0.5 (code 9)
    expect(q[1]).toBe(6 | (9 << 4));
    // -0.3 -> -0.5 (9); 0.75 -> tie 0.5/1 -> code 1; 2.4 -> 2 (4); -4.9 -> -4 (14); 1.25 -> tie 1/1.5 -> code 2
    expect([q[2]! & 15, q[3]! & 15, q[4]! & 15, q[5]! & 15, q[6]! & 15]).toEqual([9, 1, 4, 14, 2]);
    // 3.5 (element 31) -> tie 3/4 -> code 5 (3), high nibble of byte 15
    expect(q[16]! >> 4).toBe(5);
    expect(Array.from(dequantizeMXFP4(q, 32).subarray(0, 6))).toEqual([4, -0.5, 0.5, 2, -4, 1]);
    expect(quantize(GgmlType.MXFP4, x)).toEqual(q);
  });

  it('converts between the two layouts without changing a value', () => {
    const x = gaussian(32 * 24, 3);
    const hf = quantizeMxfp4Hf(x);
    const gg = mxfp4HfToGguf(hf.blocks, hf.scales);
    expect(gg).toEqual(quantizeMXFP4(x));
    expect(dequantizeMXFP4(gg, x.length)).toEqual(dequantizeMxfp4Hf(hf.blocks, hf.scales));
    const back = mxfp4GgufToHf(gg, x.length);
    expect(back.blocks).toEqual(hf.blocks);
    expect(back.scales).toEqual(hf.scales);
  });

  it('checks byte and element counts', () => {
    expect(() => dequantizeMXFP4(new Uint8Array(16), 32)).toThrow(/17 bytes/);
    expect(() => dequantizeMXFP4(new Uint8Array(17), 31)).toThrow(/multiple of the block size 32/);
  });
});
