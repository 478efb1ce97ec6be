/**
 * Q4_K: super-blocks of 256 elements, 144 bytes (ggml-common.h block_q4_K):
 *   bytes 0..1    f16 d     (scale of the 6-bit sub-block scales)
 *   bytes 2..3    f16 dmin  (scale of the 6-bit sub-block mins)
 *   bytes 4..15   12 bytes: eight 6-bit scales and eight 6-bit mins, packed (see scaleMinK4)
 *   bytes 16..143 128 bytes of 4-bit quants
 * Eight sub-blocks of 32 elements; sub-block j has scale d*sc[j] and min dmin*m[j], and element
 * x = d*sc[j]*q - dmin*m[j]. Within each 64-element group g (32 bytes), sub-block 2g takes the low
 * nibbles and sub-block 2g+1 the high nibbles of the same 32 bytes.
 */

import { QK_K } from './ggml-types.ts';
import { blockCount, nearestInt, readF16, writeF16 } from './common.ts';

export const Q4_K_BLOCK_SIZE = QK_K;
export const Q4_K_TYPE_SIZE = 144;
const SCALES = 4;
const QS = 16;

/**
 * Unpack the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes at `q[o..o+12)`
 * (ggml's get_scale_min_k4). Sub-blocks 0..3: low 6 bits of bytes j and j+4. Sub-blocks 4..7: low
 * nibble / high nibble of byte j+4, with the top 2 bits taken from bytes j-4 and j.
 */
export function scaleMinK4(j: number, q: Uint8Array, o: number): [scale: number, min: number] {
  if (j < 4) return [q[o + j]! & 63, q[o + j + 4]! & 63];
  const sc = (q[o + j + 4]! & 0xf) | ((q[o + j - 4]! >> 6) << 4);
  const m = (q[o + j + 4]! >> 4) | ((q[o + j]! >> 6) << 4);
  return [sc, m];
}

/** Pack eight 6-bit scales and mins into 12 bytes at `q[o..o+12)` (inverse of scaleMinK4). */
export function packScaleMinK4(scales: ArrayLike<number>, mins: ArrayLike<number>, q: Uint8Array, o: number): void {
  q.fill(0, o, o + 12);
  for (let j = 0; j < 8; j++) {
    const ls = scales[j]! & 63;
    const lm = mins[j]! & 63;
    if (j < 4) {
      q[o + j]! |= ls;
      q[o + j + 4]! |= lm;
    } else {
      q[o + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
      q[o + j - 4]! |= (ls >> 4) << 6;
      q[o + j]! |= (lm >> 4) << 6;
    }
  }
}

export function dequantizeQ4_K(bytes: Uint8Array, nElements: number): Float32Array {
  const nb = blockCount('Q4_K', QK_K, Q4_K_TYPE_SIZE, bytes.byteLength, nElements);
  const out = new Float32Array(nElements);
  for (let i = 0; i < nb; i++) {
    const o = i * Q4_K_TYPE_SIZE;
    const d = readF16(bytes, o);
    const dmin = readF16(bytes, o + 2);
    let y = i * QK_K;
    for (let g = 0; g < 4; g++) {
      const [sc1, m1] = scaleMinK4(2 * g, bytes, o + SCALES);
      const [sc2, m2] = scaleMinK4(2 * g + 1, bytes, o + SCALES);
      const d1 = d * sc1, min1 = dmin * m1, d2 = d * sc2, min2 = dmin * m2;
      const q = o + QS + 32 * g;
      for (let l = 0; l < 32; l++) out[y + l] = d1 * (bytes[q + l]! & 0xf) - min1;
      for (let l = 0; l < 32; l++) out[y + 32 + l] = d2 * (bytes[q + l]! >> 4) - min2;
      y += 64;
    }
  }
  return out;
}

/** fitScaleMin's candidate levels (one sub-block at a time) and its result: [scale, -min]. */
const AUX = new Uint8Array(32);
const FIT = new Float64Array(2);

/**
 * Fit x ≈ scale*L + min for the n values x[xo..xo+n) with L in [0, nmax], min <= 0, minimizing the weighted squared
 * error over a small grid of candidate scales (ggml's make_qkx2_quants). Fills L[lo..lo+n) and FIT = [scale, -min].
 * Offsets instead of subarrays and module scratch instead of per-call arrays (the codec quantizes millions of
 * sub-blocks in tests and tools; the allocations took about a fifth of its time).
 */
function fitScaleMin(
  x: Float32Array,
  xo: number,
  n: number,
  w: Float64Array,
  nmax: number,
  L: Uint8Array,
  lo: number,
  rmin: number,
  rdelta: number,
  nstep: number,
): void {
  let min = x[xo]!, max = x[xo]!, sumW = 0, sumX = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i]!;
    min = Math.min(min, xi);
    max = Math.max(max, xi);
    sumW += w[i]!;
    sumX += w[i]! * xi;
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0, lo, lo + n);
    FIT[0] = 0;
    FIT[1] = -min;
    return;
  }
  let iscale = nmax / (max - min);
  let scale = 1 / iscale;
  let bestErr = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i]!;
    const l = Math.max(0, Math.min(nmax, nearestInt(iscale * (xi - min))));
    L[lo + i] = l;
    const diff = scale * l + min - xi;
    bestErr += w[i]! * diff * diff;
  }
  const aux = AUX;
  for (let is = 0; is <= nstep; is++) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    let sumL = 0, sumL2 = 0, sumXL = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i]!;
      const l = Math.max(0, Math.min(nmax, nearestInt(iscale * (xi - min))));
      aux[i] = l;
      sumL += w[i]! * l;
      sumL2 += w[i]! * l * l;
      sumXL += w[i]! * l * xi;
    }
    const D = sumW * sumL2 - sumL * sumL;
    if (D <= 0) continue;
    let thisScale = (sumW * sumXL - sumX * sumL) / D;
    let thisMin = (sumL2 * sumX - sumL * sumXL) / D;
    if (thisMin > 0) {
      thisMin = 0;
      thisScale = sumXL / sumL2;
    }
    let err = 0;
    for (let i = 0; i < n; i++) {
      const diff = thisScale * aux[i]! + thisMin - x[xo + i]!;
      err += w[i]! * diff * diff;
    }
    if (err < bestErr) {
      for (let i = 0; i < n; i++) L[lo + i] = aux[i]!;
      bestErr = err;
      scale = thisScale;
      min = thisMin;
    }
  }
  FIT[0] = scale;
  FIT[1] = -min;
}

/** Quantize following ggml's quantize_row_q4_K_ref. `values.length` must be a multiple of 256. */
export function quantizeQ4_K(values: Float32Array): Uint8Array {
  const nb = blockCount('Q4_K', QK_K, Q4_K_TYPE_SIZE, Infinity, values.length);
  const out = new Uint8Array(nb * Q4_K_TYPE_SIZE);
  const L = new Uint8Array(QK_K);
  const w = new Float64Array(32);
  const scales = new Float64Array(8);
  const mins = new Float64Array(8);
  const ls = new Uint8Array(8);
  const lm = new Uint8Array(8);
  for (let i = 0; i < nb; i++) {
    const x = values.subarray(i * QK_K, (i + 1) * QK_K);
    const o = i * Q4_K_TYPE_SIZE;
    let maxScale = 0, maxMin = 0;
    for (let j = 0; j < 8; j++) {
      const xo = 32 * j;
      let sumX2 = 0;
      for (let l = 0; l < 32; l++) sumX2 += x[xo + l]! * x[xo + l]!;
      const avX = Math.sqrt(sumX2 / 32);
      for (let l = 0; l < 32; l++) w[l] = avX + Math.abs(x[xo + l]!);
      fitScaleMin(x, xo, 32, w, 15, L, xo, -1, 0.1, 20);
      scales[j] = FIT[0]!;
      mins[j] = FIT[1]!;
      maxScale = Math.max(maxScale, scales[j]!);
      maxMin = Math.max(maxMin, mins[j]!);
    }
    const invScale = maxScale > 0 ? 63 / maxScale : 0;
    const invMin = maxMin > 0 ? 63 / maxMin : 0;
    for (let j = 0; j < 8; j++) {
      ls[j] = Math.max(0, Math.min(63, nearestInt(invScale * scales[j]!)));
      lm[j] = Math.max(0, Math.min(63, nearestInt(invMin * mins[j]!)));
    }
    packScaleMinK4(ls, lm, out, o + SCALES);
    const d = writeF16(out, o, maxScale / 63);
    const dmin = writeF16(out, o + 2, maxMin / 63);
    // Requantize every element against the scales actually stored.
    for (let j = 0; j < 8; j++) {
      const sd = d * ls[j]!;
      if (!sd) {
        L.fill(0, 32 * j, 32 * j + 32);
        continue;
      }
      const dm = dmin * lm[j]!;
      for (let l = 0; l < 32; l++) {
        L[32 * j + l] = Math.max(0, Math.min(15, nearestInt((x[32 * j + l]! + dm) / sd)));
      }
    }
    for (let g = 0; g < 4; g++) {
      for (let l = 0; l < 32; l++) out[o + QS + 32 * g + l] = L[64 * g + l]! | (L[64 * g + 32 + l]! << 4);
    }
  }
  return out;
}
