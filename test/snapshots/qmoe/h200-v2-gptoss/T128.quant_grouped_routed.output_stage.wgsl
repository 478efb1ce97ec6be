// qmoe-output-grouped.wgsl (QMoE.OutputStageGrouped, variant quant_grouped_routed): QMoE FC2 per routed slot, grouped by expert.
//
// One workgroup per (tile, block of 32 hidden outputs): tile = workgroup_id.x (tiles past tile_meta[0] exit),
// outputs r0 = workgroup_id.y * 32. The tile holds up to 32 slots of expert e (see expert-group-slots.wgsl).
// For each slot s and r < H (H = 2880, I = 2880):
//   slot_out[s][r] = sum_c W2[e][r][c] * hidden_act[s][c] + fc2_bias[e][r],   W2[e][r][c] = (q - 8) * scale
// q: 4-bit, low nibble first; scale per block of 32 columns. The routes' weights are applied by expert-slot-mix.wgsl.
// GEMM tiling as in qmoe-fc1-activation-grouped.wgsl: C[32 slots x 32 rows], K step 16 staged in workgroup
// memory ([k][m], [k][n]); invocation (x, y) of the 8x8 grid owns 4x4 f32 accumulators.
// Weights are read as u32 words.
// Workgroup memory: 4224 bytes.
// Dispatch: [48 tiles, ceil(H / 32), 1].
//
// Bindings (group 0):
//   0  hidden_act           storage, read        f32 [chunk slots, I]
//   1  slot_list            storage, read        u32 [chunk slots]
//   2  tile_meta            storage, read        u32 [1 + 3 * tiles]
//   3  fc2_experts_weights  storage, read        u8 [E, 2880, 1440] as u32 words
//   4  fc2_scales           storage, read        f32 [E, 2880, 90]
//   5  fc2_bias             storage, read        f32 [E, 2880]
//   6  slot_out             storage, read_write  f32 [chunk slots, H] (written)
// No uniforms. Workgroup size: (8, 8, 1).

const H: u32 = 2880u;
const I: u32 = 2880u;
const ROW_BYTES: u32 = 1440u;
const MID: f32 = 8.0;
const TM: u32 = 32u;
const TN: u32 = 32u;
const TK: u32 = 16u;
const RM: u32 = 4u;
const RN: u32 = 4u;
const NT: u32 = 64u;

@group(0) @binding(0) var<storage, read> hidden_act: array<f32>;
@group(0) @binding(1) var<storage, read> slot_list: array<u32>;
@group(0) @binding(2) var<storage, read> tile_meta: array<u32>;
@group(0) @binding(3) var<storage, read> fc2_experts_weights: array<u32>;
@group(0) @binding(4) var<storage, read> fc2_scales: array<f32>;
@group(0) @binding(5) var<storage, read> fc2_bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> slot_out: array<f32>;

// Read as vec4 (a thread's 4 rows are contiguous), written element by element.
var<workgroup> a_tile: array<vec4<f32>, 128>;
fn a_store(i: u32, v: f32) {
  a_tile[i / 4u][i % 4u] = v;
}
// Read as vec4 (a thread's 4 columns are contiguous), written element by element.
var<workgroup> b_tile: array<vec4<f32>, 128>;
fn b_store(i: u32, v: f32) {
  b_tile[i / 4u][i % 4u] = v;
}
var<workgroup> tile_slot: array<u32, TM>;

// Scale of W2 row `row` (a row over all experts) at column c.
fn scale2(row: u32, c: u32) -> f32 {
  return fc2_scales[row * 90u + c / 32u];
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let tile = wid.x;
  if (tile >= tile_meta[0]) {
    return;
  }
  let e = tile_meta[1u + 3u * tile];
  let start = tile_meta[2u + 3u * tile];
  let count = tile_meta[3u + 3u * tile];
  let r0 = wid.y * TN;
  let tx = lid3.x;
  let ty = lid3.y;
  for (var m = tid; m < TM; m += NT) {
    tile_slot[m] = select(0u, slot_list[start + min(m, count - 1u)], m < count);
  }
  workgroupBarrier();

  var acc: array<f32, 16>;
  for (var k0 = 0u; k0 < I; k0 += TK) {
    // Stage the activations of the tile's slots: a_tile[kk][m].
    for (var t = tid; t < TM * TK; t += NT) {
      let m = t / TK;
      let kk = t % TK;
      var v = 0.0;
      if (m < count && k0 + kk < I) {
        v = hidden_act[tile_slot[m] * I + k0 + kk];
      }
      a_store(kk * TM + m, v);
    }
    // Stage the dequantised weights: b_tile[kk][n].
    for (var t = tid; t < TN * 2u; t += NT) {
      let n = t / 2u;
      let w = t % 2u;
      let c = k0 + w * 8u;
      var word = 0u;
      var s = 0.0;
      if (r0 + n < H && c < I) {
        let row = e * H + r0 + n;
        word = fc2_experts_weights[row * 360u + c / 8u];
        s = scale2(row, c);
      }
      for (var v = 0u; v < 8u; v++) {
        let q = (word >> (4u * v)) & 0xFu;
        b_store((w * 8u + v) * TN + n, (f32(q) - MID) * s);
      }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      let av0 = a_tile[(kk * TM + ty * RM) / 4u + 0u];
      let a0 = av0.x;
      let a1 = av0.y;
      let a2 = av0.z;
      let a3 = av0.w;
      let bv0 = b_tile[(kk * TN + tx * RN) / 4u + 0u];
      let b0 = bv0.x;
      let b1 = bv0.y;
      let b2 = bv0.z;
      let b3 = bv0.w;
      acc[0] += a0 * b0;
      acc[1] += a0 * b1;
      acc[2] += a0 * b2;
      acc[3] += a0 * b3;
      acc[4] += a1 * b0;
      acc[5] += a1 * b1;
      acc[6] += a1 * b2;
      acc[7] += a1 * b3;
      acc[8] += a2 * b0;
      acc[9] += a2 * b1;
      acc[10] += a2 * b2;
      acc[11] += a2 * b3;
      acc[12] += a3 * b0;
      acc[13] += a3 * b1;
      acc[14] += a3 * b2;
      acc[15] += a3 * b3;
    }
    workgroupBarrier();
  }

  // Accumulators are indexed by constants only (unrolled here), so they stay in registers.
  store_out(ty * RM + 0u, r0 + tx * RN + 0u, count, e, acc[0]);
  store_out(ty * RM + 0u, r0 + tx * RN + 1u, count, e, acc[1]);
  store_out(ty * RM + 0u, r0 + tx * RN + 2u, count, e, acc[2]);
  store_out(ty * RM + 0u, r0 + tx * RN + 3u, count, e, acc[3]);
  store_out(ty * RM + 1u, r0 + tx * RN + 0u, count, e, acc[4]);
  store_out(ty * RM + 1u, r0 + tx * RN + 1u, count, e, acc[5]);
  store_out(ty * RM + 1u, r0 + tx * RN + 2u, count, e, acc[6]);
  store_out(ty * RM + 1u, r0 + tx * RN + 3u, count, e, acc[7]);
  store_out(ty * RM + 2u, r0 + tx * RN + 0u, count, e, acc[8]);
  store_out(ty * RM + 2u, r0 + tx * RN + 1u, count, e, acc[9]);
  store_out(ty * RM + 2u, r0 + tx * RN + 2u, count, e, acc[10]);
  store_out(ty * RM + 2u, r0 + tx * RN + 3u, count, e, acc[11]);
  store_out(ty * RM + 3u, r0 + tx * RN + 0u, count, e, acc[12]);
  store_out(ty * RM + 3u, r0 + tx * RN + 1u, count, e, acc[13]);
  store_out(ty * RM + 3u, r0 + tx * RN + 2u, count, e, acc[14]);
  store_out(ty * RM + 3u, r0 + tx * RN + 3u, count, e, acc[15]);
}

// Bias and store of tile row m, hidden output r.
fn store_out(m: u32, r: u32, count: u32, e: u32, y: f32) {
  if (m >= count || r >= H) {
    return;
  }
  slot_out[tile_slot[m] * H + r] = y + f32(fc2_bias[e * H + r]);
}
