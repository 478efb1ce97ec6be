// expert-slot-mix.wgsl (QMoE.MixStage, variant quant_grouped_sgmat_f16_routed): sums the k routed expert outputs of each token.
//
// One invocation per (chunk token u, hidden index r), u < params.tokenCount, r < H (k = 4, H = 2880):
//   t = params.tokenOffset + u
//   output[t][r] = sum_j route_mix[t*k + j] * slot_out[(u*k + j)*H + r]   (j in order; routes with weight 0 skipped)
// Dispatch: idx = (workgroup_id.y * num_workgroups.x + workgroup_id.x) * 64 + local x over tokenCount * H.
//
// Bindings (group 0):
//   0  slot_out   storage, read        f32 [chunk tokens * k, H]
//   1  route_mix  storage, read        f32 [T, k]
//   2  output     storage, read_write  f32 [T, H] (written)
//   3  params     uniform             Params (below)
// Workgroup size: (64, 1, 1).

struct Params {
  tokenOffset: u32,
  tokenCount: u32,
}

const K: u32 = 4u;
const H: u32 = 2880u;
const WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> slot_out: array<f32>;
@group(0) @binding(1) var<storage, read> route_mix: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

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
    if (w != 0.0) {
      acc += w * slot_out[(u * K + j) * H + r];
    }
  }
  output[t * H + r] = f32(acc);
}
