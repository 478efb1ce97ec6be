/** LayerNorm of rows, the CPU reference of layernorm.wgsl: (x - mean) / sqrt(var + eps) * weight + bias (biased var). */
export interface LayernormUniforms {
  hidden_size: number;
  num_tokens: number;
  eps: number;
}

export function layernormRef(input: Float32Array, weight: Float32Array, bias: Float32Array, u: LayernormUniforms): Float32Array {
  const H = u.hidden_size;
  if (input.length < H * u.num_tokens) throw new RangeError(`layernorm: input has ${input.length} values, needs ${H} x ${u.num_tokens}`);
  const out = new Float32Array(H * u.num_tokens);
  for (let t = 0; t < u.num_tokens; t++) {
    const row = input.subarray(t * H, (t + 1) * H);
    let mean = 0;
    for (const v of row) mean += v;
    mean /= H;
    let v2 = 0;
    for (const v of row) v2 += (v - mean) * (v - mean);
    const inv = 1 / Math.sqrt(v2 / H + u.eps);
    for (let i = 0; i < H; i++) out[t * H + i] = (row[i]! - mean) * inv * weight[i]! + bias[i]!;
  }
  return out;
}
