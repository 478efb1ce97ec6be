/**
 * CPU reference of the `attention` operation (f64 accumulation): decoder self-attention of seq_len new query tokens
 * over a KV cache, with GQA, causal and sliding-window masks, logit soft-capping and the contiguous / paged / ring
 * cache layouts. Parameters are the registry's `attention` uniform fields (so a test hands the same object to the
 * kernel); the semantics are documented in src/kernels/attention_decode.wgsl.
 */

/** The registry's `attention` uniform fields (padding omitted). */
export interface AttentionUniforms {
  num_heads: number;
  num_kv_heads: number;
  head_dim: number;
  kv_len: number;
  seq_len: number;
  scale: number;
  is_causal: number;
  start_pos: number;
  attn_softcap: number;
  sliding_window: number;
  kv_len_source: number;
  kv_start: number;
  page_size: number;
  kv_layout: number;
}

export interface AttentionBuffers {
  /** [seq_len, num_heads, head_dim] */
  q: ArrayLike<number>;
  /** [rows, num_kv_heads, head_dim] */
  k: ArrayLike<number>;
  v: ArrayLike<number>;
  /** binding `kv_len` (read when kv_len_source = 1) */
  kvLenBuffer?: ArrayLike<number>;
  /** binding `page_table` (read when kv_layout = 1) */
  pageTable?: ArrayLike<number>;
}

export class AttentionParamError extends Error {
  constructor(detail: string) {
    super(`attention: ${detail}`);
    this.name = 'AttentionParamError';
  }
}

/** Defaults for the optional fields: a causal, contiguous cache with kv_start 0 and no softcap or window. */
export function attentionUniforms(p: Partial<AttentionUniforms> & Pick<AttentionUniforms, 'num_heads' | 'head_dim' | 'kv_len' | 'seq_len'>): AttentionUniforms {
  return {
    num_kv_heads: p.num_heads,
    scale: 1 / Math.sqrt(p.head_dim),
    is_causal: 1,
    start_pos: Math.max(0, p.kv_len - p.seq_len),
    attn_softcap: 0,
    sliding_window: 0,
    kv_len_source: 0,
    kv_start: 0,
    page_size: 0,
    kv_layout: 0,
    ...p,
  };
}

/** End of the cache (one past the last position) as the kernels see it. */
export function kvEnd(u: AttentionUniforms, b: AttentionBuffers): number {
  if (u.kv_len_source === 1) {
    if (!b.kvLenBuffer) throw new AttentionParamError('kv_len_source = 1 needs the kv_len buffer');
    return b.kvLenBuffer[0]!;
  }
  return u.kv_len;
}

/** Position of query token 0. */
export function queryStart(u: AttentionUniforms, end: number): number {
  return u.kv_len_source === 1 ? Math.max(0, end - u.seq_len) : u.start_pos;
}

/** Visible keys [lo, hi) of the query at position p (hi == lo when none). */
export function keyRange(u: AttentionUniforms, p: number, end: number): [number, number] {
  let lo = u.kv_start;
  let hi = end;
  if (u.is_causal) hi = Math.min(hi, p + 1);
  const w = u.sliding_window;
  if (w > 0) {
    lo = Math.max(lo, p + 1 - w);
    if (!u.is_causal) hi = Math.min(hi, p + w);
  }
  return [lo, Math.max(lo, hi)];
}

/** Cache row of position k. */
export function kvRow(u: AttentionUniforms, k: number, pageTable?: ArrayLike<number>): number {
  const ps = Math.max(u.page_size, 1);
  switch (u.kv_layout) {
    case 1: {
      if (!pageTable) throw new AttentionParamError('kv_layout = 1 (paged) needs page_table');
      const i = k - u.kv_start;
      return pageTable[Math.floor(i / ps)]! * ps + (i % ps);
    }
    case 2:
      return k % ps;
    default:
      return k - u.kv_start;
  }
}

/** Rows of K/V a call reads (the highest row + 1), for sizing test buffers. */
export function kvRowsNeeded(u: AttentionUniforms, end: number, pageTable?: ArrayLike<number>): number {
  let rows = 0;
  for (let k = u.kv_start; k < end; k++) rows = Math.max(rows, kvRow(u, k, pageTable) + 1);
  return rows;
}

export function attentionRef(u: AttentionUniforms, b: AttentionBuffers): Float64Array {
  const H = u.num_heads;
  const Hkv = u.num_kv_heads;
  const D = u.head_dim;
  if (Hkv < 1 || H % Hkv !== 0) throw new AttentionParamError(`num_heads ${H} must be a multiple of num_kv_heads ${Hkv}`);
  const group = H / Hkv;
  const end = kvEnd(u, b);
  const q0 = queryStart(u, end);
  const out = new Float64Array(u.seq_len * H * D);
  for (let t = 0; t < u.seq_len; t++) {
    const [lo, hi] = keyRange(u, q0 + t, end);
    for (let h = 0; h < H; h++) {
      const kvh = Math.floor(h / group);
      const qo = (t * H + h) * D;
      const n = hi - lo;
      if (n <= 0) continue;
      const s = new Float64Array(n);
      const bases = new Array<number>(n);
      let m = -Infinity;
      for (let j = 0; j < n; j++) {
        const base = (kvRow(u, lo + j, b.pageTable) * Hkv + kvh) * D;
        bases[j] = base;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += b.q[qo + d]! * b.k[base + d]!;
        let x = dot * u.scale;
        if (u.attn_softcap > 0) x = u.attn_softcap * Math.tanh(x / u.attn_softcap);
        s[j] = x;
        m = Math.max(m, x);
      }
      let sum = 0;
      for (let j = 0; j < n; j++) sum += s[j] = Math.exp(s[j]! - m);
      for (let j = 0; j < n; j++) {
        const w = s[j]! / sum;
        const base = bases[j]!;
        for (let d = 0; d < D; d++) out[qo + d] += w * b.v[base + d]!;
      }
    }
  }
  return out;
}
