// Generated from src/kernels/templates/attention.wgsl.jinja ({"kernel":"rows","q":"f16","kv":"f16","entry":"attention_decode","wg":256,"nr":2,"reduce":"tree","ids":["attention.decode_f16"]}) by scripts/gen-sources.ts; do not edit.
// attention_decode_f16.wgsl: decoder self-attention over a KV cache, one workgroup per (head, query token), the keys split
// across the workgroup's invocations (decode: seq_len = 1, long kv_len).
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
// Algorithm (flash-decoding style online softmax, bounded workgroup memory for any kv_len):
//   The visible keys form one interval [lo, hi) per query; it is walked in blocks of WG = 256 keys. Invocation i
//   scores key lo + blk + i (q is staged in workgroup memory, pre-multiplied by scale), a tree reduction gives the
//   block max, the running max m is raised and every running sum rescaled by exp(m_old - m_new). For V, the
//   invocations are split into G = floor(WG / D) key groups of D lanes (D <= WG): lane d of group g accumulates
//   output dim d over the block's keys g, g + G, ... (coalesced V reads); for D > WG every invocation owns dims
//   i, i + WG, ... (G = 1). At the end the per-invocation softmax sums and the G partial outputs are added up.
//
// Entry point `attention_decode` (attention.decode_f16), workgroup_size(256, 1, 1); head_dim 1..512.
// Dispatch: [num_heads, seq_len, 1] (workgroup_id.x = head, .y = query token; any seq_len works).
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

const WG: u32 = 256u;     // invocations = keys per block
const NR: u32 = 2u;     // output dims per invocation when head_dim > WG (head_dim <= WG * NR)
const DMAX: u32 = 512u;   // largest head_dim (q staging)
const MASKED: f32 = -3.402823e+38;  // running max before any key (about -FLT_MAX)

var<workgroup> q_sh: array<f32, DMAX>;  // q * scale
var<workgroup> p_sh: array<f32, WG>;    // probabilities of the current block (relative to the running max)
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
fn block_max(v: f32, li: u32) -> f32 {
  red[li] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      red[li] = max(red[li], red[li + s]);
    }
    workgroupBarrier();
  }
  return red[0];
}

@compute @workgroup_size(256, 1, 1)
fn attention_decode(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
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

  // V accumulation mapping: key group g (of G), first dim dd.
  let narrow = D <= WG;
  let G = select(1u, WG / max(D, 1u), narrow);
  let g = select(0u, li / max(D, 1u), narrow);
  let dd = select(li, li % max(D, 1u), narrow);
  let in_group = g < G;

  var m = MASKED;
  var l = 0.0;
  var acc: array<f32, NR>;
  for (var i = 0u; i < NR; i++) {
    acc[i] = 0.0;
  }
  for (var kb = r.x; kb < r.y; kb += WG) {
    let n = min(WG, r.y - kb);
    var s = MASKED;
    if (li < n) {
      let kbase = kv_base(kb + li, kvh);
      var dot = 0.0;
      for (var d = 0u; d < D; d++) {
        dot = fma(q_sh[d], f32(K[kbase + d]), dot);
      }
      s = soft_cap(dot);
    }
    let m_new = max(m, block_max(s, li));
    let alpha = exp(m - m_new);
    let p = select(0.0, exp(s - m_new), li < n);
    l = fma(l, alpha, p);
    p_sh[li] = p;
    m = m_new;
    workgroupBarrier();
    if (in_group) {
      for (var i = 0u; i < NR; i++) {
        acc[i] *= alpha;
      }
      for (var j = g; j < n; j += G) {
        let pj = p_sh[j];
        let vbase = kv_base(kb + j, kvh);
        for (var i = 0u; i < NR; i++) {
          let d = dd + i * WG;
          if (d < D) {
            acc[i] = fma(pj, f32(V[vbase + d]), acc[i]);
          }
        }
      }
    }
  }

  // Combine: softmax sum over all invocations; partial outputs over the G key groups.
  workgroupBarrier();
  red[li] = l;
  p_sh[li] = select(0.0, acc[0], in_group && narrow);
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      red[li] += red[li + s];
    }
    workgroupBarrier();
  }
  let lt = red[0];
  let inv = select(0.0, 1.0 / lt, lt > 0.0);
  if (narrow) {
    if (li < D) {
      var a = 0.0;
      for (var gg = 0u; gg < G; gg++) {
        a += p_sh[gg * D + li];
      }
      output[qo + li] = q_t(a * inv);
    }
  } else {
    for (var i = 0u; i < NR; i++) {
      let d = dd + i * WG;
      if (d < D) {
        output[qo + d] = q_t(acc[i] * inv);
      }
    }
  }
}
