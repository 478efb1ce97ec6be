// qmoe-output-gemv.wgsl (QMoE.OutputStageGemv, variant quant_gemv_routed): QMoE FC2 and the routed mix for a few tokens.
//
// Workgroup (x = 2 lanes, y = 32 rows). Row y of workgroup (wx, wy) computes hidden output
// r = wx * 32 + y (r < H) of chunk token u = wy, token t = params.tokenOffset + u (k = 2, H = 36, I = 10):
//   output[t][r] = sum_j route_mix[t*k + j] * (sum_c W2[e_j][r][c] * hidden_act[u*k + j][c]),  e_j = route_expert[t*k + j]
//   W2[e][r][c] = (q - 8) * scale, 4-bit (low nibble first), scale per row.
// Routes with route_mix == 0 are skipped (ORT skips weights not > 1e-8).
// The rows are not u32-aligned (5 bytes): lane l reads weights c = l, l + 2, ... byte-wise.
// f32 partial sums per lane (all routes), then one row reduction: a tree in workgroup memory.
// Dispatch: [ceil(H / 32), chunk tokens, 1].
//
// Bindings (group 0):
//   0  hidden_act           storage, read        f32 [chunk tokens * k, I]
//   1  route_expert         storage, read        u32 [T, k]
//   2  route_mix            storage, read        f32 [T, k]
//   3  fc2_experts_weights  storage, read        u8 [E, 36, 5] as u32 words
//   4  fc2_scales           storage, read        f32 [E, 36]
//   5  fc2_bias             storage, read        f32 [E, 36] (absent: not read)
//   6  output               storage, read_write  f32 [T, H] (written)
//   7  params               uniform             Params (below)
// Workgroup size: (2, 32, 1).

struct Params {
  tokenOffset: u32,
}

const K: u32 = 2u;
const H: u32 = 36u;
const I: u32 = 10u;
const MID: f32 = 8.0;
const LANES: u32 = 2u;
const WG_ROWS: u32 = 32u;
const ROW_BYTES: u32 = 5u;

@group(0) @binding(0) var<storage, read> hidden_act: array<f32>;
@group(0) @binding(1) var<storage, read> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read> route_mix: array<f32>;
@group(0) @binding(3) var<storage, read> fc2_experts_weights: array<u32>;
@group(0) @binding(4) var<storage, read> fc2_scales: array<f32>;
@group(0) @binding(5) var<storage, read> fc2_bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> output: array<f32>;
@group(0) @binding(7) var<uniform> params: Params;

var<workgroup> partial: array<f32, 64>;

// Quantised weight (q - MID) of W2 row `row` (over all experts) at column c, byte-wise.
fn q2(row: u32, c: u32) -> f32 {
  let byte = row * ROW_BYTES + c / 2u;
  let b = (fc2_experts_weights[byte / 4u] >> ((byte % 4u) * 8u)) & 0xFFu;
  return f32(select(b & 0xFu, b >> 4u, (c & 1u) == 1u)) - MID;
}

@compute @workgroup_size(2, 32, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let lane = lid3.x;
  let r = wid.x * WG_ROWS + lid3.y;
  let u = wid.y;
  let t = params.tokenOffset + u;
  let live = r < H;
  var acc = 0.0;
  if (live) {
    for (var j = 0u; j < K; j++) {
      let mix = route_mix[t * K + j];
      if (mix == 0.0) {
        continue;
      }
      let row = route_expert[t * K + j] * H + r;
      var part = 0.0;
      let a_base = (u * K + j) * I;
      for (var c = lane; c < I; c += LANES) {
        part += q2(row, c) * hidden_act[a_base + c];
      }
      acc += mix * fc2_scales[row] * part;
    }
  }

  // Row reduction over the 2 lanes.
  partial[tid] = acc;
  workgroupBarrier();
  for (var n = LANES; n > 1u; n = (n + 1u) / 2u) {
    let h2 = (n + 1u) / 2u;
    if (lane < n - h2) {
      partial[tid] += partial[tid + h2];
    }
    workgroupBarrier();
  }
  let total = partial[tid];

  if (lane == 0u && live) {
    var y = total;
    output[t * H + r] = f32(y);
  }
}
