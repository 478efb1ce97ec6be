// qmoe-fc1-activation-stage.wgsl (QMoE.FC1ActivationStage, variant quant_split_routed): QMoE FC1 + activation, one output each.
//
// One invocation per (slot s, activation index i), s < params.tokenCount * k, i < I (k = 2, H = 64,
// I = 32); the slot's token is t = params.tokenOffset + s / k, its expert e = route_expert[t*k + s % k]:
//   h(r)  = sum_c W1[e][r][c] * input[t][c],   W1[e][r][c] = (q - 128) * scale
//   hidden_act[s][i] = max(h(i), 0)
// q: 8-bit; scale: one per row.
// Weights are read byte-wise (any row length); f32 accumulation. Exact for every shape, not fast: the fallback.
// Dispatch: idx = (workgroup_id.y * num_workgroups.x + workgroup_id.x) * 64 + local x over tokenCount * k * I.
//
// Bindings (group 0):
//   0  input                storage, read        f32 [T, H]
//   1  route_expert         storage, read        u32 [T, k]
//   2  fc1_experts_weights  storage, read        u8 [E, 32, 64] as u32 words
//   3  fc1_scales           storage, read        f32 [E, 32]
//   4  hidden_act           storage, read_write  f32 [chunk tokens * k, I] (written)
//   5  params               uniform             Params (below)
// Workgroup size: (64, 1, 1).

struct Params {
  activationAlpha: f32,
  activationBeta: f32,
  tokenOffset: u32,
  tokenCount: u32,
}

const K: u32 = 2u;
const H: u32 = 64u;
const I: u32 = 32u;
const ROWS: u32 = 32u;
const ROW_BYTES: u32 = 64u;
const MID: f32 = 128.0;
const WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read> fc1_experts_weights: array<u32>;
@group(0) @binding(3) var<storage, read> fc1_scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> hidden_act: array<f32>;
@group(0) @binding(5) var<uniform> params: Params;

// Dequantised W1 element: row = e * ROWS + r (a row over all experts), column c < H.
fn w1(row: u32, c: u32) -> f32 {
  let byte = row * ROW_BYTES + c;
  let b = (fc1_experts_weights[byte / 4u] >> ((byte % 4u) * 8u)) & 0xFFu;
  let q = b;
  return (f32(q) - MID) * fc1_scales[row];
}

fn fc1_row(row: u32, x: u32) -> f32 {
  var acc = 0.0;
  for (var c = 0u; c < H; c++) {
    acc += w1(row, c) * f32(input[x + c]);
  }
  return acc;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * nwg.x + wid.x) * WG + lid;
  if (idx >= params.tokenCount * K * I) {
    return;
  }
  let s = idx / I;
  let i = idx % I;
  let t = params.tokenOffset + s / K;
  let e = route_expert[params.tokenOffset * K + s];
  let x = t * H;
  hidden_act[s * I + i] = max(fc1_row(e * ROWS + i, x), 0.0);
}
