// Generated from src/kernels/templates/sample.wgsl.jinja ({"logit":"f32","sfx":""}) by scripts/gen-sources.ts; do not edit.
// sample.wgsl: GPU-side token selection from one row of logits: greedy argmax, and temperature / top-k / top-p
// sampling with a seeded counter-based RNG, so a decode loop needs no logits readback (only output[0]).
//
// Semantics (HF generate's order: temperature, then top-k, then top-p; V = vocab_size, T = temperature):
//   T <= 0:     greedy: the index of the largest logit; ties go to the lowest index (torch.argmax).
//   otherwise   z_i = logits[i] / T; p_i = softmax(z)_i.
//     top-k:    top_k = 0 means none; else keep the top_k largest z.
//     top-p:    top_p >= 1 means none; else keep token i iff the probability mass (after top-k, renormalized) of
//               the tokens ranked strictly above i is < top_p (HF TopPLogitsWarper: the smallest set of most
//               likely tokens whose mass reaches top_p; the most likely token is always kept).
//     draw:     u = (pcg_hash(random_seed) >> 8) / 2^24 in [0, 1) (PCG RXS-M-XS hash, Jarzynski & Olano 2020);
//               the token is the first kept index i, in index order, whose inclusive running sum of kept
//               exp(z - max z) exceeds u times their total. One seed gives one draw: the host passes a new
//               random_seed per generated token (e.g. a hash of the user's seed and the token's position), so a
//               given (seed, position) reproduces its token.
//   NaN logits give an unspecified token.
//
// Output buffer (u32 words; values are f32 bit patterns; NONE = 0xffffffff):
//   output[0]                     the chosen token id (argmax_reduce, softmax_and_sample, sample_single_pass)
//   output[1]                     n = number of phase-1 workgroups (argmax, find_topk_phase1 write num_workgroups.x)
//   output[2]                     c = number of final candidates (find_topk_phase2)
//   output[3]                     unused
//   output[4 + 2r], [5 + 2r]      final candidate r < KMAX: (logit bits, token id), sorted by logit descending,
//                                 ties by id ascending (find_topk_phase2 -> softmax_and_sample)
//   output[PART + 2w], [+1]       argmax: workgroup w's best (logit bits, token id)          PART = 4 + 2 * KMAX
//   output[PART + 2(w*KMAX + r)]  find_topk_phase1: workgroup w's candidate r (logit bits, id; NONE-padded)
//   Size: argmax path (PART + 2n) words; top-k path (PART + 2 * KMAX * n) words.
//
// Entry points (all workgroup_size(256, 1, 1)):
//   argmax              (sample.argmax)            phase 1: workgroup w grid-strides over the logits
//                                                  (i = w*256 + li, step n*256) and writes its best (value, id).
//                                                  Dispatch [n, 1, 1], any n in 1..65535; suggested
//                                                  n = min(ceil(V / 1024), 256).
//   argmax_reduce       (sample.argmax_reduce)     phase 2: one workgroup merges the n partials -> output[0].
//                                                  Dispatch [1, 1, 1].
//   find_topk_phase1    (sample.find_topk_phase1)  workgroup w takes the contiguous slice w of n of the logits and
//                                                  keeps its K = min(top_k, KMAX) largest (top_k = 0: KMAX) by
//                                                  repeated 1024-entry bitonic sorts in workgroup memory.
//                                                  Dispatch [n, 1, 1], suggested n = ceil(V / 1024) (one sort each).
//   find_topk_phase2    (sample.find_topk_phase2)  one workgroup merges the n * K candidates into the final K.
//                                                  Dispatch [1, 1, 1].
//   softmax_and_sample  (sample.softmax_and_sample) one workgroup: temperature, softmax over the candidates,
//                                                  top-p, draw -> output[0]; T <= 0 takes candidate 0.
//                                                  Dispatch [1, 1, 1].
//   sample_single_pass  (sample.single_pass)       one workgroup does everything for any parameters: argmax
//                                                  (T <= 0), or thresholds found by bitwise search over the
//                                                  order-preserving u32 keys of z (top-k: the k-th largest key,
//                                                  keeping ties like HF; top-p: the smallest kept key), then the
//                                                  draw by a two-level scan. Up to ~70 passes over the logits by
//                                                  one workgroup: exact for every setting, meant for small
//                                                  vocabularies, top_k = 0 / top_k > KMAX, and tests.
//                                                  Dispatch [1, 1, 1].
// The top-k path (phase1 -> phase2 -> softmax_and_sample) serves 1 <= top_k <= KMAX = 128 (top_k = 0 or larger
// is treated as KMAX there: use sample_single_pass for those). It keeps exactly K tokens (ties by lowest id);
// single_pass keeps every token tied with the k-th (HF). Both draw in index order from the same u, so for the
// same seed they pick the same token (up to f32 rounding at a bucket edge).
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  logits    storage, read       f32 [vocab_size]
//   2  output    storage, read_write u32 [see above] (written)
//
// Uniforms (the registry's `sample` base uniforms):
//   vocab_size: u32 @0, temperature: f32 @4, top_k: u32 @8, top_p: f32 @12, random_seed: u32 @16
//
// sample_f16.wgsl is this file with logits declared array<f16> (keep the two in sync: a test checks that they
// differ only there).

struct Uniforms {
  vocab_size: u32,
  temperature: f32,
  top_k: u32,
  top_p: f32,
  random_seed: u32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<u32>;

const WG: u32 = 256u;
const NONE: u32 = 0xffffffffu;
const KMAX: u32 = 128u;            // most candidates of the top-k path
const FINAL: u32 = 4u;             // first word of the final candidates
const PART: u32 = 4u + 2u * KMAX;  // first word of the phase-1 partials
const SORT_N: u32 = 1024u;         // entries per bitonic sort

var<workgroup> red_v: array<f32, WG>;
var<workgroup> red_i: array<u32, WG>;
var<workgroup> sort_v: array<f32, SORT_N>;
var<workgroup> sort_i: array<u32, SORT_N>;
var<workgroup> count_sh: u32;
var<workgroup> chosen_sh: atomic<u32>;

fn logit(i: u32) -> f32 {
  return f32(logits[i]);
}

fn pcg_hash(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

// The draw of this call, in [0, 1) with 24 bits.
fn uniform01() -> f32 {
  return f32(pcg_hash(u.random_seed) >> 8u) * (1.0 / 16777216.0);
}

// Order-preserving u32 key of an f32 (a < b  <=>  key(a) < key(b) for non-NaN a, b).
fn key_of(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// (v, i) ranks before (bv, bi): larger value, then lower index; NONE ranks last.
fn before(v: f32, i: u32, bv: f32, bi: u32) -> bool {
  return i != NONE && (bi == NONE || v > bv || (v == bv && i < bi));
}

// Workgroup argmax of (v, i) pairs; every invocation gets the winner (red_i[0] / red_v[0]).
fn wg_argmax(v: f32, i: u32, li: u32) -> vec2<u32> {
  red_v[li] = v;
  red_i[li] = i;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s && before(red_v[li + s], red_i[li + s], red_v[li], red_i[li])) {
      red_v[li] = red_v[li + s];
      red_i[li] = red_i[li + s];
    }
    workgroupBarrier();
  }
  let r = vec2<u32>(bitcast<u32>(red_v[0]), red_i[0]);
  workgroupBarrier();
  return r;
}

fn wg_sum(v: f32, li: u32) -> f32 {
  red_v[li] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      red_v[li] += red_v[li + s];
    }
    workgroupBarrier();
  }
  let r = red_v[0];
  workgroupBarrier();
  return r;
}

fn wg_max(v: f32, li: u32) -> f32 {
  red_v[li] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      red_v[li] = max(red_v[li], red_v[li + s]);
    }
    workgroupBarrier();
  }
  let r = red_v[0];
  workgroupBarrier();
  return r;
}

fn wg_count(c: u32, li: u32) -> u32 {
  red_i[li] = c;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (li < s) {
      red_i[li] += red_i[li + s];
    }
    workgroupBarrier();
  }
  let r = red_i[0];
  workgroupBarrier();
  return r;
}

// Candidates of the top-k path: K = min(top_k, KMAX), top_k = 0 meaning KMAX.
fn topk_k() -> u32 {
  return select(KMAX, min(u.top_k, KMAX), u.top_k > 0u);
}

// ---- argmax ----

@compute @workgroup_size(256, 1, 1)
fn argmax(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  var bv = 0.0;
  var bi = NONE;
  for (var i = wid.x * WG + li; i < u.vocab_size; i += nwg.x * WG) {
    let v = logit(i);
    if (before(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  let best = wg_argmax(bv, bi, li);
  if (li == 0u) {
    output[PART + 2u * wid.x] = best.x;
    output[PART + 2u * wid.x + 1u] = best.y;
    if (wid.x == 0u) {
      output[1] = nwg.x;
    }
  }
}

@compute @workgroup_size(256, 1, 1)
fn argmax_reduce(@builtin(local_invocation_index) li: u32) {
  let n = output[1];
  var bv = 0.0;
  var bi = NONE;
  for (var w = li; w < n; w += WG) {
    let v = bitcast<f32>(output[PART + 2u * w]);
    let i = output[PART + 2u * w + 1u];
    if (before(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  let best = wg_argmax(bv, bi, li);
  if (li == 0u) {
    output[0] = select(best.y, 0u, best.y == NONE);
  }
}

// ---- top-k path ----

// Sort sort_v/sort_i (SORT_N entries) so that `before` holds between neighbours (bitonic network).
fn bitonic_sort(li: u32) {
  for (var k = 2u; k <= SORT_N; k <<= 1u) {
    for (var j = k >> 1u; j > 0u; j >>= 1u) {
      for (var t = li; t < SORT_N / 2u; t += WG) {
        let a = 2u * t - (t & (j - 1u));
        let b = a + j;
        let up = (a & k) == 0u;
        let b_first = before(sort_v[b], sort_i[b], sort_v[a], sort_i[a]);
        let a_first = before(sort_v[a], sort_i[a], sort_v[b], sort_i[b]);
        if (select(a_first, b_first, up)) {
          let tv = sort_v[a];
          let ti = sort_i[a];
          sort_v[a] = sort_v[b];
          sort_i[a] = sort_i[b];
          sort_v[b] = tv;
          sort_i[b] = ti;
        }
      }
      workgroupBarrier();
    }
  }
}

// Item j of a source: from_logits: (logits[j], j); else the phase-1 candidate j (list j / kk, rank j % kk).
fn load_item(from_logits: bool, j: u32, kk: u32) -> vec2<u32> {
  if (from_logits) {
    return vec2<u32>(bitcast<u32>(logit(j)), j);
  }
  let w = PART + 2u * ((j / kk) * KMAX + j % kk);
  return vec2<u32>(output[w], output[w + 1u]);
}

// Keep the best kk of items first .. first + count - 1 in sort slots 0 .. kk - 1 (sorted; NONE past the valid
// ones): slots kk.. are refilled with the next items and the 1024 entries sorted, until the items run out.
fn select_top(from_logits: bool, first: u32, count: u32, kk: u32, li: u32) {
  var kept = 0u;
  var pos = 0u;
  loop {
    let room = SORT_N - kept;
    let take = min(room, count - pos);
    for (var s = li; s < room; s += WG) {
      var item = vec2<u32>(0u, NONE);
      if (s < take) {
        item = load_item(from_logits, first + pos + s, kk);
      }
      sort_v[kept + s] = bitcast<f32>(item.x);
      sort_i[kept + s] = item.y;
    }
    workgroupBarrier();
    bitonic_sort(li);
    pos += take;
    kept = kk;
    if (pos >= count) {
      break;
    }
  }
}

@compute @workgroup_size(256, 1, 1)
fn find_topk_phase1(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let V = u.vocab_size;
  let chunk = (V + nwg.x - 1u) / nwg.x;
  let first = min(wid.x * chunk, V);
  let count = min(chunk, V - first);
  let kk = topk_k();
  select_top(true, first, count, kk, li);
  for (var r = li; r < kk; r += WG) {
    let w = PART + 2u * (wid.x * KMAX + r);
    output[w] = bitcast<u32>(sort_v[r]);
    output[w + 1u] = sort_i[r];
  }
  if (wid.x == 0u && li == 0u) {
    output[1] = nwg.x;
  }
}

@compute @workgroup_size(256, 1, 1)
fn find_topk_phase2(@builtin(local_invocation_index) li: u32) {
  if (li == 0u) {
    count_sh = output[1];
  }
  let n = workgroupUniformLoad(&count_sh);
  let kk = topk_k();
  select_top(false, 0u, n * kk, kk, li);
  var c = 0u;
  for (var r = li; r < kk; r += WG) {
    output[FINAL + 2u * r] = bitcast<u32>(sort_v[r]);
    output[FINAL + 2u * r + 1u] = sort_i[r];
    c += select(0u, 1u, sort_i[r] != NONE);
  }
  let total = wg_count(c, li);
  if (li == 0u) {
    output[2] = total;
  }
}

// Inclusive prefix sum of v over the workgroup (Hillis-Steele in red_v); returns this invocation's entry.
fn wg_inclusive_scan(v: f32, li: u32) -> f32 {
  red_v[li] = v;
  workgroupBarrier();
  for (var s = 1u; s < WG; s <<= 1u) {
    var add = 0.0;
    if (li >= s) {
      add = red_v[li - s];
    }
    workgroupBarrier();
    red_v[li] += add;
    workgroupBarrier();
  }
  let r = red_v[li];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(256, 1, 1)
fn softmax_and_sample(@builtin(local_invocation_index) li: u32) {
  if (li == 0u) {
    count_sh = output[2];
  }
  let nc = workgroupUniformLoad(&count_sh);
  let T = u.temperature;
  if (!(T > 0.0) || nc == 0u) {
    if (li == 0u) {
      output[0] = select(output[FINAL + 1u], 0u, nc == 0u);
    }
    return;
  }
  // Candidate li (sorted, descending): p = exp(z - z_max).
  let valid = li < nc;
  var id = NONE;
  var p = 0.0;
  let z0 = bitcast<f32>(output[FINAL]) / T;
  if (valid) {
    id = output[FINAL + 2u * li + 1u];
    p = exp(bitcast<f32>(output[FINAL + 2u * li]) / T - z0);
  }
  let incl = wg_inclusive_scan(p, li);
  let total = wg_max(incl, li);
  // Top-p over the rank order: mass strictly above this candidate.
  var kept = valid;
  if (u.top_p < 1.0) {
    kept = valid && (li == 0u || incl - p < u.top_p * total);
  }
  let pk = select(0.0, p, kept);
  let kept_total = wg_sum(pk, li);
  let goal = uniform01() * kept_total;
  // Draw in index order: the kept candidate with the largest id whose exclusive prefix (over kept candidates
  // with smaller ids) is <= goal.
  red_v[li] = pk;
  red_i[li] = id;
  if (li == 0u) {
    atomicStore(&chosen_sh, 0u);
  }
  workgroupBarrier();
  if (kept && pk > 0.0) {
    var prefix = 0.0;
    for (var s = 0u; s < nc; s++) {
      if (red_i[s] < id) {
        prefix += red_v[s];
      }
    }
    if (prefix <= goal) {
      atomicMax(&chosen_sh, id + 1u);
    }
  }
  workgroupBarrier();
  if (li == 0u) {
    let c = atomicLoad(&chosen_sh);
    output[0] = select(c - 1u, output[FINAL + 1u], c == 0u);
  }
}

// ---- single pass ----

@compute @workgroup_size(256, 1, 1)
fn sample_single_pass(@builtin(local_invocation_index) li: u32) {
  let V = u.vocab_size;
  let T = u.temperature;
  if (!(T > 0.0)) {
    var bv = 0.0;
    var bi = NONE;
    for (var i = li; i < V; i += WG) {
      let v = logit(i);
      if (before(v, i, bv, bi)) {
        bv = v;
        bi = i;
      }
    }
    let best = wg_argmax(bv, bi, li);
    if (li == 0u) {
      output[0] = select(best.y, 0u, best.y == NONE);
    }
    return;
  }

  var mx = -3.402823e+38;
  for (var i = li; i < V; i += WG) {
    mx = max(mx, logit(i) / T);
  }
  let m = wg_max(mx, li);
  let key_max = key_of(m);

  // top-k: xk = the largest key with count(key >= xk) >= top_k (the k-th largest key).
  var xk = 0u;
  if (u.top_k > 0u && u.top_k < V) {
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = xk | (1u << u32(bit));
      var c = 0u;
      for (var i = li; i < V; i += WG) {
        c += select(0u, 1u, key_of(logit(i) / T) >= cand);
      }
      if (wg_count(c, li) >= u.top_k) {
        xk = cand;
      }
    }
  }

  // top-p: keep keys >= xp, xp = the smallest key x with mass(key > x) < top_p * mass(all kept by top-k).
  var xkeep = xk;
  if (u.top_p < 1.0) {
    var s = 0.0;
    for (var i = li; i < V; i += WG) {
      let z = logit(i) / T;
      s += select(0.0, exp(z - m), key_of(z) >= xk);
    }
    let thr = u.top_p * wg_sum(s, li);
    var x = 0u;
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = x | (1u << u32(bit));
      var a = 0.0;
      for (var i = li; i < V; i += WG) {
        let z = logit(i) / T;
        let kz = key_of(z);
        a += select(0.0, exp(z - m), kz > cand && kz >= xk);
      }
      if (wg_sum(a, li) >= thr) {
        x = cand;
      }
    }
    // x = the largest key whose mass above reaches thr, so xp = x + 1; never above the max (it is always kept).
    let xp = select(x + 1u, key_max, x == NONE);
    xkeep = max(xk, min(xp, key_max));
  }

  // Draw: invocation li owns the contiguous range [li * C, li * C + C).
  let C = (V + WG - 1u) / WG;
  let lo = min(li * C, V);
  let hi = min(lo + C, V);
  var own = 0.0;
  var last = NONE;
  for (var i = lo; i < hi; i++) {
    let z = logit(i) / T;
    if (key_of(z) >= xkeep) {
      own += exp(z - m);
      last = i;
    }
  }
  let incl = wg_inclusive_scan(own, li);
  let total = wg_max(incl, li);
  let goal = uniform01() * total;
  if (li == 0u) {
    atomicStore(&chosen_sh, 0u);
  }
  workgroupBarrier();
  let excl = incl - own;
  if (own > 0.0 && excl <= goal && goal < incl) {
    var run = excl;
    var pick = last;
    for (var i = lo; i < hi; i++) {
      let z = logit(i) / T;
      if (key_of(z) >= xkeep) {
        run += exp(z - m);
        if (run > goal) {
          pick = i;
          break;
        }
      }
    }
    atomicMax(&chosen_sh, pick + 1u);
  }
  // Fallback when f32 rounding leaves goal past every bucket: the last kept token.
  let last_all = wg_argmax(select(0.0, f32(last), last != NONE), select(NONE, last, last != NONE), li);
  if (li == 0u) {
    let c = atomicLoad(&chosen_sh);
    output[0] = select(c - 1u, last_all.y, c == 0u);
  }
}