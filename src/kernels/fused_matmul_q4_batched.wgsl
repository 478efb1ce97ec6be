// Generated from src/kernels/templates/fused_matmul_q4_batched.wgsl.jinja ({"a":"f32","c":"f32","entry":"main_batched","variant":"matmul.q4_fused_batched"}) by scripts/gen-sources.ts; do not edit.
// fused_matmul_q4_batched.wgsl: matrix multiply with Q4_K weights for prefill (many rows of A), dequantized on the fly;
// f32 activations, f32 output.
//
//   C[m, n] = alpha * sum_k A[m, k] * W[n, k]      A: f32 [M, K], W: Q4_K [N, K] (row n = K/256 blocks), C: f32 [M, N]
//
// Q4_K block (256 weights, 144 bytes = 9 vec4<u32>, little-endian): vec4 0 = f16 d | f16 dmin << 16, then the 12
// packed 6-bit scale/min bytes; vec4 1..8 = nibbles, byte 32g + l holding weight 64g + l (low nibble, sub-block 2g)
// and 64g + 32 + l (high nibble, sub-block 2g + 1); weight = d * sc[j] * q - dmin * mn[j] (ggml get_scale_min_k4).
// K must be a multiple of 256; M and N are arbitrary.
//
// Entry point `main_batched` (variant matmul.q4_fused_batched), workgroup_size(64, 4, 1).
// One workgroup computes a tile of 4 rows (tileM) x 64 columns of C. Invocation (x, y) owns column n0 + x and the
// 64-weight group y of every block (sub-blocks 2y and 2y + 1: 32 nibble bytes = 2 vec4, plus the block header), for
// all 4 rows at once: A is staged in workgroup memory 2 blocks (512 k, 8 KiB) at a time as vec4s over the 4 rows
// (As[k] = A[m0 .. m0+3, k0 + k]), so the 64 invocations of a y-row read the same As element (a broadcast) while
// each dequantizes its own column. Per-sub-block sums of A (for the dmin * mn term) are formed once per chunk.
// The 4 groups' partial sums of a column are added in workgroup memory (reusing the staging array); invocation
// (x, y) writes C[m0 + y, n0 + x].
// Rows past M are staged as zeros and not written; columns past N are not read or written. Accumulation is f32.
// This entry point uses no subgroup operation (the registry lists `subgroups` for the variant; nothing here needs it).
//
// Dispatch: [ceil(N / 64), ceil(M / 4), 1] (workgroup_id.x = column tile, .y = row tile).
// Limits: ceil(N / 64) and ceil(M / 4) <= 65535.
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  A         storage, read       f32 [M, K]
//   2  B         storage, read       Q4_K [N, K / 256 blocks] = N * K / 256 * 144 bytes, read as vec4<u32> words
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
@group(0) @binding(2) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

const TM: u32 = 4u;            // rows per workgroup (registry tileM)
const TN: u32 = 64u;           // columns per workgroup
const WG: u32 = 256u;
const BLOCK_V4: u32 = 9u;
const CHUNK_BLOCKS: u32 = 2u;  // blocks of A staged per pass

// [CHUNK_BLOCKS * 256] over the 4 rows; after the main loop, [group y][column x] partial sums (256 vec4).
// (Small on purpose: SwiftShader's pipeline compile time grows with workgroup memory.)
var<workgroup> As: array<vec4<f32>, 512>;
var<workgroup> Ssum: array<vec4<f32>, 16>;   // sum of As over each 32-weight sub-block of the chunk

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

// Stage A[m0 .. m0+3, k0 .. k0 + cnb*256) into As and its sub-block sums into Ssum (all invocations; two barriers).
fn stage_a(m0: u32, k0: u32, cnb: u32, li: u32) {
  let ck = cnb * 256u;
  workgroupBarrier();
  for (var i = li; i < TM * ck; i += WG) {
    let r = i / ck;
    let k = i - r * ck;
    var v = 0.0;
    if (m0 + r < u.M) {
      v = f32(A[(m0 + r) * u.K + k0 + k]);
    }
    As[k][r] = v;
  }
  workgroupBarrier();
  if (li < cnb * 8u) {
    var s = vec4<f32>(0.0);
    for (var i = 0u; i < 32u; i++) {
      s += As[li * 32u + i];
    }
    Ssum[li] = s;
  }
  workgroupBarrier();
}

@compute @workgroup_size(64, 4, 1)
fn main_batched(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
) {
  let x = lid.x;
  let g = lid.y; // weight group of every block; also the output row written at the end
  let n = wid.x * TN + x;
  let m0 = wid.y * TM;
  let nb = u.K / 256u;
  var acc = vec4<f32>(0.0); // over the 4 rows
  for (var c0 = 0u; c0 < nb; c0 += CHUNK_BLOCKS) {
    let cnb = min(CHUNK_BLOCKS, nb - c0);
    stage_a(m0, c0 * 256u, cnb, li);
    if (n < u.N) {
      for (var lb = 0u; lb < cnb; lb++) {
        let base = (n * nb + c0 + lb) * BLOCK_V4;
        let hdr = B[base];
        let q0 = B[base + 1u + 2u * g];
        let q1 = B[base + 2u + 2u * g];
        let dm = unpack2x16float(hdr.x);
        let s = group_scales(hdr, g);
        let k0 = lb * 256u + 64u * g; // chunk-relative k of the group's first weight
        var lo = vec4<f32>(0.0);
        var hi = vec4<f32>(0.0);
        for (var h = 0u; h < 2u; h++) {
          let qv = select(q1, q0, h == 0u);
          for (var w = 0u; w < 4u; w++) {
            let ql = nib_lo(qv[w]);
            let qh = nib_hi(qv[w]);
            let k = k0 + 16u * h + 4u * w;
            lo += ql.x * As[k] + ql.y * As[k + 1u] + ql.z * As[k + 2u] + ql.w * As[k + 3u];
            hi += qh.x * As[k + 32u] + qh.y * As[k + 33u] + qh.z * As[k + 34u] + qh.w * As[k + 35u];
          }
        }
        let sb = lb * 8u + 2u * g;
        acc += dm.x * (s.x * lo + s.y * hi) - dm.y * (s.z * Ssum[sb] + s.w * Ssum[sb + 1u]);
      }
    }
  }
  workgroupBarrier(); // everyone is done reading As
  As[g * TN + x] = acc;
  workgroupBarrier();
  // Invocation (x, y) writes row m0 + y of column n.
  let m = m0 + g;
  if (n < u.N && m < u.M) {
    let total = As[x][g] + As[TN + x][g] + As[2u * TN + x][g] + As[3u * TN + x][g];
    C[m * u.N + n] = f32(u.alpha * total);
  }
}