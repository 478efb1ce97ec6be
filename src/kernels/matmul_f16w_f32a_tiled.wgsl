// Generated from src/kernels/templates/matmul_tiled.wgsl.jinja ({"variant":"matmul.f16w_f32a_tiled","a":"f32","w":"f16w","c":"f32","small_m":false}) by scripts/gen-sources.ts; do not edit.
// matmul_f16w_f32a_tiled.wgsl: register-tiled matrix multiply with B transposed (HF Linear weight layout); f32 activations,
// f16 weights (packed two per u32 word), f32 output.
//
//   C[m, n] = alpha * sum_k A[m, k] * B[n, k]      A: [M, K] row-major, B: [N, K] row-major, C: [M, N] row-major
//
// B is read as u32 words holding two f16 each (element e = n*K + k is the low half of word e/2 when e is even, the
// high half when odd), converted with unpack2x16float while staging; no f16 arithmetic or `enable f16` is needed
// (the registry still lists shader-f16 for this variant).
// Accumulation is f32.
//
// Entry point `main` (variant matmul.f16w_f32a_tiled), workgroup_size(16, 16, 1).
// One workgroup computes a 64x64 tile of C (tileM = tileN = 64); one invocation (tx, ty) computes the 4x4 outputs
// C[row0 + ty + 16*i, col0 + tx + 16*j] for i, j in 0..3 (strided so that workgroup-memory reads are broadcast /
// conflict-free and global writes are coalesced). K is walked in slices of 16 staged in workgroup memory (A and B
// tiles as f32, 2 x 4 KiB). Out-of-range rows, columns and k are zero-filled on load and masked on store, so M, N, K
// need not be multiples of anything; K = 0 writes zeros.
//
// Dispatch: [ceil(N / 64), ceil(M / 64), 1] (workgroup_id.x = column tile, .y = row tile).
// Limits: ceil(M / 64) and ceil(N / 64) <= 65535 (M, N <= 4,194,240); indices are u32.
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  A         storage, read       f32 [M, K]
//   2  B         storage, read       f16 [N, K] as u32 words (ceil(N*K / 2) words)
//   3  C         storage, read_write f32 [M, N] (written)
//
// Uniforms (names, order and offsets are the registry's `matmul` base uniforms):
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

const TILE: u32 = 64u;        // rows of A / rows of B (= columns of C) per workgroup
const TK: u32 = 16u;          // k slice staged per iteration
const STRIDE: u32 = TILE + 1u; // padded row of the [k][m] staging arrays (conflict-free transposed stores)

var<workgroup> As: array<f32, 1040>; // [TK][STRIDE]: As[k * STRIDE + m] = A[row0 + m, k0 + k]
var<workgroup> Bs: array<f32, 1040>; // [TK][STRIDE]: Bs[k * STRIDE + n] = B[col0 + n, k0 + k]

// A as f32 at element index e.
fn a_at(e: u32) -> f32 {
  return f32(A[e]);
}

// B as f32 at element index e.
fn w_at(e: u32) -> f32 {
  let v = unpack2x16float(B[e >> 1u]);
  return select(v.x, v.y, (e & 1u) == 1u);
}

@compute @workgroup_size(16, 16, 1)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let M = u.M;
  let N = u.N;
  let K = u.K;
  let row0 = wid.y * TILE;
  let col0 = wid.x * TILE;
  let tx = lid.x;
  let ty = lid.y;

  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);

  for (var k0 = 0u; k0 < K; k0 += TK) {
    // Stage a 64x16 slice of A and of B: 1024 values each, 4 per invocation; consecutive invocations
    // read consecutive k (coalesced along the rows of A and B).
    for (var r = 0u; r < 4u; r++) {
      let e = li + r * 256u;
      let m = e / TK;
      let k = e % TK;
      let gk = k0 + k;
      var a = 0.0;
      if (row0 + m < M && gk < K) {
        a = a_at((row0 + m) * K + gk);
      }
      As[k * STRIDE + m] = a;
      var b = 0.0;
      if (col0 + m < N && gk < K) {
        b = w_at((col0 + m) * K + gk);
      }
      Bs[k * STRIDE + m] = b;
    }
    workgroupBarrier();
    for (var k = 0u; k < TK; k++) {
      let o = k * STRIDE;
      let bv = vec4<f32>(Bs[o + tx], Bs[o + tx + 16u], Bs[o + tx + 32u], Bs[o + tx + 48u]);
      acc0 = fma(vec4<f32>(As[o + ty]), bv, acc0);
      acc1 = fma(vec4<f32>(As[o + ty + 16u]), bv, acc1);
      acc2 = fma(vec4<f32>(As[o + ty + 32u]), bv, acc2);
      acc3 = fma(vec4<f32>(As[o + ty + 48u]), bv, acc3);
    }
    workgroupBarrier();
  }

  let alpha = u.alpha;
  store_row(row0 + ty, col0 + tx, acc0 * alpha);
  store_row(row0 + ty + 16u, col0 + tx, acc1 * alpha);
  store_row(row0 + ty + 32u, col0 + tx, acc2 * alpha);
  store_row(row0 + ty + 48u, col0 + tx, acc3 * alpha);
}

// Store the 4 outputs of one row (columns col, col+16, col+32, col+48), masking out-of-range ones.
fn store_row(row: u32, col: u32, v: vec4<f32>) {
  if (row >= u.M) {
    return;
  }
  let base = row * u.N;
  for (var j = 0u; j < 4u; j++) {
    let c = col + 16u * j;
    if (c < u.N) {
      C[base + c] = f32(v[j]);
    }
  }
}