/**
 * Q6_K: super-blocks of 256 elements, 210 bytes (ggml-common.h block_q6_K):
 *   bytes 0..127   ql: low 4 bits of the quants
 *   bytes 128..191 qh: high 2 bits of the quants
 *   bytes 192..207 16 int8 scales, one per 16 elements
 *   bytes 208..209 f16 d
 * Element x = d * scale[k/16] * (q - 32), q the 6-bit value. Each 128-element half h uses 64 ql bytes
 * and 32 qh bytes: for l in 0..31, elements l, l+32, l+64, l+96 of the half take the low nibble of
 * ql[l], low nibble of ql[l+32], high nibble of ql[l], high nibble of ql[l+32], and bits 0-1, 2-3,
 * 4-5, 6-7 of qh[l] as their high 2 bits.
 */

import { QK_K } from './ggml-types.ts';
import { blockCount, nearestInt, readF16, writeF16 } from './common.ts';

export const Q6_K_BLOCK_SIZE = QK_K;
export const Q6_K_TYPE_SIZE = 210;
const QL = 0;
const QH = 128;
const SC = 192;
const D = 208;

export function dequantizeQ6_K(bytes: Uint8Array, nElements: number): Float32Array {
  const nb = blockCount('Q6_K', QK_K, Q6_K_TYPE_SIZE, bytes.byteLength, nElements);
  const out = new Float32Array(nElements);
  for (let i = 0; i < nb; i++) {
    const o = i * Q6_K_TYPE_SIZE;
    const d = readF16(bytes, o + D);
    for (let h = 0; h < 2; h++) {
      const ql = o + QL + 64 * h;
      const qh = o + QH + 32 * h;
      const sc = o + SC + 8 * h;
      const y = i * QK_K + 128 * h;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const hb = bytes[qh + l]!;
        const q1 = ((bytes[ql + l]! & 0xf) | ((hb & 3) << 4)) - 32;
        const q2 = ((bytes[ql + l + 32]! & 0xf) | (((hb >> 2) & 3) << 4)) - 32;
        const q3 = ((bytes[ql + l]! >> 4) | (((hb >> 4) & 3) << 4)) - 32;
        const q4 = ((bytes[ql + l + 32]! >> 4) | (((hb >> 6) & 3) << 4)) - 32;
        out[y + l] = d * int8(bytes[sc + is]!) * q1;
        out[y + l + 32] = d * int8(bytes[sc + is + 2]!) * q2;
        out[y + l + 64] = d * int8(bytes[sc + is + 4]!) * q3;
        out[y + l + 96] = d * int8(bytes[sc + is + 6]!) * q4;
      }
    }
  }
  return out;
}

function int8(b: number): number {
  return (b << 24) >> 24;
}

/** fitScale's trial sums: [sum of w x l, sum of w l^2]. */
const TRIAL = new Float64Array(2);

/** The weighted sums of one candidate scale over x[xo..xo+n) (weights x^2, levels clamped to [-nmax, nmax - 1]) into TRIAL. */
function trial(x: Float32Array, xo: number, n: number, nmax: number, iscale: number): void {
  let sumLX = 0, sumL2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i]!;
    const l = Math.max(-nmax, Math.min(nmax - 1, nearestInt(iscale * xi)));
    const w = xi * xi;
    sumLX += w * xi * l;
    sumL2 += w * l * l;
  }
  TRIAL[0] = sumLX;
  TRIAL[1] = sumL2;
}

/**
 * Symmetric fit x ≈ scale*l for the n values x[xo..xo+n) with l in [-nmax, nmax-1], weights x², trying 19 candidate
 * scales (ggml's make_qx_quants with rmse_type 1). Returns the scale (signed: the largest-magnitude element maps to
 * -nmax). Offsets and module scratch, no per-call closures or arrays (the codec runs over millions of sub-blocks).
 */
function fitScale(x: Float32Array, xo: number, n: number, nmax: number): number {
  let max = 0, amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]!);
    if (ax > amax) {
      amax = ax;
      max = x[xo + i]!;
    }
  }
  if (amax < 1e-15) return 0;
  trial(x, xo, n, nmax, -nmax / max);
  let scale = TRIAL[1]! ? TRIAL[0]! / TRIAL[1]! : 0;
  let best = scale * TRIAL[0]!;
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    trial(x, xo, n, nmax, -(nmax + 0.1 * is) / max);
    const sumLX = TRIAL[0]!, sumL2 = TRIAL[1]!;
    if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
      scale = sumLX / sumL2;
      best = scale * sumLX;
    }
  }
  return scale;
}

/** Quantize following ggml's quantize_row_q6_K_ref. `values.length` must be a multiple of 256. */
export function quantizeQ6_K(values: Float32Array): Uint8Array {
  const nb = blockCount('Q6_K', QK_K, Q6_K_TYPE_SIZE, Infinity, values.length);
  const out = new Uint8Array(nb * Q6_K_TYPE_SIZE);
  const L = new Uint8Array(QK_K);
  const scales = new Float64Array(16);
  for (let i = 0; i < nb; i++) {
    const x = values.subarray(i * QK_K, (i + 1) * QK_K);
    const o = i * Q6_K_TYPE_SIZE;
    let maxScale = 0, maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      scales[ib] = fitScale(x, 16 * ib, 16, 32);
      if (Math.abs(scales[ib]!) > maxAbsScale) {
        maxAbsScale = Math.abs(scales[ib]!);
        maxScale = scales[ib]!;
      }
    }
    if (maxAbsScale < 1e-15) continue; // all-zero block: all bytes stay 0 (d = 0)
    const iscale = -128 / maxScale;
    const d = writeF16(out, o + D, 1 / iscale);
    for (let ib = 0; ib < 16; ib++) {
      const s = Math.max(-128, Math.min(127, nearestInt(iscale * scales[ib]!)));
      out[o + SC + ib] = s & 0xff;
      const sd = d * s;
      for (let l = 0; l < 16; l++) {
        const k = 16 * ib + l;
        L[k] = sd ? Math.max(-32, Math.min(31, nearestInt(x[k]! / sd))) + 32 : 32;
      }
    }
    for (let h = 0; h < 2; h++) {
      const ql = o + QL + 64 * h;
      const qh = o + QH + 32 * h;
      const b = 128 * h;
      for (let l = 0; l < 32; l++) {
        const a0 = L[b + l]!, a1 = L[b + l + 32]!, a2 = L[b + l + 64]!, a3 = L[b + l + 96]!;
        out[ql + l] = (a0 & 0xf) | ((a2 & 0xf) << 4);
        out[ql + l + 32] = (a1 & 0xf) | ((a3 & 0xf) << 4);
        out[qh + l] = (a0 >> 4) | ((a1 >> 4) << 2) | ((a2 >> 4) << 4) | ((a3 >> 4) << 6);
      }
    }
  }
  return out;
}
