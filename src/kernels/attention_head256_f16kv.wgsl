// Generated from src/kernels/templates/attention.wgsl.jinja ({"kernel":"blocked","q":"f32","kv":"f16","entry":"main","bq":32,"hd":256,"ids":["attention.prefill_head256_f16kv"]}) by scripts/gen-sources.ts; do not edit.
// attention_head256_f16kv.wgsl: prefill attention for head_dim = 256, one invocation per query of a tile of 32 queries of
// one head; each block of 32 keys is staged in workgroup memory as stored (f16), K then V
// (16384 bytes).
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
// Algorithm (flash-attention style, one query per invocation): invocation i holds query q0 + i (times scale) and
//   its 256 output accumulators in private vec4 arrays. The union of the tile's visible key intervals is
//   walked in blocks of BQ = 32 keys: the workgroup stages the block's K rows, each invocation scores its
//   query against them (masked keys get probability 0), raises its running max and rescales; then the block's V
//   rows are staged in the same workgroup array and each invocation adds p * V.
//
// Entry point `main` (attention.prefill_head256_f16kv), workgroup_size(32, 1, 1); head_dim exactly 256.
// Dispatch: [ceil(seq_len / 32), num_heads, 1] (workgroup_id.x = query tile, .y = head).
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

const BQ: u32 = 32u;    // queries per workgroup = invocations = keys per staged block
const HD: u32 = 256u;   // head_dim
const HD4: u32 = 64u;   // vec4s per row
const MASKED: f32 = -3.402823e+38;  // score of a masked key, running max before any key (about -FLT_MAX)

var<workgroup> kv_sh: array<kv_t, 8192>;  // [BQ][HD] K rows of the block, then its V rows

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
// Stage K or V rows kb .. kb + nk - 1 of kv head kvh into kv_sh (zeros past nk).
fn stage(src_is_v: bool, kb: u32, nk: u32, kvh: u32, li: u32) {
  for (var e = li; e < BQ * HD; e += BQ) {
    let j = e / HD;
    var x = kv_t(0);
    if (j < nk) {
      let i = kv_base(kb + j, kvh) + e % HD;
      if (src_is_v) {
        x = V[i];
      } else {
        x = K[i];
      }
    }
    kv_sh[e] = x;
  }
}

fn sh4(j: u32, c: u32) -> vec4<f32> {
  let b = j * HD + c * 4u;
  return vec4<f32>(f32(kv_sh[b]), f32(kv_sh[b + 1u]), f32(kv_sh[b + 2u]), f32(kv_sh[b + 3u]));
}

@compute @workgroup_size(32, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let h = wid.y;
  let q0 = wid.x * BQ;
  if (h >= u.num_heads || q0 >= u.seq_len) {
    return;
  }
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
  let live = li < nq;
  let r = key_range(p0 + min(li, nq - 1u), end);
  let qo = ((q0 + min(li, nq - 1u)) * H + h) * HD;

  var q: array<vec4<f32>, HD4>;
  var acc: array<vec4<f32>, HD4>;
  for (var c = 0u; c < HD4; c++) {
    let b = qo + c * 4u;
    q[c] = vec4<f32>(f32(Q[b]), f32(Q[b + 1u]), f32(Q[b + 2u]), f32(Q[b + 3u])) * u.scale;
    acc[c] = vec4<f32>(0.0);
  }
  var m = MASKED;
  var l = 0.0;
  var p: array<f32, BQ>;

  for (var kb = lo; kb < hi; kb += BQ) {
    let nk = min(BQ, hi - kb);
    stage(false, kb, nk, kvh, li);
    workgroupBarrier();
    var m_new = m;
    for (var j = 0u; j < BQ; j++) {
      let k = kb + j;
      var s = MASKED;
      if (live && j < nk && k >= r.x && k < r.y) {
        var dt = 0.0;
        for (var c = 0u; c < HD4; c++) {
          dt += dot(q[c], sh4(j, c));
        }
        s = soft_cap(dt);
      }
      p[j] = s;
      m_new = max(m_new, s);
    }
    let alpha = exp(m - m_new);
    var sum = 0.0;
    for (var j = 0u; j < BQ; j++) {
      let s = p[j];
      let e = select(0.0, exp(s - m_new), s > MASKED);
      p[j] = e;
      sum += e;
    }
    l = fma(l, alpha, sum);
    m = m_new;
    workgroupBarrier();
    stage(true, kb, nk, kvh, li);
    workgroupBarrier();
    for (var c = 0u; c < HD4; c++) {
      acc[c] *= alpha;
    }
    for (var j = 0u; j < nk; j++) {
      let pj = p[j];
      if (pj > 0.0) {
        for (var c = 0u; c < HD4; c++) {
          acc[c] = fma(vec4<f32>(pj), sh4(j, c), acc[c]);
        }
      }
    }
    workgroupBarrier();
  }

  if (live) {
    let inv = select(0.0, 1.0 / l, l > 0.0);
    for (var c = 0u; c < HD4; c++) {
      let o = acc[c] * inv;
      let b = qo + c * 4u;
      output[b] = q_t(o.x);
      output[b + 1u] = q_t(o.y);
      output[b + 2u] = q_t(o.z);
      output[b + 3u] = q_t(o.w);
    }
  }
}
