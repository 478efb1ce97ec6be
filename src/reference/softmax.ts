/**
 * CPU reference of `softmax` over rows with temperature (f64). -inf entries get 0; an all -inf row is all zeros.
 * Semantics: src/kernels/softmax.wgsl.
 */
export interface SoftmaxUniforms {
  inner_size: number;
  outer_size: number;
  temperature: number;
}

export function softmaxRef(input: ArrayLike<number>, u: SoftmaxUniforms): Float64Array {
  const n = u.inner_size;
  const T = u.temperature > 0 ? u.temperature : 1;
  const out = new Float64Array(u.outer_size * n);
  for (let r = 0; r < u.outer_size; r++) {
    const base = r * n;
    let m = -Infinity;
    for (let j = 0; j < n; j++) m = Math.max(m, input[base + j]! / T);
    if (m === -Infinity) continue;
    let s = 0;
    for (let j = 0; j < n; j++) s += Math.exp(input[base + j]! / T - m);
    for (let j = 0; j < n; j++) out[base + j] = Math.exp(input[base + j]! / T - m) / s;
  }
  return out;
}
