// Generated from src/kernels/templates/matmul_gemv.wgsl.jinja ({"a":"f16","c":"f16","variant":"matmul.gemv_f16a"}) by scripts/gen-sources.ts; do not edit.
// matmul_gemv_f16a.wgsl: matrix-vector product with f16 weights, f16 activations and f16 output (decode), A staged in
// workgroup memory.
//
//   C[m, n] = alpha * sum_k A[m, k] * W[n, k]      A: f16 [M, K], W: f16 [N, K] row-major, C: f16 [M, N]
//
// W is read as u32 words holding two f16 each (element e = n*K + k is the low half of word e/2 when e is even, the
// high half when odd), converted with unpack2x16float. A is widened to f32 when staged and C narrowed to f16 on store (`enable f16`); accumulation is f32.
// M is meant to be 1: larger M is correct but reads W once per row. Any M, N, K (K = 0 writes zeros).
//
// Entry point `main` (variant matmul.gemv_f16a), workgroup_size(256, 1, 1); no subgroup operations.
// One workgroup computes 8 consecutive columns n0 .. n0+7 of one row m: the row of A is staged in workgroup memory
// 1024 values (4 KiB) at a time, and lane l (0..31) of column c = local_index / 32 sums k = k0 + l, k0 + l + 32, ...
// of the chunk (the 32 lanes of a column read consecutive weights: coalesced). A tree in workgroup memory adds the
// 32 lanes; lane 0 of each column writes C.
//
// Dispatch: tile t = workgroup_id.x + workgroup_id.y * num_workgroups.x (columns 8t .. 8t + 7), row m =
// workgroup_id.z. With T = ceil(N / 8): [min(T, 65535), ceil(T / 65535), M].
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

const WG: u32 = 256u;
const LANES: u32 = 32u;   // invocations per column
const COLS: u32 = 8u;     // columns per workgroup (WG / LANES)
const CHUNK: u32 = 1024u; // values of A staged per pass

var<workgroup> a_sh: array<f32, 1024>;
var<workgroup> red: array<f32, 256>;

// W as f32 at element index e.
fn w_at(e: u32) -> f32 {
  let v = unpack2x16float(B[e >> 1u]);
  return select(v.x, v.y, (e & 1u) == 1u);
}

@compute @workgroup_size(256, 1, 1)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let n0 = (wid.x + wid.y * nwg.x) * COLS;
  let m = wid.z;
  if (n0 >= u.N || m >= u.M) {
    return; // workgroup-uniform
  }
  let K = u.K;
  let n = n0 + li / LANES;
  let lane = li % LANES;
  let a0 = m * K;
  var acc = 0.0;
  for (var k0 = 0u; k0 < K; k0 += CHUNK) {
    let len = min(CHUNK, K - k0);
    workgroupBarrier();
    for (var i = li; i < len; i += WG) {
      a_sh[i] = f32(A[a0 + k0 + i]);
    }
    workgroupBarrier();
    if (n < u.N) {
      let w0 = n * K + k0;
      for (var k = lane; k < len; k += LANES) {
        acc = fma(a_sh[k], w_at(w0 + k), acc);
      }
    }
  }
  red[li] = acc;
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      red[li] += red[li + s];
    }
    workgroupBarrier();
  }
  if (lane == 0u && n < u.N) {
    C[m * u.N + n] = f16(u.alpha * red[li]);
  }
}