/**
 * CPU reference of `silu` (SwiGLU): silu(gate) * up, with gate/up separate (rowsplit_dim = 0) or fused per row as
 * [gate | up] halves of width rowsplit_dim. Semantics: src/kernels/silu.wgsl.
 */
export interface SiluUniforms {
  size: number;
  rowsplit_dim: number;
}

export const silu = (x: number): number => x / (1 + Math.exp(-x));

export function siluRef(input: ArrayLike<number>, gate: ArrayLike<number> | undefined, u: SiluUniforms): Float64Array {
  const out = new Float64Array(u.size);
  const D = u.rowsplit_dim;
  if (D === 0 && !gate) throw new Error('silu: rowsplit_dim = 0 needs a gate');
  for (let i = 0; i < u.size; i++) {
    if (D === 0) out[i] = silu(gate![i]!) * input[i]!;
    else {
      const r = Math.floor(i / D);
      const j = i - r * D;
      out[i] = silu(input[2 * r * D + j]!) * input[2 * r * D + D + j]!;
    }
  }
  return out;
}
