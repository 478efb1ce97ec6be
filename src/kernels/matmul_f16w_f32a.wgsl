// matmul_f16w_f32a.wgsl: matrix multiply with f16 weights, f32 activations and f32 output (prefill).
//
//   C[m, n] = alpha * sum_k A[m, k] * W[n, k]      A: f32 [M, K], W: f16 [N, K] row-major, C: f32 [M, N]
//
// W is read as u32 words holding two f16 each (element e = n*K + k is the low half of word e/2 when e is even, the
// high half when odd), converted with unpack2x16float; no f16 arithmetic or `enable f16` is needed (the registry
// still lists shader-f16 for this variant). Accumulation is f32.
//
// Entry point `main` (variant matmul.f16w_f32a), workgroup_size(16, 16, 1).
// One workgroup computes a 16x16 tile of C; invocation (tx, ty) computes C[row0 + ty, col0 + tx]. K is walked in
// slices of 16: invocation (tx, ty) stages A[row0 + ty, k0 + tx] and W[col0 + ty, k0 + tx] (consecutive tx read
// consecutive k: coalesced) into workgroup memory (rows padded to 17 floats). Out-of-range rows, columns and k
// are zero-filled on load and masked on store, so M, N, K need not be multiples of anything; K = 0 writes zeros.
//
// Dispatch: [ceil(N / 16), ceil(M / 16), 1] (workgroup_id.x = column tile, .y = row tile); both <= 65535.
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
var<workgroup> Ws: array<f32, 272>; // [n][k]:  Ws[n * STRIDE + k]  = W[col0 + n, k0 + k]

// W as f32 at element index e.
fn w_at(e: u32) -> f32 {
  let v = unpack2x16float(B[e >> 1u]);
  return select(v.x, v.y, (e & 1u) == 1u);
}

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = u.M;
  let N = u.N;
  let K = u.K;
  let tx = lid.x;
  let ty = lid.y;
  let row0 = wid.y * T;
  let col0 = wid.x * T;
  var acc = 0.0;
  for (var k0 = 0u; k0 < K; k0 += T) {
    let k = k0 + tx;
    var a = 0.0;
    if (row0 + ty < M && k < K) {
      a = A[(row0 + ty) * K + k];
    }
    As[ty * STRIDE + tx] = a;
    var w = 0.0;
    if (col0 + ty < N && k < K) {
      w = w_at((col0 + ty) * K + k);
    }
    Ws[ty * STRIDE + tx] = w;
    workgroupBarrier();
    for (var j = 0u; j < T; j++) {
      acc = fma(As[ty * STRIDE + j], Ws[tx * STRIDE + j], acc);
    }
    workgroupBarrier();
  }
  let row = row0 + ty;
  let col = col0 + tx;
  if (row < M && col < N) {
    C[row * N + col] = u.alpha * acc;
  }
}
