// qmoe-fc1-activation-grouped-sgmat.wgsl (QMoE.FC1ActivationStageGroupedSgmatF16, variant quant_grouped_sgmat_f16_routed): QMoE FC1 + activation, grouped by
// expert, on subgroup matrices (f16 x f16 -> f32, M x N x K = 16 x 16 x 16).
//
// One workgroup per (tile, block of 64 fc1 rows): tile = workgroup_id.x (tiles past tile_meta[0] exit), fc1 rows
// c0 = workgroup_id.y * 64 (32 gate/linear pairs: fc1 rows are interleaved). The tile holds up to 32 slots of expert e (see
// expert-group-slots.wgsl); slot s is route s % k of token t = params.tokenOffset + s / k (k = 4, H = 2880, I = 2880):
//   h(r) = sum_c W1[e][r][c] * input[t][c] + fc1_bias[e][r],   W1[e][r][c] = (q - 8) * scale
//   hidden_act[s][i] = gate * sigmoid(alpha * gate) * (linear + beta), gate = h(2i), linear = h(2i + 1)
//                      with gate = min(gate, 7), linear = clamp(linear, -7, 7)
// q: 4-bit, low nibble first; scale per block of 32 columns.
// Per K step of 32: the tile's input rows (A, [32][32] row-major) and the dequantised weights (B, [64 rows][32],
// loaded as column-major right matrices) are staged in workgroup memory as f16 (rounded: f16 precision). Subgroup g < 4 (subgroup_id)
// owns fc1 rows c0 + g*16..+16: 2 x 1 result matrices (f32 accumulation). The results go through workgroup
// memory (f32, [32][64]) to the bias / activation epilogue.
// Needs: subgroups of 32 (the workgroup is 128 = 4 subgroups), chromium-experimental-subgroup-matrix, shader-f16.
// Workgroup memory: 16000 bytes.
// Dispatch: [48 tiles, ceil(5760 / 64), 1].
//
// Bindings (group 0):
//   0  input                storage, read        f32 [T, H]
//   1  slot_list            storage, read        u32 [chunk slots]
//   2  tile_meta            storage, read        u32 [1 + 3 * tiles]
//   3  fc1_experts_weights  storage, read        u8 [E, 5760, 1440] as u32 words
//   4  fc1_scales           storage, read        f32 [E, 5760, 90]
//   5  fc1_bias             storage, read        f32 [E, 5760]
//   6  hidden_act           storage, read_write  f32 [chunk slots, I] (written)
//   7  params               uniform             Params (below)
// Workgroup size: (128, 1, 1).
enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
// Matrix offsets depend on subgroup_id, which is uniform within each subgroup (what the builtins need).
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);

struct Params {
  activationAlpha: f32,
  activationBeta: f32,
  tokenOffset: u32,
}

const K: u32 = 4u;
const H: u32 = 2880u;
const I: u32 = 2880u;
const ROWS: u32 = 5760u;
const MID: f32 = 8.0;
const TM: u32 = 32u;
const TC: u32 = 64u; // fc1 rows per tile
const KS: u32 = 32u; // K per staging step
const ST: u32 = 40u; // staged row stride (padded)
const WG: u32 = 128u;
const STRIP: u32 = 16u; // fc1 rows per subgroup
const WPS: u32 = 4u; // u32 weight words per row per K step

@group(0) @binding(0) var<storage, read> input: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> slot_list: array<u32>;
@group(0) @binding(2) var<storage, read> tile_meta: array<u32>;
@group(0) @binding(3) var<storage, read> fc1_experts_weights: array<u32>;
@group(0) @binding(4) var<storage, read> fc1_scales: array<f32>;
@group(0) @binding(5) var<storage, read> fc1_bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> hidden_act: array<f32>;
@group(0) @binding(7) var<uniform> params: Params;

var<workgroup> a_stage: array<f16, 1280>;
var<workgroup> b_stage: array<f16, 2560>;
var<workgroup> c_stage: array<f32, 2048>;
var<workgroup> tile_slot: array<u32, TM>;

// Scale of W1 row `row` (a row over all experts) at column c.
fn scale1(row: u32, c: u32) -> f32 {
  return fc1_scales[row * 90u + c / 32u];
}

@compute @workgroup_size(128, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32, @builtin(subgroup_id) sg: u32) {
  let tile = wid.x;
  if (tile >= tile_meta[0]) {
    return;
  }
  let e = tile_meta[1u + 3u * tile];
  let start = tile_meta[2u + 3u * tile];
  let count = tile_meta[3u + 3u * tile];
  let c0 = wid.y * TC;
  for (var m = tid; m < TM; m += WG) {
    tile_slot[m] = select(0u, slot_list[start + min(m, count - 1u)], m < count);
  }
  workgroupBarrier();

  var acc0_0: subgroup_matrix_result<f32, 16, 16>;
  var acc1_0: subgroup_matrix_result<f32, 16, 16>;
  var ra0: vec4<f32>;
  var ra1: vec4<f32>;
  var rw0: u32;
  var rs0: f32;
  var rw1: u32;
  var rs1: f32;
    {
      let t = tid + 0u;
      ra0 = vec4<f32>(input[((params.tokenOffset + tile_slot[(t / 8u)] / K) * H + 0u) / 4u + t % 8u]);
    }
    {
      let t = tid + 128u;
      ra1 = vec4<f32>(input[((params.tokenOffset + tile_slot[(t / 8u)] / K) * H + 0u) / 4u + t % 8u]);
    }
    {
      let t = tid + 0u;
      let c = 0u + (t % WPS) * 8u;
      let row = e * ROWS + min(c0 + t / WPS, ROWS - 1u);
      rw0 = fc1_experts_weights[row * 360u + c / 8u];
      rs0 = scale1(row, c);
    }
    {
      let t = tid + 128u;
      let c = 0u + (t % WPS) * 8u;
      let row = e * ROWS + min(c0 + t / WPS, ROWS - 1u);
      rw1 = fc1_experts_weights[row * 360u + c / 8u];
      rs1 = scale1(row, c);
    }

    {
      let t = tid + 0u;
      let o = (t / 8u) * ST + (t % 8u) * 4u;
      a_stage[o] = f16(ra0.x);
      a_stage[o + 1u] = f16(ra0.y);
      a_stage[o + 2u] = f16(ra0.z);
      a_stage[o + 3u] = f16(ra0.w);
    }
    {
      let t = tid + 128u;
      let o = (t / 8u) * ST + (t % 8u) * 4u;
      a_stage[o] = f16(ra1.x);
      a_stage[o + 1u] = f16(ra1.y);
      a_stage[o + 2u] = f16(ra1.z);
      a_stage[o + 3u] = f16(ra1.w);
    }
    {
      let t = tid + 0u;
      let o = (t / WPS) * ST + (t % WPS) * 8u;
      for (var v = 0u; v < 8u; v++) {
        let q = (rw0 >> (4u * v)) & 0xFu;
        b_stage[o + v] = f16((f32(q) - MID) * rs0);
      }
    }
    {
      let t = tid + 128u;
      let o = (t / WPS) * ST + (t % WPS) * 8u;
      for (var v = 0u; v < 8u; v++) {
        let q = (rw1 >> (4u * v)) & 0xFu;
        b_stage[o + v] = f16((f32(q) - MID) * rs1);
      }
    }

  workgroupBarrier();
  for (var k0 = 0u; k0 < H; k0 += KS) {
    let more = k0 + KS < H;
    if (more) {
    {
      let t = tid + 0u;
      ra0 = vec4<f32>(input[((params.tokenOffset + tile_slot[(t / 8u)] / K) * H + k0 + KS) / 4u + t % 8u]);
    }
    {
      let t = tid + 128u;
      ra1 = vec4<f32>(input[((params.tokenOffset + tile_slot[(t / 8u)] / K) * H + k0 + KS) / 4u + t % 8u]);
    }
    {
      let t = tid + 0u;
      let c = k0 + KS + (t % WPS) * 8u;
      let row = e * ROWS + min(c0 + t / WPS, ROWS - 1u);
      rw0 = fc1_experts_weights[row * 360u + c / 8u];
      rs0 = scale1(row, c);
    }
    {
      let t = tid + 128u;
      let c = k0 + KS + (t % WPS) * 8u;
      let row = e * ROWS + min(c0 + t / WPS, ROWS - 1u);
      rw1 = fc1_experts_weights[row * 360u + c / 8u];
      rs1 = scale1(row, c);
    }

    }
    {
      let left0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_stage, 0u, false, 40u);
      let left1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_stage, 640u, false, 40u);
      let right0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&b_stage, (sg * STRIP + 0u) * 40u + 0u, true, 40u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(left0, right0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(left1, right0, acc1_0);
    }
    {
      let left0 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_stage, 16u, false, 40u);
      let left1 = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&a_stage, 656u, false, 40u);
      let right0 = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&b_stage, (sg * STRIP + 0u) * 40u + 16u, true, 40u);
      acc0_0 = subgroupMatrixMultiplyAccumulate(left0, right0, acc0_0);
      acc1_0 = subgroupMatrixMultiplyAccumulate(left1, right0, acc1_0);
    }
    workgroupBarrier();
    if (more) {
    {
      let t = tid + 0u;
      let o = (t / 8u) * ST + (t % 8u) * 4u;
      a_stage[o] = f16(ra0.x);
      a_stage[o + 1u] = f16(ra0.y);
      a_stage[o + 2u] = f16(ra0.z);
      a_stage[o + 3u] = f16(ra0.w);
    }
    {
      let t = tid + 128u;
      let o = (t / 8u) * ST + (t % 8u) * 4u;
      a_stage[o] = f16(ra1.x);
      a_stage[o + 1u] = f16(ra1.y);
      a_stage[o + 2u] = f16(ra1.z);
      a_stage[o + 3u] = f16(ra1.w);
    }
    {
      let t = tid + 0u;
      let o = (t / WPS) * ST + (t % WPS) * 8u;
      for (var v = 0u; v < 8u; v++) {
        let q = (rw0 >> (4u * v)) & 0xFu;
        b_stage[o + v] = f16((f32(q) - MID) * rs0);
      }
    }
    {
      let t = tid + 128u;
      let o = (t / WPS) * ST + (t % WPS) * 8u;
      for (var v = 0u; v < 8u; v++) {
        let q = (rw1 >> (4u * v)) & 0xFu;
        b_stage[o + v] = f16((f32(q) - MID) * rs1);
      }
    }

    }
    workgroupBarrier();
  }

  // Results to workgroup memory, [m][n] row-major (stride TC).
  subgroupMatrixStore(&c_stage, 0u * TC + sg * STRIP + 0u, acc0_0, false, TC);
  subgroupMatrixStore(&c_stage, 16u * TC + sg * STRIP + 0u, acc1_0, false, TC);
  workgroupBarrier();

  // Epilogue: pair p of the tile is activation output i = c0 / 2 + p (gate = column 2p, linear = 2p + 1).
  for (var t = tid; t < TM * (TC / 2u); t += WG) {
    let m = t / (TC / 2u);
    let p = t % (TC / 2u);
    let i = c0 / 2u + p;
    if (m < count && i < I) {
      let row = e * ROWS + 2u * i;
      var gate = f32(c_stage[m * TC + 2u * p]) + f32(fc1_bias[row]);
      var lin = f32(c_stage[m * TC + 2u * p + 1u]) + f32(fc1_bias[row + 1u]);
      gate = min(gate, f32(7));
      lin = clamp(lin, -f32(7), f32(7));
      hidden_act[tile_slot[m] * I + i] = gate / (1.0 + exp(-params.activationAlpha * gate)) * (lin + params.activationBeta);
    }
  }
}
