// qmoe-fc1-activation-gemv.wgsl (QMoE.FC1ActivationStageGemv, variant quant_gemv_routed): QMoE FC1 + activation for a few tokens.
//
// Workgroup (x = 2 lanes, y = 32 rows). Row y of workgroup (wx, wy) computes activation output
// i = wx * 32 + y (i < I) of slot s = wy: route s % k of token t = params.tokenOffset + s / k, expert
// e = route_expert[t*k + s % k] (k = 2, H = 36, I = 10):
//   h(r) = sum_c W1[e][r][c] * input[t][c],   W1[e][r][c] = (q - 8) * scale
//   hidden_act[s][i] = gate * sigmoid(alpha * gate) * (linear + beta), gate = h(2i), linear = h(2i + 1)
//                      with gate = min(gate, 7), linear = clamp(linear, -7, 7)
// q: 4-bit, low nibble first; scale per row (applied once to the row's sum).
// The rows are not u32-aligned (18 bytes): lane l reads weights c = l, l + 2, ... byte-wise.
// f32 partial sums per lane, then a row reduction: a tree in workgroup memory.
// Dispatch: [ceil(I / 32), chunk tokens * k, 1].
//
// Bindings (group 0):
//   0  input                storage, read        f32 [T, H]
//   1  route_expert         storage, read        u32 [T, k]
//   2  fc1_experts_weights  storage, read        u8 [E, 20, 18] as u32 words
//   3  fc1_scales           storage, read        f32 [E, 20]
//   4  fc1_bias             storage, read        f32 [E, 20] (absent: not read)
//   5  hidden_act           storage, read_write  f32 [chunk tokens * k, I] (written)
//   6  params               uniform             Params (below)
// Workgroup size: (2, 32, 1).

struct Params {
  activationAlpha: f32,
  activationBeta: f32,
  tokenOffset: u32,
}

const K: u32 = 2u;
const H: u32 = 36u;
const I: u32 = 10u;
const ROWS: u32 = 20u;
const MID: f32 = 8.0;
const LANES: u32 = 2u;
const WG_ROWS: u32 = 32u;
const ROW_BYTES: u32 = 18u;

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read> fc1_experts_weights: array<u32>;
@group(0) @binding(3) var<storage, read> fc1_scales: array<f32>;
@group(0) @binding(4) var<storage, read> fc1_bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> hidden_act: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;

var<workgroup> partial: array<vec2<f32>, 64>;

// Quantised weight (q - MID) of W1 row `row` (over all experts) at column c, byte-wise.
fn q1(row: u32, c: u32) -> f32 {
  let byte = row * ROW_BYTES + c / 2u;
  let b = (fc1_experts_weights[byte / 4u] >> ((byte % 4u) * 8u)) & 0xFFu;
  return f32(select(b & 0xFu, b >> 4u, (c & 1u) == 1u)) - MID;
}

@compute @workgroup_size(2, 32, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
  let lane = lid3.x;
  let i = wid.x * WG_ROWS + lid3.y;
  let slot = wid.y;
  let e = route_expert[params.tokenOffset * K + slot];
  let t = params.tokenOffset + slot / K;
  let live = i < I;
  let row0 = e * ROWS + 2u * i; // gate
  let row1 = row0 + 1u; // linear
  var acc0 = 0.0;
  var acc1 = 0.0;
  if (live) {
    for (var c = lane; c < H; c += LANES) {
      let x = f32(input[t * H + c]);
      acc0 += q1(row0, c) * x;
      acc1 += q1(row1, c) * x;
    }
  }

  // Row reduction over the 2 lanes.
  partial[tid] = vec2<f32>(acc0, acc1);
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
    var h0 = total.x * fc1_scales[row0];
    var h1 = total.y * fc1_scales[row1];
    h0 = min(h0, f32(7));
    h1 = clamp(h1, -f32(7), f32(7));
    hidden_act[slot * I + i] = h0 / (1.0 + exp(-params.activationAlpha * h0)) * (h1 + params.activationBeta);
  }
}
