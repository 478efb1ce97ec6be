/** Elementwise activations in f64, the CPU references of bias-act.wgsl. */

/** erf by its Maclaurin series (double precision; |x| <= 5 keeps the cancellation error below 1e-7). */
export function erf(x: number): number {
  if (Math.abs(x) > 5) return Math.sign(x);
  let term = x;
  let sum = x;
  for (let n = 1; n < 200; n++) {
    term *= (-x * x) / n;
    const add = term / (2 * n + 1);
    sum += add;
    if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}

export type Activation = 'none' | 'gelu_erf' | 'gelu_tanh' | 'relu';

export function activate(v: number, act: Activation): number {
  switch (act) {
    case 'gelu_erf':
      return 0.5 * v * (1 + erf(v / Math.SQRT2));
    case 'gelu_tanh':
      return 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)));
    case 'relu':
      return Math.max(v, 0);
    default:
      return v;
  }
}

/** x[r, j] = act(x[r, j] + bias[j]) for x [rows, width] (bias of length 1 or undefined: none). */
export function biasActRef(x: Float32Array, width: number, bias: Float32Array | undefined, act: Activation): Float32Array {
  const out = new Float32Array(x.length);
  const b = bias && bias.length === width ? bias : undefined;
  for (let i = 0; i < x.length; i++) out[i] = activate(x[i]! + (b ? b[i % width]! : 0), act);
  return out;
}
