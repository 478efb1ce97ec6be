// Generated from src/kernels/templates/attention.wgsl.jinja ({"kernel":"streaming","q":"f16","kv":"f16","entry":"main","ids":["attention.prefill_streaming_f16","attention.decode_streaming_f16"]}) by scripts/gen-sources.ts; do not edit.
// attention_streaming_f16.wgsl: attention over a KV cache with one invocation per (head, query token): no workgroup memory and no
// barriers; the invocation streams its visible keys once with an online softmax, the output row in private memory.
//
// Semantics (shared by every attention*.wgsl; H = num_heads, Hkv = num_kv_heads, D = head_dim):
//   Q       [seq_len, H, D]      query token t is at position p(t) = q_start + t, where q_start = start_pos
//                                (kv_len_source = 0) or kv_end - seq_len (kv_len_source = 1, see below).
//   K, V    [rows, Hkv, D]       the cache holds the keys/values of positions kv_start .. kv_end - 1;
//                                position k lives in row(k) (kv_layout below). Head h reads kv head
//                                h / (H / Hkv) (GQA/MQA; H must be a multiple of Hkv).
//   kv_end  = kv_len (uniform) when kv_len_source = 0; = the u32 in binding `kv_len` (kv_len[0]) when
//             kv_len_source = 1, so a decode loop can advance the cache length on the GPU (a copy or a small
//             kernel writes kv_len[0]) and reuse the recorded uniforms: then start_pos is ignored and the
//             seq_len new tokens are the last positions of the cache (q_start = kv_end - seq_len).
//   keys visible to position p: kv_start <= k < kv_end, and
//             is_causal = 1:          k <= p
//             sliding_window = W > 0: p - k < W (and, when is_causal = 0, also k - p < W: a symmetric window)
//   s(k)    = scale * dot(Q[t, h], K[row(k), kv head]);  if attn_softcap = c > 0: s = c * tanh(s / c)
//   output[t, h, :] = sum_k softmax(s)(k) * V[row(k), kv head, :]   over the visible keys; a query that sees
//             no key gets zeros.
//   kv_layout 0 (contiguous): row(k) = k - kv_start (row 0 holds position kv_start; kv_start = 0 for a plain
//             cache; a host that evicts the oldest positions by shifting rows raises kv_start).
//   kv_layout 1 (paged): i = k - kv_start; row(k) = page_table[i / page_size] * page_size + i % page_size.
//   kv_layout 2 (ring):  row(k) = k % page_size (page_size = ring capacity in rows; kv_end - kv_start must not
//             exceed it): sliding-window layers keep only the last W positions.
//   page_table must be bound even when unused (any buffer of at least 4 bytes); so must kv_len.
//
// Algorithm: for each visible key, s = score, m' = max(m, s), l = l * exp(m - m') + exp(s - m'), and the D output
//   accumulators are rescaled by exp(m - m') and get exp(s - m') * V; the row is divided by l at the end. Q and the
//   accumulators live in private arrays of DMAX = 512 floats.
//
// Entry point `main` (attention.prefill_streaming_f16, attention.decode_streaming_f16), workgroup_size(1, 1, 1); head_dim 1..512.
// Dispatch: [num_heads, seq_len, 1] (workgroup_id.x = head, .y = query token).
//
// Bindings (group 0):
//   0  uniforms    uniform             Uniforms (below)
//   1  Q           storage, read       f16 [seq_len, num_heads, head_dim]
//   2  K           storage, read       f16 [rows, num_kv_heads, head_dim]
//   3  V           storage, read       f16 [rows, num_kv_heads, head_dim]
//   4  output      storage, read_write f16 [seq_len, num_heads, head_dim] (written)
//   5  kv_len      storage, read       u32 [1]: kv_end when kv_len_source = 1
//   6  page_table  storage, read       u32 [pages]: physical page of each logical page (kv_layout = 1)
//
// Uniforms (the registry's `attention` base uniforms):
//   num_heads: u32 @0, num_kv_heads: u32 @4, head_dim: u32 @8, kv_len: u32 @12, seq_len: u32 @16, scale: f32 @20,
//   is_causal: u32 @24, start_pos: u32 @28, attn_softcap: f32 @32, sliding_window: u32 @36, kv_len_source: u32 @40,
//   kv_start: u32 @44, page_size: u32 @48, kv_layout: u32 @52, _pad: u32 @56
//
// Element types: q_t (Q, output) and kv_t (K, V) below; values are widened to f32 as they are read and all
// arithmetic is f32. Files rendered with the same vars but other types differ only in `enable f16;` and these
// two aliases (a test checks this).

enable f16;

alias q_t = f16;   // element type of Q and output
alias kv_t = f16;  // element type of K and V

struct Uniforms {
  num_heads: u32,
  num_kv_heads: u32,
  head_dim: u32,
  kv_len: u32,
  seq_len: u32,
  scale: f32,
  is_causal: u32,
  start_pos: u32,
  attn_softcap: f32,
  sliding_window: u32,
  kv_len_source: u32,
  kv_start: u32,
  page_size: u32,
  kv_layout: u32,
  _pad: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> Q: array<q_t>;
@group(0) @binding(2) var<storage, read> K: array<kv_t>;
@group(0) @binding(3) var<storage, read> V: array<kv_t>;
@group(0) @binding(4) var<storage, read_write> output: array<q_t>;
@group(0) @binding(5) var<storage, read> kv_len: array<u32>;
@group(0) @binding(6) var<storage, read> page_table: array<u32>;

const DMAX: u32 = 512u;   // largest head_dim (private q and accumulators)
const MASKED: f32 = -3.402823e+38;  // running max before any key (about -FLT_MAX)

// ---- shared by all attention kernels ----

fn kv_end() -> u32 {
  if (u.kv_len_source == 1u) {
    return kv_len[0];
  }
  return u.kv_len;
}

fn query_start(end: u32) -> u32 {
  if (u.kv_len_source == 1u) {
    return select(0u, end - u.seq_len, end >= u.seq_len);
  }
  return u.start_pos;
}

// Visible keys [x, y) of the query at position p (y == x when none).
fn key_range(p: u32, end: u32) -> vec2<u32> {
  var lo = u.kv_start;
  var hi = end;
  if (u.is_causal != 0u) {
    hi = min(hi, p + 1u);
  }
  let w = u.sliding_window;
  if (w > 0u) {
    if (p + 1u > w) {
      lo = max(lo, p + 1u - w);
    }
    if (u.is_causal == 0u) {
      hi = min(hi, p + w);
    }
  }
  return vec2<u32>(lo, max(lo, hi));
}

fn kv_row(k: u32) -> u32 {
  let ps = max(u.page_size, 1u);
  switch u.kv_layout {
    case 1u: {
      let i = k - u.kv_start;
      return page_table[i / ps] * ps + i % ps;
    }
    case 2u: {
      return k % ps;
    }
    default: {
      return k - u.kv_start;
    }
  }
}

// Index of element 0 of key/value position k for kv head kvh.
fn kv_base(k: u32, kvh: u32) -> u32 {
  return (kv_row(k) * u.num_kv_heads + kvh) * u.head_dim;
}

// c * tanh(s / c) for c > 0 (tanh from one exp: exact for large |s|, where a library tanh may overflow).
fn soft_cap(s: f32) -> f32 {
  let c = u.attn_softcap;
  if (c > 0.0) {
    let x = s / c;
    let e = exp(-2.0 * abs(x));
    return c * sign(x) * (1.0 - e) / (1.0 + e);
  }
  return s;
}

fn kv_head(h: u32) -> u32 {
  return h / max(u.num_heads / max(u.num_kv_heads, 1u), 1u);
}

// ---- end of shared part ----
@compute @workgroup_size(1, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
  let h = wid.x;
  let t = wid.y;
  if (h >= u.num_heads || t >= u.seq_len) {
    return;
  }
  let D = min(u.head_dim, DMAX);
  let kvh = kv_head(h);
  let end = kv_end();
  let r = key_range(query_start(end) + t, end);
  let qo = (t * u.num_heads + h) * u.head_dim;
  var q: array<f32, DMAX>;
  var acc: array<f32, DMAX>;
  for (var d = 0u; d < D; d++) {
    q[d] = f32(Q[qo + d]) * u.scale;
    acc[d] = 0.0;
  }
  var m = MASKED;
  var l = 0.0;
  for (var k = r.x; k < r.y; k++) {
    let kbase = kv_base(k, kvh);
    var dot = 0.0;
    for (var d = 0u; d < D; d++) {
      dot = fma(q[d], f32(K[kbase + d]), dot);
    }
    let s = soft_cap(dot);
    let m_new = max(m, s);
    let alpha = exp(m - m_new);
    let p = exp(s - m_new);
    l = fma(l, alpha, p);
    m = m_new;
    for (var d = 0u; d < D; d++) {
      acc[d] = fma(p, f32(V[kbase + d]), acc[d] * alpha);
    }
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var d = 0u; d < D; d++) {
    output[qo + d] = q_t(acc[d] * inv);
  }
}
