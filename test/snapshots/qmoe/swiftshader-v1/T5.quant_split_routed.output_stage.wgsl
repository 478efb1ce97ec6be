// qmoe-output-stage.wgsl (QMoE.OutputStage, variant quant_split_routed): QMoE FC2 and the weighted sum over the k routes.
//
// One invocation per (chunk token u, hidden index r), u < params.tokenCount, r < H (k = 2, H = 64,
// I = 32); token t = params.tokenOffset + u, routes j < k with expert e_j = route_expert[t*k + j]:
//   output[t][r] = sum_j route_mix[t*k + j] * (sum_c W2[e_j][r][c] * hidden_act[u*k + j][c])
//   W2[e][r][c] = (q - 128) * scale, 8-bit, scale per row.
// Routes with route_mix == 0 are skipped (ORT skips weights not > 1e-8). Byte-wise weight reads, f32 accumulation.
// Dispatch: idx = (workgroup_id.y * num_workgroups.x + workgroup_id.x) * 64 + local x over tokenCount * H.
//
// Bindings (group 0):
//   0  hidden_act           storage, read        f32 [chunk tokens * k, I]
//   1  route_expert         storage, read        u32 [T, k]
//   2  route_mix            storage, read        f32 [T, k]
//   3  fc2_experts_weights  storage, read        u8 [E, 64, 32] as u32 words
//   4  fc2_scales           storage, read        f32 [E, 64]
//   5  output               storage, read_write  f32 [T, H] (written)
//   6  params               uniform             Params (below)
// Workgroup size: (64, 1, 1).

struct Params {
  tokenOffset: u32,
  tokenCount: u32,
}

const K: u32 = 2u;
const H: u32 = 64u;
const I: u32 = 32u;
const ROW_BYTES: u32 = 32u;
const MID: f32 = 128.0;
const WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> hidden_act: array<f32>;
@group(0) @binding(1) var<storage, read> route_expert: array<u32>;
@group(0) @binding(2) var<storage, read> route_mix: array<f32>;
@group(0) @binding(3) var<storage, read> fc2_experts_weights: array<u32>;
@group(0) @binding(4) var<storage, read> fc2_scales: array<f32>;
@group(0) @binding(5) var<storage, read_write> output: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;

// Dequantised W2 element: row = e * H + r (a row over all experts), column c < I.
fn w2(row: u32, c: u32) -> f32 {
  let byte = row * ROW_BYTES + c;
  let b = (fc2_experts_weights[byte / 4u] >> ((byte % 4u) * 8u)) & 0xFFu;
  let q = b;
  return (f32(q) - MID) * fc2_scales[row];
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let idx = (wid.y * nwg.x + wid.x) * WG + lid;
  if (idx >= params.tokenCount * H) {
    return;
  }
  let u = idx / H;
  let r = idx % H;
  let t = params.tokenOffset + u;
  var acc = 0.0;
  for (var j = 0u; j < K; j++) {
    let w = route_mix[t * K + j];
    if (w == 0.0) {
      continue;
    }
    let e = route_expert[t * K + j];
    let a = (u * K + j) * I;
    var y = 0.0;
    for (var c = 0u; c < I; c++) {
      y += w2(e * H + r, c) * hidden_act[a + c];
    }
    acc += w * y;
  }
  output[t * H + r] = f32(acc);
}
