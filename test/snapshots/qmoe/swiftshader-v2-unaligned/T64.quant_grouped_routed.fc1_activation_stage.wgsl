// qmoe-fc1-activation-grouped.wgsl (QMoE.FC1ActivationStageGrouped, variant quant_grouped_routed): QMoE FC1 + activation, grouped by expert.
//
// One workgroup per (tile, block of 32 activation outputs): tile = workgroup_id.x (tiles past tile_meta[0]
// exit), outputs i0 = workgroup_id.y * 32. The tile holds up to 32 slots of expert e (tile_meta; see
// expert-group-slots.wgsl); slot s is route s % k of token t = params.tokenOffset + s / k (k = 2). For each slot
// and i < I (H = 36, I = 10):
//   h(r) = sum_c W1[e][r][c] * input[t][c],   W1[e][r][c] = (q - 8) * scale
//   hidden_act[s][i] = gate * sigmoid(alpha * gate) * (linear + beta), gate = h(2i), linear = h(2i + 1)
//                      with gate = min(gate, 7), linear = clamp(linear, -7, 7)
// q: 4-bit, low nibble first; scale per row.
// GEMM tiling: C[32 slots x 64 fc1 rows (32 gate + 32 linear)], K step 16: the input rows and the
// dequantised weights (f32) of one K step are staged in workgroup memory ([k][m] and [k][n], so reads along m / n
// are contiguous); invocation (x, y) of the 8x8 grid owns slots y*4..+4 and outputs x*4..+4
// (4x4 gate + 4x4 linear f32 accumulators). Weights are read as u32 words byte-wise (rows not word-aligned or K step not a whole word).
// Workgroup memory: 6272 bytes.
// Dispatch: [7 tiles, ceil(I / 32), 1].
//
// Bindings (group 0):
//   0  input                storage, read        f32 [T, H]
//   1  slot_list            storage, read        u32 [chunk slots]
//   2  tile_meta            storage, read        u32 [1 + 3 * tiles]
//   3  fc1_experts_weights  storage, read        u8 [E, 20, 18] as u32 words
//   4  fc1_scales           storage, read        f32 [E, 20]
//   5  fc1_bias             storage, read        f32 [E, 20] (absent: not read)
//   6  hidden_act           storage, read_write  f32 [chunk slots, I] (written)
//   7  params               uniform             Params (below)
// Workgroup size: (8, 8, 1).

struct Params {
  activationAlpha: f32,
  activationBeta: f32,
  tokenOffset: u32,
}

const K: u32 = 2u;
const H: u32 = 36u;
const I: u32 = 10u;
const ROWS: u32 = 20u;
const ROW_BYTES: u32 = 18u;
const MID: f32 = 8.0;
const TM: u32 = 32u;
const TN: u32 = 32u;
const TK: u32 = 16u;
const NB: u32 = 64u;
const RM: u32 = 4u;
const RN: u32 = 4u;
const NT: u32 = 64u;

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read> slot_list: array<u32>;
@group(0) @binding(2) var<storage, read> tile_meta: array<u32>;
@group(0) @binding(3) var<storage, read> fc1_experts_weights: array<u32>;
@group(0) @binding(4) var<storage, read> fc1_scales: array<f32>;
@group(0) @binding(5) var<storage, read> fc1_bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> hidden_act: array<f32>;
@group(0) @binding(7) var<uniform> params: Params;

// Read as vec4 (a thread's 4 rows are contiguous), written element by element.
var<workgroup> a_tile: array<vec4<f32>, 128>;
fn a_store(i: u32, v: f32) {
  a_tile[i / 4u][i % 4u] = v;
}
// Read as vec4 (a thread's 4 columns are contiguous), written element by element.
var<workgroup> b_tile: array<vec4<f32>, 256>;
fn b_store(i: u32, v: f32) {
  b_tile[i / 4u][i % 4u] = v;
}
var<workgroup> tile_slot: array<u32, TM>;

// Scale of W1 row `row` (a row over all experts) at column c.
fn scale1(row: u32, c: u32) -> f32 {
  return fc1_scales[row];
}
// Dequantised W1 element (byte-wise read).
fn w1(row: u32, c: u32) -> f32 {
  let byte = row * ROW_BYTES + c / 2u;
  let b = (fc1_experts_weights[byte / 4u] >> ((byte % 4u) * 8u)) & 0xFFu;
  let q = select(b & 0xFu, b >> 4u, (c & 1u) == 1u);
  return (f32(q) - MID) * scale1(row, c);
}
// The fc1 row of tile column n (n < NB) for outputs starting at i0.
fn tile_row(n: u32, i0: u32) -> u32 {
  return 2u * (i0 + n % TN) + n / TN;
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
  let i0 = wid.y * TN;
  let tx = lid3.x;
  let ty = lid3.y;
  for (var m = tid; m < TM; m += NT) {
    tile_slot[m] = select(0u, slot_list[start + min(m, count - 1u)], m < count);
  }
  workgroupBarrier();

  var acc: array<f32, 16>;
  var acc_lin: array<f32, 16>;
  for (var k0 = 0u; k0 < H; k0 += TK) {
    // Stage the input rows of the tile's slots: a_tile[kk][m].
    for (var t = tid; t < TM * TK; t += NT) {
      let m = t / TK;
      let kk = t % TK;
      var v = 0.0;
      if (m < count && k0 + kk < H) {
        v = f32(input[(params.tokenOffset + tile_slot[m] / K) * H + k0 + kk]);
      }
      a_store(kk * TM + m, v);
    }
    // Stage the dequantised weights: b_tile[kk][n].
    for (var t = tid; t < NB * TK; t += NT) {
      let n = t / TK;
      let kk = t % TK;
      let i = i0 + n % TN;
      var v = 0.0;
      if (i < I && k0 + kk < H) {
        v = w1(e * ROWS + tile_row(n, i0), k0 + kk);
      }
      b_store(kk * NB + n, v);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      let av0 = a_tile[(kk * TM + ty * RM) / 4u + 0u];
      let a0 = av0.x;
      let a1 = av0.y;
      let a2 = av0.z;
      let a3 = av0.w;
      let bv0 = b_tile[(kk * NB + tx * RN) / 4u + 0u];
      let b0 = bv0.x;
      let b1 = bv0.y;
      let b2 = bv0.z;
      let b3 = bv0.w;
      let lv0 = b_tile[(kk * NB + TN + tx * RN) / 4u + 0u];
      let l0 = lv0.x;
      let l1 = lv0.y;
      let l2 = lv0.z;
      let l3 = lv0.w;
      acc[0] += a0 * b0;
      acc_lin[0] += a0 * l0;
      acc[1] += a0 * b1;
      acc_lin[1] += a0 * l1;
      acc[2] += a0 * b2;
      acc_lin[2] += a0 * l2;
      acc[3] += a0 * b3;
      acc_lin[3] += a0 * l3;
      acc[4] += a1 * b0;
      acc_lin[4] += a1 * l0;
      acc[5] += a1 * b1;
      acc_lin[5] += a1 * l1;
      acc[6] += a1 * b2;
      acc_lin[6] += a1 * l2;
      acc[7] += a1 * b3;
      acc_lin[7] += a1 * l3;
      acc[8] += a2 * b0;
      acc_lin[8] += a2 * l0;
      acc[9] += a2 * b1;
      acc_lin[9] += a2 * l1;
      acc[10] += a2 * b2;
      acc_lin[10] += a2 * l2;
      acc[11] += a2 * b3;
      acc_lin[11] += a2 * l3;
      acc[12] += a3 * b0;
      acc_lin[12] += a3 * l0;
      acc[13] += a3 * b1;
      acc_lin[13] += a3 * l1;
      acc[14] += a3 * b2;
      acc_lin[14] += a3 * l2;
      acc[15] += a3 * b3;
      acc_lin[15] += a3 * l3;
    }
    workgroupBarrier();
  }

  // Accumulators are indexed by constants only (unrolled here), so they stay in registers.
  store_act(ty * RM + 0u, i0 + tx * RN + 0u, count, e, acc[0], acc_lin[0]);
  store_act(ty * RM + 0u, i0 + tx * RN + 1u, count, e, acc[1], acc_lin[1]);
  store_act(ty * RM + 0u, i0 + tx * RN + 2u, count, e, acc[2], acc_lin[2]);
  store_act(ty * RM + 0u, i0 + tx * RN + 3u, count, e, acc[3], acc_lin[3]);
  store_act(ty * RM + 1u, i0 + tx * RN + 0u, count, e, acc[4], acc_lin[4]);
  store_act(ty * RM + 1u, i0 + tx * RN + 1u, count, e, acc[5], acc_lin[5]);
  store_act(ty * RM + 1u, i0 + tx * RN + 2u, count, e, acc[6], acc_lin[6]);
  store_act(ty * RM + 1u, i0 + tx * RN + 3u, count, e, acc[7], acc_lin[7]);
  store_act(ty * RM + 2u, i0 + tx * RN + 0u, count, e, acc[8], acc_lin[8]);
  store_act(ty * RM + 2u, i0 + tx * RN + 1u, count, e, acc[9], acc_lin[9]);
  store_act(ty * RM + 2u, i0 + tx * RN + 2u, count, e, acc[10], acc_lin[10]);
  store_act(ty * RM + 2u, i0 + tx * RN + 3u, count, e, acc[11], acc_lin[11]);
  store_act(ty * RM + 3u, i0 + tx * RN + 0u, count, e, acc[12], acc_lin[12]);
  store_act(ty * RM + 3u, i0 + tx * RN + 1u, count, e, acc[13], acc_lin[13]);
  store_act(ty * RM + 3u, i0 + tx * RN + 2u, count, e, acc[14], acc_lin[14]);
  store_act(ty * RM + 3u, i0 + tx * RN + 3u, count, e, acc[15], acc_lin[15]);
}

// Bias, activation and store of tile row m, activation output i.
fn store_act(m: u32, i: u32, count: u32, e: u32, h: f32, h_lin: f32) {
  if (m >= count || i >= I) {
    return;
  }
  let s = tile_slot[m];
  var gate = h;
  var lin = h_lin;
  gate = min(gate, f32(7));
  lin = clamp(lin, -f32(7), f32(7));
  hidden_act[s * I + i] = gate / (1.0 + exp(-params.activationAlpha * gate)) * (lin + params.activationBeta);
}
