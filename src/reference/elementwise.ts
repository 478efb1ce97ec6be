/**
 * CPU references (f64) of small f32 operations: `scale`, `bias_add`, `gelu` (GeGLU) and `rmsnorm_qk`. Parameter
 * objects use the registry's uniform field names. Semantics: src/kernels/scale.wgsl, bias_add.wgsl, gelu.wgsl,
 * rmsnorm_qk.wgsl.
 */

export interface ScaleUniforms {
  size: number;
  scale: number;
}

/** scale.default: input * scale. scale.inplace: the same applied to the output buffer's own contents. */
export function scaleRef(x: ArrayLike<number>, u: ScaleUniforms): Float64Array {
  const out = new Float64Array(u.size);
  for (let i = 0; i < u.size; i++) out[i] = x[i]! * u.scale;
  return out;
}

export interface BiasAddUniforms {
  num_tokens: number;
  dim: number;
  data_offset: number;
  bias_offset: number;
  token_stride: number;
}

/** data[t*S + data_offset + j] += bias[bias_offset + j] (S = token_stride, 0 means dim); the rest of data kept. */
export function biasAddRef(data: ArrayLike<number>, bias: ArrayLike<number>, u: BiasAddUniforms): Float64Array {
  const out = Float64Array.from(data);
  const S = u.token_stride === 0 ? u.dim : u.token_stride;
  for (let t = 0; t < u.num_tokens; t++) {
    for (let j = 0; j < u.dim; j++) out[t * S + u.data_offset + j]! += bias[u.bias_offset + j]!;
  }
  return out;
}

export interface GeluUniforms {
  size: number;
  rowsplit_dim: number;
}

/** PyTorch gelu(approximate="tanh") (HF gelu_pytorch_tanh). */
export const geluTanh = (x: number): number => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

/** GeGLU: gelu(gate) * up, separate (rowsplit_dim = 0) or fused [gate | up] rows of width 2 * rowsplit_dim. */
export function geluRef(input: ArrayLike<number>, gate: ArrayLike<number> | undefined, u: GeluUniforms): Float64Array {
  const out = new Float64Array(u.size);
  const D = u.rowsplit_dim;
  if (D === 0 && !gate) throw new Error('gelu: rowsplit_dim = 0 needs a gate');
  for (let i = 0; i < u.size; i++) {
    if (D === 0) out[i] = geluTanh(gate![i]!) * input[i]!;
    else {
      const r = Math.floor(i / D);
      const j = i - r * D;
      out[i] = geluTanh(input[2 * r * D + j]!) * input[2 * r * D + D + j]!;
    }
  }
  return out;
}

export interface RmsnormQkUniforms {
  q_rows: number;
  k_rows: number;
  head_dim: number;
  row_stride: number;
  eps: number;
}

function normRows(x: ArrayLike<number>, w: ArrayLike<number>, rows: number, D: number, S: number, eps: number): Float64Array {
  const out = new Float64Array(rows * D);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let j = 0; j < D; j++) ss += x[r * S + j]! ** 2;
    const inv = 1 / Math.sqrt(ss / D + eps);
    for (let j = 0; j < D; j++) out[r * D + j] = x[r * S + j]! * inv * w[j]!;
  }
  return out;
}

/** Per-head RMSNorm of q rows and k rows (input rows strided by row_stride, outputs packed [rows, head_dim]). */
export function rmsnormQkRef(
  q: ArrayLike<number>,
  qWeight: ArrayLike<number>,
  k: ArrayLike<number>,
  kWeight: ArrayLike<number>,
  u: RmsnormQkUniforms,
): { q_output: Float64Array; k_output: Float64Array } {
  const D = u.head_dim;
  const S = u.row_stride === 0 ? D : u.row_stride;
  return {
    q_output: normRows(q, qWeight, u.q_rows, D, S, u.eps),
    k_output: normRows(k, kWeight, u.k_rows, D, S, u.eps),
  };
}
