/**
 * Activations rounded to int8 in blocks of 32 with one f32 scale each (the rounding gemv-q8a.wgsl's quant stage
 * applies before its integer dots): d = max |a| / 127, q = round-half-to-even(a * (1 / d)), 0 when the block is all
 * zeros. Arithmetic in f32 (Math.fround), as the shader does it.
 */
export function roundActivationsQ8(a: Float32Array): Float32Array {
  if (a.length % 32 !== 0) throw new RangeError(`roundActivationsQ8: ${a.length} values are not whole blocks of 32`);
  const out = new Float32Array(a.length);
  const f = Math.fround;
  for (let b = 0; b < a.length; b += 32) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(a[b + i]!));
    const d = f(amax / 127);
    const id = d > 0 ? f(1 / d) : 0;
    for (let i = 0; i < 32; i++) {
      const x = f(a[b + i]! * id);
      // round half to even (WGSL round), then clamp to the int8 range the shader keeps
      let q = Math.round(x);
      if (Math.abs(x % 1) === 0.5 && q % 2 !== 0) q -= 1;
      out[b + i] = f(Math.max(-127, Math.min(127, q)) * d);
    }
  }
  return out;
}
