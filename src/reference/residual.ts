/** CPU reference of `residual`: output = input + scale * residual (src/kernels/residual.wgsl). */
export interface ResidualUniforms {
  size: number;
  scale: number;
}

export function residualRef(input: ArrayLike<number>, residual: ArrayLike<number>, u: ResidualUniforms): Float64Array {
  const out = new Float64Array(u.size);
  for (let i = 0; i < u.size; i++) out[i] = input[i]! + u.scale * residual[i]!;
  return out;
}
