// Generated from src/kernels/templates/attention.wgsl.jinja ({"kernel":"chunked","q":"f16","kv":"f16","entry":"main","wg":256,"nr":2,"ids":["attention.decode_chunked_f16"]}) by scripts/gen-sources.ts; do not edit.
// attention_decode_chunked_f16.wgsl: decode attention for few heads: one workgroup of 256 per (head, query token); the scores of up to
// 2048 keys are kept in workgroup memory and the output is parallel over head_dim (invocation i owns dims i, i + 256).
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
// Algorithm: the visible keys are walked in chunks of CH = 2048 (one chunk for kv_len <= 2048): invocation i
//   scores keys i, i + WG, ... of the chunk into workgroup memory, tree reductions give the chunk max and the sum
//   of exp(s - max); then every invocation walks all keys of the chunk for its own output dims (coalesced V
//   reads), with the running max / sum rescaled between chunks (online softmax).
//
// Entry point `main` (attention.decode_chunked_f16), workgroup_size(256, 1, 1); head_dim 1..512.
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

const WG: u32 = 256u;     // invocations
const NR: u32 = 2u;       // output dims per invocation (head_dim <= WG * NR)
const CH: u32 = 2048u;    // keys per chunk (scores held in workgroup memory)
const DMAX: u32 = 512u;   // largest head_dim (q staging)
const MASKED: f32 = -3.402823e+38;  // running max before any key (about -FLT_MAX)

var<workgroup> q_sh: array<f32, DMAX>;  // q * scale
var<workgroup> s_sh: array<f32, CH>;    // scores of the chunk, then probabilities
var<workgroup> red: array<f32, WG>;     // reductions

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
// Max (op 0) or sum (op 1) of v over the workgroup (barriers before and after: red may be reused at once).
fn wg_reduce(v: f32, li: u32, op: u32) -> f32 {
  workgroupBarrier();
  red[li] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      if (op == 0u) {
        red[li] = max(red[li], red[li + s]);
      } else {
        red[li] += red[li + s];
      }
    }
    workgroupBarrier();
  }
  return red[0];
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let h = wid.x;
  let t = wid.y;
  if (h >= u.num_heads || t >= u.seq_len) {
    return;
  }
  let D = u.head_dim;
  let kvh = kv_head(h);
  let end = kv_end();
  let r = key_range(query_start(end) + t, end);
  let qo = (t * u.num_heads + h) * D;
  for (var d = li; d < D; d += WG) {
    q_sh[d] = f32(Q[qo + d]) * u.scale;
  }
  workgroupBarrier();

  var m = MASKED;
  var l = 0.0;
  var acc: array<f32, NR>;
  for (var i = 0u; i < NR; i++) {
    acc[i] = 0.0;
  }
  for (var cb = r.x; cb < r.y; cb += CH) {
    let n = min(CH, r.y - cb);
    // Scores of the chunk (invocation li: keys li, li + WG, ...).
    var mx = MASKED;
    for (var j = li; j < n; j += WG) {
      let kbase = kv_base(cb + j, kvh);
      var dot = 0.0;
      for (var d = 0u; d < D; d++) {
        dot = fma(q_sh[d], f32(K[kbase + d]), dot);
      }
      let s = soft_cap(dot);
      s_sh[j] = s;
      mx = max(mx, s);
    }
    let m_new = max(m, wg_reduce(mx, li, 0u));
    var ps = 0.0;
    for (var j = li; j < n; j += WG) {
      let e = exp(s_sh[j] - m_new);
      s_sh[j] = e;
      ps += e;
    }
    let alpha = exp(m - m_new);
    l = fma(l, alpha, wg_reduce(ps, li, 1u));
    m = m_new;
    // Output dims li, li + WG, ... over every key of the chunk.
    for (var i = 0u; i < NR; i++) {
      acc[i] *= alpha;
    }
    for (var j = 0u; j < n; j++) {
      let pj = s_sh[j];
      let vbase = kv_base(cb + j, kvh);
      for (var i = 0u; i < NR; i++) {
        let d = li + i * WG;
        if (d < D) {
          acc[i] = fma(pj, f32(V[vbase + d]), acc[i]);
        }
      }
    }
    workgroupBarrier();
  }

  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var i = 0u; i < NR; i++) {
    let d = li + i * WG;
    if (d < D) {
      output[qo + d] = q_t(acc[i] * inv);
    }
  }
}
