// Generated from src/kernels/templates/q4_simd16.wgsl.jinja ({"ffn":false,"variant":"matmul.q4_fused_metal_simd16"}) by scripts/gen-sources.ts; do not edit.
// fused_matmul_q4_metal_simd16.wgsl: matrix-vector product with Q4_K weights (ggml block_q4_K),
// one 16-lane partition per output; f32 activations and output.
//
//   C[m, n] = alpha * sum_k A[m, k] * W[n, k]      A: f32 [M, K], W: Q4_K [N, K] (row n = K/256 blocks), C: f32 [M, N]
//
// Q4_K block (256 weights, 144 bytes = 9 vec4<u32>): vec4 0 = f16 d | f16 dmin << 16, then the 12 packed 6-bit
// scale/min bytes; vec4 1..8 = nibbles, byte 32g + l holding weight 64g + l (low nibble, sub-block 2g) and
// 64g + 32 + l (high nibble, sub-block 2g + 1); weight = d * sc[j] * q - dmin * mn[j] (ggml get_scale_min_k4).
// The reduction dimension must be a multiple of 256. Accumulation is f32.
//
// Entry point `main` (variant matmul.q4_fused_metal_simd16), workgroup_size(256, 1, 1); needs `subgroups`.
// One workgroup computes 16 consecutive outputs (colsPerWg 16) of one row m. Subgroups number themselves with a
// workgroup atomic, so invocation (subgroup sid, lane) is virtual lane v = sid * S + lane (S = subgroup size; the
// workgroup of 256 is a multiple of every subgroup size, so subgroups are full and v covers 0..255 once); partition
// p = v / 16 owns output p and its lane v % 16 takes the 16-byte nibble slots (32 weights of one block) s = v % 16,
// v % 16 + 16, ... of that output's weight row: a partition reads two whole blocks per step, contiguously.
// Partition sums: with S >= 16 a partition lies inside one subgroup and is reduced with subgroupShuffleXor over
// offsets 8, 4, 2, 1 (the Metal simd16 pattern); with S < 16 each subgroup is reduced with subgroupAdd and the 16 / S
// subgroups of a partition are added in workgroup memory. Correct for any subgroup size.
//
// Dispatch: tile t = workgroup_id.x + workgroup_id.y * num_workgroups.x (outputs 16t .. 16t + 15), row m =
// workgroup_id.z. With T = ceil(N / 16): [min(T, 65535), ceil(T / 65535), M].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  A         storage, read       f32 [M, K] (read as vec4<f32>)
//   2  B         storage, read       Q4_K [N, K / 256 blocks] = N * K / 256 * 144 bytes, read as vec4<u32> words
//   3  C         storage, read_write f32 [M, N] (written)
//
// Uniforms (the registry's `matmul` base uniforms):
//   M: u32 @0, N: u32 @4, K: u32 @8, alpha: f32 @12

enable subgroups;

struct Uniforms {
  M: u32,
  N: u32,
  K: u32,
  alpha: f32,
}

@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

const PART: u32 = 16u;     // lanes per output
const OUTS: u32 = 16u;     // outputs per workgroup (registry colsPerWg)
const BLOCK_V4: u32 = 9u;  // 144-byte block = 9 vec4<u32>
const SLOTS: u32 = 8u;     // 16-byte nibble slots per block
const BLOCK_A4: u32 = 64u; // 256 activations = 64 vec4<f32>

var<workgroup> parts: array<vec2<f32>, 64>; // per (partition, subgroup) sums when S < 16; per partition otherwise
var<workgroup> sg_count: atomic<u32>;
var<workgroup> nsg_sh: u32;

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

fn nib_lo(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}

fn nib_hi(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}

// Contribution of one slot (nibble vec4 q of group g) of a block with header hdr: a[0..3] = the activations of the
// low nibbles, a[4..7] of the high ones, s_lo / s_hi their sums.
fn slot_dot(hdr: vec4<u32>, q: vec4<u32>, g: u32, a: array<vec4<f32>, 8>, s_lo: f32, s_hi: f32) -> f32 {
  let dm = unpack2x16float(hdr.x);
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
  let sc = vec2<f32>(f32((scw >> sh) & 0xffu), f32((scw >> (sh + 8u)) & 0xffu));
  let mn = vec2<f32>(f32((mnw >> sh) & 0xffu), f32((mnw >> (sh + 8u)) & 0xffu));
  var lo = 0.0;
  var hi = 0.0;
  for (var k = 0u; k < 4u; k++) {
    lo += dot(nib_lo(q[k]), a[k]);
    hi += dot(nib_hi(q[k]), a[4u + k]);
  }
  return dm.x * (sc.x * lo + sc.y * hi) - dm.y * (mn.x * s_lo + mn.y * s_hi);
}

@compute @workgroup_size(256, 1, 1)
fn main(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) S: u32,
) {
  let tile = wid.x + wid.y * nwg.x;
  let m = wid.z;
  if (tile * OUTS >= u.N || m >= u.M) {
    return; // workgroup-uniform
  }
  let sid = subgroup_number(li);
  let v = sid * S + lane;
  let p = v / PART;
  let plane = v % PART;
  let n = tile * OUTS + p;
  let nb = u.K / 256u;
  let a_row = m * (u.K / 4u);
  var acc = vec2<f32>(0.0); // x: the product (gate for the fused form), y: the up product
  if (n < u.N) {
    for (var s = plane; s < nb * SLOTS; s += PART) {
      let gb = s / SLOTS;
      let t = s % SLOTS;
      let o = a_row + gb * BLOCK_A4 + (t >> 1u) * 16u + (t & 1u) * 4u;
      let a = array<vec4<f32>, 8>(A[o], A[o + 1u], A[o + 2u], A[o + 3u], A[o + 8u], A[o + 9u], A[o + 10u], A[o + 11u]);
      let s_lo = dot(a[0] + a[1] + a[2] + a[3], vec4<f32>(1.0));
      let s_hi = dot(a[4] + a[5] + a[6] + a[7], vec4<f32>(1.0));
      let base = (n * nb + gb) * BLOCK_V4;
      acc.x += slot_dot(B[base], B[base + 1u + t], t >> 1u, a, s_lo, s_hi);
    }
  }
  // Partition sums (S is uniform: both branches are taken by the whole workgroup).
  var per = 1u; // subgroups per partition
  if (S >= PART) {
    var r = acc;
    r += subgroupShuffleXor(r, 8u);
    r += subgroupShuffleXor(r, 4u);
    r += subgroupShuffleXor(r, 2u);
    r += subgroupShuffleXor(r, 1u);
    if (plane == 0u) {
      parts[p] = r;
    }
  } else {
    per = PART / S;
    let r = subgroupAdd(acc);
    if (subgroupElect()) {
      parts[sid] = r;
    }
  }
  workgroupBarrier();
  if (li < OUTS) {
    let nn = tile * OUTS + li;
    if (nn < u.N) {
      var total = vec2<f32>(0.0);
      for (var i = 0u; i < per; i++) {
        total += parts[li * per + i];
      }
      C[m * u.N + nn] = u.alpha * total.x;
    }
  }
}