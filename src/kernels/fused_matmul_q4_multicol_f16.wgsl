// Generated from src/kernels/templates/fused_matmul_q4.wgsl.jinja ({"a":"f32","c":"f16","gemv":false,"multicol":"main_multicol_f16","variant":"matmul.q4_fused_multicol_f16"}) by scripts/gen-sources.ts; do not edit.
// fused_matmul_q4_multicol_f16.wgsl: matrix-vector product with Q4_K weights (llama.cpp / ggml block_q4_K), dequantized on the fly;
// f32 activations, f16 output (f16 widened to f32 on load / narrowed on store, `enable f16`).
//
//   C[m, n] = alpha * sum_k A[m, k] * W[n, k]      A: f32 [M, K], W: Q4_K [N, K] (row n = K/256 blocks), C: f16 [M, N]
//
// Q4_K block (256 weights, 144 bytes = 9 vec4<u32>, little-endian):
//   vec4 0: .x = f16 d (low half) | f16 dmin (high half); .y .z .w = the 12 packed 6-bit scale/min bytes
//   vec4 1..8: 128 bytes of nibbles. Byte 32g + l (g < 4, l < 32) holds weight 64g + l (low nibble, sub-block 2g)
//              and weight 64g + 32 + l (high nibble, sub-block 2g + 1).
//   weight = d * sc[j] * q - dmin * mn[j] for sub-block j (sc, mn: ggml get_scale_min_k4).
// K must be a multiple of 256 (whole blocks); M, N are arbitrary. M is meant to be 1 (decode): larger M is correct
// but reads the weights once per row (use the batched variants for prefill).
//
// Entry points (workgroup_size(256, 1, 1); one workgroup = 32 consecutive columns n of one row m; needs `subgroups`,
// correct for any subgroup size and any mapping of invocations to subgroups):
//   main_multicol_f16  (matmul.q4_fused_multicol_f16)  the workgroup stages A[m, :] in workgroup memory (8 blocks = 8 KiB at
//                                              a time, barriers around each) and every subgroup reads it from there:
//                                              the alternative for GPUs whose caches serve repeated global reads
//                                              poorly. On SwiftShader it is ~3x slower than main_gemv (its workgroup
//                                              memory reads are slow); on NVIDIA workgroup memory and L1 are the same
//                                              SRAM, so it should not win there.
// Work split (both): the 32 columns are 8 quads of 4 columns. Subgroups number themselves with a workgroup atomic
// (sid < nsg). With nsg >= 8, subgroup sid works on quad sid % 8 and on the blocks b = p, p + P, ... of the row
// (p = sid / 8, P = min(nsg / 8, 8) parts per quad; subgroups past 8P idle, which WebGPU's minimum subgroup size 4
// never causes); with nsg < 8 each subgroup takes quads sid, sid + nsg, ... in turn.
// A lane takes "slots": a slot is 16 bytes of nibbles (one vec4, 32 weights) of one block, so the 8 slots of a
// block are 8 consecutive lanes and a subgroup reads whole blocks contiguously (one coalesced 16-byte load per lane
// per column). Per slot a lane loads the 32 matching A values once and applies them to the 4 columns of its quad;
// the min term uses the slot's A sums (sum_k a_k * (d*sc*q_k - dmin*mn) = d*sc*sum(q*a) - dmin*mn*sum(a)).
// Each quad's 4 sums are reduced with subgroupAdd, then over the P parts in workgroup memory, scaled by alpha and
// written by invocations 0..31. Accumulation is f32.
//
// Dispatch: tile t = workgroup_id.x + workgroup_id.y * num_workgroups.x (columns 32t .. 32t + 31), row m =
// workgroup_id.z. With T = ceil(N / 32): [min(T, 65535), ceil(T / 65535), M].
//
// Bindings (group 0):
//   0  uniforms  uniform             Uniforms (below)
//   1  A         storage, read       f32 [M, K] (read as vec4<f32>; K % 256 == 0 keeps rows aligned)
//   2  B         storage, read       Q4_K [N, K / 256 blocks] = N * K / 256 * 144 bytes, read as vec4<u32> words
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
@group(0) @binding(1) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> C: array<f16>;

const COLS: u32 = 32u;         // columns per workgroup (registry colsPerWg)
const QUADS: u32 = 8u;         // COLS / 4
const BLOCK_V4: u32 = 9u;      // 144-byte block = 9 vec4<u32>
const SLOTS: u32 = 8u;         // 16-byte nibble slots per block
const BLOCK_A4: u32 = 64u;     // 256 activations = 64 vec4<f32>
const CHUNK_BLOCKS: u32 = 8u;  // main_multicol: blocks of A staged per pass (8 KiB)
const MAX_PARTS: u32 = 8u;     // subgroups per quad used at most (subgroup size >= 4: at most 64 subgroups)

var<workgroup> a_sh: array<vec4<f32>, 512>;  // CHUNK_BLOCKS * BLOCK_A4
var<workgroup> red: array<vec4<f32>, 64>;     // one vec4 (4 columns) per working subgroup (QUADS * MAX_PARTS)
var<workgroup> sg_count: atomic<u32>;
var<workgroup> nsg_sh: u32;

// This subgroup's number sid (0 .. nsg-1, in order of arrival). Call once, in workgroup-uniform control flow,
// before subgroup_count.
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

// The number of subgroups nsg in this workgroup (workgroup-uniform), once every subgroup has numbered itself.
fn subgroup_count(li: u32) -> u32 {
  workgroupBarrier();
  if (li == 0u) {
    nsg_sh = atomicLoad(&sg_count);
  }
  return workgroupUniformLoad(&nsg_sh);
}

// A (vec4 index i) as f32.
fn a4(i: u32) -> vec4<f32> {
  return vec4<f32>(A[i]);
}

fn nib_lo(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}

fn nib_hi(w: u32) -> vec4<f32> {
  return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}

// Contribution of one slot (nibble vec4 q of group g = slot / 2) of one block with header hdr:
// a[0..3] = A at weights 64g + 16h + 0..15 (low nibbles), a[4..7] = A at 64g + 32 + 16h + 0..15 (high nibbles),
// s_lo / s_hi their sums.
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

// Slot t of block gb for the 4 columns n0 .. n0+3 (columns >= N give 0).
fn quad_slot(n0: u32, nb: u32, gb: u32, t: u32, a: array<vec4<f32>, 8>) -> vec4<f32> {
  let s_lo = dot(a[0] + a[1] + a[2] + a[3], vec4<f32>(1.0));
  let s_hi = dot(a[4] + a[5] + a[6] + a[7], vec4<f32>(1.0));
  var out = vec4<f32>(0.0);
  for (var c = 0u; c < 4u; c++) {
    let n = n0 + c;
    if (n < u.N) {
      let base = (n * nb + gb) * BLOCK_V4;
      out[c] = slot_dot(B[base], B[base + 1u + t], t >> 1u, a, s_lo, s_hi);
    }
  }
  return out;
}

// vec4 offset of slot t's low-nibble activations within a block (the high ones are 8 vec4 further).
fn slot_a_offset(t: u32) -> u32 {
  return (t >> 1u) * 16u + (t & 1u) * 4u;
}

// main_multicol: blocks c0 + p, c0 + p + P, ... (< c0 + cnb) of the quad at n0, A from a_sh (chunk-relative).
fn quad_chunk_shared(n0: u32, nb: u32, c0: u32, cnb: u32, p: u32, P: u32, lane: u32, S: u32) -> vec4<f32> {
  var acc = vec4<f32>(0.0);
  if (p >= cnb) {
    return acc;
  }
  let nslots = ((cnb - p + P - 1u) / P) * SLOTS;
  for (var s = lane; s < nslots; s += S) {
    let lb = p + (s / SLOTS) * P;
    let t = s % SLOTS;
    let o = lb * BLOCK_A4 + slot_a_offset(t);
    let a = array<vec4<f32>, 8>(a_sh[o], a_sh[o + 1u], a_sh[o + 2u], a_sh[o + 3u],
                                a_sh[o + 8u], a_sh[o + 9u], a_sh[o + 10u], a_sh[o + 11u]);
    acc += quad_slot(n0, nb, c0 + lb, t, a);
  }
  return acc;
}

// main_gemv: blocks p, p + P, ... (< nb) of the quad at n0, A from global memory (row offset a0 in vec4).
fn quad_row_global(n0: u32, nb: u32, a0: u32, p: u32, P: u32, lane: u32, S: u32) -> vec4<f32> {
  var acc = vec4<f32>(0.0);
  if (p >= nb) {
    return acc;
  }
  let nslots = ((nb - p + P - 1u) / P) * SLOTS;
  for (var s = lane; s < nslots; s += S) {
    let gb = p + (s / SLOTS) * P;
    let t = s % SLOTS;
    let o = a0 + gb * BLOCK_A4 + slot_a_offset(t);
    let a = array<vec4<f32>, 8>(a4(o), a4(o + 1u), a4(o + 2u), a4(o + 3u), a4(o + 8u), a4(o + 9u), a4(o + 10u), a4(o + 11u));
    acc += quad_slot(n0, nb, gb, t, a);
  }
  return acc;
}

// Quad and part of subgroup sid in round r (see the header), and whether it has work.
fn assignment(sid: u32, nsg: u32, r: u32) -> vec3<u32> {
  if (nsg >= QUADS) {
    let parts = min(nsg / QUADS, MAX_PARTS);
    return vec3<u32>(sid % QUADS, sid / QUADS, select(0u, 1u, sid < parts * QUADS));
  }
  let quad = r * nsg + sid;
  return vec3<u32>(quad, 0u, select(0u, 1u, quad < QUADS));
}

// Sum the parts of each column and write the 32 outputs of the tile.
fn write_tile(li: u32, nsg: u32, tile: u32, m: u32) {
  workgroupBarrier();
  let n = tile * COLS + li;
  if (li < COLS && n < u.N) {
    let parts = clamp(nsg / QUADS, 1u, MAX_PARTS);
    var total = 0.0;
    for (var p = 0u; p < parts; p++) {
      total += red[p * QUADS + li / 4u][li % 4u];
    }
    C[m * u.N + n] = f16(u.alpha * total);
  }
}

@compute @workgroup_size(256, 1, 1)
fn main_multicol_f16(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) li: u32,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) S: u32,
) {
  let tile = wid.x + wid.y * nwg.x;
  let m = wid.z;
  if (tile * COLS >= u.N || m >= u.M) {
    return;
  }
  let sid = subgroup_number(li);
  let nsg = subgroup_count(li);
  let leader = subgroupElect();
  let nb = u.K / 256u;
  let a_row = m * (u.K / 4u);
  let rounds = (QUADS + nsg - 1u) / nsg;
  let P = clamp(nsg / QUADS, 1u, MAX_PARTS);
  for (var r = 0u; r < rounds; r++) {
    let w = assignment(sid, nsg, r);
    let n0 = tile * COLS + w.x * 4u;
    var acc = vec4<f32>(0.0);
    for (var c0 = 0u; c0 < nb; c0 += CHUNK_BLOCKS) {
      let cnb = min(CHUNK_BLOCKS, nb - c0);
      workgroupBarrier();
      for (var i = li; i < cnb * BLOCK_A4; i += 256u) {
        a_sh[i] = a4(a_row + c0 * BLOCK_A4 + i);
      }
      workgroupBarrier();
      if (w.z != 0u) {
        acc += quad_chunk_shared(n0, nb, c0, cnb, w.y, P, lane, S);
      }
    }
    let sum = subgroupAdd(acc);
    if (w.z != 0u && leader) {
      red[w.y * QUADS + w.x] = sum;
    }
  }
  write_tile(li, nsg, tile, m);
}