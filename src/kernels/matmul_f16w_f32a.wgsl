// Generated from src/kernels/templates/matmul_simple.wgsl.jinja ({"variants":["matmul.f16w_f32a"],"a":"f32","w":"f16w","c":"f32","vec4":false}) by scripts/gen-sources.ts; do not edit.
// matmul_f16w_f32a.wgsl: matrix multiply with B transposed (HF Linear weight layout); f32 activations,
// f16 weights (packed two per u32 word), f32 output (prefill).
//
//   C[m, n] = alpha * sum_k A[m, k] * B[n, k]      A: [M, K] row-major, B: [N, K] row-major, C: [M, N] row-major
//
// B is read as u32 words holding two f16 each (element e = n*K + k is the low half of word e/2 when e is even, the
// high half when odd), converted with unpack2x16float; no f16 arithmetic or `enable f16` is needed (the registry
// still lists shader-f16 for this variant).
// Accumulation is f32.
//
// Entry points (workgroup_size(16, 16, 1)):
//   main       (matmul.f16w_f32a)  one workgroup computes a 16x16 tile of C; invocation (tx, ty) computes
//              C[row0 + ty, col0 + tx]. Dispatch: [ceil(N / 16), ceil(M / 16), 1].
// (workgroup_id.x = column tile, .y = row tile; both <= 65535.) K is walked in slices of 16: invocation (tx, ty)
// stages A[row0 + ty, k0 + tx] and the B rows of its tile at k0 + tx (consecutive tx read consecutive k: coalesced)
// into workgroup memory (rows padded to 17 floats). Out-of-range rows, columns and k are zero-filled on load and
// masked on store, so M, N, K need not be multiples of anything; K = 0 writes zeros.
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  A         storage, read       f32 [M, K]
//   2  B         storage, read       f16 [N, K] as u32 words (ceil(N*K / 2) words)
//   3  C         storage, read_write f32 [M, N] (written)
//
// Uniforms (the registry's `matmul` base uniforms):
//   M: u32 @0, N: u32 @4, K: u32 @8, alpha: f32 @12

struct Uniforms {
  M: u32,
  N: u32,
  K: u32,
  alpha: f32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<u32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

const T: u32 = 16u;
const STRIDE: u32 = 17u; // padded row of the staging arrays

var<workgroup> As: array<f32, 272>; // [ty][k]: As[ty * STRIDE + k] = A[row0 + ty, k0 + k]
var<workgroup> Ws: array<f32, 272>; // [n][k]:  Ws[n * STRIDE + k]  = B[col0 + n, k0 + k]

// A as f32 at element index e.
fn a_at(e: u32) -> f32 {
  return f32(A[e]);
}

// B as f32 at element index e.
fn w_at(e: u32) -> f32 {
  let v = unpack2x16float(B[e >> 1u]);
  return select(v.x, v.y, (e & 1u) == 1u);
}

// Stage A[row0 + ty, k0 + tx] into As (zero outside A).
fn stage_a(row0: u32, k0: u32, tx: u32, ty: u32) {
  var a = 0.0;
  if (row0 + ty < u.M && k0 + tx < u.K) {
    a = a_at((row0 + ty) * u.K + k0 + tx);
  }
  As[ty * STRIDE + tx] = a;
}

// Stage B[col0 + n, k0 + tx] into Ws row n (zero outside B).
fn stage_w(col0: u32, n: u32, k0: u32, tx: u32) {
  var w = 0.0;
  if (col0 + n < u.N && k0 + tx < u.K) {
    w = w_at((col0 + n) * u.K + k0 + tx);
  }
  Ws[n * STRIDE + tx] = w;
}

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let tx = lid.x;
  let ty = lid.y;
  let row0 = wid.y * T;
  let col0 = wid.x * T;
  var acc = 0.0;
  for (var k0 = 0u; k0 < u.K; k0 += T) {
    stage_a(row0, k0, tx, ty);
    stage_w(col0, ty, k0, tx);
    workgroupBarrier();
    for (var j = 0u; j < T; j++) {
      acc = fma(As[ty * STRIDE + j], Ws[tx * STRIDE + j], acc);
    }
    workgroupBarrier();
  }
  let row = row0 + ty;
  let col = col0 + tx;
  if (row < u.M && col < u.N) {
    C[row * u.N + col] = f32(u.alpha * acc);
  }
}
