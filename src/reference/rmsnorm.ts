/**
 * CPU reference of `rmsnorm` (f64): y = x * rsqrt(mean(x^2) + eps) * weight * output_scale, with the residual added
 * before the norm (has_residual = 1) or after it (has_residual = 2). Semantics: src/kernels/rmsnorm.wgsl.
 */
export interface RmsnormUniforms {
  hidden_size: number;
  num_tokens: number;
  eps: number;
  has_residual: number;
  token_stride: number;
  output_scale: number;
}

export function rmsnormRef(
  input: ArrayLike<number>,
  weight: ArrayLike<number>,
  residual: ArrayLike<number> | undefined,
  u: RmsnormUniforms,
): Float64Array {
  const H = u.hidden_size;
  const S = u.token_stride === 0 ? H : u.token_stride;
  if (u.has_residual !== 0 && !residual) throw new Error(`rmsnorm: has_residual = ${u.has_residual} needs a residual`);
  const out = new Float64Array(u.num_tokens * H);
  const x = new Float64Array(H);
  for (let r = 0; r < u.num_tokens; r++) {
    let ss = 0;
    for (let j = 0; j < H; j++) {
      x[j] = input[r * S + j]! + (u.has_residual === 1 ? residual![r * H + j]! : 0);
      ss += x[j]! * x[j]!;
    }
    const inv = 1 / Math.sqrt(ss / H + u.eps);
    for (let j = 0; j < H; j++) {
      const y = x[j]! * inv * weight[j]! * u.output_scale;
      out[r * H + j] = u.has_residual === 2 ? residual![r * H + j]! + y : y;
    }
  }
  return out;
}
