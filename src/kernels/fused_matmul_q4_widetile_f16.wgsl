// Generated from src/kernels/templates/fused_matmul_q4_widetile.wgsl.jinja ({"a":"f32","c":"f16","variant":"matmul.q4_fused_widetile_f16"}) by scripts/gen-sources.ts; do not edit.
// fused_matmul_q4_widetile_f16.wgsl: matrix multiply with Q4_K weights for prefill, wide tile (one column x 4 rows per invocation);
// f32 activations, f16 output (f16 widened to f32 on load / narrowed on store, `enable f16`).
//
//   C[m, n] = alpha * sum_k A[m, k] * W[n, k]      A: f32 [M, K], W: Q4_K [N, K] (row n = K/256 blocks), C: f16 [M, N]
//
// Q4_K block (256 weights, 144 bytes = 9 vec4<u32>, little-endian): vec4 0 = f16 d | f16 dmin << 16, then the 12
// packed 6-bit scale/min bytes; vec4 1..8 = nibbles, byte 32g + l holding weight 64g + l (low nibble, sub-block 2g)
// and 64g + 32 + l (high nibble, sub-block 2g + 1); weight = d * sc[j] * q - dmin * mn[j] (ggml get_scale_min_k4).
// K must be a multiple of 256; M and N are arbitrary. Accumulation is f32.
//
// Entry point `main` (variant matmul.q4_fused_widetile_f16), workgroup_size(256, 1, 1); no subgroup operations.
// One workgroup computes a tile of 4 rows (tileM) x 256 columns (colsPerWg) of C; invocation i owns column
// n0 + i for all 4 rows. Per block b of K, the workgroup stages A[m0 .. m0+3, 256b .. 256b+255] in workgroup memory
// as vec4s over the 4 rows (4 KiB) with its 8 sub-block sums (for the dmin * mn term), then every invocation reads
// its column's whole 144-byte block once and applies each weight to the 4 rows (the dequantization is shared by the
// 4 rows; the A reads are broadcasts). Rows past M are staged as zeros and not written; columns past N are not read
// or written.
//
// Dispatch: [ceil(N / 256), ceil(M / 4), 1] (workgroup_id.x = column tile, .y = row tile); both <= 65535.
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  A         storage, read       f32 [M, K]
//   2  B         storage, read       Q4_K [N, K / 256 blocks] = N * K / 256 * 144 bytes, read as vec4<u32> words
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
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> C: array<f16>;

const TM: u32 = 4u;        // rows per workgroup (registry tileM)
const TN: u32 = 256u;      // columns per workgroup (registry colsPerWg)
const BLOCK_V4: u32 = 9u;

var<workgroup> As: array<vec4<f32>, 256>; // As[k] = A[m0 .. m0+3, 256b + k]
var<workgroup> Ssum: array<vec4<f32>, 8>; // sums of As over each 32-weight sub-block

fn nib_lo(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}

fn nib_hi(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}

// Scales (x: sub-block 2g, y: 2g + 1) and mins (z, w) of group g from the header words.
fn group_scales(hdr: vec4<u32>, g: u32) -> vec4<f32> {
  var scw: u32;
  var mnw: u32;
  if (g < 2u) {
    scw = hdr.y & 0x3f3f3f3fu;
    mnw = hdr.z & 0x3f3f3f3fu;
  } else {
    scw = (hdr.w & 0x0f0f0f0fu) | ((hdr.y >> 2u) & 0x30303030u);
    mnw = ((hdr.w >> 4u) & 0x0f0f0f0fu) | ((hdr.z >> 2u) & 0x30303030u);
  }
  let sh = (g & 1u) * 16u;
  return vec4<f32>(vec4<u32>(scw >> sh, scw >> (sh + 8u), mnw >> sh, mnw >> (sh + 8u)) & vec4<u32>(0xffu));
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let n = wid.x * TN + li;
  let m0 = wid.y * TM;
  let nb = u.K / 256u;
  var acc = vec4<f32>(0.0); // over the 4 rows
  for (var b = 0u; b < nb; b++) {
    workgroupBarrier(); // everyone is done with the previous block's As
    var v = vec4<f32>(0.0);
    for (var r = 0u; r < TM; r++) {
      if (m0 + r < u.M) {
        v[r] = f32(A[(m0 + r) * u.K + b * 256u + li]);
      }
    }
    As[li] = v;
    workgroupBarrier();
    if (li < 8u) {
      var s = vec4<f32>(0.0);
      for (var i = 0u; i < 32u; i++) {
        s += As[li * 32u + i];
      }
      Ssum[li] = s;
    }
    workgroupBarrier();
    if (n < u.N) {
      let base = (n * nb + b) * BLOCK_V4;
      let hdr = B[base];
      let dm = unpack2x16float(hdr.x);
      for (var g = 0u; g < 4u; g++) {
        let s = group_scales(hdr, g);
        var lo = vec4<f32>(0.0);
        var hi = vec4<f32>(0.0);
        for (var h = 0u; h < 2u; h++) {
          let qv = B[base + 1u + 2u * g + h];
          for (var w = 0u; w < 4u; w++) {
            let ql = nib_lo(qv[w]);
            let qh = nib_hi(qv[w]);
            let k = 64u * g + 16u * h + 4u * w;
            lo += ql.x * As[k] + ql.y * As[k + 1u] + ql.z * As[k + 2u] + ql.w * As[k + 3u];
            hi += qh.x * As[k + 32u] + qh.y * As[k + 33u] + qh.z * As[k + 34u] + qh.w * As[k + 35u];
          }
        }
        acc += dm.x * (s.x * lo + s.y * hi) - dm.y * (s.z * Ssum[2u * g] + s.w * Ssum[2u * g + 1u]);
      }
    }
  }
  if (n < u.N) {
    for (var r = 0u; r < TM; r++) {
      if (m0 + r < u.M) {
        C[(m0 + r) * u.N + n] = f16(u.alpha * acc[r]);
      }
    }
  }
}