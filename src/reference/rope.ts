/**
 * CPU reference of `rope` (f64), in place on a copy of `input`. One function per kernel entry point, because the
 * entry points differ in where cos/sin come from and in layout. Semantics: src/kernels/rope.wgsl.
 */
export interface RopeUniforms {
  seq_len: number;
  num_heads: number;
  head_dim: number;
  start_pos: number;
  rope_base: number;
  rope_scale: number;
  rotary_dim: number;
  interleaved: number;
  pair_span_dim: number;
}

export type RopeMode = 'tables' | 'linear' | 'qk' | 'ntk';

function span(u: RopeUniforms): number {
  return u.pair_span_dim === 0 ? u.rotary_dim : u.pair_span_dim;
}

/** Offsets of pair p's two elements within a head. */
export function ropePair(u: RopeUniforms, p: number): [number, number] {
  return u.interleaved ? [2 * p, 2 * p + 1] : [p, p + Math.floor(span(u) / 2)];
}

/** Angle of pair p at position pos for the in-kernel modes (linear/qk: default + linear scaling; ntk: NTK-aware base). */
export function ropeTheta(u: RopeUniforms, mode: Exclude<RopeMode, 'tables'>, pos: number, p: number): number {
  const P = span(u);
  const scale = u.rope_scale > 0 ? u.rope_scale : 1;
  if (mode === 'ntk') {
    const base = P > 2 ? u.rope_base * scale ** (P / (P - 2)) : u.rope_base;
    return pos * base ** ((-2 * p) / P);
  }
  return (pos * u.rope_base ** ((-2 * p) / P)) / scale;
}

/** cos/sin tables [positions, rotary_dim / 2] for HF default/linear rope (f64 angles, stored as f32). */
export function ropeLinearTables(u: RopeUniforms, positions: number): { cos: Float32Array; sin: Float32Array } {
  const half = Math.floor(u.rotary_dim / 2);
  const cos = new Float32Array(positions * half);
  const sin = new Float32Array(positions * half);
  for (let pos = 0; pos < positions; pos++) {
    for (let p = 0; p < half; p++) {
      const th = ropeTheta(u, 'linear', pos, p);
      cos[pos * half + p] = Math.cos(th);
      sin[pos * half + p] = Math.sin(th);
    }
  }
  return { cos, sin };
}

/**
 * The contents of `input` after the kernel. `tables` reads cos/sin [pos * half + p]; `qk` treats each token as
 * [2 * num_heads, head_dim] (Q heads then K heads). Elements outside the rotated pairs keep their values.
 */
export function ropeRef(
  input: ArrayLike<number>,
  u: RopeUniforms,
  mode: RopeMode,
  tables?: { cos: ArrayLike<number>; sin: ArrayLike<number> },
): Float64Array {
  const out = Float64Array.from(input as ArrayLike<number>);
  const half = Math.floor(u.rotary_dim / 2);
  const headsPerToken = mode === 'qk' ? 2 * u.num_heads : u.num_heads;
  if (mode === 'tables' && !tables) throw new Error('rope: mode "tables" needs cos/sin tables');
  for (let t = 0; t < u.seq_len; t++) {
    const pos = u.start_pos + t;
    for (let h = 0; h < headsPerToken; h++) {
      const base = (t * headsPerToken + h) * u.head_dim;
      for (let p = 0; p < half; p++) {
        let c: number;
        let s: number;
        if (mode === 'tables') {
          c = tables!.cos[pos * half + p]!;
          s = tables!.sin[pos * half + p]!;
        } else {
          const th = ropeTheta(u, mode, pos, p);
          c = Math.cos(th);
          s = Math.sin(th);
        }
        const [o0, o1] = ropePair(u, p);
        const x0 = out[base + o0]!;
        const x1 = out[base + o1]!;
        out[base + o0] = x0 * c - x1 * s;
        out[base + o1] = x0 * s + x1 * c;
      }
    }
  }
  return out;
}
