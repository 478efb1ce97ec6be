// Generated from src/kernels/templates/matmul_gemv_subgroup.wgsl.jinja ({"a":"f16","c":"f16","sfx":"_f16a"}) by scripts/gen-sources.ts; do not edit.
// matmul_gemv_subgroup_f16a.wgsl: matrix-vector product with f16 weights, f16 activations and f16 output (decode).
//
//   C[m, n] = alpha * sum_k A[m, k] * W[n, k]      A: f16 [M, K], W: f16 [N, K] row-major, C: f16 [M, N]
//
// W is read as u32 words holding two f16 each (element e = n*K + k is the low half of word e/2 when e is even, the
// high half when odd), converted with unpack2x16float. A is widened to f32 on load and C narrowed to f16 on store (`enable f16`); accumulation is f32.
// M is meant to be 1: larger M is correct but reads W once per row. Any M, N, K (K = 0 writes zeros).
//
// Entry points (all workgroup_size(256, 1, 1); need `subgroups`; correct for any subgroup size and layout):
//   main           (matmul.gemv_subgroup_f16a)           4 columns per workgroup. When K is even, invocation i reads word
//                                                   pairs p = i, i + 256, ... of each of the 4 rows (k = 2p, 2p+1;
//                                                   consecutive invocations read consecutive words: coalesced).
//                                                   When K is odd rows are not word-aligned: element by element.
//   main_vec4      (matmul.gemv_subgroup_vec4_f16a)      4 columns per workgroup; when K % 8 == 0, invocation i reads 4
//                                                   consecutive words (8 weights, 16 bytes) of each row per step,
//                                                   k = 8q .. 8q+7 for q = i, i + 256, ...; otherwise as main.
//   main_multicol  (matmul.gemv_subgroup_multicol_f16a)  8 columns per workgroup (registry colsPerWg 8), word pairs as
//                                                   main: each A pair is loaded once and used for 8 rows (LM head).
// Every invocation accumulates all columns of its workgroup (f32); the per-column sums are reduced with subgroupAdd
// and then across subgroups in workgroup memory (see workgroup_sum4: subgroups number themselves with a workgroup
// atomic, so no relation between subgroup and local index is assumed; WGSL subgroup sizes are 4..128, so at most 64
// subgroups), and invocations 0 .. cols-1 write C.
//
// Dispatch: tile t = workgroup_id.x + workgroup_id.y * num_workgroups.x (columns cols*t .. cols*t + cols - 1),
// row m = workgroup_id.z. With T = ceil(N / cols) (cols = 4 for main and main_vec4, 8 for main_multicol):
// [min(T, 65535), ceil(T / 65535), M].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  A         storage, read       f16 [M, K]
//   2  B         storage, read       f16 [N, K] as u32 words (ceil(N*K / 2) words)
//   3  C         storage, read_write f16 [M, N] (written)
//
// Uniforms (the registry's `matmul` base uniforms):
//   M: u32 @0, N: u32 @4, K: u32 @8, alpha: f32 @12

enable f16;
enable subgroups;

struct Uniforms {
  M: u32,
  N: u32,
  K: u32,
  alpha: f32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> A: array<f16>;
@group(0) @binding(2) var<storage, read> B: array<u32>;
@group(0) @binding(3) var<storage, read_write> C: array<f16>;

var<workgroup> sg_red: array<vec4<f32>, 64>; // one slot per subgroup
var<workgroup> sg_count: atomic<u32>;
var<workgroup> nsg_sh: u32;

// A as f32 at element index e.
fn a_at(e: u32) -> f32 {
  return f32(A[e]);
}

// W as f32 at element index e.
fn w_at(e: u32) -> f32 {
  let v = unpack2x16float(B[e >> 1u]);
  return select(v.x, v.y, (e & 1u) == 1u);
}

// Word pair p of row n (requires K even): W[n, 2p], W[n, 2p + 1].
fn w_pair(n: u32, p: u32) -> vec2<f32> {
  return unpack2x16float(B[n * (u.K >> 1u) + p]);
}

const WG: u32 = 256u;

// This subgroup's number (0 .. nsg-1, in order of arrival). Once, in workgroup-uniform control flow.
fn subgroup_number(li: u32) -> u32 {
  // the counter starts at zero here, not by workgroup-memory zero-initialization (which Dawn's disable_workgroup_init
  // turns off)
  if (li == 0u) {
    atomicStore(&sg_count, 0u);
  }
  workgroupBarrier();
  var sid = 0u;
  if (subgroupElect()) {
    sid = atomicAdd(&sg_count, 1u);
  }
  return subgroupBroadcastFirst(sid);
}

// The number of subgroups (workgroup-uniform), once every subgroup has numbered itself.
fn subgroup_count(li: u32) -> u32 {
  workgroupBarrier();
  if (li == 0u) {
    nsg_sh = atomicLoad(&sg_count);
  }
  return workgroupUniformLoad(&nsg_sh);
}

// Sum of v over the workgroup: subgroupAdd, the elected lane of subgroup sid stores it in slot sid, and after a
// barrier every subgroup adds the nsg slots (lane i takes slots i, i + S, ...) and reduces again, so every invocation
// gets the total. Starts with a barrier so it may be called repeatedly. Workgroup-uniform control flow only.
fn workgroup_sum4(v: vec4<f32>, sid: u32, nsg: u32, lane: u32, S: u32) -> vec4<f32> {
  workgroupBarrier();
  let s = subgroupAdd(v);
  if (subgroupElect()) {
    sg_red[sid] = s;
  }
  workgroupBarrier();
  var acc = vec4<f32>(0.0);
  for (var i = lane; i < nsg; i += S) {
    acc += sg_red[i];
  }
  return subgroupAdd(acc);
}

// Partial dot products of invocation li for the 4 rows n0 .. n0+3 (rows >= N give 0): word pairs when K is even,
// elements otherwise. a0 = m*K.
fn partial4(n0: u32, a0: u32, li: u32) -> vec4<f32> {
  let K = u.K;
  var acc = vec4<f32>(0.0);
  let nc = min(u.N - n0, 4u);
  if ((K & 1u) == 0u) {
    for (var p = li; p < (K >> 1u); p += WG) {
      let a = vec2<f32>(a_at(a0 + 2u * p), a_at(a0 + 2u * p + 1u));
      for (var c = 0u; c < nc; c++) {
        acc[c] += dot(w_pair(n0 + c, p), a);
      }
    }
  } else {
    for (var k = li; k < K; k += WG) {
      let a = a_at(a0 + k);
      for (var c = 0u; c < nc; c++) {
        acc[c] = fma(w_at((n0 + c) * K + k), a, acc[c]);
      }
    }
  }
  return acc;
}

fn store_cols(v: vec4<f32>, n0: u32, m: u32, li: u32) {
  if (li < 4u && n0 + li < u.N) {
    C[m * u.N + n0 + li] = f16(u.alpha * v[li]);
  }
}

@compute @workgroup_size(256, 1, 1)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) S: u32,
) {
  let n0 = (wid.x + wid.y * nwg.x) * 4u;
  let m = wid.z;
  if (n0 >= u.N || m >= u.M) {
    return;
  }
  let sid = subgroup_number(li);
  let nsg = subgroup_count(li);
  let total = workgroup_sum4(partial4(n0, m * u.K, li), sid, nsg, lane, S);
  store_cols(total, n0, m, li);
}

@compute @workgroup_size(256, 1, 1)
fn main_vec4(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) S: u32,
) {
  let n0 = (wid.x + wid.y * nwg.x) * 4u;
  let m = wid.z;
  if (n0 >= u.N || m >= u.M) {
    return;
  }
  let K = u.K;
  let a0 = m * K;
  var acc = vec4<f32>(0.0);
  if ((K & 7u) == 0u) {
    let nc = min(u.N - n0, 4u);
    let words = K >> 1u; // words per row
    for (var q = li; q < (K >> 3u); q += WG) {
      let k = 8u * q;
      let alo = vec4<f32>(a_at(a0 + k), a_at(a0 + k + 1u), a_at(a0 + k + 2u), a_at(a0 + k + 3u));
      let ahi = vec4<f32>(a_at(a0 + k + 4u), a_at(a0 + k + 5u), a_at(a0 + k + 6u), a_at(a0 + k + 7u));
      for (var c = 0u; c < nc; c++) {
        let w0 = (n0 + c) * words + 4u * q;
        let wlo = vec4<f32>(unpack2x16float(B[w0]), unpack2x16float(B[w0 + 1u]));
        let whi = vec4<f32>(unpack2x16float(B[w0 + 2u]), unpack2x16float(B[w0 + 3u]));
        acc[c] += dot(wlo, alo) + dot(whi, ahi);
      }
    }
  } else {
    acc = partial4(n0, a0, li);
  }
  let sid = subgroup_number(li);
  let nsg = subgroup_count(li);
  store_cols(workgroup_sum4(acc, sid, nsg, lane, S), n0, m, li);
}

@compute @workgroup_size(256, 1, 1)
fn main_multicol(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) S: u32,
) {
  let n0 = (wid.x + wid.y * nwg.x) * 8u;
  let m = wid.z;
  if (n0 >= u.N || m >= u.M) {
    return;
  }
  let K = u.K;
  let a0 = m * K;
  var lo = vec4<f32>(0.0); // columns n0 .. n0+3
  var hi = vec4<f32>(0.0); // columns n0+4 .. n0+7
  let nc = min(u.N - n0, 8u);
  if ((K & 1u) == 0u) {
    for (var p = li; p < (K >> 1u); p += WG) {
      let a = vec2<f32>(a_at(a0 + 2u * p), a_at(a0 + 2u * p + 1u));
      for (var c = 0u; c < min(nc, 4u); c++) {
        lo[c] += dot(w_pair(n0 + c, p), a);
      }
      for (var c = 4u; c < nc; c++) {
        hi[c - 4u] += dot(w_pair(n0 + c, p), a);
      }
    }
  } else {
    for (var k = li; k < K; k += WG) {
      let a = a_at(a0 + k);
      for (var c = 0u; c < min(nc, 4u); c++) {
        lo[c] = fma(w_at((n0 + c) * K + k), a, lo[c]);
      }
      for (var c = 4u; c < nc; c++) {
        hi[c - 4u] = fma(w_at((n0 + c) * K + k), a, hi[c - 4u]);
      }
    }
  }
  let sid = subgroup_number(li);
  let nsg = subgroup_count(li);
  let slo = workgroup_sum4(lo, sid, nsg, lane, S);
  let shi = workgroup_sum4(hi, sid, nsg, lane, S);
  if (li < 8u && n0 + li < u.N) {
    C[m * u.N + n0 + li] = f16(u.alpha * select(shi[li & 3u], slo[li & 3u], li < 4u));
  }
}