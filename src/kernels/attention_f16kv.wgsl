// Generated from src/kernels/templates/attention.wgsl.jinja ({"kernel":"tile","q":"f32","kv":"f16","entry":"main","ids":["attention.prefill_f16kv"]}) by scripts/gen-sources.ts; do not edit.
// attention_f16kv.wgsl: decoder self-attention over a KV cache for many query tokens (prefill), a tile of BQ = 16
// queries of one head per workgroup.
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
// Algorithm (flash-attention style online softmax, bounded workgroup memory for any kv_len):
//   The workgroup stages its BQ queries (times scale) in workgroup memory and walks the union of their visible
//   key intervals in blocks of BK = 8 keys. Per block: the 64 invocations stage the block's K rows (coalesced),
//   compute the BQ x BK scores (2 per invocation; masked entries get -FLT_MAX), one invocation per query row
//   raises the row's running max, rescales its running sum and turns the row's scores into probabilities; then
//   invocation i, which owns output dims i, i + 64, i + 128, i + 192 of all BQ queries (BQ vec4 accumulators in
//   registers), rescales its accumulators and adds p * V for the block's keys, reading each V element once per
//   workgroup (coalesced). Workgroup memory: 16 KiB (Q) + 8 KiB (K block) + 0.6 KiB.
//
// Entry point `main` (attention.prefill_f16kv), workgroup_size(64, 1, 1); head_dim 1..256.
// Dispatch: [ceil(seq_len / 16), num_heads, 1] (workgroup_id.x = query tile, .y = head).
//
// Bindings (group 0):
//   0  uniforms    uniform             Uniforms (below)
//   1  Q           storage, read       f32 [seq_len, num_heads, head_dim]
//   2  K           storage, read       f16 [rows, num_kv_heads, head_dim]
//   3  V           storage, read       f16 [rows, num_kv_heads, head_dim]
//   4  output      storage, read_write f32 [seq_len, num_heads, head_dim] (written)
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

alias q_t = f32;   // element type of Q and output
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

const WG: u32 = 64u;      // invocations
const BQ: u32 = 16u;      // queries per workgroup
const BK: u32 = 8u;       // keys per block
const DMAX: u32 = 256u;   // largest head_dim: WG * 4 dims per invocation
const MASKED: f32 = -3.402823e+38;  // score of a masked key, running max before any key (about -FLT_MAX)

var<workgroup> q_sh: array<f32, BQ * DMAX>;  // [BQ][D] q * scale
var<workgroup> k_sh: array<f32, BK * DMAX>;  // [BK][D] K rows of the block
var<workgroup> s_sh: array<f32, BQ * BK>;    // [BQ][BK] scores, then probabilities
var<workgroup> m_sh: array<f32, BQ>;         // running max
var<workgroup> l_sh: array<f32, BQ>;         // running sum of exp(s - m)
var<workgroup> a_sh: array<f32, BQ>;         // rescale factor of the block

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
// V[k, kv head, d .. d + 192 step 64] (zero past head_dim).
fn v_dims(vbase: u32, d: u32, D: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  for (var c = 0u; c < 4u; c++) {
    let dc = d + c * WG;
    if (dc < D) {
      v[c] = f32(V[vbase + dc]);
    }
  }
  return v;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let h = wid.y;
  let q0 = wid.x * BQ;
  if (h >= u.num_heads || q0 >= u.seq_len) {
    return;
  }
  let D = u.head_dim;
  let H = u.num_heads;
  let kvh = kv_head(h);
  let nq = min(BQ, u.seq_len - q0);
  let end = kv_end();
  let p0 = query_start(end) + q0;
  // Key intervals move forward with the position: the tile's union is [first.x, last.y).
  let first = key_range(p0, end);
  let last = key_range(p0 + nq - 1u, end);
  let lo = first.x;
  let hi = max(first.y, last.y);

  for (var e = li; e < BQ * D; e += WG) {
    let qi = e / D;
    var q = 0.0;
    if (qi < nq) {
      q = f32(Q[((q0 + qi) * H + h) * D + e % D]) * u.scale;
    }
    q_sh[e] = q;
  }
  if (li < BQ) {
    m_sh[li] = MASKED;
    l_sh[li] = 0.0;
  }
  var acc: array<vec4<f32>, BQ>;
  for (var qi = 0u; qi < BQ; qi++) {
    acc[qi] = vec4<f32>(0.0);
  }
  workgroupBarrier();

  for (var kb = lo; kb < hi; kb += BK) {
    let nk = min(BK, hi - kb);
    // Stage the block's K rows.
    for (var e = li; e < BK * D; e += WG) {
      let j = e / D;
      var k = 0.0;
      if (j < nk) {
        k = f32(K[kv_base(kb + j, kvh) + e % D]);
      }
      k_sh[e] = k;
    }
    workgroupBarrier();
    // Scores.
    for (var e = li; e < BQ * BK; e += WG) {
      let qi = e / BK;
      let j = e % BK;
      var s = MASKED;
      if (qi < nq && j < nk) {
        let r = key_range(p0 + qi, end);
        let k = kb + j;
        if (k >= r.x && k < r.y) {
          var dot = 0.0;
          for (var d = 0u; d < D; d++) {
            dot = fma(q_sh[qi * D + d], k_sh[j * D + d], dot);
          }
          s = soft_cap(dot);
        }
      }
      s_sh[e] = s;
    }
    workgroupBarrier();
    // Online softmax per query row.
    if (li < BQ) {
      let m_old = m_sh[li];
      var m_new = m_old;
      for (var j = 0u; j < BK; j++) {
        m_new = max(m_new, s_sh[li * BK + j]);
      }
      var sum = 0.0;
      for (var j = 0u; j < BK; j++) {
        let s = s_sh[li * BK + j];
        let p = select(0.0, exp(s - m_new), s > MASKED);
        s_sh[li * BK + j] = p;
        sum += p;
      }
      let alpha = exp(m_old - m_new);
      a_sh[li] = alpha;
      l_sh[li] = fma(l_sh[li], alpha, sum);
      m_sh[li] = m_new;
    }
    workgroupBarrier();
    // Accumulate p * V (the next block's first barrier separates these reads from the next writes).
    for (var qi = 0u; qi < BQ; qi++) {
      acc[qi] *= a_sh[qi];
    }
    for (var j = 0u; j < nk; j++) {
      let v = v_dims(kv_base(kb + j, kvh), li, D);
      for (var qi = 0u; qi < BQ; qi++) {
        acc[qi] = fma(vec4<f32>(s_sh[qi * BK + j]), v, acc[qi]);
      }
    }
  }

  for (var qi = 0u; qi < nq; qi++) {
    let lt = l_sh[qi];
    let o = acc[qi] * select(0.0, 1.0 / lt, lt > 0.0);
    let ob = ((q0 + qi) * H + h) * D;
    for (var c = 0u; c < 4u; c++) {
      let d = li + c * WG;
      if (d < D) {
        output[ob + d] = q_t(o[c]);
      }
    }
  }
}
