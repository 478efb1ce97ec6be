/**
 * Activations rounded to int8 in blocks of `block` values (32 by default) with one f32 scale each (the rounding
 * gemv-q8a.wgsl's quant stage applies before its integer dots; the norm handoff rounds runs of 16): d = max |a| / 127,
 * q = round-half-to-even(a * (1 / d)), 0 when the block is all zeros. Arithmetic in f32 (Math.fround), as the shader
 * does it. Returns the int8 values and the block scales.
 */
export function quantizeActivationsQ8(a: Float32Array, block = 32): { q: Int8Array; d: Float32Array } {
  if (a.length % block !== 0) throw new RangeError(`quantizeActivationsQ8: ${a.length} values are not whole blocks of ${block}`);
  const q = new Int8Array(a.length);
  const d = new Float32Array(a.length / block);
  const f = Math.fround;
  for (let b = 0; b < a.length; b += block) {
    let amax = 0;
    for (let i = 0; i < block; i++) amax = Math.max(amax, Math.abs(a[b + i]!));
    const s = f(amax / 127);
    const id = s > 0 ? f(1 / s) : 0;
    d[b / block] = s;
    for (let i = 0; i < block; i++) {
      const x = f(a[b + i]! * id);
      // round half to even (WGSL round), then clamp to the int8 range the shader keeps
      let v = Math.round(x);
      if (Math.abs(x % 1) === 0.5 && v % 2 !== 0) v -= 1;
      q[b + i] = Math.max(-127, Math.min(127, v));
    }
  }
  return { q, d };
}

/** The activations after quantizeActivationsQ8's rounding, dequantized (q * d in f32). */
export function roundActivationsQ8(a: Float32Array, block = 32): Float32Array {
  const { q, d } = quantizeActivationsQ8(a, block);
  return new Float32Array(a.length).map((_, i) => Math.fround(q[i]! * d[Math.floor(i / block)]!));
}
