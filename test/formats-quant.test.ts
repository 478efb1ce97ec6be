import { describe, expect, it } from 'vitest';
import { GGMLQuantizationType } from '@huggingface/gguf';
import { f16ToF32 } from '../src/formats/f16.ts';
import {
  dequantize,
  dequantizeQ4_K,
  dequantizeQ6_K,
  dequantizeQ8_0,
  GGML_TYPES,
  GgmlType,
  quantize,
  quantizeQ4_K,
  quantizeQ6_K,
  quantizeQ8_0,
  scaleMinK4,
} from '../src/formats/quant/index.ts';

/** Deterministic standard-normal samples (Park-Miller + Box-Muller). */
function gaussian(n: number, seed = 1): Float32Array {
  const out = new Float32Array(n);
  let s = seed;
  const next = () => (s = (s * 16807) % 2147483647) / 2147483647;
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
  return out;
}

function relRmse(x: Float32Array, y: Float32Array): number {
  let se = 0, sx = 0;
  for (let i = 0; i < x.length; i++) {
    se += (x[i]! - y[i]!) ** 2;
    sx += x[i]! ** 2;
  }
  return Math.sqrt(se / sx);
}

describe('ggml type table', () => {
  it('has the ggml ids, block sizes and block bytes', () => {
    const rows = [0, 1, 8, 12, 14, 30].map((id) => {
      const t = GGML_TYPES[id as keyof typeof GGML_TYPES];
      return [id, t.name, t.blockSize, t.typeSize, t.codec];
    });
    expect(rows).toEqual([
      [0, 'F32', 1, 4, true],
      [1, 'F16', 1, 2, true],
      [8, 'Q8_0', 32, 34, true],
      [12, 'Q4_K', 256, 144, true],
      [14, 'Q6_K', 256, 210, true],
      [30, 'BF16', 1, 2, true],
    ]);
  });

  it('uses the same ids as @huggingface/gguf for every entry', () => {
    for (const t of Object.values(GGML_TYPES)) {
      expect(GGMLQuantizationType[t.id]).toBe(t.name);
    }
  });

  it('sizes quantized output by blocks and rejects partial blocks', () => {
    expect(quantize(GgmlType.Q8_0, new Float32Array(64)).byteLength).toBe(68);
    expect(quantize(GgmlType.Q4_K, new Float32Array(512)).byteLength).toBe(288);
    expect(quantize(GgmlType.Q6_K, new Float32Array(512)).byteLength).toBe(420);
    expect(quantize(GgmlType.F16, new Float32Array(3)).byteLength).toBe(6);
    expect(() => quantize(GgmlType.Q4_K, new Float32Array(100))).toThrow(/not a multiple of the block size 256/);
    expect(() => dequantize(GgmlType.Q8_0, new Uint8Array(33), 32)).toThrow(/need 34 bytes/);
    expect(() => dequantize(GgmlType.Q5_K, new Uint8Array(176), 256)).toThrow(/Q5_K has no codec/);
  });
});

describe('Q8_0', () => {
  it('dequantizes a hand-built block', () => {
    const block = new Uint8Array(34);
    block[0] = 0x00;
    block[1] = 0x38; // d = f16 0x3800 = 0.5
    const q = [0, 1, -1, 127, -128, 2, -3, 100];
    q.forEach((v, i) => (block[2 + i] = v & 0xff));
    const out = dequantizeQ8_0(block, 32);
    expect(Array.from(out.subarray(0, 8))).toEqual([0, 0.5, -0.5, 63.5, -64, 1, -1.5, 50]);
    expect(Array.from(out.subarray(8))).toEqual(new Array(24).fill(0));
  });

  it('keeps every element within d/2 of its input', () => {
    const x = gaussian(32 * 64, 7);
    const bytes = quantizeQ8_0(x);
    const y = dequantizeQ8_0(bytes, x.length);
    for (let b = 0; b < 64; b++) {
      const d = f16ToF32(bytes[b * 34]! | (bytes[b * 34 + 1]! << 8));
      for (let j = 0; j < 32; j++) {
        const i = b * 32 + j;
        expect(Math.abs(x[i]! - y[i]!)).toBeLessThanOrEqual(d / 2 + 1e-7);
      }
    }
    expect(relRmse(x, y)).toBeLessThan(0.007);
  });

  it('re-quantizes its own output to the same bytes', () => {
    const bytes = quantizeQ8_0(gaussian(256, 3));
    expect(quantizeQ8_0(dequantizeQ8_0(bytes, 256))).toEqual(bytes);
  });
});

describe('Q4_K', () => {
  // Sub-block scales and mins (6 bits each); j >= 4 exercise the split high bits.
  const SC = [1, 2, 3, 4, 17, 35, 50, 63];
  const M = [0, 1, 2, 3, 16, 20, 40, 63];
  // Packed by hand: bytes 0-3 = sc[0..3] | (sc[4..7] >> 4) << 6; bytes 4-7 = m[0..3] | (m[4..7] >> 4) << 6;
  // bytes 8-11 = (sc[4..7] & 15) | (m[4..7] & 15) << 4.
  const PACKED = [65, 130, 195, 196, 64, 65, 130, 195, 1, 67, 130, 255];

  function handBlock(): Uint8Array {
    const b = new Uint8Array(144);
    b.set([0x00, 0x3c, 0x00, 0x38], 0); // d = 1.0, dmin = 0.5
    b.set(PACKED, 4);
    // quant byte k: low nibble k % 16, high nibble 15 - k % 16
    for (let k = 0; k < 128; k++) b[16 + k] = (k % 16) | ((15 - (k % 16)) << 4);
    return b;
  }

  it('unpacks 6-bit scales and mins (get_scale_min_k4)', () => {
    const b = handBlock();
    for (let j = 0; j < 8; j++) expect(scaleMinK4(j, b, 4)).toEqual([SC[j], M[j]]);
  });

  it('dequantizes a hand-built block', () => {
    const y = dequantizeQ4_K(handBlock(), 256);
    // element -> (sub-block j, nibble q): x = 1.0 * SC[j] * q - 0.5 * M[j]
    expect(y[0]).toBe(0); // j0 q0
    expect(y[5]).toBe(5); // j0 q5: 1*5 - 0
    expect(y[32]).toBe(29.5); // j1, high nibble of byte 0 = 15: 2*15 - 0.5
    expect(y[40]).toBe(13.5); // j1 q7: 14 - 0.5
    expect(y[67]).toBe(8); // j2 q3: 9 - 1
    expect(y[128]).toBe(-8); // j4 q0: 0 - 0.5*16
    expect(y[159]).toBe(247); // j4 q15: 17*15 - 8
    expect(y[161]).toBe(480); // j5 q14: 35*14 - 10
    expect(y[202]).toBe(480); // j6 q10: 50*10 - 20
    expect(y[255]).toBe(-31.5); // j7 q0: 0 - 0.5*63
  });

  it('round-trips Gaussian data with relative RMSE < 0.085', () => {
    const x = gaussian(256 * 16, 11);
    const y = dequantizeQ4_K(quantizeQ4_K(x), x.length);
    expect(relRmse(x, y)).toBeLessThan(0.085);
  });

  it('reproduces a block with one value per sub-block up to f16 rounding of d', () => {
    const x = new Float32Array(256);
    for (let i = 0; i < 256; i++) x[i] = (i >> 5) * 0.25; // constant per sub-block, min 0
    const y = dequantizeQ4_K(quantizeQ4_K(x), 256);
    for (let i = 0; i < 256; i++) expect(Math.abs(y[i]! - x[i]!)).toBeLessThan(2e-3);
  });
});

describe('Q6_K', () => {
  const SCALES = [1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -128];
  const L = (e: number) => (e * 7) % 64; // the 6-bit quant of element e

  function handBlock(): Uint8Array {
    const b = new Uint8Array(210);
    for (let h = 0; h < 2; h++) {
      for (let l = 0; l < 32; l++) {
        const e = 128 * h + l;
        b[64 * h + l] = (L(e) & 15) | ((L(e + 64) & 15) << 4);
        b[64 * h + l + 32] = (L(e + 32) & 15) | ((L(e + 96) & 15) << 4);
        b[128 + 32 * h + l] = (L(e) >> 4) | ((L(e + 32) >> 4) << 2) | ((L(e + 64) >> 4) << 4) | ((L(e + 96) >> 4) << 6);
      }
    }
    SCALES.forEach((s, i) => (b[192 + i] = s & 0xff));
    b[208] = 0x00;
    b[209] = 0x34; // d = 0.25
    return b;
  }

  it('dequantizes a hand-built block', () => {
    const y = dequantizeQ6_K(handBlock(), 256);
    expect(y[0]).toBe(-8); // L=0: 0.25 * 1 * (0 - 32)
    expect(y[5]).toBe(0.75); // L=35: 0.25 * 1 * 3
    expect(y[16]).toBe(-4); // L=48, scale -1: 0.25 * -1 * 16
    expect(y[100]).toBe(28); // L=60, scale 4: 0.25 * 4 * 28
    expect(y[200]).toBe(42); // L=56, scale 7: 0.25 * 7 * 24
    expect(y[255]).toBe(-800); // L=57, scale -128: 0.25 * -128 * 25
  });

  it('round-trips Gaussian data with relative RMSE < 0.022', () => {
    const x = gaussian(256 * 16, 5);
    const y = dequantizeQ6_K(quantizeQ6_K(x), x.length);
    expect(relRmse(x, y)).toBeLessThan(0.022);
  });

  it('encodes an all-zero block as zeros', () => {
    const bytes = quantizeQ6_K(new Float32Array(256));
    expect(bytes.every((b) => b === 0)).toBe(true);
    expect(dequantizeQ6_K(bytes, 256).every((v) => v === 0)).toBe(true);
  });
});

describe('dequantize dispatch', () => {
  it('routes by ggml type id', () => {
    const x = gaussian(256, 2);
    expect(dequantize(GgmlType.Q6_K, quantize(GgmlType.Q6_K, x), 256)).toEqual(dequantizeQ6_K(quantizeQ6_K(x), 256));
    expect(Array.from(dequantize(GgmlType.F32, quantize(GgmlType.F32, x), 256))).toEqual(Array.from(x));
    const bf = dequantize(GgmlType.BF16, quantize(GgmlType.BF16, x), 256);
    for (let i = 0; i < 256; i++) expect(Math.abs(bf[i]! - x[i]!)).toBeLessThanOrEqual(Math.abs(x[i]!) * 2 ** -8);
  });
});
