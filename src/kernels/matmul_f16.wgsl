// Generated from src/kernels/templates/matmul_simple.wgsl.jinja ({"variants":["matmul.f16","matmul.f16_vec4"],"a":"f16","w":"f16","c":"f16","vec4":true}) by scripts/gen-sources.ts; do not edit.
// matmul_f16.wgsl: matrix multiply with B transposed (HF Linear weight layout); f16 activations,
// f16 weights, f16 output (prefill).
//
//   C[m, n] = alpha * sum_k A[m, k] * B[n, k]      A: [M, K] row-major, B: [N, K] row-major, C: [M, N] row-major
//
// f16 values are widened to f32 on load and the result narrowed to f16 on store: accumulation is f32.
//
// Entry points (workgroup_size(16, 16, 1)):
//   main       (matmul.f16)  one workgroup computes a 16x16 tile of C; invocation (tx, ty) computes
//              C[row0 + ty, col0 + tx]. Dispatch: [ceil(N / 16), ceil(M / 16), 1].
//   main_vec4  (matmul.f16_vec4)  one workgroup computes a 16x64 tile of C (colsPerThread 4); invocation
//              (tx, ty) computes C[row0 + ty, col0 + tx + 16j], j = 0..3. Dispatch: [ceil(N / 64), ceil(M / 16), 1].
// (workgroup_id.x = column tile, .y = row tile; both <= 65535.) K is walked in slices of 16: invocation (tx, ty)
// stages A[row0 + ty, k0 + tx] and the B rows of its tile at k0 + tx (consecutive tx read consecutive k: coalesced)
// into workgroup memory (rows padded to 17 floats). Out-of-range rows, columns and k are zero-filled on load and
// masked on store, so M, N, K need not be multiples of anything; K = 0 writes zeros.
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  A         storage, read       f16 [M, K]
//   2  B         storage, read       f16 [N, K]
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
@group(0) @binding(2) var<storage, read> B: array<f16>;
@group(0) @binding(3) var<storage, read_write> C: array<f16>;

const T: u32 = 16u;
const STRIDE: u32 = 17u; // padded row of the staging arrays

var<workgroup> As: array<f32, 272>; // [ty][k]: As[ty * STRIDE + k] = A[row0 + ty, k0 + k]
var<workgroup> Ws: array<f32, 1088>; // [n][k]:  Ws[n * STRIDE + k]  = B[col0 + n, k0 + k]

// A as f32 at element index e.
fn a_at(e: u32) -> f32 {
  return f32(A[e]);
}

// B as f32 at element index e.
fn w_at(e: u32) -> f32 {
  return f32(B[e]);
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
    C[row * u.N + col] = f16(u.alpha * acc);
  }
}

@compute @workgroup_size(16, 16, 1)
fn main_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let tx = lid.x;
  let ty = lid.y;
  let row0 = wid.y * T;
  let col0 = wid.x * (4u * T);
  var acc = vec4<f32>(0.0);
  for (var k0 = 0u; k0 < u.K; k0 += T) {
    stage_a(row0, k0, tx, ty);
    for (var j = 0u; j < 4u; j++) {
      stage_w(col0, ty + T * j, k0, tx);
    }
    workgroupBarrier();
    for (var k = 0u; k < T; k++) {
      let a = As[ty * STRIDE + k];
      let w = vec4<f32>(Ws[tx * STRIDE + k], Ws[(tx + T) * STRIDE + k], Ws[(tx + 2u * T) * STRIDE + k], Ws[(tx + 3u * T) * STRIDE + k]);
      acc = fma(vec4<f32>(a), w, acc);
    }
    workgroupBarrier();
  }
  let row = row0 + ty;
  if (row < u.M) {
    for (var j = 0u; j < 4u; j++) {
      let col = col0 + tx + T * j;
      if (col < u.N) {
        C[row * u.N + col] = f16(u.alpha * acc[j]);
      }
    }
  }
}
